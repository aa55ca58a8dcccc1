// Out-of-line parts of finish: completion, and gathering exceptions (and how they are named).
#include "apgas/detail/activity.hpp"
#include "apgas/exceptions.hpp"

#include <fmt/format.h>

#include <mutex>
#include <utility>

namespace apgas {

namespace {
std::string describe(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    if (const remote_origin* origin = origin_of(x)) return origin->describe();
    return x.what();
  } catch (...) {
    return "a non-standard exception";
  }
}

void flatten_into(const std::vector<std::exception_ptr>& errors,
                  std::vector<std::exception_ptr>& out) {
  for (const std::exception_ptr& e : errors) {
    try {
      std::rethrow_exception(e);
    } catch (const multiple_exceptions& nested) {
      flatten_into(nested.exceptions(), out);
    } catch (...) {
      out.push_back(e);
    }
  }
}
} // namespace

multiple_exceptions::multiple_exceptions(std::vector<std::exception_ptr> errors)
    : m_errors(std::move(errors)) {
  // The failures themselves, not the finishes they passed through: a nested finish would
  // otherwise say "1 activity failed; first: 1 activity failed; first: ..." at every level.
  const std::vector<std::exception_ptr> failures = flattened();
  if (failures.size() == 1) {
    m_what = "1 activity failed: " + describe(failures.front());
    return;
  }
  m_what = fmt::format("{} activities failed", failures.size());
  if (!failures.empty()) m_what += "; first: " + describe(failures.front());
}

std::vector<std::exception_ptr> multiple_exceptions::flattened() const {
  std::vector<std::exception_ptr> out;
  flatten_into(m_errors, out);
  return out;
}

std::string remote_origin::describe() const {
  return fmt::format("at place {}: {}{}{}", m_place, m_type_name, m_type_name.empty() ? "" : ": ",
                     what_there());
}

const remote_origin* origin_of(const std::exception_ptr& e) noexcept {
  if (!e) return nullptr;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return origin_of(x); // the object lives in `e`, not in this handler
  } catch (...) {
  }
  return nullptr;
}

namespace detail {

void finish_state::add_exception(std::exception_ptr e) noexcept {
  std::lock_guard guard(m_exceptions_lock);
  try {
    if (m_exceptions == nullptr) m_exceptions = new std::vector<std::exception_ptr>();
    m_exceptions->push_back(std::move(e));
  } catch (...) {
    // Out of memory while recording a failure: losing the error silently would be worse.
    std::terminate();
  }
}

std::coroutine_handle<> finish_state::complete_root() noexcept {
  // release: the waiter reads m_exceptions (and the activities' results) after acquiring.
  m_done.store(true, std::memory_order_release);
  m_done.notify_all();
  return std::noop_coroutine();
}

void finish_state::release_extras() noexcept {
  if (m_remote != nullptr && !m_reopenable) g_remote_hooks.release_remote(*this);
  discard_exceptions();
}

void finish_state::discard_exceptions() noexcept { delete std::exchange(m_exceptions, nullptr); }

void finish_state::throw_gathered() {
  auto errors = std::move(*m_exceptions);
  discard_exceptions();
  throw multiple_exceptions(std::move(errors));
}

} // namespace detail
} // namespace apgas
