/// @file Places: here(), places(), and starting work at another place (the collectives
/// for_each_place and at_each_place are in <apgas/collectives.hpp>, included here).
///
///     co_await apgas::async_at(p, [](int x) { ... }, 42);        // governed by our finish
///     int v = co_await apgas::at(p, [](int x) { return x + 1; }, 41);
///
/// The function is a function object that captures nothing (a lambda with []), or a pointer to
/// a free or static member function: the same binary runs at every place, so its type (or its
/// address) names the code; its arguments are serialized (see <apgas/serialization.hpp>). It
/// may return a value or a task (and then suspend).
#pragma once

#include "apgas/detail/function_handle.hpp"
#include "apgas/detail/remote_function.hpp"
#include "apgas/finish.hpp"
#include "apgas/remote_exceptions.hpp"
#include "apgas/serialization.hpp"
#include "apgas/task.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace apgas {

/// @brief The index of a place: 0 .. places()-1.
using place_id = detail::place_id;

/// @brief This place.
place_id here();
/// @brief The number of places.
place_id places();

/// @brief What f(args...) gives back to at() once awaited: R for a function that returns R or
/// task<R>.
template <class F, class... Args>
using remote_result_t = typename detail::remote_result<F, std::decay_t<Args>...>::type;

/// @brief What async_at(p, f, args...) returns: the activity, not sent yet. `co_await` it in
/// the expression that makes it: it refers to the arguments, which are serialized straight into
/// the message when it is awaited (no copy of them is kept in between). Hence
/// `co_await async_at(p, f, x)` compiles, `auto a = async_at(p, f, x); co_await a;` does not,
/// and `co_await std::move(a)` sends what x holds then. Neither copied nor moved.
template <class F, class... Args>
class async_at_call;

/// @brief What at(p, f, args...) returns: the call, not sent yet, awaited as async_at_call is;
/// `co_await` gives its value_type (remote_result_t<F, Args...>).
template <class F, class... Args>
class at_call;

/// @brief Starts f(args...) as an activity at place p, governed by the caller's finish
/// (wherever that finish lives). @throws bad_place if p is not a place.
template <class F, class... Args>
APGAS_AWAIT_IT async_at_call<F, Args...> async_at(place_id p, F f, Args&&... args);

/// @brief async_at of a pointer to a free or static member function: the function is named at p
/// by its code offset (checked against the program's symbol table on both sides). @throws
/// std::invalid_argument if other places cannot find the function (a stripped binary, a
/// function of another shared library), bad_place.
template <class R, class... P, bool NE, class... Args>
APGAS_AWAIT_IT async_at_call<detail::call_by_pointer<R (*)(P...) noexcept(NE)>,
                             detail::function_handle<R (*)(P...) noexcept(NE)>, Args...>
async_at(place_id p, R (*f)(P...) noexcept(NE), Args&&... args);

/// @brief Runs f(args...) at place p and gives its value back; the caller suspends meanwhile
/// (its worker keeps working). An exception at p is rethrown here (as remote<E>, or as a
/// remote_exception: see <apgas/remote_exceptions.hpp>), and nowhere else.
/// Asyncs that f starts are governed by the caller's finish. @throws bad_place.
template <class F, class... Args>
APGAS_AWAIT_IT at_call<F, Args...> at(place_id p, F f, Args&&... args);

/// @brief at of a pointer to a free or static member function (see async_at above).
template <class R, class... P, bool NE, class... Args>
APGAS_AWAIT_IT at_call<detail::call_by_pointer<R (*)(P...) noexcept(NE)>,
                       detail::function_handle<R (*)(P...) noexcept(NE)>, Args...>
at(place_id p, R (*f)(P...) noexcept(NE), Args&&... args);

/// @brief A place that cannot serve the operation (X10's BadPlaceException): a place id that
/// names no place (thrown at the caller, before anything is sent), or a global_ref used away
/// from its home.
class bad_place : public std::out_of_range {
public:
  /// what(): "apgas: place <p> does not exist (places are 0 to <count - 1>)".
  bad_place(place_id p, place_id count);
  /// @brief Place `p` refused, for the reason `what` gives.
  bad_place(place_id p, const std::string& what) : std::out_of_range(what), m_place(p) {}
  /// @brief The place that was named (or where a global_ref was used).
  place_id place() const noexcept { return m_place; }

  // It crosses places whole (see <apgas/remote_exceptions.hpp>).
  friend void apgas_serialize(byte_writer& w, const bad_place& e) {
    serialize_all(w, e.m_place, std::string(e.what()));
  }
  friend bad_place apgas_deserialize(byte_reader& r, std::type_identity<bad_place>) {
    auto [p, what] = deserialize_all<place_id, std::string>(r);
    return bad_place(p, what);
  }

private:
  place_id m_place;
};

} // namespace apgas

#include "apgas/collectives.hpp"
#include "apgas/detail/remote_calls.hpp"
