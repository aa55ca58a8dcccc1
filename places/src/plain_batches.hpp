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
/// They are kept as runs: a merged run (see active_messages.hpp) stays one entry, its
/// arguments copied as one block, so that a batch runs a slice of it in one call.
struct plain_arrivals {
  /// Asyncs of one function: `count` of them with `stride` bytes of bitwise arguments each, at
  /// `at` in `bytes` (code: a plain_run_invoker); or, with stride 0, one async whose serialized
  /// arguments are `size` bytes at `at` (code: a plain_async_invoker).
  struct run {
    std::int64_t code;
    std::uint32_t at; ///< < 2 GiB (see k_max_plain_block_bytes)
    std::uint32_t stride;
    std::uint32_t count;
    std::uint32_t size;
  };
  byte_buffer bytes;      ///< the arguments
  std::vector<run> runs;  ///< in order of arrival
  std::size_t asyncs = 0; ///< the sum of the runs' counts
};
/// @brief Bytes of arguments a block holds at most before it is made runnable, even in the middle
/// of a delivery: a merged message may hold a whole buffer of asyncs and one poll delivers many
/// messages (offsets are 32-bit, and the next block reserves what the largest one held).
inline constexpr std::size_t k_max_plain_block_bytes = std::size_t{1} << 20;

/// @brief Makes the frames that run every async of `arrived` as strands of `fs`, appended to
/// `out`: batches of at most 64 asyncs, smaller when `workers` can share them.
/// @return the number of plain asyncs in `arrived`.
std::size_t make_plain_batches(std::shared_ptr<const plain_arrivals> arrived, finish_state& fs,
                               unsigned workers, std::vector<promise_base*>& out);

} // namespace apgas::detail
