// Out-of-line parts of finish: completion, and gathering exceptions.
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
    return x.what();
  } catch (...) {
    return "a non-standard exception";
  }
}
} // namespace

multiple_exceptions::multiple_exceptions(std::vector<std::exception_ptr> errors)
    : m_errors(std::move(errors)) {
  m_what = fmt::format("{} activit{} failed", m_errors.size(), m_errors.size() == 1 ? "y" : "ies");
  if (!m_errors.empty()) m_what += fmt::format("; first: {}", describe(m_errors.front()));
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
