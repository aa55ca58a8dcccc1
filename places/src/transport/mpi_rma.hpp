// One-sided access over MPI (see apgas/detail/collective_network.hpp's rma_network): one
// dynamic window over every place, in a passive-target epoch for the transport's whole life
// (MPI_Win_lock_all), so that a get or a put needs nothing from its target's code. Request-
// based MPI_Rget/MPI_Rput, tested once as they start (over shared memory MPI copies inside the
// call) and then at every poll like the transport's sends; a put's request completes once its
// source may be reused, so the place then flushes to its target before it reports the put
// done (what the awaiting activity, and its finish, rely on). Internal to
// places/src/transport; includes mpi.h.
#pragma once

#include "apgas/detail/collective_network.hpp"
#include "apgas/detail/spin_lock.hpp"

#include "mpi_calls.hpp"

#include <atomic>
#include <string>
#include <vector>

namespace apgas::detail {

class mpi_rma final : public rma_network {
public:
  /// @param world every place's communicator; collective (the window is made here).
  mpi_rma(MPI_Comm world, spin_lock& net_lock);
  ~mpi_rma() override;

  void attach(void* base, std::size_t bytes) override;
  void detach(void* base) noexcept override;
  void start_get(place_id from, std::uintptr_t address, void* to, std::size_t bytes,
                 collective_done& done) override;
  void start_put(place_id to, std::uintptr_t address, const void* from, std::size_t bytes,
                 collective_done& done) override;

  /// @brief Completes what finished. pre: the network lock is held.
  void test_locked();
  bool any_pending() const noexcept {
    return m_pending_count.load(std::memory_order_relaxed) != 0; // relaxed: a hint
  }

private:
  struct access {
    collective_done* done;
    place_id target;
    bool put;
  };
  /// Completes `a` now if MPI did it inside its call, else keeps it for test_locked.
  void start_locked(MPI_Request request, const access& a);
  /// Tells `a` it is done (a put: once flushed to its target).
  void complete_locked(const access& a);
  /// True for one rank (accesses are copies); throws if the window could not be made.
  bool local_only_locked() const;

  spin_lock& m_net_lock;
  MPI_Win m_window = MPI_WIN_NULL; ///< null: one rank, or unavailable (m_unavailable says why)
  std::string m_unavailable;
  // Under m_net_lock: in flight, m_requests[i] for m_accesses[i].
  std::vector<MPI_Request> m_requests;
  std::vector<access> m_accesses;
  std::vector<int> m_indices;
  std::atomic<std::size_t> m_pending_count{0}; ///< m_requests.size(), readable without the lock
};

} // namespace apgas::detail
