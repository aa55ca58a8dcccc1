// How apgas::glb::run (<apgas/glb.hpp>) runs: along the start tree (place h starts 3h+1..3h+3),
// each place's initial bag and protocol state are set up, its first activity started, and at
// the end the results reduced and the statistics gathered. The protocol itself is
// glb_place.hpp's.
#pragma once

#include "apgas/detail/glb_checkpoint.hpp"
#include "apgas/detail/glb_place.hpp"
#include "apgas/glb.hpp"
#include "apgas/glb_parameters.hpp"
#include "apgas/local_runtime.hpp"
#include "apgas/place.hpp"
#include "apgas/serialization.hpp"
#include "apgas/task.hpp"

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace apgas::glb::detail {

using apgas::detail::glb::place_base;
using apgas::detail::glb::typed_place;

/// @brief Sets up the run at every place along the start tree: the place's initial bag from
/// Make{}(args...), or, on a resume, its bags and result from the checkpoint; and its
/// protocol state.
template <class Bag, class Make, class... Args>
struct setup_fn {
  task<> operator()(std::uint64_t run, parameters p, std::optional<store::found> resume,
                    Args... args) const {
    const place_id h = here();
    for (place_id c : apgas::detail::glb::tree_children_of(h, places()))
      co_await async_at(c, setup_fn{}, run, p, resume, args...);
    std::vector<Bag> initial;
    std::optional<typename Bag::result_type> result;
    if (resume) {
      load_parts(*resume, initial, result.emplace());
    } else {
      initial.push_back(std::invoke(Make{}, args...));
    }
    apgas::detail::glb::install_place(
        std::make_shared<typed_place<Bag>>(run, p, std::move(initial), std::move(result)));
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
/// @brief The count in a run id: the run's number among the calling place's runs.
inline constexpr std::uint64_t k_run_count_mask = (std::uint64_t{1} << 40) - 1;
/// @brief Prints `stats` to stderr if --stats is on (a run whose caller did not take them).
void print_stats_if_asked(const run_stats& stats);

} // namespace apgas::glb::detail

namespace apgas::glb {

template <class Make, class... Args>
task<outcome<result_of_t<Make, Args...>>> run_with_stats(parameters p, Make, Args... args) {
  using Bag = std::invoke_result_t<Make&, Args&...>;
  static_assert(bag<Bag>, "apgas::glb::run: Make{}(args...) must return a bag (see "
                          "apgas::glb::bag: process, split, merge, empty, result_type, reduce, "
                          "serializable)");
  apgas::detail::require_function_object<Make>();
  apgas::detail::require_serializable_args<Args...>();
  using result_type = typename Bag::result_type;
  const std::uint64_t run = detail::next_run_id();
  p = p.resolved(places());
  // What the run is, for its checkpoints: its types and its arguments, serialized (padding
  // as zeros).
  byte_writer arg_bytes;
  apgas::detail::serialize_identity_all(arg_bytes, args...);
  const detail::checkpoint_plan plan = detail::plan_checkpoints(
      p, run & detail::k_run_count_mask,
      detail::type_name(typeid(Bag)) + " made by " + detail::type_name(typeid(Make)),
      arg_bytes.bytes());
  using clock = std::chrono::steady_clock;
  std::exception_ptr failure;
  clock::duration took{};
  clock::duration setup_took{};
  detail::checkpoint_tally tally;
  try {
    const auto setup_start = clock::now();
    co_await finish([&]() -> task<> {
      co_await async_at(0, detail::setup_fn<Bag, Make, Args...>{}, run, p, plan.resume, args...);
    });
    setup_took = clock::now() - setup_start;
    const auto start = clock::now();
    if (plan.dir.empty()) {
      co_await finish([&]() -> task<> { co_await async_at(0, detail::start_fn<Bag>{}, run); });
    } else {
      co_await detail::work_with_checkpoints<Bag, detail::start_fn<Bag>>(run, plan, tally);
    }
    took = clock::now() - start;
  } catch (...) {
    failure = detail::plain_checkpoint_error(std::current_exception());
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
  out.stats.checkpoints = tally.taken;
  out.stats.checkpoint_pause_seconds = tally.pause_seconds;
  out.stats.checkpoint_write_seconds = tally.write_seconds;
  out.stats.checkpoint_bytes = tally.bytes;
  if (plan.resume) {
    out.stats.resumed_from = plan.resume->path;
    out.stats.resume_seconds = std::chrono::duration<double>(setup_took).count();
  }
  co_return out;
}

template <class Make, class... Args>
requires(!std::same_as<Make, parameters>) task<outcome<result_of_t<Make, Args...>>> run_with_stats(
    Make make, Args... args) {
  return run_with_stats(default_parameters(), make, std::move(args)...);
}

template <class Make, class... Args>
task<result_of_t<Make, Args...>> run(parameters p, Make make, Args... args) {
  auto out = co_await run_with_stats(p, make, std::move(args)...);
  detail::print_stats_if_asked(out.stats);
  co_return std::move(out.value);
}

template <class Make, class... Args>
requires(!std::same_as<Make, parameters>) task<result_of_t<Make, Args...>> run(Make make,
                                                                               Args... args) {
  return run(default_parameters(), make, std::move(args)...);
}

} // namespace apgas::glb
