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

/// The activity that runs `n` asyncs of `arrived` from async `entry` of run `run` on, one after
/// the other, each an activity of `fs` of its own.
task<> run_plain_batch(std::shared_ptr<const plain_arrivals> arrived, std::size_t run,
                       std::size_t entry, std::size_t n, finish_state* fs) {
  const std::byte* bytes = arrived->bytes.data();
  for (; n != 0; ++run, entry = 0) {
    const plain_arrivals::run& r = arrived->runs[run];
    const std::size_t k = std::min<std::size_t>(n, r.count - entry);
    n -= k;
    void* const code = const_cast<void*>(code_at(r.code));
    if (r.stride != 0) {
      reinterpret_cast<plain_run_invoker>(code)(bytes + r.at + entry * r.stride, r.stride, k, *fs);
      continue;
    }
    byte_reader args(std::span(bytes + r.at, r.size));
    try {
      reinterpret_cast<plain_async_invoker>(code)(args);
    } catch (...) { // the function threw, or its arguments did not deserialize
      fs->add_exception(std::current_exception());
    }
  }
  co_return;
}

} // namespace

std::size_t make_plain_batches(std::shared_ptr<const plain_arrivals> arrived, finish_state& fs,
                               unsigned workers, std::vector<promise_base*>& out) {
  const std::size_t n = arrived->asyncs;
  // Every worker of the place should get several batches of a delivery (several: the asyncs
  // may differ in cost); one worker gets the biggest batches.
  const std::size_t per_batch =
      workers <= 1 ? k_max_plain_batch
                   : std::clamp<std::size_t>(n / (4 * std::size_t{workers}), 1, k_max_plain_batch);
  std::size_t run = 0;
  std::size_t entry = 0; // in runs[run]
  for (std::size_t left = n; left != 0;) {
    const std::size_t k = std::min(per_batch, left);
    promise_base* p = &run_plain_batch(arrived, run, entry, k, &fs).release().promise();
    p->m_finish = &fs;
    p->m_role = promise_base::role::strand;
    p->m_parent = nullptr;
    out.push_back(p);
    left -= k;
    // Where the next batch starts: k asyncs on.
    for (std::size_t skip = k; skip != 0 && run < arrived->runs.size();) {
      const std::size_t in_run = arrived->runs[run].count - entry;
      if (skip < in_run) {
        entry += skip;
        break;
      }
      skip -= in_run;
      ++run;
      entry = 0;
    }
  }
  return n;
}

} // namespace apgas::detail
