// Teams and collectives over MPI (see apgas/detail/collective_network.hpp): a communicator per
// team, MPI's nonblocking collectives started under the transport's network lock and tested at
// every poll (mpi_transport's net_complete_sends), so that a waiting activity suspends and its
// worker keeps working. Internal to places/src/transport; includes mpi.h.
#pragma once

#include "apgas/detail/collective_network.hpp"
#include "apgas/detail/spin_lock.hpp"

#include "mpi_calls.hpp"
#include "p2p_collectives.hpp"

#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace apgas::detail {

/// @brief The collectives of one MPI transport: barriers and small allreduces point to point
/// (p2p_collectives.hpp), the others MPI's nonblocking collectives. Thread-safety: any thread;
/// every MPI call under the transport's network lock (`net_lock`), which test_locked's caller
/// already holds.
class mpi_collectives final : public collective_network {
public:
  /// @param world every place's communicator (a duplicate of its own: its collectives never
  /// meet the transport's point-to-point traffic).
  mpi_collectives(MPI_Comm world, spin_lock& net_lock);
  ~mpi_collectives() override;

  const std::vector<place_id>& members(team_handle team) const override;
  place_id rank(team_handle team) const override;
  void start(const collective_call& call, collective_done& done) override;
  team_handle split(team_handle parent, int color, int key) override;
  void free(team_handle team) noexcept override;
  std::size_t pending() const noexcept override;
  void progress() override;
  std::uint32_t group_lanes() const noexcept override { return m_group_lanes; }
  void start_group(const group_call& call, collective_done& done) override;

  /// @brief Completes what finished: tells each its done. pre: the network lock is held.
  void test_locked();
  /// @brief True if a collective is in flight (a hint: a relaxed read).
  bool any_pending() const noexcept {
    return m_pending_count.load(std::memory_order_relaxed) != 0; // relaxed: a hint
  }

private:
  struct team_state {
    MPI_Comm comm = MPI_COMM_NULL;
    std::vector<place_id> members; ///< places by team rank
    place_id rank = 0;
  };
  const team_state& state(team_handle team) const;
  /// MPI's datatype and operation for a call's elements (cached: made once per kind).
  MPI_Datatype datatype_locked(const element_type& type, const reduce_op& op);
  MPI_Op op_locked(const reduce_op& op);
  void start_locked(const collective_call& call, MPI_Datatype type, MPI_Op op,
                    MPI_Request* request);
  void test_small_locked();
  void count_pending_locked() noexcept {
    // relaxed: a hint for the idle poll and a snapshot for the dump
    m_pending_count.store(m_requests.size() + m_small.size() + m_exchanges.size(),
                          std::memory_order_relaxed);
  }

  /// Point-to-point operations of one kind in flight, and completed ones that the next calls
  /// reuse (no allocation per call).
  template <class Op>
  class in_flight {
  public:
    /// Starts an operation with `begin(op)`; one that completes at once (the last member to
    /// arrive) tells `done` now.
    template <class Begin>
    void start(collective_done& done, Begin begin) {
      std::unique_ptr<Op> op;
      if (m_spare.empty()) {
        op = std::make_unique<Op>();
      } else {
        op = std::move(m_spare.back());
        m_spare.pop_back();
      }
      begin(*op);
      if (op->progress()) return finish(std::move(op), done);
      m_ops.push_back(std::move(op));
    }
    /// Tests each operation once; tells those that completed.
    void test() {
      std::size_t kept = 0;
      for (std::size_t i = 0; i < m_ops.size(); ++i) {
        if (!m_ops[i]->progress()) {
          m_ops[kept++] = std::move(m_ops[i]);
          continue;
        }
        collective_done& done = m_ops[i]->done();
        finish(std::move(m_ops[i]), done);
      }
      m_ops.resize(kept);
    }
    bool empty() const noexcept { return m_ops.empty(); }
    void clear() noexcept {
      m_ops.clear();
      m_spare.clear();
    }
    std::size_t size() const noexcept { return m_ops.size(); }

  private:
    void finish(std::unique_ptr<Op> op, collective_done& done) {
      done.done(op->error());
      op->trim();
      m_spare.push_back(std::move(op));
    }
    std::vector<std::unique_ptr<Op>> m_ops;
    std::vector<std::unique_ptr<Op>> m_spare;
  };

  spin_lock& m_net_lock;
  MPI_Comm m_groups = MPI_COMM_NULL; ///< the groups' communicator (a duplicate of world's)
  std::uint32_t m_group_lanes = 0;   ///< lanes its tag space holds
  std::vector<std::unique_ptr<team_state>> m_teams; ///< by handle; null: freed (reusable)
  // Under m_net_lock: in flight, m_requests[i] for m_done[i] (MPI wants a plain array).
  std::vector<MPI_Request> m_requests;
  std::vector<collective_done*> m_done;
  in_flight<p2p_collective> m_small;          ///< barriers and allreduces, point to point
  in_flight<neighbour_exchange> m_exchanges;  ///< halo exchanges
  std::vector<MPI_Datatype> m_user_datatypes; ///< made here, freed at the end
  std::map<std::pair<std::uint32_t, combine_fn>, MPI_Datatype> m_user_types;
  std::map<std::uint32_t, MPI_Datatype> m_byte_types;
  MPI_Op m_user_op_commutative = MPI_OP_NULL;
  MPI_Op m_user_op_ordered = MPI_OP_NULL;
  std::vector<int> m_indices;                  ///< MPI_Testsome's output, reused
  std::atomic<std::size_t> m_pending_count{0}; ///< in flight, readable without the lock
};

} // namespace apgas::detail
