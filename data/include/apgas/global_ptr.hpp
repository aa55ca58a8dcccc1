/// @file One-sided get and put: read and write another place's registered memory without
/// running any code there (UPC++'s rget/rput on global pointers, X10's asyncCopy).
///
///     apgas::registered_array<double> cells(1000);          // this place's, reachable from all
///     apgas::global_ptr<double> p = cells.ptr(10);          // send it anywhere
///     double x = co_await apgas::rget(p);                   // from any place
///     co_await apgas::rput(p + 1, 3.5);                     // written there when this returns
///     co_await apgas::rget(p, std::span<double>(buf, 64));  // 64 of them
///
/// A get or a put is MPI RMA on a window of every place's registered memory (passive target:
/// the target's code takes no part). One that MPI completes inside its call (over shared
/// memory) does not suspend the calling activity; otherwise the activity waits, suspended,
/// and the place's polling completes the access. `co_await rput(...)` returns once the bytes
/// are at the target, so a finish that governs the putting activity ends after its puts are
/// visible there. Values are bitwise (they are copied as bytes). Accesses to one place's memory
/// that overlap, from several places at once, are a race, as in MPI.
#pragma once

#include "apgas/detail/collective_network.hpp"
#include "apgas/detail/serialization_traits.hpp"
#include "apgas/detail/trace.hpp"
#include "apgas/place.hpp"
#include "apgas/task.hpp"

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <stdexcept>
#include <type_traits>

namespace apgas {

/// @brief A pointer to a T at some place, into memory registered for one-sided access (see
/// registered_array). Bitwise: send it to any place. Thread-safety: a value.
template <class T>
class global_ptr {
public:
  global_ptr() = default;
  /// @brief The place the memory belongs to.
  place_id where() const noexcept { return m_place; }
  /// @brief True for a default-made pointer.
  bool is_null() const noexcept { return m_address == 0; }
  /// @brief The pointer `n` elements further (in the same registered memory).
  global_ptr operator+(std::ptrdiff_t n) const noexcept {
    return global_ptr(m_place, m_address + static_cast<std::uintptr_t>(n) * sizeof(T));
  }
  /// @brief The memory itself, at its place. @throws std::logic_error elsewhere or if null.
  T* local() const {
    if (is_null() || m_place != apgas::here())
      throw std::logic_error("apgas: a global_ptr used as a local pointer away from its place");
    return reinterpret_cast<T*>(m_address);
  }
  std::uintptr_t address() const noexcept { return m_address; }
  friend bool operator==(const global_ptr&, const global_ptr&) = default;

  /// @brief The pointer to `object` at this place (which must lie in registered memory).
  static global_ptr at_here(T* object) {
    return global_ptr(apgas::here(), reinterpret_cast<std::uintptr_t>(object));
  }

private:
  global_ptr(place_id p, std::uintptr_t a) noexcept : m_place(p), m_address(a) {}
  place_id m_place = 0;
  std::uint32_t m_zero = 0; ///< fills what would be padding (its bytes travel too)
  std::uintptr_t m_address = 0;
};

namespace detail {

/// @brief This place's network for one-sided access. @throws std::logic_error if none.
rma_network& current_rma();
/// @brief Checks an access of `bytes` bytes at `p` (not null, a real place).
void check_access(place_id where, std::uintptr_t address, std::size_t bytes);

/// @brief A get or put that an activity waits for. The access starts before the activity
/// would suspend, and one the network completes inside its start (a copy through shared
/// memory, one place) needs no suspension. Otherwise the polling thread that completes it
/// (done) and the activity that suspends race: whichever comes second resumes the activity.
class rma_waiter final : public collective_done {
public:
  rma_waiter(bool put, place_id target, std::uintptr_t address, void* local, std::size_t bytes)
      : m_put(put), m_target(target), m_address(address), m_local(local), m_bytes(bytes) {}
  rma_waiter(const rma_waiter&) = delete;
  rma_waiter& operator=(const rma_waiter&) = delete;

  void done(std::exception_ptr error) noexcept override;
  /// @brief Starts the access. @return true if it is done already (or failed to start).
  bool start_at_once();
  /// @brief Suspends `activity` until the access is done. pre: start_at_once() gave false.
  std::coroutine_handle<> suspend(promise_base& activity);
  void rethrow_if_failed() const {
    if (m_error) [[unlikely]]
      std::rethrow_exception(m_error);
  }
  /// @brief Tracing: records the wait, if the activity suspended (see suspend).
  void trace_end() const noexcept { m_wait.end(trace_kind::rma_wait, m_target); }

private:
  enum : std::uint8_t { k_started, k_waiting, k_done };
  trace_wait m_wait; ///< begun by suspend() before it publishes the activity
  bool m_put;
  place_id m_target;
  std::uintptr_t m_address;
  void* m_local;
  std::size_t m_bytes;
  std::exception_ptr m_error;         ///< written by done() before m_state becomes done
  promise_base* m_activity = nullptr; ///< written by suspend() before m_state becomes waiting
  std::atomic<std::uint8_t> m_state{k_started};
};

/// @brief The awaitable of rget/rput of a range: the caller's memory is the access's.
class APGAS_AWAIT_IT rma_awaiter {
public:
  rma_awaiter(bool put, place_id target, std::uintptr_t address, void* local, std::size_t bytes)
      : m_waiter(put, target, address, local, bytes) {}
  bool await_ready() { return m_waiter.start_at_once(); }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> caller) {
    require_apgas_caller<P>();
    return m_waiter.suspend(caller.promise());
  }
  void await_resume() const {
    if (g_trace_on) [[unlikely]]
      m_waiter.trace_end();
    m_waiter.rethrow_if_failed();
  }

private:
  rma_waiter m_waiter;
};

/// @brief rget (Get) or rput of one value, which lives in the awaiter: a get's result, a put's
/// copy until the put is done. The base is made first but only takes m_value's address; the
/// access starts in await_ready, once m_value holds its value.
template <class T, bool Get>
class APGAS_AWAIT_IT rma_value_awaiter : public rma_awaiter {
public:
  explicit rma_value_awaiter(global_ptr<T> src) requires Get
      : rma_awaiter(false, src.where(), src.address(), &m_value, sizeof(T)) {}
  rma_value_awaiter(global_ptr<T> dst, const T& value) requires(!Get)
      : rma_awaiter(true, dst.where(), dst.address(), &m_value, sizeof(T)), m_value(value) {}
  auto await_resume() const {
    rma_awaiter::await_resume();
    if constexpr (Get) return m_value;
  }

private:
  T m_value{};
};
template <class T>
using rget_value_awaiter = rma_value_awaiter<T, true>;
template <class T>
using rput_value_awaiter = rma_value_awaiter<T, false>;

template <class T>
constexpr void require_rma_value() {
  static_assert(is_bitwise_v<T>, "apgas: rget/rput copy bytes: the values must be bitwise "
                                 "(numbers, plain structs, arrays of them)");
}

/// @brief Registers memory of this place with the network (detaches it when destroyed).
void attach_memory(void* base, std::size_t bytes);
void detach_memory(void* base) noexcept;

} // namespace detail

/// @brief `n` elements of T at this place, value-initialised, reachable by rget/rput from every
/// place until destroyed. Move-only. Thread-safety: as the memory it holds.
template <class T>
class registered_array {
public:
  explicit registered_array(std::size_t n) : m_size(n), m_data(new T[n == 0 ? 1 : n]()) {
    detail::require_rma_value<T>();
    detail::attach_memory(m_data.get(), sizeof(T) * (n == 0 ? 1 : n));
  }
  registered_array(registered_array&&) noexcept = default;
  registered_array& operator=(registered_array&& other) noexcept {
    if (this != &other) {
      release();
      m_size = other.m_size;
      m_data = std::move(other.m_data);
    }
    return *this;
  }
  ~registered_array() { release(); }

  std::size_t size() const noexcept { return m_size; }
  std::span<T> local() noexcept { return {m_data.get(), m_size}; }
  std::span<const T> local() const noexcept { return {m_data.get(), m_size}; }
  /// @brief The global pointer to element i.
  global_ptr<T> ptr(std::size_t i = 0) const { return global_ptr<T>::at_here(m_data.get() + i); }

private:
  void release() noexcept {
    if (m_data != nullptr) detail::detach_memory(m_data.get());
  }
  std::size_t m_size;
  std::unique_ptr<T[]> m_data;
};

/// @brief Copies `dst.size()` values at `src` (another place's registered memory, or this
/// place's) into `dst`.
template <class T>
APGAS_AWAIT_IT detail::rma_awaiter rget(global_ptr<T> src, std::span<T> dst) {
  detail::require_rma_value<T>();
  detail::check_access(src.where(), src.address(), dst.size_bytes());
  return detail::rma_awaiter(false, src.where(), src.address(), dst.data(), dst.size_bytes());
}
/// @brief The value at `src`.
template <class T>
APGAS_AWAIT_IT detail::rget_value_awaiter<T> rget(global_ptr<T> src) {
  detail::require_rma_value<T>();
  detail::check_access(src.where(), src.address(), sizeof(T));
  return detail::rget_value_awaiter<T>(src);
}
/// @brief Copies `src` to `dst` (registered memory); returns once the values are there.
template <class T>
APGAS_AWAIT_IT detail::rma_awaiter rput(global_ptr<T> dst, std::span<const T> src) {
  detail::require_rma_value<T>();
  detail::check_access(dst.where(), dst.address(), src.size_bytes());
  return detail::rma_awaiter(true, dst.where(), dst.address(), const_cast<T*>(src.data()),
                             src.size_bytes());
}
/// @brief Writes `value` at `dst`; returns once it is there.
template <class T>
APGAS_AWAIT_IT detail::rput_value_awaiter<T> rput(global_ptr<T> dst, const T& value) {
  detail::require_rma_value<T>();
  detail::check_access(dst.where(), dst.address(), sizeof(T));
  return detail::rput_value_awaiter<T>(dst, value);
}

} // namespace apgas
