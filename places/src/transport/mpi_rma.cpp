// One-sided access over MPI (see mpi_rma.hpp).
#include "mpi_rma.hpp"

#include <climits>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace apgas::detail {

namespace {
int as_count(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX))
    throw std::length_error("apgas: a one-sided access of 2 GiB or more");
  return static_cast<int>(bytes);
}
} // namespace

mpi_rma::mpi_rma(MPI_Comm world, spin_lock& net_lock) : m_net_lock(net_lock) {
  int size = 0;
  mpi_check(MPI_Comm_size(world, &size), "MPI_Comm_size");
  // One rank: every access is a copy (and Open MPI's default one-sided component cannot serve
  // a rank alone). Every rank sees the same size: all make the window, or none.
  if (size == 1) return;
  // Errors come back as codes from here on: a window this MPI cannot make leaves one-sided
  // access unavailable (said at the first access), not the job ended.
  MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
  int rc = MPI_Win_create_dynamic(MPI_INFO_NULL, world, &m_window);
  if (rc == MPI_SUCCESS) rc = MPI_Win_set_errhandler(m_window, MPI_ERRORS_RETURN);
  if (rc == MPI_SUCCESS) rc = MPI_Win_lock_all(MPI_MODE_NOCHECK, m_window);
  if (rc != MPI_SUCCESS) {
    m_unavailable = "apgas: one-sided access is unavailable: this MPI cannot make its window (" +
                    mpi_error_text(rc) + ")";
    if (m_window != MPI_WIN_NULL) MPI_Win_free(&m_window);
    m_window = MPI_WIN_NULL;
  }
}

bool mpi_rma::local_only_locked() const {
  if (m_window != MPI_WIN_NULL) return false;
  if (!m_unavailable.empty()) throw transport_error(m_unavailable);
  return true;
}

mpi_rma::~mpi_rma() {
  if (mpi_is_finalized() || m_window == MPI_WIN_NULL) return;
  MPI_Win_unlock_all(m_window);
  MPI_Win_free(&m_window); // collective, as the transport's destruction is
}

void mpi_rma::attach(void* base, std::size_t bytes) {
  std::lock_guard net(m_net_lock);
  if (m_window == MPI_WIN_NULL) return; // one rank, or unavailable (said at the first access)
  mpi_check(MPI_Win_attach(m_window, base, static_cast<MPI_Aint>(bytes)), "MPI_Win_attach");
}

void mpi_rma::detach(void* base) noexcept {
  std::lock_guard net(m_net_lock);
  if (!mpi_is_finalized() && m_window != MPI_WIN_NULL) MPI_Win_detach(m_window, base);
}

void mpi_rma::start_locked(MPI_Request request, const access& a) {
  // One test at once: an access that MPI made inside its call (a copy through shared memory)
  // is done now, and its activity need not suspend (see rma_waiter).
  int complete = 0;
  const int rc = MPI_Test(&request, &complete, MPI_STATUS_IGNORE);
  if (rc == MPI_SUCCESS && complete != 0) return complete_locked(a);
  if (rc != MPI_SUCCESS && request == MPI_REQUEST_NULL) // ended, in error
    return a.done->done(std::make_exception_ptr(
        transport_error("apgas: a one-sided access failed: " + mpi_error_text(rc))));
  // Not done, or a test that failed on a request still alive (which may still use the
  // caller's buffer, so the caller must not go on): test_locked completes it.
  m_requests.push_back(request);
  m_accesses.push_back(a);
  m_pending_count.store(m_requests.size(), std::memory_order_relaxed); // relaxed: a hint
}

void mpi_rma::complete_locked(const access& a) {
  std::exception_ptr error;
  // A put is done once its bytes are at the target: its request says only that the source
  // may be reused (one flush, at most a round trip, for every put to that target).
  if (a.put) {
    const int rc = MPI_Win_flush(static_cast<int>(a.target), m_window);
    if (rc != MPI_SUCCESS)
      error = std::make_exception_ptr(
          transport_error("apgas: MPI_Win_flush failed: " + mpi_error_text(rc)));
  }
  a.done->done(error);
}

void mpi_rma::start_get(place_id from, std::uintptr_t address, void* to, std::size_t bytes,
                        collective_done& done) {
  std::lock_guard net(m_net_lock);
  if (local_only_locked()) {
    std::memmove(to, reinterpret_cast<const void*>(address), bytes);
    return done.done(nullptr);
  }
  const int n = as_count(bytes);
  MPI_Request request = MPI_REQUEST_NULL;
  mpi_check(MPI_Rget(to, n, MPI_BYTE, static_cast<int>(from), static_cast<MPI_Aint>(address), n,
                     MPI_BYTE, m_window, &request),
            "MPI_Rget");
  start_locked(request, {&done, from, false});
}

void mpi_rma::start_put(place_id to, std::uintptr_t address, const void* from, std::size_t bytes,
                        collective_done& done) {
  std::lock_guard net(m_net_lock);
  if (local_only_locked()) {
    std::memmove(reinterpret_cast<void*>(address), from, bytes);
    return done.done(nullptr);
  }
  const int n = as_count(bytes);
  MPI_Request request = MPI_REQUEST_NULL;
  mpi_check(MPI_Rput(from, n, MPI_BYTE, static_cast<int>(to), static_cast<MPI_Aint>(address), n,
                     MPI_BYTE, m_window, &request),
            "MPI_Rput");
  start_locked(request, {&done, to, true});
}

void mpi_rma::test_locked() {
  if (m_requests.empty()) return;
  m_indices.resize(m_requests.size());
  int count = 0;
  mpi_check(MPI_Testsome(static_cast<int>(m_requests.size()), m_requests.data(), &count,
                         m_indices.data(), MPI_STATUSES_IGNORE),
            "MPI_Testsome");
  if (count <= 0) return;
  for (int k = 0; k < count; ++k) {
    access& a = m_accesses[static_cast<std::size_t>(m_indices[static_cast<std::size_t>(k)])];
    complete_locked(a);
    a.done = nullptr;
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < m_requests.size(); ++i) {
    if (m_accesses[i].done == nullptr) continue;
    m_requests[kept] = m_requests[i];
    m_accesses[kept] = m_accesses[i];
    ++kept;
  }
  m_requests.resize(kept);
  m_accesses.resize(kept);
  m_pending_count.store(kept, std::memory_order_relaxed); // relaxed: a hint
}

} // namespace apgas::detail
