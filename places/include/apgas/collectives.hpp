/// @file Collectives: a function run at every place (for_each_place), or its values gathered
/// from every place (at_each_place).
///
///     co_await apgas::for_each_place([](int x) { /* at every place */ }, 7);
///     std::vector<long> loads = co_await apgas::at_each_place([] { return load(); });
///
/// Up to --tree-arity + 1 places (33) the caller sends to every place itself; beyond, each
/// place passes the call on to its children in a tree rooted at the caller (place_tree.hpp),
/// so no place sends or receives more than about --tree-arity messages for it, and it takes
/// O(log P) hops. Exceptions keep their types and the places where they were thrown, either way.
#pragma once

#include "apgas/place.hpp"
#include "apgas/task.hpp"

#include <type_traits>
#include <vector>

namespace apgas {

/// @brief Runs f(args...) once at every place, each time as an activity there, and returns
/// when all of them have ended, with the local asyncs they started: a broadcast. Up to
/// --tree-arity + 1 places the runtime governs them with an SPMD finish (finish_pattern::spmd):
/// each place sends one report and no cleanup follows; f must then start no remote activity
/// of its own outside a finish of its own (a broken promise fails the call with a logic_error,
/// not a wrong answer). Beyond, the call spreads along a tree. Exceptions thrown at the places
/// come back in one multiple_exceptions, each as an activity's failure at its place does (see
/// <apgas/remote_exceptions.hpp>). The arguments are serialized once per place.
template <class F, class... Args>
APGAS_AWAIT_IT task<> for_each_place(F f, Args... args);

/// @brief Runs f(args...) at every place and returns the values, indexed by place. The
/// requests leave together (or spread along a tree, see above), so this takes about one
/// round trip (or O(log P)), not one per place. Each runs as at() runs it (flat, a plain f
/// runs in its place's message handler; otherwise as an activity). The exceptions of the
/// places come back inside one multiple_exceptions, each as at() would rethrow it.
template <class F, class... Args>
requires(!std::is_void_v<remote_result_t<F, Args...>>)
    APGAS_AWAIT_IT task<std::vector<remote_result_t<F, Args...>>> at_each_place(F f, Args... args);

} // namespace apgas

#include "apgas/detail/collective_steps.hpp"
