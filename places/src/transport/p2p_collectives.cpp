// Small collectives over point-to-point messages (see p2p_collectives.hpp).
#include "p2p_collectives.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

namespace apgas::detail {

namespace {

template <class T, class Op>
void apply_each(std::byte* out, const std::byte* a, const std::byte* b, std::size_t n, Op op) {
  // Through memcpy: the buffers are bytes, maybe unaligned; the loop still vectorizes.
  for (std::size_t i = 0; i < n; ++i) {
    T x;
    T y;
    std::memcpy(&x, a + i * sizeof(T), sizeof(T));
    std::memcpy(&y, b + i * sizeof(T), sizeof(T));
    const T r = op(x, y);
    std::memcpy(out + i * sizeof(T), &r, sizeof(T));
  }
}

template <class T>
void apply_builtin(reduce_op::builtin op, std::byte* out, const std::byte* a, const std::byte* b,
                   std::size_t n) {
  switch (op) { // outside the loop, which then vectorizes
  case reduce_op::builtin::sum:
    return apply_each<T>(out, a, b, n, [](T x, T y) { return static_cast<T>(x + y); });
  case reduce_op::builtin::min:
    return apply_each<T>(out, a, b, n, [](T x, T y) { return std::min(x, y); });
  case reduce_op::builtin::max:
    return apply_each<T>(out, a, b, n, [](T x, T y) { return std::max(x, y); });
  case reduce_op::builtin::none:
    return;
  }
}

/// out[i] = a[i] op b[i] for MPI's built-in operations (commutative: the order is free); out
/// may be a.
void apply_builtin(element_type::scalar kind, reduce_op::builtin op, std::byte* out,
                   const std::byte* a, const std::byte* b, std::size_t n) {
  using k = element_type::scalar;
  switch (kind) {
  case k::i8:
    return apply_builtin<std::int8_t>(op, out, a, b, n);
  case k::i16:
    return apply_builtin<std::int16_t>(op, out, a, b, n);
  case k::i32:
    return apply_builtin<std::int32_t>(op, out, a, b, n);
  case k::i64:
    return apply_builtin<std::int64_t>(op, out, a, b, n);
  case k::u8:
    return apply_builtin<std::uint8_t>(op, out, a, b, n);
  case k::u16:
    return apply_builtin<std::uint16_t>(op, out, a, b, n);
  case k::u32:
    return apply_builtin<std::uint32_t>(op, out, a, b, n);
  case k::u64:
    return apply_builtin<std::uint64_t>(op, out, a, b, n);
  case k::f32:
    return apply_builtin<float>(op, out, a, b, n);
  case k::f64:
    return apply_builtin<double>(op, out, a, b, n);
  case k::bytes:
    return;
  }
}

} // namespace

bool p2p_collective::handles(const collective_call& c, int size) noexcept {
  if (c.kind == collective_kind::barrier) return true;
  if (c.kind != collective_kind::allreduce) return false;
  if (c.op.op == reduce_op::builtin::none && c.op.combine == nullptr) return false;
  return size == 1 || c.count * c.type.size <= k_max_bytes || uses_ring(c, size);
}

bool p2p_collective::uses_ring(const collective_call& c, int size) noexcept {
  // Built-in operations only: the ring combines a block's values in an order that starts
  // past its owner, which only a commutative operation allows.
  return c.kind == collective_kind::allreduce && c.op.op != reduce_op::builtin::none && size > 1 &&
         c.count * c.type.size > k_max_bytes && c.count >= static_cast<std::size_t>(size);
}

void p2p_collective::begin_group(const group_call& g, MPI_Comm comm, collective_done& done) {
  collective_call c;
  c.kind = collective_kind::allreduce;
  c.send = g.value;
  c.recv = g.value;
  c.count = 1;
  c.type.size = static_cast<std::uint32_t>(g.bytes);
  c.op.combine = g.combine;
  m_used_bytes = g.used_bytes;
  m_empty_value = g.empty_value;
  begin(c, comm, static_cast<int>(g.my_index), static_cast<int>(g.count), done, g.members,
        k_first_group_tag + static_cast<int>(g.lane) * k_rounds_per_lane);
}

void p2p_collective::begin(const collective_call& c, MPI_Comm comm, int rank, int size,
                           collective_done& done, const place_id* members, int first_tag) {
  if (members == nullptr) { // a team's: the whole value
    m_used_bytes = nullptr;
    m_empty_value = nullptr;
  }
  m_members = members;
  m_first_tag = first_tag;
  m_call = c;
  m_comm = comm;
  m_rank = rank;
  m_size = size;
  m_done = &done;
  m_extra = 0;
  m_doubled = 1;
  m_virtual = 0;
  m_distance = 1;
  m_round = 0;
  m_step = step::finished;
  m_bytes = 0;
  m_error = nullptr;
  // m_incoming keeps its capacity from the collectives before: no allocation per call.
  if (c.kind == collective_kind::allreduce && uses_ring(c, size)) {
    // No copy of the value into recv: the first round sends this member's block from send,
    // and every other block is first written by its combination (send's block op the
    // incoming one), so each byte of send is read once.
    m_bytes = c.count * c.type.size;
    m_incoming.resize(block_bytes(0)); // block 0 is the largest
    m_step = step::ring_reduce;
    start_step();
    return;
  }
  if (c.kind == collective_kind::allreduce) {
    m_bytes = c.count * c.type.size;
    if (c.send != c.recv) std::memcpy(c.recv, c.send, m_bytes);
    m_incoming.resize(m_bytes);
    m_doubled = static_cast<int>(std::bit_floor(static_cast<unsigned>(size)));
    m_extra = size - m_doubled;
    if (rank < 2 * m_extra) m_virtual = rank % 2 == 0 ? -1 : rank / 2;
    else m_virtual = rank - m_extra;
    m_step = m_virtual < 0        ? step::fold_send
             : rank < 2 * m_extra ? step::fold_receive
             : m_doubled > 1      ? step::doubling
                                  : step::finished;
    // Round 0 is the fold's: the doubling's rounds are 1.. at every member.
    if (m_step == step::doubling) m_round = 1;
  } else {
    m_step = size > 1 ? step::doubling : step::finished;
  }
  if (m_step != step::finished) start_step();
}

p2p_collective::~p2p_collective() {
  // Only a transport that shuts down with a collective in flight gets here with requests.
  for (MPI_Request& r : m_requests)
    if (r != MPI_REQUEST_NULL && !mpi_is_finalized()) {
      MPI_Cancel(&r);
      MPI_Request_free(&r);
    }
}

void p2p_collective::post(int to, int from) {
  // The value is sent from where it is: it changes only once both requests completed. A
  // group's value may use fewer bytes than it may take: only those are sent, and a receive
  // takes any size up to the most.
  const std::size_t sent = m_used_bytes != nullptr ? m_used_bytes(m_call.recv) : m_bytes;
  post(to, m_call.recv, sent, from, m_incoming.data(), m_bytes);
}

void p2p_collective::post(int to, const void* send, std::size_t send_bytes, int from, void* recv,
                          std::size_t recv_bytes) {
  const int tag = m_first_tag + m_round;
  if (m_members != nullptr) { // a group: its ranks name ranks of the communicator
    if (from >= 0) from = static_cast<int>(m_members[from]);
    if (to >= 0) to = static_cast<int>(m_members[to]);
  }
  if (from >= 0)
    mpi_check(
        MPI_Irecv(recv, static_cast<int>(recv_bytes), MPI_BYTE, from, tag, m_comm, &m_requests[0]),
        "MPI_Irecv");
  if (to >= 0)
    mpi_check(
        MPI_Isend(send, static_cast<int>(send_bytes), MPI_BYTE, to, tag, m_comm, &m_requests[1]),
        "MPI_Isend");
}

std::size_t p2p_collective::block_first(int block) const noexcept {
  const auto n = static_cast<std::size_t>(m_size);
  const auto b = static_cast<std::size_t>(block);
  // The first count % n blocks have one element more.
  return (m_call.count / n) * b + std::min(b, m_call.count % n);
}

std::size_t p2p_collective::block_bytes(int block) const noexcept {
  return (block_first(block + 1) - block_first(block)) * m_call.type.size;
}

std::byte* p2p_collective::block_data(int block) const noexcept {
  return static_cast<std::byte*>(m_call.recv) + block_first(block) * m_call.type.size;
}

const std::byte* p2p_collective::send_block(int block) const noexcept {
  const void* send = m_call.send != nullptr ? m_call.send : m_call.recv;
  return static_cast<const std::byte*>(send) + block_first(block) * m_call.type.size;
}

void p2p_collective::start_step() {
  const int right = (m_rank + 1) % m_size;
  const int left = (m_rank + m_size - 1) % m_size;
  switch (m_step) {
  case step::ring_reduce: {
    // Round s: block r - s goes right, block r - s - 1 comes from the left to be combined.
    const int out = (m_rank - m_round + 2 * m_size) % m_size;
    const int in = (out + m_size - 1) % m_size;
    const std::byte* from = m_round == 0 ? send_block(out) : block_data(out);
    post(right, from, block_bytes(out), left, m_incoming.data(), block_bytes(in));
    break;
  }
  case step::ring_gather: {
    // Round s (counted from the gather's first): the whole block r + 1 - s goes right, block
    // r - s comes from the left in its place.
    const int s = m_round - (m_size - 1);
    const int out = (m_rank + 1 - s + 2 * m_size) % m_size;
    const int in = (out + m_size - 1) % m_size;
    post(right, block_data(out), block_bytes(out), left, block_data(in), block_bytes(in));
    break;
  }
  case step::fold_send:
    // Our value to the odd partner, then the result back from it (the unfold's round).
    post(m_rank + 1, -1);
    break;
  case step::fold_receive:
    post(-1, m_rank - 1);
    break;
  case step::doubling:
    if (m_call.kind == collective_kind::barrier) {
      post((m_rank + m_distance) % m_size, (m_rank - m_distance + m_size) % m_size);
    } else {
      const int partner = real_rank(m_virtual ^ m_distance);
      post(partner, partner);
    }
    break;
  case step::unfold:
    post(m_rank - 1, -1);
    break;
  case step::finished:
    break;
  }
}

void p2p_collective::combine(bool incoming_is_lower) {
  std::byte* acc = static_cast<std::byte*>(m_call.recv);
  if (m_call.op.op != reduce_op::builtin::none) {
    apply_builtin(m_call.type.kind, m_call.op.op, acc, acc, m_incoming.data(), m_call.count);
    return;
  }
  const std::size_t size = m_call.type.size;
  try {
    for (std::size_t i = 0; i < m_call.count; ++i) {
      std::byte* a = acc + i * size;
      std::byte* in = m_incoming.data() + i * size;
      if (incoming_is_lower) {
        m_call.op.combine(in, a); // in = in op acc, then acc = in
        std::memcpy(a, in, size);
      } else {
        m_call.op.combine(a, in);
      }
    }
  } catch (...) {
    if (!m_error) m_error = std::current_exception();
  }
}

void p2p_collective::next_step() {
  ++m_round;
  switch (m_step) {
  case step::ring_reduce: {
    const int in = (m_rank - m_round + 2 * m_size) % m_size; // the block that came this round
    // Round 1's block is still only in send; later ones were combined here a round before.
    const std::byte* acc = m_round == 1 ? send_block(in) : block_data(in);
    apply_builtin(m_call.type.kind, m_call.op.op, block_data(in), acc, m_incoming.data(),
                  block_bytes(in) / m_call.type.size);
    if (m_round == m_size - 1) m_step = step::ring_gather; // block r + 1 is whole here
    break;
  }
  case step::ring_gather:
    if (m_round == 2 * (m_size - 1)) m_step = step::finished;
    break;
  case step::fold_send:
    // The result comes from the partner: the round after the doubling's, which the partner
    // counts too.
    m_round = 1 + std::countr_zero(static_cast<unsigned>(m_doubled));
    m_step = step::unfold;
    post(-1, m_rank + 1);
    return;
  case step::fold_receive:
    combine(true); // the even partner is the lower rank
    m_step = m_doubled > 1 ? step::doubling : step::unfold;
    break;
  case step::doubling:
    if (m_call.kind == collective_kind::allreduce)
      combine(real_rank(m_virtual ^ m_distance) < m_rank);
    m_distance *= 2;
    if (m_distance < (m_call.kind == collective_kind::barrier ? m_size : m_doubled)) break;
    m_step = m_call.kind == collective_kind::allreduce && m_rank < 2 * m_extra ? step::unfold
                                                                               : step::finished;
    break;
  case step::unfold:
    if (m_virtual < 0) std::memcpy(m_call.recv, m_incoming.data(), m_bytes); // the result
    m_step = step::finished;
    return;
  case step::finished:
    return;
  }
  if (m_step != step::finished) start_step();
}

bool p2p_collective::progress() {
  while (m_step != step::finished) {
    int complete = 0;
    if (m_empty_value == nullptr) {
      mpi_check(MPI_Testall(2, m_requests, &complete, MPI_STATUSES_IGNORE), "MPI_Testall");
      if (complete == 0) return false;
    } else {
      // A group whose members may send nothing (see group_call::empty_value): an empty message
      // stands for that value.
      const bool receiving = m_requests[0] != MPI_REQUEST_NULL;
      MPI_Status statuses[2];
      mpi_check(MPI_Testall(2, m_requests, &complete, statuses), "MPI_Testall");
      if (complete == 0) return false;
      int count = 0;
      if (receiving && MPI_Get_count(&statuses[0], MPI_BYTE, &count) == MPI_SUCCESS && count == 0)
        std::memcpy(m_incoming.data(), m_empty_value, m_bytes);
    }
    next_step();
  }
  return true;
}

neighbour_exchange::~neighbour_exchange() {
  for (MPI_Request& r : m_requests)
    if (r != MPI_REQUEST_NULL && !mpi_is_finalized()) {
      MPI_Cancel(&r);
      MPI_Request_free(&r);
    }
}

void neighbour_exchange::begin(const collective_call& c, MPI_Comm comm, collective_done& done) {
  m_done = &done;
  m_requests.assign(c.count, MPI_REQUEST_NULL);
  const auto* transfers = static_cast<const neighbour_transfer*>(c.send);
  // Receives first: a neighbour's message that comes at once then lands in place.
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t i = 0; i < c.count; ++i) {
      const neighbour_transfer& t = transfers[i];
      if (t.send != (pass == 1)) continue;
      const halo_region& r = t.cells;
      MPI_Datatype type = MPI_BYTE;
      int count = static_cast<int>(r.bytes());
      if (r.runs > 1) {
        mpi_check(MPI_Type_create_hvector(static_cast<int>(r.runs), static_cast<int>(r.run_bytes),
                                          static_cast<MPI_Aint>(r.stride), MPI_BYTE, &type),
                  "MPI_Type_create_hvector");
        mpi_check(MPI_Type_commit(&type), "MPI_Type_commit");
        count = 1;
      }
      const int peer = static_cast<int>(t.peer);
      const int tag = k_exchange_tag + t.tag;
      const int rc = t.send ? MPI_Isend(r.first, count, type, peer, tag, comm, &m_requests[i])
                            : MPI_Irecv(r.first, count, type, peer, tag, comm, &m_requests[i]);
      // A type may go once the operations that use it have started (MPI keeps it until then).
      if (type != MPI_BYTE) MPI_Type_free(&type);
      mpi_check(rc, t.send ? "MPI_Isend" : "MPI_Irecv");
    }
}

bool neighbour_exchange::progress() {
  if (m_requests.empty()) return true;
  int complete = 0;
  mpi_check(MPI_Testall(static_cast<int>(m_requests.size()), m_requests.data(), &complete,
                        MPI_STATUSES_IGNORE),
            "MPI_Testall");
  return complete != 0;
}

} // namespace apgas::detail
