// The machine as this process sees it (hwloc behind this one interface): how many processing
// units the process may run on, and binding a thread to one of them.
//
// Several places on one node: when the launcher did not bind the ranks (mpiexec --bind-to none,
// which launch/apgasrun uses when places x threads exceed the cores), every place's cpuset is
// the whole machine, and binding worker i to PU i in every place would pile all places' worker
// 0 onto PU 0, and so on. The place's position among the node's places (from the launcher's
// environment: core stays MPI-free) then offsets its workers by local_rank * threads PUs, so
// that places spread over the machine. Places that the launcher bound to cpusets of their own
// are left as they are.
#pragma once

#include <optional>
#include <string>

namespace apgas::detail {

/// @brief This process's position among the places (MPI ranks) of its node.
struct local_placement {
  unsigned rank = 0; ///< 0-based, < size
  unsigned size = 1; ///< places on this node
};

/// @brief Parses a local rank and size given as decimal strings (as launchers export them).
/// @return nothing if either is missing or malformed, size is 0 or rank >= size.
std::optional<local_placement> parse_local_placement(const char* rank, const char* size) noexcept;

/// @brief The placement from the launcher's environment: Open MPI's OMPI_COMM_WORLD_LOCAL_RANK
/// and OMPI_COMM_WORLD_LOCAL_SIZE, else MPICH/Hydra's MPI_LOCALRANKID and MPI_LOCALNRANKS;
/// {0, 1} (alone on the node) when neither is set or valid.
local_placement local_placement_from_env() noexcept;

/// @brief Index (into the cpuset's PUs, in logical order) of the PU that worker `worker` of a
/// place with `threads` workers is bound to. With `shared` (the cpuset is the same for all of
/// the node's places) the place's workers start at PU where.rank * threads; otherwise worker i
/// gets PU i. Always mod `pus`. pre: pus >= 1.
unsigned pin_pu_index(unsigned worker, unsigned threads, unsigned pus, local_placement where,
                      bool shared) noexcept;

/// @brief True if the node runs more workers than it has PUs for them: a place with `threads`
/// workers on a cpuset of `pus` PUs, shared with the node's other places (`where.size` of
/// them, each assumed to run as many workers) when `shared`.
bool workers_exceed_pus(unsigned threads, unsigned pus, local_placement where,
                        bool shared) noexcept;

/// @brief Processing units of the calling process's cpuset. Thread-safety: any thread.
class topology {
public:
  /// @brief The process-wide instance (hwloc topology loaded on first use).
  static topology& instance();
  /// @brief Number of PUs in the process's cpuset (at least 1).
  unsigned pu_count() const noexcept { return m_pus; }
  /// @brief True if the process's cpuset is every PU of the machine, i.e. nobody bound it (so
  /// other places on this node, started the same way, share it).
  bool whole_machine() const noexcept { return m_whole_machine; }
  /// @brief Tells the topology how many workers this place runs, before they start: from then
  /// on bind_this_thread() offsets them by the place's position on the node when the cpuset
  /// is shared with other places (see the top of this file). The runtime calls it.
  void set_place_workers(unsigned threads) noexcept;
  /// @brief workers_exceed_pus() for this process: whether a place of `threads` workers here
  /// shares its cores with other workers (then a spinning worker should yield its core).
  bool oversubscribed(unsigned threads) const noexcept;
  /// @brief Binds the calling thread to PU pin_pu_index(index, ...) of the cpuset (worker
  /// `index` goes to the (index mod pu_count)-th PU when the cpuset is not shared).
  /// @return false if binding is not supported (the thread then runs unbound).
  bool bind_this_thread(unsigned index) const;
  /// @brief One line: the PUs of the cpuset, for diagnostics.
  std::string describe() const;

  topology(const topology&) = delete;
  topology& operator=(const topology&) = delete;
  ~topology();

private:
  topology();
  struct impl;
  impl* m_impl;
  unsigned m_pus = 1;
  bool m_whole_machine = false;
};

} // namespace apgas::detail
