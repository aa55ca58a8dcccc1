// On-demand splitting (apgas/on_demand.hpp): what its loops need of the worker that runs them.
#include "apgas/on_demand.hpp"

#include "apgas/detail/worker.hpp"

#include <exception>
#include <vector>

namespace apgas::detail {

namespace {
/// What a loop outside any worker looks at: nobody raises it, so it never splits.
constinit const std::atomic<bool> g_never_wanted{false};
} // namespace

const std::atomic<bool>& wanted_flag_here() noexcept {
  const worker* w = t_worker;
  return w != nullptr ? w->work_wanted_flag() : g_never_wanted;
}

void count_items_toward_poll(std::uint32_t items) noexcept {
  if (worker* w = t_worker) w->count_toward_poll(items);
}

void rethrow_parts_failure(const multiple_exceptions& e) {
  std::vector<std::exception_ptr> failures = e.flattened();
  if (failures.size() == 1) std::rethrow_exception(failures.front());
  throw e;
}

void ask_this_worker_for_work() noexcept {
  if (worker* w = t_worker) w->ask_for_work();
}

} // namespace apgas::detail
