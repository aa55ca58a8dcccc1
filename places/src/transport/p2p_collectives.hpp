// Collectives over point-to-point messages on a team's communicator, progressed by the place's
// polling like MPI's nonblocking collectives: a dissemination barrier, a recursive-doubling
// allreduce of at most k_max_bytes (any operation, rank order kept), and a ring allreduce
// (reduce-scatter, then allgather) of more with MPI's built-in operations. Why: Open MPI's
// nonblocking collectives (libnbc) take several times what the blocking calls take for small
// messages (a schedule built and interpreted per call) and lag them for large ones; these take
// what the blocking calls take, and a member that arrives last completes at once. Internal to
// places/src/transport; includes mpi.h.
//
// Messages: every round's Isend/Irecv pair uses tag k_first_tag + round (a group's: its lane's
// first tag + round, on the groups' communicator). Members call a team's
// collectives in the same order and each completes its rounds in order, so MPI's
// non-overtaking rule matches every message with its round, also across consecutive calls.
#pragma once

#include "apgas/detail/collective_network.hpp"

#include "mpi_calls.hpp"

#include <cstddef>
#include <exception>
#include <vector>

namespace apgas::detail {

/// @brief One small collective in flight at this place. Thread-safety: under the transport's
/// network lock (every MPI call is).
class p2p_collective {
public:
  /// Allreduces of up to this many bytes go point to point (MPI's eager size on shared memory:
  /// larger ones are bandwidth-bound, where MPI's algorithms are better).
  static constexpr std::size_t k_max_bytes = 4096;
  /// A team's round r uses tag k_first_tag + r.
  static constexpr int k_first_tag = 100;

  /// @brief True if `c` goes point to point on a team of `size`: a barrier, an allreduce of
  /// at most k_max_bytes, or one of more with a built-in operation (uses_ring).
  static bool handles(const collective_call& c, int size) noexcept;
  static bool uses_ring(const collective_call& c, int size) noexcept;

  p2p_collective() = default;
  p2p_collective(const p2p_collective&) = delete;
  p2p_collective& operator=(const p2p_collective&) = delete;
  ~p2p_collective();

  /// @brief Starts collective `c` (this object is reused: one collective at a time, once the
  /// previous one completed). @param rank, size this place's rank in `comm` and the number of
  /// members.
  void begin(const collective_call& c, MPI_Comm comm, int rank, int size, collective_done& done,
             const place_id* members = nullptr, int first_tag = k_first_tag);
  /// @brief Starts a group's allreduce (group_call): ranks are indices in its members, which
  /// name ranks of `comm`, and its rounds use tags from k_first_group_tag + lane x
  /// k_rounds_per_lane.
  void begin_group(const group_call& g, MPI_Comm comm, collective_done& done);
  /// Tags a group's rounds may use: more than any allreduce takes (its fold, a doubling round
  /// per power of two, its unfold).
  static constexpr int k_rounds_per_lane = 64;
  static constexpr int k_first_group_tag = 64;
  /// @brief Frees a large buffer of a completed collective (a spare keeps only small ones).
  void trim() noexcept {
    if (m_incoming.capacity() > k_max_bytes) std::vector<std::byte>().swap(m_incoming);
  }
  /// @brief Tests the current round and starts the next ones that can start. @return true once
  /// the collective has completed here (its buffers hold the result; tell done()).
  bool progress();
  collective_done& done() const noexcept { return *m_done; }
  /// @brief What a user's operation threw at this place (the result is then not defined).
  std::exception_ptr error() const noexcept { return m_error; }

private:
  enum class step : unsigned char {
    ring_reduce,  ///< a round of the ring's reduce-scatter (rounds 0 .. size - 2)
    ring_gather,  ///< a round of the ring's allgather (rounds size - 1 .. 2 size - 3)
    fold_send,    ///< an extra member gives its value to its partner and waits for the result
    fold_receive, ///< the partner of an extra member takes its value
    doubling,     ///< a round of recursive doubling (barrier: of dissemination)
    unfold,       ///< the partner of an extra member sends it the result
    finished,
  };
  void start_step();
  void next_step();
  /// Posts this round's receive from `from` (into m_incoming) and send to `to` (of the value);
  /// a peer of -1 posts nothing that way.
  void post(int to, int from);
  void post(int to, const void* send, std::size_t send_bytes, int from, void* recv,
            std::size_t recv_bytes);
  /// The ring's blocks: block b of the value, size() of them as even as can be.
  std::size_t block_first(int block) const noexcept;
  std::size_t block_bytes(int block) const noexcept;
  std::byte* block_data(int block) const noexcept;
  /// The same block of the value as the caller gave it (send; recv when in place).
  const std::byte* send_block(int block) const noexcept;
  /// acc = lower op upper, element by element; `incoming_is_lower` says which side acc is.
  void combine(bool incoming_is_lower);
  /// The real rank of the member with recursive-doubling rank `v`.
  int real_rank(int v) const noexcept { return v < m_extra ? 2 * v + 1 : v + m_extra; }

  collective_call m_call;
  MPI_Comm m_comm = MPI_COMM_NULL;
  const place_id* m_members = nullptr; ///< a group's: rank i is comm rank m_members[i]
  std::size_t (*m_used_bytes)(const void*) = nullptr; ///< a group's: bytes of a value to send
  const void* m_empty_value = nullptr; ///< a group's: what an empty message stands for
  int m_first_tag = 0;                 ///< round r uses tag m_first_tag + r
  int m_rank = 0;
  int m_size = 1;
  int m_extra = 0;   ///< members past the largest power of two <= size (allreduce)
  int m_doubled = 1; ///< that power of two
  int m_virtual = 0; ///< this member's rank among the doubled ones (-1: an extra member)
  int m_distance = 1;
  int m_round = 0;
  step m_step = step::finished;
  std::size_t m_bytes = 0;           ///< of the value (allreduce)
  std::vector<std::byte> m_incoming; ///< a partner's value (the ring: a block of it)
  MPI_Request m_requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  collective_done* m_done = nullptr;
  std::exception_ptr m_error;
};

/// @brief A neighbour exchange in flight (a distributed array's halo): every send and receive
/// its member listed, posted at once straight from and into the array's cells (a strided
/// region as an MPI vector type), done when all are. Tags k_exchange_tag + tag, apart from the
/// collectives'. Thread-safety: under the transport's network lock.
class neighbour_exchange {
public:
  neighbour_exchange() = default;
  neighbour_exchange(const neighbour_exchange&) = delete;
  neighbour_exchange& operator=(const neighbour_exchange&) = delete;
  ~neighbour_exchange();

  static constexpr int k_exchange_tag = 1000;
  /// @brief Posts the call's transfers on `comm` (reused like p2p_collective).
  void begin(const collective_call& c, MPI_Comm comm, collective_done& done);
  bool progress();
  collective_done& done() const noexcept { return *m_done; }
  std::exception_ptr error() const noexcept { return nullptr; }
  void trim() noexcept {}

private:
  std::vector<MPI_Request> m_requests;
  collective_done* m_done = nullptr;
};

} // namespace apgas::detail
