/// @file GLB's knobs and what a run reports: the parameters of the lifeline protocol (from the
/// options table: --glb-n, --glb-w, --glb-l, --glb-z, --glb-m, --glb-tree) and the statistics
/// of a run, per place. See <apgas/glb.hpp>.
#pragma once

#include "apgas/options.hpp"
#include "apgas/serialization.hpp"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace apgas::glb {

/// @brief The lifeline protocol's parameters (X10 GLB's n, w, l, z, m, named in each field's
/// comment). The defaults are the options table's.
struct parameters {
  /// n: items a bag processes (one process() call) between two looks at steal requests.
  unsigned items_per_batch = options{}.glb_n;
  /// w: random steal attempts of a place that ran out of work before it waits on its lifelines
  /// (0: as many as it has lifelines, lifeline_count).
  unsigned random_steals = options{}.glb_w;
  /// l: base of the lifeline graph (a cyclic hypercube: place ids as digits in base l).
  unsigned lifeline_base = options{}.glb_l;
  /// z: lifelines per place (0: the smallest z with l^z >= places).
  unsigned lifeline_count = options{}.glb_z;
  /// m: random victims a place draws at the start of a run; its steals pick among them.
  unsigned random_victims = options{}.glb_m;
  /// Places without work at the start wait on a tree (place h feeds 3h+1 .. 3h+3) besides
  /// their lifelines: work from place 0 reaches P places in log3 P hops.
  bool tree = options{}.glb_tree;
  /// Checkpoints: written into this directory (shared by all places) every
  /// checkpoint_every seconds; empty: none (--checkpoint, --checkpoint-every).
  std::string checkpoint_dir = options{}.checkpoint;
  double checkpoint_every = options{}.checkpoint_every;
  /// Start from the newest complete checkpoint in this directory; empty: from Make. From
  /// --resume, it applies to the run of the job whose number the checkpoint was written by
  /// (the first GLB run, as a rule); set here, to this run. Either way the checkpoint must be
  /// of this computation (the bag's and Make's types and the run's arguments): else
  /// checkpoint_error.
  std::string resume_from = options{}.resume;

  /// @brief The options' values (--glb-n etc.).
  static parameters from(const options& o) noexcept;
  /// @brief The values in force at `places` places: random_steals and lifeline_count
  /// resolved, lifeline_base at least 2.
  parameters resolved(std::uint32_t places) const noexcept;

  template <class A>
  void serialize(A& a) {
    a& items_per_batch& random_steals& lifeline_base& lifeline_count& random_victims& tree&
        checkpoint_dir& checkpoint_every& resume_from;
  }
};

/// @brief What one place did in a run. Counts are of this place's own actions: a steal it
/// attempted, a request it received, loot it sent or received.
struct place_stats {
  std::uint32_t place = 0;
  std::uint64_t items = 0;                  ///< items its bags processed
  std::uint64_t steals_attempted = 0;       ///< random steal requests it sent
  std::uint64_t steals_successful = 0;      ///< of those, answered with loot
  std::uint64_t steals_received = 0;        ///< random steal requests that reached it
  std::uint64_t steals_served = 0;          ///< of those, answered with loot
  std::uint64_t lifeline_requests_sent = 0; ///< registrations on its lifelines (and tree parent)
  std::uint64_t lifeline_requests_received = 0; ///< registrations of other places on it
  std::uint64_t lifeline_activations = 0;       ///< loot that reached it along a lifeline (counted)
  std::uint64_t lifeline_loot_sent = 0;         ///< loot it sent along a lifeline
  std::uint64_t loot_sent_items = 0;            ///< items in all loot it sent (bags with size())
  std::uint64_t loot_sent_bytes = 0;
  std::uint64_t loot_received_items = 0;
  std::uint64_t loot_received_bytes = 0;
  std::uint64_t local_splits = 0; ///< bags split off for the place's other workers
  double busy_seconds = 0;        ///< while it had work (the run's start to its end)
  double idle_seconds = 0;        ///< while it had none

  place_stats& operator+=(const place_stats& o) noexcept;
};
static_assert(std::is_trivially_copyable_v<place_stats>); // crosses places byte for byte

/// @brief What a run did: its time and each place's statistics (indexed by place).
struct run_stats {
  double seconds = 0;                  ///< the run at place 0, from its start to its end
  std::uint32_t workers = 0;           ///< worker threads per place (place 0's)
  parameters params;                   ///< resolved for the run's places
  std::vector<place_stats> places;     ///< one per place, in place order
  std::uint64_t checkpoints = 0;       ///< checkpoints written (--checkpoint)
  double checkpoint_pause_seconds = 0; ///< all of them: the places frozen
  double checkpoint_write_seconds = 0; ///< all of them: parts and manifest written, after thaw
  std::uint64_t checkpoint_bytes = 0;  ///< the newest checkpoint's size
  std::string resumed_from;            ///< the checkpoint the run resumed from (--resume), or ""
  double resume_seconds = 0;           ///< reading and checking it, and setting up the places

  /// @brief The sum over places (place: the number of places).
  place_stats total() const noexcept;
  /// @brief Items of the busiest place over the mean (1.0: perfectly balanced).
  double imbalance() const noexcept;
  /// @brief One line per place and a total: what --stats prints.
  std::string table() const;

  template <class A>
  void serialize(A& a) {
    a& seconds& workers& params& places& checkpoints& checkpoint_pause_seconds&
        checkpoint_write_seconds& checkpoint_bytes& resumed_from& resume_seconds;
  }
};

} // namespace apgas::glb
