// Running plain asyncs that arrived together, in batches (see plain_batches.hpp).
#include "plain_batches.hpp"

#include "apgas/detail/active_messages.hpp"
#include "apgas/detail/message_format.hpp"
#include "apgas/serialization.hpp"
#include "apgas/task.hpp"

#include <algorithm>
#include <cstring>
#include <span>
#include <utility>

namespace apgas::detail {

namespace {

/// Largest batch run on one frame: a stream of tiny asyncs costs a frame per 64, while one
/// batch of costly ones stays short next to a whole network message.
constexpr std::size_t k_max_plain_batch = 64;

/// The activity that runs entries [first, last) of `arrived`, one after the other, each an
/// activity of `fs` of its own.
task<> run_plain_batch(std::shared_ptr<const plain_arrivals> arrived, std::size_t first,
                       std::size_t last, finish_state* fs) {
  const std::byte* bytes = arrived->bytes.data();
  const std::vector<std::uint32_t>& starts = arrived->starts;
  for (std::size_t i = first; i < last; ++i) {
    const std::size_t begin = starts[i];
    const std::size_t end = i + 1 < starts.size() ? starts[i + 1] : arrived->bytes.size();
    std::int64_t offset;
    std::memcpy(&offset, bytes + begin, sizeof offset);
    byte_reader args(std::span(bytes + begin + sizeof offset, end - begin - sizeof offset));
    try {
      reinterpret_cast<plain_async_invoker>(const_cast<void*>(code_at(offset)))(args);
    } catch (...) { // the function threw, or its arguments did not deserialize
      fs->add_exception(std::current_exception());
    }
  }
  co_return;
}

} // namespace

std::size_t make_plain_batches(std::shared_ptr<const plain_arrivals> arrived, finish_state& fs,
                               unsigned workers, std::vector<promise_base*>& out) {
  const std::size_t n = arrived->starts.size();
  // Every worker of the place should get several batches of a delivery (several: the asyncs
  // may differ in cost); one worker gets the biggest batches.
  const std::size_t per_batch =
      workers <= 1 ? k_max_plain_batch
                   : std::clamp<std::size_t>(n / (4 * std::size_t{workers}), 1, k_max_plain_batch);
  for (std::size_t first = 0; first < n; first += per_batch) {
    const std::size_t last = std::min(first + per_batch, n);
    promise_base* p = &run_plain_batch(arrived, first, last, &fs).release().promise();
    p->m_finish = &fs;
    p->m_role = promise_base::role::strand;
    p->m_parent = nullptr;
    out.push_back(p);
  }
  return n;
}

} // namespace apgas::detail
