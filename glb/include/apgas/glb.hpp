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
/// One GLB run at a time per job; a run may start from any place's activity.
#pragma once

#include "apgas/detail/glb_place.hpp"
#include "apgas/glb_parameters.hpp"
#include "apgas/local_runtime.hpp"
#include "apgas/place.hpp"
#include "apgas/serialization.hpp"
#include "apgas/task.hpp"

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

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

/// @brief The parameters in force: the runtime's options (--glb-n, ...).
parameters default_parameters();

namespace detail {

using apgas::detail::glb::place_base;
using apgas::detail::glb::typed_place;

/// @brief Sets up the run at every place along the start tree: the place's initial bag from
/// Make{}(args...), and its protocol state.
template <class Bag, class Make, class... Args>
struct setup_fn {
  task<> operator()(std::uint64_t run, parameters p, Args... args) const {
    const place_id h = here();
    for (place_id c : apgas::detail::glb::tree_children_of(h, places()))
      co_await async_at(c, setup_fn{}, run, p, args...);
    Bag initial = std::invoke(Make{}, args...);
    apgas::detail::glb::install_place(
        std::make_shared<typed_place<Bag>>(run, p, std::move(initial)));
  }
};

/// @brief Starts the place's first activity at every place, along the start tree.
template <class Bag>
struct start_fn {
  task<> operator()(std::uint64_t run) const {
    for (place_id c : apgas::detail::glb::tree_children_of(here(), places()))
      co_await async_at(c, start_fn{}, run);
    co_await typed_place<Bag>::of(run).start();
  }
};

/// @brief What a subtree of the start tree gives back: its reduced result and its places'
/// statistics.
template <class R>
using subtree_part = std::tuple<R, std::vector<place_stats>>;

/// @brief Reduces the results and gathers the statistics along the start tree, and ends the
/// run at each place (a place where the setup failed gives nothing).
template <class Bag>
struct gather_fn {
  using result_type = typename Bag::result_type;
  task<subtree_part<result_type>> operator()(std::uint64_t run) const {
    const std::vector<place_id> kids = apgas::detail::glb::tree_children_of(here(), places());
    std::vector<std::optional<subtree_part<result_type>>> parts(kids.size());
    co_await finish([&]() -> task<> {
      for (std::size_t i = 0; i < kids.size(); ++i)
        co_await async(
            apgas::detail::at_into<subtree_part<result_type>>(kids[i], parts[i], gather_fn{}, run));
    });
    subtree_part<result_type> mine;
    if (std::shared_ptr<place_base> p = apgas::detail::glb::find_place(run)) {
      auto& place = static_cast<typed_place<Bag>&>(*p);
      std::get<0>(mine) = place.take_result();
      std::get<1>(mine).push_back(place.stats());
      apgas::detail::glb::uninstall_place(run);
    }
    for (auto& part : parts) {
      Bag::reduce(std::get<0>(mine), std::get<0>(*part));
      auto& rows = std::get<1>(*part);
      std::get<1>(mine).insert(std::get<1>(mine).end(), rows.begin(), rows.end());
    }
    co_return mine;
  }
};

/// @brief A new run id, unique in the job (the calling place and a count).
std::uint64_t next_run_id() noexcept;
/// @brief Prints `stats` to stderr if --stats is on (a run whose caller did not take them).
void print_stats_if_asked(const run_stats& stats);

} // namespace detail

/// @brief Runs GLB with parameters `p`: Make{}(args...) makes each place's initial bag (at that
/// place; empty bags are fine, e.g. all but place 0's), every place and worker processes bags
/// until no work is left anywhere, and the places' results are reduced. Make is a function
/// object that captures nothing (it runs at every place) and args are serialized, as for
/// async_at. @return the result and the run's statistics.
/// @throws multiple_exceptions if a bag or Make threw (the run ends cleanly first).
template <class Make, class... Args>
task<outcome<typename std::invoke_result_t<Make&, Args&...>::result_type>>
run_with_stats(parameters p, Make, Args... args) {
  using Bag = std::invoke_result_t<Make&, Args&...>;
  static_assert(bag<Bag>, "apgas::glb::run: Make{}(args...) must return a bag (see "
                          "apgas::glb::bag: process, split, merge, empty, result_type, reduce, "
                          "serializable)");
  apgas::detail::require_stateless<Make>();
  apgas::detail::require_serializable_args<Args...>();
  using result_type = typename Bag::result_type;
  const std::uint64_t run = detail::next_run_id();
  p = p.resolved(places());
  std::exception_ptr failure;
  std::chrono::steady_clock::duration took{};
  try {
    co_await finish([&]() -> task<> {
      co_await async_at(0, detail::setup_fn<Bag, Make, Args...>{}, run, p, args...);
    });
    const auto start = std::chrono::steady_clock::now();
    co_await finish([&]() -> task<> { co_await async_at(0, detail::start_fn<Bag>{}, run); });
    took = std::chrono::steady_clock::now() - start;
  } catch (...) {
    failure = std::current_exception();
  }
  // Also after a failure: every place forgets the run, so that the next one can start.
  auto [value, rows] = co_await at(0, detail::gather_fn<Bag>{}, run);
  if (failure) std::rethrow_exception(failure);
  std::sort(rows.begin(), rows.end(),
            [](const place_stats& a, const place_stats& b) { return a.place < b.place; });
  outcome<result_type> out;
  out.value = std::move(value);
  out.stats.seconds = std::chrono::duration<double>(took).count();
  out.stats.workers = local_runtime::current() != nullptr ? local_runtime::current()->threads() : 1;
  out.stats.params = p;
  out.stats.places = std::move(rows);
  co_return out;
}

/// @brief run_with_stats with the parameters of the runtime's options.
template <class Make, class... Args>
requires(!std::same_as<Make, parameters>) auto run_with_stats(Make make, Args... args) {
  return run_with_stats(default_parameters(), make, std::move(args)...);
}

/// @brief Runs GLB as run_with_stats does and returns the result; prints the statistics table
/// to stderr if --stats is on.
template <class Make, class... Args>
task<typename std::invoke_result_t<Make&, Args&...>::result_type> run(parameters p, Make make,
                                                                      Args... args) {
  auto out = co_await run_with_stats(p, make, std::move(args)...);
  detail::print_stats_if_asked(out.stats);
  co_return std::move(out.value);
}

/// @brief run with the parameters of the runtime's options.
template <class Make, class... Args>
requires(!std::same_as<Make, parameters>) auto run(Make make, Args... args) {
  return run(default_parameters(), make, std::move(args)...);
}

} // namespace apgas::glb
