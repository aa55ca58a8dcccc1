// The promise of apgas::task (<apgas/task.hpp>): where a frame's value goes, how it ends (joining
// its finish, or returning to its caller), and how `co_await t` runs t in sequence. Included at
// the end of task.hpp.
#pragma once

#include "apgas/detail/activity.hpp"
#include "apgas/detail/await_required.hpp"
#include "apgas/detail/frame_pool.hpp"
#include "apgas/detail/worker.hpp"
#include "apgas/task.hpp"

#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace apgas::detail {

template <class P>
concept apgas_promise = std::is_base_of_v<promise_base, P>;

/// @brief Checked where a task is awaited: only apgas coroutines may await apgas tasks.
template <class P>
constexpr void require_apgas_caller() {
  static_assert(apgas_promise<P>,
                "apgas: tasks, async and finish can only be co_awaited inside an apgas::task "
                "coroutine (the awaiting coroutine must return apgas::task<...>)");
}

/// @brief The end of every apgas frame.
///
/// A strand (an activity) that ends in one of the three common ways, joining its parent
/// implicitly, ending the last strand of its finish or handing its count over to a help-first
/// strand it pops (see end_strand_inline), decides what its worker runs next in
/// await_ready and does not suspend: the frame is then destroyed by the coroutine itself, and
/// the worker loop resumes that next frame (see worker::set_next). Why: with GCC, destroy()
/// re-enters the whole coroutine function (prologue, dispatch, epilogue), about a tenth of the
/// cost of a fine-grained task. Every other ending (a call returning to its caller, a strand
/// whose parent was stolen) suspends here and hands over by symmetric transfer.
struct final_awaiter {
  promise_base& m_promise;
  deque_item m_popped = k_not_popped; ///< what await_ready popped, for await_suspend

  [[gnu::always_inline]] bool await_ready() noexcept {
    if (m_promise.m_role == promise_base::role::call) return false;
    return end_strand_inline(m_promise, m_popped);
  }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
    promise_base& p = h.promise();
    if (p.m_role == promise_base::role::call) return t_worker->transfer(p.m_call->caller->m_self);
    return finish_strand(p, m_popped);
  }
  void await_resume() const noexcept {}
};

/// @brief co_await t: runs t in sequence inside the caller's activity. An exception escaping
/// t is kept here, in the caller's frame, and rethrown by await_resume: frames that are
/// activities (most of them) then carry no exception_ptr to initialise and test.
template <class T>
struct call_awaiter {
  std::coroutine_handle<promise<T>> m_callee;
  call_link m_link;
  bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> caller) noexcept {
    require_apgas_caller<P>();
    auto& p = m_callee.promise();
    p.m_finish = caller.promise().m_finish;
    p.m_role = promise_base::role::call;
    m_link.caller = &caller.promise();
    p.m_call = &m_link;
    return t_worker->transfer(m_callee);
  }
  T await_resume() {
    if (m_link.error) std::rethrow_exception(std::move(m_link.error));
    return m_callee.promise().take_value();
  }
};

/// @brief Parts of the promise that do not depend on T.
struct promise_common : promise_base {
  [[gnu::always_inline]] static void* operator new(std::size_t bytes) {
    return allocate_frame(bytes);
  }
  [[gnu::always_inline]] static void operator delete(void* p, std::size_t bytes) noexcept {
    deallocate_frame(p, bytes);
  }

  std::suspend_always initial_suspend() const noexcept { return {}; }
  final_awaiter final_suspend() noexcept { return {*this}; }
  void unhandled_exception() noexcept {
    if (m_role != role::call) m_finish->add_exception(std::current_exception());
    else m_call->error = std::current_exception(); // the caller's call_awaiter rethrows it
  }
};

/// @brief A result type stored without a test per co_return: trivially copyable and default
/// constructible (numbers, small structs). The promise holds a T and m_out points at it unless
/// the consumer redirected it (finish_all, async with a result), so co_return is one store.
/// Other types keep an optional, filled only when nobody redirected m_out.
template <class T>
inline constexpr bool k_plain_result =
    std::is_trivially_copyable_v<T>&& std::is_default_constructible_v<T>;

template <class T>
struct promise final : promise_common {
  task<T> get_return_object() noexcept;
  // Not a template: `co_return "text";` for a task<std::string> converts at the call (GCC
  // cannot forward an array through the coroutine's return).
  void return_value(const T& v) { store(v); }
  void return_value(T&& v) { store(std::move(v)); }
  template <class U>
  void store(U&& v) {
    if constexpr (k_plain_result<T>) *m_out = std::forward<U>(v);
    else if (m_out != nullptr) *m_out = std::forward<U>(v);
    else m_value.emplace(std::forward<U>(v));
  }
  T take_value() { // role::call, after a normal end (call_awaiter rethrows the other ends)
    if constexpr (k_plain_result<T>) return m_value;
    else return std::move(*m_value);
  }
  std::conditional_t<k_plain_result<T>, T, std::optional<T>> m_value;
  /// Where the value goes: set by get_return_object (plain results: &m_value), or redirected
  /// by an async with a result slot, finish_all or the root.
  T* m_out = nullptr;
};

template <>
struct promise<void> final : promise_common {
  task<void> get_return_object() noexcept;
  void return_void() const noexcept {}
  void take_value() const noexcept {}
};

template <class T>
task<T> promise<T>::get_return_object() noexcept {
  auto h = std::coroutine_handle<promise<T>>::from_promise(*this);
  m_self = h;
  if constexpr (k_plain_result<T>) m_out = &m_value;
  return task<T>(h);
}
inline task<void> promise<void>::get_return_object() noexcept {
  auto h = std::coroutine_handle<promise<void>>::from_promise(*this);
  m_self = h;
  return task<void>(h);
}

template <class X>
struct is_task : std::false_type {};
template <class T>
struct is_task<task<T>> : std::true_type {};
template <class X>
inline constexpr bool is_task_v = is_task<std::remove_cvref_t<X>>::value;
} // namespace apgas::detail
