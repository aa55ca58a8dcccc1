// The only file that talks to hwloc.
#include "apgas/detail/topology.hpp"

#include <fmt/format.h>
#include <hwloc.h>

#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace apgas::detail {

namespace {

std::optional<unsigned> parse_unsigned(const char* text) noexcept {
  if (text == nullptr || *text == '\0') return std::nullopt;
  const char* end = text + std::strlen(text);
  unsigned value = 0;
  const auto [stop, error] = std::from_chars(text, end, value);
  if (error != std::errc{} || stop != end) return std::nullopt;
  return value;
}

/// Open MPI says it left the ranks unbound (mpiexec --bind-to none): then they share whatever
/// cpuset mpiexec had, even one narrower than the machine (taskset, a cgroup).
bool launcher_left_ranks_unbound() noexcept {
  const char* policy = std::getenv("OMPI_MCA_hwloc_base_binding_policy");
  return policy != nullptr && std::strcmp(policy, "none") == 0;
}

} // namespace

std::optional<local_placement> parse_local_placement(const char* rank, const char* size) noexcept {
  const std::optional<unsigned> r = parse_unsigned(rank);
  const std::optional<unsigned> n = parse_unsigned(size);
  if (!r || !n || *n == 0 || *r >= *n) return std::nullopt;
  return local_placement{*r, *n};
}

local_placement local_placement_from_env() noexcept {
  if (const auto ompi = parse_local_placement(std::getenv("OMPI_COMM_WORLD_LOCAL_RANK"),
                                              std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")))
    return *ompi;
  if (const auto hydra =
          parse_local_placement(std::getenv("MPI_LOCALRANKID"), std::getenv("MPI_LOCALNRANKS")))
    return *hydra;
  return {};
}

unsigned pin_pu_index(unsigned worker, unsigned threads, unsigned pus, local_placement where,
                      bool shared) noexcept {
  if (pus == 0) return 0; // pre violated: there is only one answer that is never out of range
  // 64-bit: rank * threads may exceed 32 bits before the modulo.
  const std::uint64_t first =
      shared && where.size > 1 ? std::uint64_t{where.rank} * threads % pus : 0;
  return static_cast<unsigned>((first + worker) % pus);
}

bool workers_exceed_pus(unsigned threads, unsigned pus, local_placement where,
                        bool shared) noexcept {
  // 64-bit: size * threads may exceed 32 bits.
  const std::uint64_t workers = shared ? std::uint64_t{where.size} * threads : threads;
  return workers > pus;
}

struct topology::impl {
  hwloc_topology_t topo = nullptr;
  std::vector<unsigned> pu_os_indices; // PUs of the process cpuset, in logical order
  local_placement where;               // from the environment, fixed for the process
  bool shared = false;                 // the cpuset is shared with the node's other places
  /// Workers of this place (0: not told; no offset). Stored by set_place_workers() before the
  /// scheduler starts its workers, read by them in bind_this_thread(). relaxed is enough:
  /// starting a std::thread synchronises-with the thread's first instruction, so the workers
  /// see the store; the atomic only keeps a call from an unrelated thread free of a data race.
  std::atomic<unsigned> threads{0};
};

topology& topology::instance() {
  static topology t;
  return t;
}

topology::topology() : m_impl(new impl) {
  if (hwloc_topology_init(&m_impl->topo) != 0 || hwloc_topology_load(m_impl->topo) != 0) {
    m_impl->topo = nullptr;
    return;
  }
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  // The process cpuset, as set by mpirun/taskset; fall back to the whole machine.
  if (hwloc_get_cpubind(m_impl->topo, set, HWLOC_CPUBIND_PROCESS) != 0)
    hwloc_bitmap_copy(set, hwloc_topology_get_allowed_cpuset(m_impl->topo));
  const int n = hwloc_get_nbobjs_by_type(m_impl->topo, HWLOC_OBJ_PU);
  for (int i = 0; i < n; ++i) {
    hwloc_obj_t pu = hwloc_get_obj_by_type(m_impl->topo, HWLOC_OBJ_PU, static_cast<unsigned>(i));
    if (pu != nullptr && hwloc_bitmap_isset(set, pu->os_index))
      m_impl->pu_os_indices.push_back(pu->os_index);
  }
  hwloc_bitmap_free(set);
  if (!m_impl->pu_os_indices.empty()) m_pus = static_cast<unsigned>(m_impl->pu_os_indices.size());
  m_whole_machine = n > 0 && m_impl->pu_os_indices.size() == static_cast<std::size_t>(n);
  m_impl->where = local_placement_from_env();
  // Several places on this node, and nobody gave them cpusets of their own.
  m_impl->shared = m_impl->where.size > 1 && (m_whole_machine || launcher_left_ranks_unbound());
}

bool topology::oversubscribed(unsigned threads) const noexcept {
  return workers_exceed_pus(threads, m_pus, m_impl->where, m_impl->shared);
}

void topology::set_place_workers(unsigned threads) noexcept {
  m_impl->threads.store(threads, std::memory_order_relaxed); // relaxed: see impl::threads
}

topology::~topology() {
  if (m_impl->topo != nullptr) hwloc_topology_destroy(m_impl->topo);
  delete m_impl;
}

bool topology::bind_this_thread(unsigned index) const {
  if (m_impl->topo == nullptr || m_impl->pu_os_indices.empty()) return false;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  const unsigned pu =
      pin_pu_index(index, m_impl->threads.load(std::memory_order_relaxed), // relaxed: see impl
                   m_pus, m_impl->where, m_impl->shared);
  hwloc_bitmap_only(set, m_impl->pu_os_indices[pu]);
  const bool ok = hwloc_set_cpubind(m_impl->topo, set, HWLOC_CPUBIND_THREAD) == 0;
  hwloc_bitmap_free(set);
  return ok;
}

std::string topology::describe() const {
  std::string s = fmt::format("{} PU(s):", m_pus);
  for (unsigned os : m_impl->pu_os_indices) s += fmt::format(" {}", os);
  if (m_impl->shared) {
    // relaxed: see impl::threads.
    const unsigned threads = m_impl->threads.load(std::memory_order_relaxed);
    s += fmt::format(" (shared by {} places on this node: place {}'s workers start at PU #{})",
                     m_impl->where.size, m_impl->where.rank,
                     pin_pu_index(0, threads, m_pus, m_impl->where, true));
  }
  return s;
}

} // namespace apgas::detail
