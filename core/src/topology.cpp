// The only file that talks to hwloc.
#include "apgas/detail/topology.hpp"

#include <hwloc.h>

#include <fmt/format.h>

#include <cstdlib>
#include <vector>

namespace apgas::detail {

struct topology::impl {
  hwloc_topology_t topo = nullptr;
  std::vector<unsigned> pu_os_indices; // PUs of the process cpuset, in logical order
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
}

topology::~topology() {
  if (m_impl->topo != nullptr) hwloc_topology_destroy(m_impl->topo);
  delete m_impl;
}

bool topology::bind_this_thread(unsigned index) const {
  if (m_impl->topo == nullptr || m_impl->pu_os_indices.empty()) return false;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  hwloc_bitmap_only(set, m_impl->pu_os_indices[index % m_impl->pu_os_indices.size()]);
  const bool ok = hwloc_set_cpubind(m_impl->topo, set, HWLOC_CPUBIND_THREAD) == 0;
  hwloc_bitmap_free(set);
  return ok;
}

std::string topology::describe() const {
  std::string s = fmt::format("{} PU(s):", m_pus);
  for (unsigned os : m_impl->pu_os_indices) s += fmt::format(" {}", os);
  return s;
}

} // namespace apgas::detail
