// The machinery of <apgas/team.hpp>: how a collective's values look to the network, the
// buffers each kind of collective keeps while it runs, and the awaitable that starts one and
// suspends its activity until the place's polling completes it (data/src/team.cpp).
#pragma once

#include "apgas/detail/activity.hpp"
#include "apgas/detail/await_required.hpp"
#include "apgas/detail/collective_network.hpp"
#include "apgas/detail/serialization_traits.hpp"
#include "apgas/detail/trace.hpp"
#include "apgas/reductions.hpp"
#include "apgas/task.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <source_location>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace apgas::detail {

/// @brief A team at this place: its handle in the network, its members, this place's rank.
/// Its last copy frees the handle (data/src/team.cpp).
struct team_state;

/// @brief A collective started by an activity of this place and not yet completed: in the
/// place's list for the state dump; done() makes the activity runnable again.
class collective_waiter final : public collective_done {
public:
  collective_waiter(const std::shared_ptr<team_state>& team, const collective_call& call,
                    std::source_location site);
  collective_waiter(const collective_waiter&) = delete;
  collective_waiter& operator=(const collective_waiter&) = delete;

  void done(std::exception_ptr error) noexcept override;
  /// @brief Starts `m_call`; true if it completed inside (a network that completes at once,
  /// or the last member to arrive): the activity goes on without suspending.
  bool start();
  /// @brief Suspends `activity` until the call completes; returns what its worker runs next.
  std::coroutine_handle<> suspend(promise_base& activity);
  void rethrow_if_failed() const {
    if (m_error) [[unlikely]]
      std::rethrow_exception(m_error);
  }
  /// @brief Tracing: records the wait from the suspension (m_since) to now.
  void trace_wait() const noexcept {
    const auto since = std::chrono::duration_cast<std::chrono::nanoseconds>(
        m_since.time_since_epoch()); // the trace's clock is this steady clock
    trace_record(trace_event{since.count(), trace_now(), 0, 0, 0, 0, trace_kind::collective_wait});
  }

  collective_call m_call;
  std::source_location m_site;
  std::chrono::steady_clock::time_point m_since;
  collective_waiter* m_prev = nullptr; ///< in the place's list (under its lock)
  collective_waiter* m_next = nullptr;

private:
  std::shared_ptr<team_state> m_team;
  std::exception_ptr m_error;
  promise_base* m_activity = nullptr;
  bool wait_in_place();
  /// k_started, then k_suspended (the activity waits) and k_done in either order: whichever
  /// comes second makes the activity runnable (acq_rel exchanges: done's error and the
  /// suspension's activity are seen by the other side).
  static constexpr std::uint8_t k_started = 0, k_suspended = 1, k_done = 2;
  std::atomic<std::uint8_t> m_phase{k_started};
  void wake() noexcept;
};

/// @brief The awaitable of a collective: points the call at `Buffers`' memory, starts it, and
/// gives `Buffers::result()` back (R).
template <class R, class Buffers>
class APGAS_AWAIT_IT collective_awaiter {
public:
  collective_awaiter(const std::shared_ptr<team_state>& team, const collective_call& call,
                     std::source_location site, Buffers buffers)
      : m_waiter(team, call, site), m_buffers(std::move(buffers)) {}
  collective_awaiter(const collective_awaiter&) = delete;
  collective_awaiter& operator=(const collective_awaiter&) = delete;

  bool await_ready() {
    m_buffers.prepare(m_waiter.m_call); // here: the awaiter no longer moves
    return m_waiter.start();
  }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> caller) {
    require_apgas_caller<P>();
    return m_waiter.suspend(caller.promise());
  }
  R await_resume() {
    if (g_trace_on && m_waiter.m_since != std::chrono::steady_clock::time_point{}) [[unlikely]]
      m_waiter.trace_wait(); // it suspended (m_since is set then)
    m_waiter.rethrow_if_failed();
    return m_buffers.result();
  }

private:
  collective_waiter m_waiter;
  Buffers m_buffers;
};

// ---- values -----------------------------------------------------------------------------------

/// @brief How the network sees T: a number MPI knows, or bytes.
template <class T>
constexpr element_type element_of() {
  using S = element_type::scalar;
  element_type e;
  e.size = sizeof(T);
  if constexpr (std::is_same_v<T, float>) e.kind = S::f32;
  else if constexpr (std::is_same_v<T, double>) e.kind = S::f64;
  else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    constexpr bool s = std::is_signed_v<T>;
    if constexpr (sizeof(T) == 1) e.kind = s ? S::i8 : S::u8;
    else if constexpr (sizeof(T) == 2) e.kind = s ? S::i16 : S::u16;
    else if constexpr (sizeof(T) == 4) e.kind = s ? S::i32 : S::u32;
    else if constexpr (sizeof(T) == 8) e.kind = s ? S::i64 : S::u64;
  }
  return e;
}

template <class T>
constexpr void require_team_value() {
  static_assert(is_bitwise_v<T>,
                "apgas: a team collective's values must be bitwise (numbers, plain structs, "
                "std::array of them): the network moves their bytes. Serialize other types into "
                "bytes first");
}

/// @brief A collective's element type and operation; `count` elements make one value (a
/// std::array of numbers reduces element by element).
struct reduction_spec {
  element_type type;
  reduce_op op;
  std::size_t count = 1;
};

/// @brief Values moved, not reduced.
template <class T>
constexpr reduction_spec copy_spec() {
  return {element_of<T>(), {}, 1};
}

template <class Op>
inline constexpr bool k_builtin_op =
    std::is_same_v<Op, sum_op> || std::is_same_v<Op, min_op> || std::is_same_v<Op, max_op>;

template <class T>
struct array_of_numbers : std::false_type {};
template <class U, std::size_t N>
struct array_of_numbers<std::array<U, N>>
    : std::bool_constant<element_of<U>().kind != element_type::scalar::bytes> {
  using element = U;
};

/// @brief The reduction `Op` on values of type T: MPI's own for apgas::sum/min/max on numbers
/// (and on std::array of numbers, element by element), else `Op` itself on T's bytes.
template <class T, class Op>
constexpr reduction_spec reduction_spec_of() {
  require_team_value<T>();
  static_assert(std::is_empty_v<Op> && std::is_default_constructible_v<Op>,
                "apgas: a collective's reduction must be a stateless function object "
                "(apgas::sum, apgas::min, apgas::max, or a lambda with [])");
  if constexpr (array_of_numbers<T>::value && k_builtin_op<Op>) {
    using U = typename array_of_numbers<T>::element;
    reduction_spec s = reduction_spec_of<U, Op>();
    s.count = sizeof(T) / sizeof(U);
    return s;
  } else {
    static_assert(std::is_invocable_r_v<T, const Op&, const T&, const T&>,
                  "apgas: a collective's reduction must take two T and return a T");
    reduction_spec s;
    s.type = element_of<T>();
    if constexpr (element_of<T>().kind != element_type::scalar::bytes && k_builtin_op<Op>) {
      if constexpr (std::is_same_v<Op, sum_op>) s.op.op = reduce_op::builtin::sum;
      else if constexpr (std::is_same_v<Op, min_op>) s.op.op = reduce_op::builtin::min;
      else s.op.op = reduce_op::builtin::max;
    } else {
      s.op.combine = &combine_bytes<T, Op>;
      if constexpr (requires { Op::commutative; }) s.op.commutative = Op::commutative;
      else s.op.commutative = k_builtin_op<Op>;
    }
    return s;
  }
}

// ---- buffers, per kind of collective -----------------------------------------------------------

/// @brief The caller's own memory (barrier, broadcast, allreduce of a range in place).
struct no_buffers {
  const void* send = nullptr;
  void* recv = nullptr;
  void prepare(collective_call& c) const noexcept {
    c.send = send;
    c.recv = recv;
  }
  void result() const noexcept {}
};

/// @brief One value in, one out (allreduce, scan).
template <class T>
struct value_buffers {
  T in;
  T out{};
  void prepare(collective_call& c) noexcept {
    c.send = &in;
    c.recv = &out;
  }
  T result() { return out; }
};

/// @brief One value in, one out where `has` says (reduce at its root, exscan but at rank 0).
template <class T>
struct optional_buffers {
  T in;
  bool has;
  T out{};
  void prepare(collective_call& c) noexcept {
    c.send = &in;
    c.recv = &out;
  }
  std::optional<T> result() { return has ? std::optional<T>(out) : std::nullopt; }
};

/// @brief One value in, one per rank out (gather: only at its root; allgather).
template <class T>
struct gathered_values {
  gathered_values(const T& value, std::size_t slots) : in(value), out(slots) {}
  T in;
  std::vector<T> out;
  void prepare(collective_call& c) noexcept {
    c.send = &in;
    c.recv = out.data();
  }
  std::vector<T> result() { return std::move(out); }
};

/// @brief alltoall: blocks in, as many blocks out.
template <class T>
struct exchanged {
  explicit exchanged(std::span<const T> send) : in(send), out(send.size()) {}
  std::span<const T> in;
  std::vector<T> out;
  void prepare(collective_call& c) noexcept {
    c.send = in.data();
    c.recv = out.data();
  }
  std::vector<T> result() { return std::move(out); }
};

/// @brief allgatherv and alltoallv: blocks of any size, with MPI's counts and displacements.
template <class T>
struct varying {
  /// `counts[r]`: the elements rank r sends here.
  explicit varying(const std::vector<long>& counts) {
    int at = 0;
    for (long n : counts) {
      if (n < 0 || n > INT_MAX - at)
        throw std::length_error("apgas: a collective of more than 2^31 - 1 elements");
      recv_counts.push_back(static_cast<int>(n));
      recv_displs.push_back(at);
      at += static_cast<int>(n);
    }
    recv.resize(static_cast<std::size_t>(at));
  }
  /// alltoallv: the blocks to send, one after the other.
  void pack(const std::vector<std::vector<T>>& blocks) {
    int at = 0;
    for (const std::vector<T>& b : blocks) {
      if (b.size() > static_cast<std::size_t>(INT_MAX - at))
        throw std::length_error("apgas: a collective of more than 2^31 - 1 elements");
      send_counts.push_back(static_cast<int>(b.size()));
      send_displs.push_back(at);
      packed.insert(packed.end(), b.begin(), b.end());
      at += static_cast<int>(b.size());
    }
    send = packed.data();
  }
  std::vector<std::vector<T>> split() const {
    std::vector<std::vector<T>> out(recv_counts.size());
    for (std::size_t r = 0; r < out.size(); ++r)
      out[r].assign(recv.begin() + recv_displs[r], recv.begin() + recv_displs[r] + recv_counts[r]);
    return out;
  }
  const T* send = nullptr;
  std::vector<T> packed;
  std::vector<int> send_counts, send_displs;
  std::vector<T> recv;
  std::vector<int> recv_counts, recv_displs;
};

/// @brief The int counts and displacements MPI wants for blocks of `counts` elements one
/// after the other in a buffer of `capacity` elements.
struct block_layout {
  block_layout(std::span<const std::size_t> block_counts, std::size_t capacity) {
    std::size_t at = 0;
    for (std::size_t n : block_counts) {
      if (n > static_cast<std::size_t>(INT_MAX) - at)
        throw std::length_error("apgas: a collective of more than 2^31 - 1 elements");
      counts.push_back(static_cast<int>(n));
      displs.push_back(static_cast<int>(at));
      at += n;
    }
    if (at > capacity)
      throw std::invalid_argument("apgas: alltoallv's counts add up to more than its buffer");
  }
  std::vector<int> counts, displs;
};

/// @brief alltoallv on the caller's buffers, blocks one after the other.
struct flat_varying_buffers {
  const void* send;
  void* recv;
  const block_layout* sending;
  const block_layout* receiving;
  void prepare(collective_call& c) const noexcept {
    c.send = send;
    c.recv = recv;
    c.send_counts = sending->counts.data();
    c.send_displs = sending->displs.data();
    c.recv_counts = receiving->counts.data();
    c.recv_displs = receiving->displs.data();
  }
  void result() const noexcept {}
};

template <class T>
struct varying_buffers {
  varying<T>* v;
  void prepare(collective_call& c) noexcept {
    c.send = v->send;
    c.recv = v->recv.data();
    c.send_counts = v->send_counts.empty() ? nullptr : v->send_counts.data();
    c.send_displs = v->send_displs.empty() ? nullptr : v->send_displs.data();
    c.recv_counts = v->recv_counts.data();
    c.recv_displs = v->recv_displs.data();
  }
  void result() const noexcept {}
};

} // namespace apgas::detail
