// Plain asyncs (remote asyncs of functions that do not suspend) that arrive together for one
// finish run in batches: one frame, one deque push and one strand end per batch instead of per
// async, so a stream of tiny updates (a counter, a table entry) costs little more than the
// updates themselves. Each async is still an activity of its own: an exception ends that one
// only (gathered in the finish), the next ones still run.
#pragma once

#include "apgas/detail/activity.hpp"
#include "apgas/detail/byte_buffer.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace apgas::detail {

/// @brief Plain asyncs of one finish delivered in a row, shared by the batches that run them.
struct plain_arrivals {
  byte_buffer bytes;                 ///< entries, each a code offset then the arguments
  std::vector<std::uint32_t> starts; ///< where each entry starts in `bytes`
};

/// @brief Bytes of entries a block holds at most before it is made runnable, even in the middle
/// of a delivery: a merged message may hold a whole buffer of asyncs and one poll delivers many
/// messages (entry offsets are 32-bit, and the next block reserves what the largest one held).
inline constexpr std::size_t k_max_plain_block_bytes = std::size_t{1} << 20;

/// @brief Makes the frames that run every entry of `arrived` as strands of `fs`, appended to
/// `out`: batches of at most 64 asyncs, smaller when `workers` can share them.
/// @return the number of plain asyncs in `arrived`.
std::size_t make_plain_batches(std::shared_ptr<const plain_arrivals> arrived, finish_state& fs,
                               unsigned workers, std::vector<promise_base*>& out);

} // namespace apgas::detail
