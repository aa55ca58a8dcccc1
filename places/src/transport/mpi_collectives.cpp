// Teams and collectives over MPI (see mpi_collectives.hpp).
//
// A reduction whose operation MPI does not have (a user's function object, or apgas::sum on a
// struct) goes through one MPI_Op of ours whose function finds the operation in an attribute
// of the datatype it is called with: a datatype per (element size, operation), made once. MPI
// gives a user function no other context.
#include "mpi_collectives.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>

namespace apgas::detail {

const char* to_string(collective_kind k) noexcept {
  switch (k) {
  case collective_kind::barrier:
    return "barrier";
  case collective_kind::broadcast:
    return "broadcast";
  case collective_kind::reduce:
    return "reduce";
  case collective_kind::allreduce:
    return "allreduce";
  case collective_kind::scan:
    return "scan";
  case collective_kind::exscan:
    return "exscan";
  case collective_kind::gather:
    return "gather";
  case collective_kind::allgather:
    return "allgather";
  case collective_kind::allgatherv:
    return "allgatherv";
  case collective_kind::alltoall:
    return "alltoall";
  case collective_kind::alltoallv:
    return "alltoallv";
  case collective_kind::neighbour_exchange:
    return "halo exchange";
  }
  return "?";
}

namespace {

/// The attribute of our reduction datatypes that holds their operation (made once, under the
/// network lock of the only MPI transport).
int g_combine_key = MPI_KEYVAL_INVALID;
/// An exception a user's operation threw inside MPI (which cannot carry it), given to the
/// collectives that the next test completes. One for the process, not one per thread: MPI runs
/// the operation inside whichever call makes progress, often another thread's than the one
/// whose test completes the collective. Guarded by the network lock, which every MPI call holds.
std::exception_ptr g_reduce_error;

/// inout[i] = in[i] op inout[i], MPI's order (in holds the lower ranks' part).
extern "C" void apply_user_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  void* value = nullptr;
  int found = 0;
  int size = 0;
  if (MPI_Type_get_attr(*type, g_combine_key, &value, &found) != MPI_SUCCESS || found == 0 ||
      MPI_Type_size(*type, &size) != MPI_SUCCESS)
    return; // cannot happen: only our datatypes come here
  const auto combine = reinterpret_cast<combine_fn>(value);
  auto* a = static_cast<std::byte*>(in);
  auto* b = static_cast<std::byte*>(inout);
  std::byte acc[256];
  std::vector<std::byte> big;
  std::byte* tmp = acc;
  if (static_cast<std::size_t>(size) > sizeof acc) {
    big.resize(static_cast<std::size_t>(size));
    tmp = big.data();
  }
  try {
    for (int i = 0; i < *len; ++i, a += size, b += size) {
      std::memcpy(tmp, a, static_cast<std::size_t>(size));
      combine(tmp, b);
      std::memcpy(b, tmp, static_cast<std::size_t>(size));
    }
  } catch (...) {
    if (!g_reduce_error) g_reduce_error = std::current_exception();
  }
}

MPI_Datatype scalar_type(element_type::scalar k) {
  switch (k) {
  case element_type::scalar::i8:
    return MPI_INT8_T;
  case element_type::scalar::i16:
    return MPI_INT16_T;
  case element_type::scalar::i32:
    return MPI_INT32_T;
  case element_type::scalar::i64:
    return MPI_INT64_T;
  case element_type::scalar::u8:
    return MPI_UINT8_T;
  case element_type::scalar::u16:
    return MPI_UINT16_T;
  case element_type::scalar::u32:
    return MPI_UINT32_T;
  case element_type::scalar::u64:
    return MPI_UINT64_T;
  case element_type::scalar::f32:
    return MPI_FLOAT;
  case element_type::scalar::f64:
    return MPI_DOUBLE;
  case element_type::scalar::bytes:
    break;
  }
  return MPI_DATATYPE_NULL;
}

int as_count(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw std::length_error("apgas: a collective of more than 2^31 - 1 elements");
  return static_cast<int>(n);
}

} // namespace

mpi_collectives::mpi_collectives(MPI_Comm world, spin_lock& net_lock) : m_net_lock(net_lock) {
  auto t = std::make_unique<team_state>();
  t->comm = world;
  int size = 0;
  int rank = 0;
  mpi_check(MPI_Comm_size(world, &size), "MPI_Comm_size");
  mpi_check(MPI_Comm_rank(world, &rank), "MPI_Comm_rank");
  for (int r = 0; r < size; ++r) t->members.push_back(static_cast<place_id>(r));
  t->rank = static_cast<place_id>(rank);
  m_teams.push_back(std::move(t));
  // Groups (clock phases) get a communicator of their own, so that their tags never meet a
  // team's; as many lanes as its tag space holds (MPI promises tags up to at least 32,767).
  mpi_check(MPI_Comm_dup(world, &m_groups), "MPI_Comm_dup");
  void* tag_ub = nullptr;
  int found = 0;
  mpi_check(MPI_Comm_get_attr(m_groups, MPI_TAG_UB, &tag_ub, &found), "MPI_Comm_get_attr");
  const long long max_tag = found != 0 ? *static_cast<int*>(tag_ub) : 32767;
  const long long lanes =
      (max_tag - p2p_collective::k_first_group_tag + 1) / p2p_collective::k_rounds_per_lane;
  m_group_lanes = static_cast<std::uint32_t>(std::clamp<long long>(lanes, 0, 1 << 20));
}

void mpi_collectives::start_group(const group_call& call, collective_done& done) {
  if (call.lane >= m_group_lanes || call.count == 0 || call.my_index >= call.count ||
      call.bytes > p2p_collective::k_max_bytes)
    throw std::logic_error("apgas: a group collective out of range");
  std::lock_guard net(m_net_lock);
  m_small.start(done, [&](p2p_collective& c) { c.begin_group(call, m_groups, done); });
  count_pending_locked();
}

mpi_collectives::~mpi_collectives() {
  // The runtime frees its teams before the transport; what is left (a program's leaked team,
  // our world) is freed here, where MPI is still up.
  m_small.clear(); // their requests before their communicators
  m_exchanges.clear();
  if (mpi_is_finalized()) return;
  if (m_groups != MPI_COMM_NULL) MPI_Comm_free(&m_groups);
  for (auto& t : m_teams)
    if (t != nullptr && t->comm != MPI_COMM_NULL) MPI_Comm_free(&t->comm);
  for (MPI_Datatype& d : m_user_datatypes) MPI_Type_free(&d);
  for (auto& [size, d] : m_byte_types) MPI_Type_free(&d);
  if (m_user_op_commutative != MPI_OP_NULL) MPI_Op_free(&m_user_op_commutative);
  if (m_user_op_ordered != MPI_OP_NULL) MPI_Op_free(&m_user_op_ordered);
}

const mpi_collectives::team_state& mpi_collectives::state(team_handle team) const {
  if (team >= m_teams.size() || m_teams[team] == nullptr)
    throw std::logic_error("apgas: a collective on a team that was freed");
  return *m_teams[team];
}

const std::vector<place_id>& mpi_collectives::members(team_handle team) const {
  std::lock_guard net(m_net_lock);
  return state(team).members;
}

place_id mpi_collectives::rank(team_handle team) const {
  std::lock_guard net(m_net_lock);
  return state(team).rank;
}

std::size_t mpi_collectives::pending() const noexcept {
  return m_pending_count.load(std::memory_order_relaxed); // relaxed: a snapshot
}

MPI_Op mpi_collectives::op_locked(const reduce_op& op) {
  switch (op.op) {
  case reduce_op::builtin::sum:
    return MPI_SUM;
  case reduce_op::builtin::min:
    return MPI_MIN;
  case reduce_op::builtin::max:
    return MPI_MAX;
  case reduce_op::builtin::none:
    break;
  }
  MPI_Op& mine = op.commutative ? m_user_op_commutative : m_user_op_ordered;
  if (mine == MPI_OP_NULL)
    mpi_check(MPI_Op_create(&apply_user_op, op.commutative ? 1 : 0, &mine), "MPI_Op_create");
  return mine;
}

MPI_Datatype mpi_collectives::datatype_locked(const element_type& type, const reduce_op& op) {
  if (op.op == reduce_op::builtin::none && op.combine != nullptr) {
    // A user operation: a datatype of our own that carries it.
    auto [it, made] = m_user_types.try_emplace({type.size, op.combine}, MPI_DATATYPE_NULL);
    if (made) {
      if (g_combine_key == MPI_KEYVAL_INVALID)
        mpi_check(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN,
                                         &g_combine_key, nullptr),
                  "MPI_Type_create_keyval");
      MPI_Datatype d = MPI_DATATYPE_NULL;
      mpi_check(MPI_Type_contiguous(static_cast<int>(type.size), MPI_BYTE, &d),
                "MPI_Type_contiguous");
      mpi_check(MPI_Type_commit(&d), "MPI_Type_commit");
      mpi_check(MPI_Type_set_attr(d, g_combine_key, reinterpret_cast<void*>(op.combine)),
                "MPI_Type_set_attr");
      it->second = d;
      m_user_datatypes.push_back(d);
    }
    return it->second;
  }
  if (type.kind != element_type::scalar::bytes) return scalar_type(type.kind);
  auto [it, made] = m_byte_types.try_emplace(type.size, MPI_DATATYPE_NULL);
  if (made) {
    mpi_check(MPI_Type_contiguous(static_cast<int>(type.size), MPI_BYTE, &it->second),
              "MPI_Type_contiguous");
    mpi_check(MPI_Type_commit(&it->second), "MPI_Type_commit");
  }
  return it->second;
}

void mpi_collectives::start_locked(const collective_call& c, MPI_Datatype type, MPI_Op op,
                                   MPI_Request* request) {
  const MPI_Comm comm = state(c.team).comm;
  const int n = as_count(c.count);
  const int root = static_cast<int>(c.root);
  const void* send = c.send == c.recv ? MPI_IN_PLACE : c.send;
  switch (c.kind) {
  case collective_kind::barrier:
    mpi_check(MPI_Ibarrier(comm, request), "MPI_Ibarrier");
    return;
  case collective_kind::broadcast:
    mpi_check(MPI_Ibcast(c.recv, n, type, root, comm, request), "MPI_Ibcast");
    return;
  case collective_kind::reduce:
    mpi_check(MPI_Ireduce(send, c.recv, n, type, op, root, comm, request), "MPI_Ireduce");
    return;
  case collective_kind::allreduce:
    mpi_check(MPI_Iallreduce(send, c.recv, n, type, op, comm, request), "MPI_Iallreduce");
    return;
  case collective_kind::scan:
    mpi_check(MPI_Iscan(send, c.recv, n, type, op, comm, request), "MPI_Iscan");
    return;
  case collective_kind::exscan:
    mpi_check(MPI_Iexscan(send, c.recv, n, type, op, comm, request), "MPI_Iexscan");
    return;
  case collective_kind::gather:
    mpi_check(MPI_Igather(c.send, n, type, c.recv, n, type, root, comm, request), "MPI_Igather");
    return;
  case collective_kind::allgather:
    mpi_check(MPI_Iallgather(c.send, n, type, c.recv, n, type, comm, request), "MPI_Iallgather");
    return;
  case collective_kind::allgatherv:
    mpi_check(
        MPI_Iallgatherv(c.send, n, type, c.recv, c.recv_counts, c.recv_displs, type, comm, request),
        "MPI_Iallgatherv");
    return;
  case collective_kind::alltoall:
    mpi_check(MPI_Ialltoall(c.send, n, type, c.recv, n, type, comm, request), "MPI_Ialltoall");
    return;
  case collective_kind::alltoallv:
    mpi_check(MPI_Ialltoallv(c.send, c.send_counts, c.send_displs, type, c.recv, c.recv_counts,
                             c.recv_displs, type, comm, request),
              "MPI_Ialltoallv");
    return;
  case collective_kind::neighbour_exchange:
    break; // point to point (start): never here
  }
}

void mpi_collectives::start(const collective_call& call, collective_done& done) {
  std::lock_guard net(m_net_lock);
  const team_state& t = state(call.team);
  if (call.kind == collective_kind::neighbour_exchange) {
    m_exchanges.start(done, [&](neighbour_exchange& e) { e.begin(call, t.comm, done); });
    count_pending_locked();
    return;
  }
  if (p2p_collective::handles(call, static_cast<int>(t.members.size()))) {
    m_small.start(done, [&](p2p_collective& c) {
      c.begin(call, t.comm, static_cast<int>(t.rank), static_cast<int>(t.members.size()), done);
    });
    count_pending_locked();
    return;
  }
  const bool reduces = call.kind == collective_kind::reduce ||
                       call.kind == collective_kind::allreduce ||
                       call.kind == collective_kind::scan || call.kind == collective_kind::exscan;
  const reduce_op op = reduces ? call.op : reduce_op{};
  const MPI_Datatype type = datatype_locked(call.type, op);
  const MPI_Op mpi_op = reduces ? op_locked(op) : MPI_OP_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  start_locked(call, type, mpi_op, &request);
  m_requests.push_back(request);
  m_done.push_back(&done);
  count_pending_locked();
}

void mpi_collectives::test_small_locked() {
  m_small.test();
  m_exchanges.test();
  count_pending_locked();
}

void mpi_collectives::progress() {
  if (!m_net_lock.try_lock()) return; // another thread polls: it completes what is done
  const std::lock_guard held(m_net_lock, std::adopt_lock);
  test_locked();
}

void mpi_collectives::test_locked() {
  if (!m_small.empty() || !m_exchanges.empty()) test_small_locked();
  if (m_requests.empty()) return;
  m_indices.resize(m_requests.size());
  std::vector<MPI_Status> statuses(m_requests.size());
  int count = 0;
  const int rc = MPI_Testsome(static_cast<int>(m_requests.size()), m_requests.data(), &count,
                              m_indices.data(), statuses.data());
  if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) throw_mpi_failed(rc, "MPI_Testsome");
  if (count <= 0) return;
  const std::exception_ptr op_error = std::exchange(g_reduce_error, nullptr);
  for (int k = 0; k < count; ++k) {
    const auto i = static_cast<std::size_t>(m_indices[static_cast<std::size_t>(k)]);
    std::exception_ptr error = op_error;
    if (rc == MPI_ERR_IN_STATUS && statuses[static_cast<std::size_t>(k)].MPI_ERROR != MPI_SUCCESS)
      error = std::make_exception_ptr(
          transport_error("apgas: a collective failed: " +
                          mpi_error_text(statuses[static_cast<std::size_t>(k)].MPI_ERROR)));
    m_done[i]->done(error);
    m_done[i] = nullptr;
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < m_requests.size(); ++i) {
    if (m_done[i] == nullptr) continue;
    m_requests[kept] = m_requests[i];
    m_done[kept] = m_done[i];
    ++kept;
  }
  m_requests.resize(kept);
  m_done.resize(kept);
  count_pending_locked();
}

team_handle mpi_collectives::split(team_handle parent, int color, int key) {
  std::lock_guard net(m_net_lock);
  MPI_Comm comm = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split(state(parent).comm, color < 0 ? MPI_UNDEFINED : color, key, &comm),
            "MPI_Comm_split");
  if (comm == MPI_COMM_NULL) return k_no_team;
  auto t = std::make_unique<team_state>();
  t->comm = comm;
  int size = 0;
  int rank = 0;
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  t->rank = static_cast<place_id>(rank);
  // Its members as places: their ranks in the world team.
  MPI_Group group = MPI_GROUP_NULL;
  MPI_Group world = MPI_GROUP_NULL;
  mpi_check(MPI_Comm_group(comm, &group), "MPI_Comm_group");
  mpi_check(MPI_Comm_group(m_teams[k_world_team]->comm, &world), "MPI_Comm_group");
  std::vector<int> ranks(static_cast<std::size_t>(size));
  std::vector<int> places(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) ranks[static_cast<std::size_t>(r)] = r;
  mpi_check(MPI_Group_translate_ranks(group, size, ranks.data(), world, places.data()),
            "MPI_Group_translate_ranks");
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  for (int p : places) t->members.push_back(static_cast<place_id>(p));
  for (std::size_t h = 1; h < m_teams.size(); ++h)
    if (m_teams[h] == nullptr) {
      m_teams[h] = std::move(t);
      return static_cast<team_handle>(h);
    }
  m_teams.push_back(std::move(t));
  return static_cast<team_handle>(m_teams.size() - 1);
}

void mpi_collectives::free(team_handle team) noexcept {
  if (team == k_world_team) return;
  std::lock_guard net(m_net_lock);
  if (team >= m_teams.size() || m_teams[team] == nullptr) return;
  if (!mpi_is_finalized()) MPI_Comm_free(&m_teams[team]->comm);
  m_teams[team].reset();
}

} // namespace apgas::detail
