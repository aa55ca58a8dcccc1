// How the collectives of <apgas/collectives.hpp> run: flat (the caller sends to every place)
// or along the tree of the places rooted at the caller, each place passing the call on to its
// children (for_each_place) or gathering its subtree's values for its parent (at_each_place).
#pragma once

#include "apgas/collectives.hpp"
#include "apgas/detail/active_messages.hpp"
#include "apgas/detail/code_registry.hpp"
#include "apgas/detail/exception_codec.hpp"
#include "apgas/detail/remote_bodies.hpp"
#include "apgas/detail/remote_calls.hpp"
#include "apgas/exceptions.hpp"
#include "apgas/place.hpp"

#include <atomic>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace apgas::detail {

/// @brief The children of this place in the tree of the places rooted at `root`.
inline std::vector<place_id> tree_children(place_id root) {
  std::vector<place_id> children;
  active_messages::current().tree(root).for_each_child(here(),
                                                       [&](place_id c) { children.push_back(c); });
  return children;
}

/// @brief for_each_place at one place of a tree: passes the call on to its children, then
/// runs it here (an exception here is this activity's, which the finish names by place).
template <class F, class... Args>
struct broadcast_step {
  task<> operator()(place_id root, Args... args) const {
    for (place_id child : tree_children(root))
      co_await async_at(child, broadcast_step{}, root, args...);
    if constexpr (is_task_v<std::invoke_result_t<F&, Args&...>>) co_await F{}(args...);
    else F{}(args...);
  }
};

/// @brief What at_each_place gathers from a place: the place, and its value or its error (as
/// exception_codec.hpp writes it; no bytes but the empty vector's count when there is none).
template <class R>
using gathered = std::tuple<place_id, std::optional<R>, std::vector<std::byte>>;

/// @brief co_await: the values of each child's subtree, one `at` of Step per child, all in
/// flight at once, the caller suspended once until every reply is in. Unlike an `at` per child
/// under a finish of their own, this opens no finish here: the children's steps run under the
/// caller's finish, whose reports go up the same tree, so a gather takes two hops per level.
template <class R, class Step, class... Args>
class gather_children {
public:
  gather_children(std::vector<place_id> children, place_id root, std::tuple<Args...> args)
      : m_children(std::move(children)), m_root(root), m_args(std::move(args)),
        m_sinks(m_children.size()), m_parts(m_children.size()) {}
  gather_children(const gather_children&) = delete;
  gather_children& operator=(const gather_children&) = delete;

  bool await_ready() const noexcept { return m_children.empty(); }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> caller) {
    require_apgas_caller<P>();
    active_messages& e = active_messages::current();
    m_caller = &caller.promise();
    finish_state& f = *m_caller->m_finish;
    constexpr auto fn = &make_at_activity<Step, place_id, Args...>;
    (void)registered_entry<fn, code_kind::at>::value;
    // Every request is serialized and counted before any leaves: an error then sends nothing.
    std::vector<std::vector<std::byte>> requests(m_children.size());
    for (std::size_t i = 0; i < m_children.size(); ++i) {
      std::vector<std::byte>& bytes = e.start_at(f, fn);
      byte_writer w(bytes);
      std::apply([&](const auto&... a) { serialize_all(w, m_root, a...); }, m_args);
      requests[i] = bytes; // (the thread's message buffer is reused by the next start_at)
      e.record_send(f, m_children[i]);
      m_sinks[i] = sink{this, i};
    }
    // relaxed: the sends below publish it (each reply comes after its request).
    m_left.store(m_children.size(), std::memory_order_relaxed);
    const std::coroutine_handle<> next = t_worker->suspend_for_external();
    for (std::size_t i = 0; i < m_children.size(); ++i)
      e.finish_at(m_children[i], requests[i], &m_sinks[i]); // after the last, `this` may run
    return next;
  }
  /// The values of every child's subtree; a child whose `at` failed (it could not even run its
  /// step) is one entry with its error.
  std::vector<gathered<R>> await_resume() {
    std::vector<gathered<R>> all;
    for (std::size_t i = 0; i < m_parts.size(); ++i) {
      if (m_parts[i].error)
        all.emplace_back(m_children[i], std::nullopt, encode_exception(m_parts[i].error, here()));
      for (auto& g : m_parts[i].values) all.push_back(std::move(g));
    }
    return all;
  }

private:
  struct part {
    std::vector<gathered<R>> values;
    std::exception_ptr error;
  };
  struct sink final : reply_sink {
    gather_children* owner = nullptr;
    std::size_t index = 0;
    sink() = default;
    sink(gather_children* o, std::size_t i) : owner(o), index(i) {}
    void on_reply(bool ok, std::span<const std::byte> payload) override {
      owner->on_reply_of(index, ok, payload);
    }
  };
  void on_reply_of(std::size_t i, bool ok, std::span<const std::byte> payload) {
    part& p = m_parts[i];
    active_messages& messages = active_messages::current();
    if (!ok) {
      p.error = messages.read_error_reply(payload);
    } else {
      try {
        byte_reader r(payload);
        p.values = deserialize<std::vector<gathered<R>>>(r);
      } catch (...) {
        p.error = std::current_exception();
      }
    }
    // acq_rel: the last reply sees the others' parts, and the resumed caller the last one's.
    if (m_left.fetch_sub(1, std::memory_order_acq_rel) == 1) messages.resume(*m_caller);
  }

  std::vector<place_id> m_children;
  place_id m_root;
  std::tuple<Args...> m_args;
  std::vector<sink> m_sinks;
  std::vector<part> m_parts;
  std::atomic<std::size_t> m_left{0};
  promise_base* m_caller = nullptr;
};

/// @brief at_each_place at one place of a tree: the values of its subtree, its own first.
/// Never throws for a place's failure: the error travels as a value, with the place.
template <class R, class F, class... Args>
struct gather_step {
  task<std::vector<gathered<R>>> operator()(place_id root, Args... args) const {
    std::vector<gathered<R>> all(1);
    std::get<0>(all[0]) = here();
    try {
      if constexpr (is_task_v<std::invoke_result_t<F&, Args&...>>)
        std::get<1>(all[0]).emplace(co_await F{}(args...));
      else std::get<1>(all[0]).emplace(F{}(args...));
    } catch (...) {
      std::get<2>(all[0]) = encode_exception(std::current_exception(), here());
    }
    for (auto& g : co_await gather_children<R, gather_step, Args...>(tree_children(root), root,
                                                                     std::tuple(args...)))
      all.push_back(std::move(g));
    co_return all;
  }
};

/// @brief at_each_place's part for one place (flat): its value, where the caller reads it.
template <class R, class F, class... Args>
task<> at_into(place_id p, std::optional<R>& out, F f, const Args&... args) {
  out.emplace(co_await at(p, f, args...));
}

} // namespace apgas::detail

namespace apgas {

template <class F, class... Args>
task<> for_each_place(F f, Args... args) {
  if constexpr (detail::is_function_pointer_v<F>) {
    // Sent as call_by_pointer, as async_at sends it (see function_handle.hpp).
    co_await for_each_place(detail::call_by_pointer<F>{}, detail::function_handle<F>::of(f),
                            std::move(args)...);
  } else {
    detail::require_stateless<F>();
    detail::require_serializable_args<Args...>();
    if (detail::active_messages::current().tree(here()).flat()) {
      co_await finish(finish_pattern::spmd, [&]() -> task<> {
        for (place_id p = 0; p < places(); ++p) co_await async_at(p, f, args...);
      });
    } else {
      co_await finish([&]() -> task<> {
        co_await async(detail::broadcast_step<F, Args...>{}(here(), args...));
      });
    }
  }
}

template <class F, class... Args>
requires(!std::is_void_v<remote_result_t<F, Args...>>)
    task<std::vector<remote_result_t<F, Args...>>> at_each_place(F f, Args... args) {
  if constexpr (detail::is_function_pointer_v<F>) {
    // Sent as call_by_pointer, as at sends it (see function_handle.hpp).
    return at_each_place(detail::call_by_pointer<F>{}, detail::function_handle<F>::of(f),
                         std::move(args)...);
  } else {
    detail::require_stateless<F>();
    detail::require_serializable_args<Args...>();
    using R = remote_result_t<F, Args...>;
    // The coroutine is a lambda so that the checks above come first.
    return [](F fn, Args... a) -> task<std::vector<R>> {
      std::vector<std::optional<R>> slots(places());
      if (detail::active_messages::current().tree(here()).flat()) {
        co_await finish([&]() -> task<> {
          for (place_id p = 0; p < places(); ++p)
            co_await async(detail::at_into<R>(p, slots[p], fn, a...));
        });
      } else {
        auto all = co_await detail::gather_step<R, F, Args...>{}(here(), a...);
        std::vector<std::exception_ptr> errors;
        for (auto& [p, value, error] : all) {
          if (value) slots[p] = std::move(*value);
          else errors.push_back(detail::decode_exception(error, places()));
        }
        if (!errors.empty()) throw multiple_exceptions(std::move(errors));
      }
      std::vector<R> values;
      values.reserve(slots.size());
      for (std::optional<R>& v : slots) values.push_back(std::move(*v));
      co_return values;
    }(f, std::move(args)...);
  }
}

/// @brief at_each_place of a function that returns nothing: refused, with a message that says
/// what to use instead.
template <class F, class... Args>
requires std::is_void_v<remote_result_t<F, Args...>> task<> at_each_place(F, Args...) {
  static_assert(!std::is_void_v<remote_result_t<F, Args...>>,
                "apgas: at_each_place gathers values; for a function that returns none, use "
                "for_each_place");
  co_return;
}

} // namespace apgas
