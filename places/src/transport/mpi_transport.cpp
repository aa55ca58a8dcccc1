// The transport over MPI (see mpi_transport.hpp; MPI's start and end are in mpi_process.cpp).
// With the other files that include mpi_calls.hpp, the only code of the project that calls MPI.
//
// Every MPI call is made under m_net_lock (or, for process-level calls, before/after any
// transport exists), so MPI_THREAD_SERIALIZED is enough. Sends: one MPI_Isend per sealed
// coalescing buffer, the buffer kept alive until MPI_Testsome reports it done, then recycled.
// At most max_outstanding_sends requests are alive (transport_base defers the rest): Testsome
// scans them all on every call but completes only a few, so their number must stay small.
// Receives: a few receives of k_posted_bytes each stay posted (MPI_ANY_SOURCE), so that a
// message lands in its buffer as it arrives instead of in MPI's unexpected queue, from which a
// probe and a matched receive would copy it later. A network message bigger than that (a huge
// logical message) is announced on the same stream by a small message with its size, and
// follows on a second communicator, received from that source as soon as the announcement
// is (it is already on its way).
//
// Order: two private communicators (dups of MPI_COMM_WORLD). On the first, every small
// message and announcement; MPI matches posted receives in the order they were posted, and
// its non-overtaking rule keeps each source's messages in order, so completing the posted
// receives in posting order (a ring) gives per-source FIFO order of network messages. The big
// message takes its announcement's place in that order. A receive that completed is posted
// again at the next poll, not at once: the message is delivered first (reposting is a call
// into MPI that would otherwise lie on the path of every `at` round trip), and reposting in
// completion order keeps the posting order a ring. The coalescer keeps logical messages
// in order inside and across network messages.
#include "mpi_transport.hpp"

#include "mpi_calls.hpp"
#include "mpi_collectives.hpp"
#include "mpi_rma.hpp"
#include "transport_base.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace apgas::detail {

namespace {

constexpr int k_tag = 1;          // any value: the communicators are ours alone
constexpr int k_tag_announce = 2; // on the first communicator: "a big message follows"
/// Receives kept posted, each with a buffer of k_posted_bytes. Enough for a stream of full
/// coalescing buffers to land without going through MPI's unexpected queue most of the time;
/// independent of the number of places (MPI_ANY_SOURCE).
constexpr std::size_t k_posted_receives = 4;
/// Network messages up to this size travel in one message; bigger ones are announced and
/// follow (see above). Twice the default coalescing buffer: a full buffer, and a logical
/// message of up to that size sent alone (an `at` with a 64 KiB argument), land at once. A
/// constant, not derived from the options: every rank must agree on it (the size of the
/// receives one rank posts decides what the others may send unannounced).
constexpr std::size_t k_posted_bytes = std::size_t{128} * 1024;
/// Network messages received per poll at most, so that a flood does not starve delivery.
constexpr int k_max_receives_per_poll = 1;
/// Receive buffers kept for reuse.
constexpr std::size_t k_receive_pool = 16;
/// How long a transport being destroyed waits for its sends to complete.
constexpr std::chrono::seconds k_shutdown_wait{10};

/// Live MPI transports (at most one). Changed by construction/destruction only; acq_rel so that
/// mpi_finalize() seeing 0 also sees the destructor's MPI calls finished.
std::atomic<int> g_live_transports{0};

class mpi_transport final : public transport_base {
public:
  mpi_transport(MPI_Comm comm, MPI_Comm big, MPI_Comm teams, place_id here, place_id places,
                const options& opts)
      : transport_base(here, places, opts), m_comm(comm), m_big(big),
        m_collectives(teams, m_net_lock), m_rma(teams, m_net_lock) {}
  ~mpi_transport() override;
  void barrier() override;
  std::vector<std::uint64_t> all_gather(std::uint64_t value) override;

protected:
  void net_send(place_id to, sealed_buffer&& buffer) override;
  framed_send net_send_framed(place_id to, std::vector<std::byte>& framed, bool counted) override;
  void net_complete_sends() override {
    // The idle poll's case inline: otherwise every round of an idle worker would set up the
    // completion code's frame before its first test.
    if (!m_requests.empty()) complete_sends();
    if (m_collectives.any_pending()) m_collectives.test_locked();
    if (m_rma.any_pending()) m_rma.test_locked();
  }
  collective_network* collectives() noexcept override { return &m_collectives; }
  rma_network* rma() noexcept override { return &m_rma; }
  void net_receive() override;
  void net_release(received&& message) override;

private:
  struct in_flight {
    place_id to;
    byte_buffer bytes;
    bool announcement = false; ///< not a sealed buffer: nothing to recycle nor to count done
    std::vector<std::byte> framed = {}; ///< instead of `bytes`: a net_send_framed() message
  };
  /// Starts the MPI_Isend of `size` bytes at `data` to `to` (announced first if big) and
  /// records it; `record` is stored with the request and must own the bytes.
  void isend_locked(place_id to, const std::byte* data, std::size_t size, in_flight&& record);
  struct posted {
    MPI_Request request = MPI_REQUEST_NULL;
    byte_buffer bytes; ///< k_posted_bytes of room
  };
  void post_locked(posted& slot);
  void cancel_posted_locked() noexcept;
  /// net_complete_sends() with requests alive: MPI_Testsome, then recycle what completed.
  void complete_sends();
  void receive_and_drop_locked();
  /// Polls (delivering messages) until the collective `request` completes.
  void wait_polling(MPI_Request& request);

  MPI_Comm m_comm;               ///< small messages and announcements
  MPI_Comm m_big;                ///< big messages, each after its announcement
  mpi_collectives m_collectives; ///< teams and their collectives (a communicator of their own)
  mpi_rma m_rma;                 ///< one-sided access (a window on the teams' communicator)
  // Poll owner only: the posted receives, completed and reposted in ring order from m_next.
  // The m_unposted slots before m_next completed and wait to be posted again (their request is
  // MPI_REQUEST_NULL): the next net_receive() posts them first.
  std::array<posted, k_posted_receives> m_posted;
  std::size_t m_next = 0;
  std::size_t m_unposted = 0;
  bool m_receives_posted = false;
  // Guarded by m_net_lock. m_requests[i] belongs to m_in_flight[i] (MPI wants a plain array).
  std::vector<MPI_Request> m_requests;
  std::vector<in_flight> m_in_flight;
  std::vector<int> m_done; ///< MPI_Testsome's output indices
  // Poll owner only (net_receive and net_release both run on the poll owner's thread).
  std::vector<byte_buffer> m_receive_pool;
};

void mpi_transport::isend_locked(place_id to, const std::byte* data, std::size_t size,
                                 in_flight&& record) {
  MPI_Comm comm = m_comm;
  if (size > k_posted_bytes) { // announced first, on the stream of small messages
    byte_buffer announcement(sizeof(std::uint64_t));
    const auto size64 = static_cast<std::uint64_t>(size);
    announcement.append(&size64, sizeof size64);
    MPI_Request request;
    mpi_check(MPI_Isend(announcement.data(), sizeof size64, MPI_BYTE, static_cast<int>(to),
                        k_tag_announce, m_comm, &request),
              "MPI_Isend");
    m_requests.push_back(request);
    m_in_flight.push_back(in_flight{to, std::move(announcement), true});
    comm = m_big;
  }
  MPI_Request request;
  mpi_check(MPI_Isend(data, static_cast<int>(size), MPI_BYTE, static_cast<int>(to), k_tag, comm,
                      &request),
            "MPI_Isend");
  m_requests.push_back(request);
  m_in_flight.push_back(std::move(record));
}

void mpi_transport::net_send(place_id to, sealed_buffer&& buffer) {
  const std::byte* data = buffer.bytes.data();
  const std::size_t size = buffer.bytes.size();
  isend_locked(to, data, size, in_flight{to, std::move(buffer.bytes)});
}

mpi_transport::framed_send
mpi_transport::net_send_framed(place_id to, std::vector<std::byte>& framed, bool counted) {
  const std::size_t size = framed.size();
  if (g_trace_on) [[unlikely]] // a send of its own, which issue_locked does not see
    trace_sent_locked(to, framed, 1);
  if (size <= k_posted_bytes) {
    MPI_Request request;
    mpi_check(MPI_Isend(framed.data(), static_cast<int>(size), MPI_BYTE, static_cast<int>(to),
                        k_tag, m_comm, &request),
              "MPI_Isend");
    // A small message usually leaves at once (Open MPI's eager "send inline" returns a request
    // that is already complete): then it needs no record, no buffer of its own, and no
    // completion test at a later poll. A test of a complete request makes no MPI progress
    // (one of an incomplete one makes a round, which is rare here: a full shared-memory queue).
    int done = 0;
    mpi_check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done != 0) {
      count_sent_locked(size);
      if (counted) m_coalescer.complete(to, size);
      else count_sent_uncounted_locked();
      return framed_send::done;
    }
    if (!counted) count_framed_alone(to, size); // only complete_sends, under our lock, completes it
    count_issue_locked(size);
    m_requests.push_back(request);
    m_in_flight.push_back(in_flight{to, byte_buffer{}, false, std::move(framed)});
    return framed_send::kept;
  }
  if (!counted) count_framed_alone(to, size);
  const std::byte* data = framed.data(); // a vector's storage stays put when it is moved
  isend_locked(to, data, size, in_flight{to, byte_buffer{}, false, std::move(framed)});
  count_issue_locked(size); // after: only net_complete_sends, under our lock, completes it
  return framed_send::kept;
}

void mpi_transport::complete_sends() {
  m_done.resize(m_requests.size());
  int count = 0;
  mpi_check(MPI_Testsome(static_cast<int>(m_requests.size()), m_requests.data(), &count,
                         m_done.data(), MPI_STATUSES_IGNORE),
            "MPI_Testsome");
  if (count <= 0) return; // 0: none done; MPI_UNDEFINED: no active request
  for (int k = 0; k < count; ++k) {
    in_flight& f = m_in_flight[static_cast<std::size_t>(m_done[static_cast<std::size_t>(k)])];
    if (f.announcement) continue; // its big message is the one that counts
    if (!f.framed.empty()) {
      const std::size_t bytes = f.framed.size();
      recycle_framed(std::move(f.framed));
      network_done(f.to, bytes);
      continue;
    }
    const std::size_t bytes = f.bytes.size();
    m_coalescer.recycle(f.to, std::move(f.bytes));
    network_done(f.to, bytes);
  }
  // Completed requests are MPI_REQUEST_NULL now: compact both arrays in step.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < m_requests.size(); ++i) {
    if (m_requests[i] == MPI_REQUEST_NULL) continue;
    if (kept != i) {
      m_requests[kept] = m_requests[i];
      m_in_flight[kept] = std::move(m_in_flight[i]);
    }
    ++kept;
  }
  m_requests.resize(kept);
  m_in_flight.resize(kept);
}

void mpi_transport::post_locked(posted& slot) {
  if (slot.bytes.capacity() < k_posted_bytes) {
    if (!m_receive_pool.empty()) {
      slot.bytes = std::move(m_receive_pool.back());
      m_receive_pool.pop_back();
    }
    slot.bytes.reserve(k_posted_bytes);
  }
  slot.bytes.resize_for_overwrite(k_posted_bytes);
  mpi_check(MPI_Irecv(slot.bytes.data(), static_cast<int>(k_posted_bytes), MPI_BYTE, MPI_ANY_SOURCE,
                      MPI_ANY_TAG, m_comm, &slot.request),
            "MPI_Irecv");
}

void mpi_transport::net_receive() {
  if (!m_receives_posted) {
    for (posted& slot : m_posted) post_locked(slot);
    m_receives_posted = true;
  }
  for (; m_unposted > 0; --m_unposted) // oldest first: the ring stays in posting order
    post_locked(m_posted[(m_next + k_posted_receives - m_unposted) % k_posted_receives]);
  for (int i = 0; i < k_max_receives_per_poll; ++i) {
    if (m_unposted == k_posted_receives)
      return;                        // all taken in this call: the next one posts them again
    posted& slot = m_posted[m_next]; // the oldest posted receive: the next message in order
    int flag = 0;
    MPI_Status status;
    mpi_check(MPI_Test(&slot.request, &flag, &status), "MPI_Test");
    if (flag == 0) return;
    const auto from = static_cast<place_id>(status.MPI_SOURCE);
    int count = 0;
    mpi_check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
    if (count == MPI_UNDEFINED || count < 0)
      throw transport_error("apgas transport: MPI_Get_count gave no byte count");
    if (status.MPI_TAG == k_tag_announce) {
      std::uint64_t size = 0;
      if (static_cast<std::size_t>(count) != sizeof size)
        throw transport_error("apgas transport: malformed announcement from place " +
                              std::to_string(from));
      std::memcpy(&size, slot.bytes.data(), sizeof size);
      if (size <= k_posted_bytes || size > static_cast<std::uint64_t>(INT_MAX))
        throw transport_error("apgas transport: announced message of " + std::to_string(size) +
                              " bytes from place " + std::to_string(from));
      byte_buffer big; // the slot keeps its buffer, to be posted again
      if (!m_receive_pool.empty() && m_receive_pool.back().capacity() >= size) {
        big = std::move(m_receive_pool.back());
        m_receive_pool.pop_back();
      }
      big.resize_for_overwrite(static_cast<std::size_t>(size));
      // Sent right after its announcement: it is on its way. Probed until it is here, then
      // received: a blocking MPI_Recv would wait inside MPI, which may yield the core when
      // ranks share cores (Open MPI's yield_when_idle under --oversubscribe).
      MPI_Message message;
      for (int found = 0; found == 0;)
        mpi_check(MPI_Improbe(status.MPI_SOURCE, k_tag, m_big, &found, &message, MPI_STATUS_IGNORE),
                  "MPI_Improbe");
      mpi_check(
          MPI_Mrecv(big.data(), static_cast<int>(size), MPI_BYTE, &message, MPI_STATUS_IGNORE),
          "MPI_Mrecv");
      accept(received{from, std::move(big), origin::network});
    } else {
      byte_buffer bytes = std::move(slot.bytes); // the slot gets one from the pool when posted
      bytes.resize_for_overwrite(static_cast<std::size_t>(count));
      accept(received{from, std::move(bytes), origin::network});
    }
    ++m_unposted;
    m_next = (m_next + 1) % k_posted_receives;
  }
}

void mpi_transport::cancel_posted_locked() noexcept {
  if (!m_receives_posted) return;
  for (posted& slot : m_posted) {
    if (slot.request == MPI_REQUEST_NULL) continue; // completed, not posted again
    // A receive that completed meanwhile took a message that nobody wants any more now.
    MPI_Cancel(&slot.request);
    MPI_Wait(&slot.request, MPI_STATUS_IGNORE);
  }
  m_unposted = 0;
  m_next = 0;
  m_receives_posted = false;
}

void mpi_transport::net_release(received&& message) {
  // Oversized buffers (a big message) are dropped: the pool keeps memory bounded.
  if (m_receive_pool.size() < k_receive_pool && message.bytes.capacity() >= k_posted_bytes &&
      message.bytes.capacity() <= 2 * k_posted_bytes) {
    message.bytes.clear();
    m_receive_pool.push_back(std::move(message.bytes));
  }
}

void mpi_transport::barrier() {
  flush_to_network(); // every earlier send is an MPI request before the barrier starts
  MPI_Request request;
  {
    std::lock_guard net(m_net_lock);
    mpi_check(MPI_Ibarrier(m_comm, &request), "MPI_Ibarrier");
  }
  wait_polling(request);
}

std::vector<std::uint64_t> mpi_transport::all_gather(std::uint64_t value) {
  flush_to_network(); // as barrier(): whatever was sent before is on its way
  std::vector<std::uint64_t> all(places());
  MPI_Request request;
  {
    std::lock_guard net(m_net_lock);
    mpi_check(
        MPI_Iallgather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, m_comm, &request),
        "MPI_Iallgather");
  }
  wait_polling(request);
  return all;
}

void mpi_transport::wait_polling(MPI_Request& request) {
  for (;;) {
    const std::size_t delivered = poll(); // messages in flight still reach their handler
    int done = 0;
    {
      std::lock_guard net(m_net_lock);
      mpi_check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    }
    if (done != 0) return;
    if (delivered == 0) std::this_thread::yield(); // ranks may share cores: let others run
  }
}

void mpi_transport::receive_and_drop_locked() {
  for (MPI_Comm comm : {m_comm, m_big}) {
    for (;;) {
      int flag = 0;
      MPI_Message message;
      MPI_Status status;
      if (MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &message, &status) != MPI_SUCCESS ||
          flag == 0)
        break;
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      std::vector<std::byte> sink(static_cast<std::size_t>(std::max(count, 1)));
      MPI_Mrecv(sink.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
    }
  }
}

mpi_transport::~mpi_transport() {
  if (mpi_is_finalized()) {
    // Misuse (finalize before destroy): MPI may still own our send buffers; leak them.
    std::fprintf(stderr, "apgas transport: destroyed after MPI_Finalize; leaking its buffers\n");
    (void)new (std::nothrow) std::vector<in_flight>(std::move(m_in_flight));
  } else {
    std::lock_guard net(m_net_lock);
    cancel_posted_locked(); // from here on, what arrives is received and dropped below
    // Let our sends complete, the ones still waiting for room under max_outstanding_sends
    // included (flushed, so sent as far as the protocols above know). Peers may be waiting for
    // us to receive their last (rendezvous) messages just as we wait for theirs, so receive and
    // drop what still arrives: the owner destroys the transport only once the protocols above
    // are done with it.
    const auto deadline = std::chrono::steady_clock::now() + k_shutdown_wait;
    while ((!m_requests.empty() || has_deferred_locked()) &&
           std::chrono::steady_clock::now() < deadline) {
      try {
        issue_deferred_locked(); // virtual net_send: still ours inside our own destructor
        net_complete_sends();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        break;
      }
      receive_and_drop_locked();
      if (!m_requests.empty()) std::this_thread::yield();
    }
    if (has_deferred_locked())
      std::fprintf(stderr, "apgas transport: sends waiting for room at shutdown; dropped\n");
    if (!m_requests.empty()) {
      std::fprintf(stderr, "apgas transport: %zu sends incomplete at shutdown; abandoned\n",
                   m_requests.size());
      for (MPI_Request& r : m_requests) MPI_Request_free(&r);
      // MPI may still read them: leaked on purpose.
      (void)new (std::nothrow) std::vector<in_flight>(std::move(m_in_flight));
    }
    MPI_Comm_free(&m_comm);
    MPI_Comm_free(&m_big);
  }
  // acq_rel: see g_live_transports.
  g_live_transports.fetch_sub(1, std::memory_order_acq_rel);
}

} // namespace

bool mpi_transport_exists() noexcept {
  // acquire: see g_live_transports.
  return g_live_transports.load(std::memory_order_acquire) != 0;
}

std::unique_ptr<transport> make_mpi_transport(const options& opts) {
  if (!mpi_is_initialized() || mpi_is_finalized())
    throw std::logic_error("apgas: make_mpi_transport() needs MPI initialised (mpi_init)");
  int provided = MPI_THREAD_SINGLE;
  mpi_check(MPI_Query_thread(&provided), "MPI_Query_thread");
  if (provided < MPI_THREAD_SERIALIZED)
    throw std::runtime_error(std::string("apgas: MPI was initialised with ") +
                             to_string(from_mpi(provided)) +
                             "; the transport needs MPI_THREAD_SERIALIZED or better");
  int expected = 0;
  // acq_rel: see g_live_transports.
  if (!g_live_transports.compare_exchange_strong(expected, 1, std::memory_order_acq_rel))
    throw std::logic_error("apgas: only one MPI transport may exist at a time");
  try {
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Comm big = MPI_COMM_NULL;
    MPI_Comm teams = MPI_COMM_NULL;
    mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
    mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &big), "MPI_Comm_dup");
    mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &teams), "MPI_Comm_dup");
    // Errors on our communicators come back as codes, which mpi_check() turns into exceptions.
    mpi_check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    mpi_check(MPI_Comm_set_errhandler(big, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    mpi_check(MPI_Comm_set_errhandler(teams, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    int rank = 0;
    int size = 0;
    mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    return std::make_unique<mpi_transport>(comm, big, teams, static_cast<place_id>(rank),
                                           static_cast<place_id>(size), opts);
  } catch (...) {
    g_live_transports.fetch_sub(1, std::memory_order_acq_rel);
    throw;
  }
}

} // namespace apgas::detail
