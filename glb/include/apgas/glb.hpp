/// @file Global load balancing (GLB): irregular work spread over every place and worker by the
/// lifeline protocol (after X10's GLB library and Saraswat et al., "Lifeline-based global load
/// balancing", PPoPP 2011).
///
/// The program gives a bag of work and a way to make each place's initial bag:
///
///     struct countdown {                       // items: the numbers 1..k of each entry
///       using result_type = std::uint64_t;      // what processing items computes
///       std::vector<std::uint64_t> todo;
///       std::size_t process(std::size_t n, std::uint64_t& sum);  // up to n items
///       countdown split();                      // about half of the items, or an empty bag
///       void merge(countdown&& other);          // takes other's items
///       bool empty() const;
///       static void reduce(std::uint64_t& into, const std::uint64_t& from) { into += from; }
///       template <class A> void serialize(A& a) { a & todo; }   // bags travel as loot
///     };
///     struct make_bag {                         // runs at every place: its initial bag
///       countdown operator()(std::uint64_t k) const;
///     };
///     std::uint64_t sum = co_await apgas::glb::run(make_bag{}, k);
///
/// Inside a place, all workers work on the bags: an activity splits its bag for an async when
/// its worker's deque is empty, and the scheduler balances those. Across places, a place out of
/// work tries w random steals, then registers on its z lifelines (a low-degree graph) and goes
/// quiet; places with work feed the places registered on them. One distributed finish detects
/// the end: random steals, refusals and randomly stolen loot are uncounted messages (the thief,
/// waiting for the answer, keeps the finish open), and loot along a lifeline is a counted
/// activity (see apgas/detail/glb_place.hpp for the protocol and the argument). Nothing costs
/// O(places) per steal, and nothing is central but the start and the final reduction, both along
/// a tree. The parameters are runtime options (--glb-n, --glb-w, --glb-l, --glb-z, --glb-m,
/// --glb-tree; see apgas::glb::parameters).
///
/// Checkpoints (--checkpoint DIR, --resume DIR; see apgas/detail/glb_checkpoint.hpp and
/// docs/guide/checkpoint.md) need nothing beyond the bag concept: a checkpoint saves the bags
/// and the results with their serialization, which the concept requires already.
///
/// One GLB run at a time per job; a run may start from any place's activity.
#pragma once

#include "apgas/glb_parameters.hpp"
#include "apgas/serialization.hpp"
#include "apgas/task.hpp"

#include <concepts>
#include <cstddef>
#include <type_traits>

namespace apgas::glb {

/// @brief A splittable bag of work. `process(n, r)` processes up to n items (adding what they
/// compute to r, this worker's result) and returns how many it processed; `split()` takes
/// about half of the items into a new bag (an empty one if the bag cannot be split);
/// `merge(b)` takes b's items; `empty()`. `result_type` is default-constructible (the identity
/// of the reduction) and `reduce(into, from)` is associative and commutative. Both travel:
/// they must be serializable. Optional: `size()`, the items in the bag, for the statistics.
/// Thread-safety: each bag is used by one activity at a time; process() of different bags may
/// run at once on the workers of a place.
template <class B>
concept bag = std::movable<B> && std::default_initializable<B> && serializable<B> &&
    std::default_initializable<typename B::result_type> && serializable<typename B::result_type> &&
    requires(B& b, const B& cb, std::size_t n, typename B::result_type& r,
             const typename B::result_type& cr) {
  { b.process(n, r) } -> std::convertible_to<std::size_t>;
  { b.split() } -> std::same_as<B>;
  b.merge(std::move(b));
  { cb.empty() } -> std::convertible_to<bool>;
  B::reduce(r, cr);
};

/// @brief What processing the bags that Make{}(args...) makes computes: their result_type.
template <class Make, class... Args>
using result_of_t = typename std::invoke_result_t<Make&, Args&...>::result_type;

/// @brief Runs GLB as run_with_stats does and returns the result; prints the statistics table
/// to stderr if --stats is on.
template <class Make, class... Args>
task<result_of_t<Make, Args...>> run(parameters p, Make make, Args... args);

/// @brief run with the parameters of the runtime's options.
template <class Make, class... Args>
requires(!std::same_as<Make, parameters>) task<result_of_t<Make, Args...>> run(Make make,
                                                                               Args... args);

/// @brief What run_with_stats gives back: the result and what each place did.
template <class R>
struct outcome {
  R value{};
  run_stats stats;
  template <class A>
  void serialize(A& a) {
    a& value& stats;
  }
};

/// @brief Runs GLB with parameters `p`: Make{}(args...) makes each place's initial bag (at that
/// place; empty bags are fine, e.g. all but place 0's), every place and worker processes bags
/// until no work is left anywhere, and the places' results are reduced. Make is a function
/// object that captures nothing (it runs at every place) and args are serialized, as for
/// async_at. @return the result and the run's statistics.
/// @throws multiple_exceptions if a bag or Make threw (the run ends cleanly first).
template <class Make, class... Args>
task<outcome<result_of_t<Make, Args...>>> run_with_stats(parameters p, Make make, Args... args);

/// @brief run_with_stats with the parameters of the runtime's options.
template <class Make, class... Args>
requires(!std::same_as<Make, parameters>) task<outcome<result_of_t<Make, Args...>>> run_with_stats(
    Make make, Args... args);

/// @brief The parameters in force: the runtime's options (--glb-n, ...).
parameters default_parameters();

} // namespace apgas::glb

#include "apgas/detail/glb_run.hpp"
