// message_counts: the message dispatcher's and the transport's counters of this place as one public
// snapshot, and their sum over the places.
#include "apgas/message_counts.hpp"

#include "apgas/detail/message_dispatcher.hpp"
#include "apgas/finish.hpp"
#include "apgas/place.hpp"

#include "batch_relay.hpp"
#include "distributed_finish.hpp"

#include <optional>
#include <vector>

namespace apgas {

message_counts& message_counts::operator+=(const message_counts& o) noexcept {
  activities_sent += o.activities_sent;
  at_replies_sent += o.at_replies_sent;
  finish_reports_sent += o.finish_reports_sent;
  finish_asks_sent += o.finish_asks_sent;
  finish_cleanups_sent += o.finish_cleanups_sent;
  finish_holds_expired += o.finish_holds_expired;
  distributed_finishes += o.distributed_finishes;
  logical_messages_sent += o.logical_messages_sent;
  logical_messages_received += o.logical_messages_received;
  mpi_messages_sent += o.mpi_messages_sent;
  mpi_messages_received += o.mpi_messages_received;
  bytes_sent += o.bytes_sent;
  bytes_received += o.bytes_received;
  backpressure_waits += o.backpressure_waits;
  messages_forwarded += o.messages_forwarded;
  updates_relayed += o.updates_relayed;
  return *this;
}

message_counts operator-(message_counts later, const message_counts& earlier) noexcept {
  later.activities_sent -= earlier.activities_sent;
  later.at_replies_sent -= earlier.at_replies_sent;
  later.finish_reports_sent -= earlier.finish_reports_sent;
  later.finish_asks_sent -= earlier.finish_asks_sent;
  later.finish_cleanups_sent -= earlier.finish_cleanups_sent;
  later.finish_holds_expired -= earlier.finish_holds_expired;
  later.distributed_finishes -= earlier.distributed_finishes;
  later.logical_messages_sent -= earlier.logical_messages_sent;
  later.logical_messages_received -= earlier.logical_messages_received;
  later.mpi_messages_sent -= earlier.mpi_messages_sent;
  later.mpi_messages_received -= earlier.mpi_messages_received;
  later.bytes_sent -= earlier.bytes_sent;
  later.bytes_received -= earlier.bytes_received;
  later.backpressure_waits -= earlier.backpressure_waits;
  later.messages_forwarded -= earlier.messages_forwarded;
  later.updates_relayed -= earlier.updates_relayed;
  return later;
}

message_counts local_message_counts() {
  const detail::message_dispatcher& e = detail::message_dispatcher::current();
  const detail::active_message_counters& a = detail::active_messages::current().counters();
  const detail::finish_counters& c = e.find_module<detail::distributed_finish>()->counters();
  const detail::transport_stats t = e.transport_counters(); // relaxed reads, any thread
  // relaxed: statistics; nothing is ordered by them (see the thread-safety line in the header).
  constexpr auto relaxed = std::memory_order_relaxed;
  message_counts m;
  const detail::batch_relay& relay = detail::active_messages::current().relay();
  m.activities_sent = a.activities_sent.load(relaxed) + relay.batches_sent();
  m.at_replies_sent = a.replies_sent.load(relaxed);
  m.finish_reports_sent = c.reports_sent.load(relaxed);
  m.finish_asks_sent = c.asks_sent.load(relaxed);
  m.finish_cleanups_sent = c.cleanups_sent.load(relaxed);
  m.finish_holds_expired = c.holds_expired.load(relaxed);
  m.distributed_finishes = c.finishes_distributed.load(relaxed);
  m.logical_messages_sent = t.logical_messages_sent;
  m.logical_messages_received = t.logical_messages_received;
  m.mpi_messages_sent = t.mpi_messages_sent;
  m.mpi_messages_received = t.mpi_messages_received;
  m.bytes_sent = t.bytes_sent;
  m.bytes_received = t.bytes_received;
  m.backpressure_waits = t.backpressure_waits;
  m.messages_forwarded = t.forwarded_messages;
  m.updates_relayed = relay.updates_relayed();
  return m;
}

task<message_counts> total_message_counts() {
  const place_id me = here();
  std::vector<std::optional<message_counts>> others(places());
  // The requests leave together: one round trip, not one per place. A plain function runs in
  // the other place's message handler, so the finish stays local (no finish control).
  const auto read = [] { return local_message_counts(); };
  co_await finish([&]() -> task<> {
    for (place_id p = 0; p < places(); ++p) {
      if (p != me) co_await async(detail::at_into<message_counts>(p, others[p], read));
    }
  });
  // This place's own counts last, with no `at` to itself: they then include every request and
  // reply of this reading, and the messages that a request pushed out of a coalescing buffer
  // ahead of it, whatever the order the replies came in. The noise is the same every time.
  message_counts sum = local_message_counts();
  for (const std::optional<message_counts>& o : others) {
    if (o) sum += *o;
  }
  co_return sum;
}

} // namespace apgas
