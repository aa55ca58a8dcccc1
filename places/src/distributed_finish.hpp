// The distributed finish: a finish whose activities went to other places. Its home keeps a
// home_link (finish_links.hpp); every other place that runs its activities keeps a proxy. This
// file and distributed_finish.cpp hold the whole protocol, from the arrival that opens a proxy
// to the cleanup that frees it; the counts themselves are finish_tally.hpp's.
//
// Messages (one logical message each, coalesced with other traffic):
//   (activities) arrive through active messages, which hand them here (gather): the first one
//            of a finish at a place opens its proxy
//   report   finish id, seq, completed, sent[], errors[]  place -> home: its part went quiet
//            (errors: a count, then each as exception_codec.hpp writes it)
//   ask      finish id                                     home -> place: report when quiet
//   cleanup  finish id                                     home -> places: the finish ended
//
// Vector counting flushed on local quiescence (after X10's default Finish): every place that
// runs activities of a finish keeps a proxy counting the activities it received and the
// activities it sent to each place; when its local part goes quiet it sends both home in one
// report and forgets them. Home keeps, per place, pending = sent there - completed there.
// The finish's remote part is closed exactly when every pending count is zero.
//
// Why never early: an activity is counted as sent (by its sender) before it is sent, and a
// place reports that activity completed in the same report as everything it sent meanwhile.
// So while any activity is alive or in flight, some pending count is positive: its own, or
// the one of the place that sent it and has not reported yet (that place is itself pending
// until it reports). Reports of one place must be applied in the order they were taken:
// each carries a sequence number, and the home holds back one that arrives before its
// predecessor (a place takes reports in order, but two threads may send two of them out of order).
// Reports of different places may arrive in any order (counts may go negative meanwhile,
// which keeps the finish open too).
//
// How many reports: a place fed a stream of activities goes quiet after every buffer, and
// its reports are of no use before the home itself is quiet (its own activities of the
// finish ended: nothing else can close the finish). So a place holds a report until the home
// asks for it, except the first report of a place that received fewer than
// k_stream_activities of the finish from the home itself: that one leaves at once, and a
// short finish costs one report per place. When the home goes quiet it asks, once each, every
// place that may hold a report: activities pending there, and either a report of it applied
// before or at least k_stream_activities pending (it may hold its first). A report that makes
// another place such, asks that one too. An asked place reports each quiet period at once
// from then on. So a stream from the home costs one ask and one report per place, whatever
// its length (two reports if its first buffer held fewer than k_stream_activities).
//
// Why every held report is asked for. A place holding its first report received at least
// k_stream_activities from the home place, which learns of each: the finish counts its own
// sends, and the home place's proxy reports the others at once, never holding. Its pending
// count is then at least that (it reported no completion), and the quiet home asks it. A
// place holding a later report has unreported completions. If its pending count is positive, the
// home asks it (at once if quiet, else when a report makes it so). If not, some activities it
// completed were sent by a place that has not reported them yet: that one is pending, and is asked
// (or reports at once); its report then makes the first place pending. The chain ends at the home's
// own sends, which it counts itself. (Counting all arrivals for the first report, not only the
// home's, breaks this: two places that fed each other could hold their reports while the
// home knows of too few sends to either to ask them. The protocol test finds that.)
#pragma once

#include "apgas/detail/finish_links.hpp"
#include "apgas/detail/message_format.hpp"
#include "apgas/detail/protocol_module.hpp"
#include "apgas/detail/spin_lock.hpp"
#include "apgas/detail/tree_messaging.hpp"
#include "apgas/detail/worker.hpp"

#include "held_reports.hpp"
#include "plain_batches.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace apgas::detail {

class scheduler;
class distributed_finish;

/// The part of a remote finish that runs at this place.
///
/// Lifetime: a proxy lives in m_proxies until its home's cleanup (or, for an SPMD finish,
/// until its one report). Only its own strands and code holding the proxies mutex touch it: a
/// strand keeps its arrival unreported, so the home cannot finish (and clean up) while any
/// strand is live, and the strand that takes the count to zero takes the report under `lock`
/// in the same step and does not touch the proxy afterwards.
struct proxy : proxy_link {
  proxy(distributed_finish& module, const finish_id& fid)
      : proxy_link(fid), owner(&module), fs(g_default_policy) {
    fs.m_reopenable = true;
    fs.m_count.store(0, std::memory_order_relaxed); // arrivals count themselves
    fs.m_remote = static_cast<proxy_link*>(this);   // what the send path reads
  }
  distributed_finish* owner;
  finish_state fs;
  /// Guards a count of zero (arrivals raise it from zero, strands lower it to zero under it)
  /// and the fields below.
  spin_lock lock;
  held_reports::clock::time_point quiet_since; ///< when the count last reached zero
  /// Arrivals raise the count (under `lock`).
  void on_arrivals_locked(std::uint64_t n) noexcept {
    // relaxed: under `lock`, which the strands that take the count to zero also hold.
    fs.m_count.fetch_add(static_cast<std::int64_t>(n), std::memory_order_relaxed);
  }
  std::uint32_t reports = 0; ///< reports taken so far
  bool asked = false;        ///< the home asked for its reports: they leave at once
  bool deferred = false;     ///< a report is owed and held (on the module's held_reports)
};

/// @brief Control messages of the distributed finish sent by a place (relaxed counters:
/// statistics only).
struct finish_counters {
  std::atomic<std::uint64_t> reports_sent{0};
  std::atomic<std::uint64_t> asks_sent{0};
  /// Reports sent unasked because their hold ran out (--report-delay-us): 0 unless the home's
  /// ask came late (a very slow machine) or never (a bug).
  std::atomic<std::uint64_t> holds_expired{0};
  std::atomic<std::uint64_t> cleanups_sent{0};
  std::atomic<std::uint64_t> finishes_distributed{0}; ///< home finishes that went remote
};

/// @brief The distributed-finish module of a place. Thread-safety: any thread, except the
/// arrival functions (handler context: the transport runs one handler at a time).
class distributed_finish final : public protocol_module {
public:
  /// @param report_hold_max the longest a place holds a report its home did not ask for (see
  /// end_strands); 0: every report leaves at once.
  /// @param tree routes reports up to the homes and asks and cleanups down to the places.
  distributed_finish(message_dispatcher& dispatcher, tree_messaging& tree,
                     std::chrono::microseconds report_hold_max);
  ~distributed_finish() override;

  // ---- sending (the out-of-line part of finish_links.hpp) ----
  /// @brief Counts one activity of `f` sent to `to`, creating a home finish's link on its
  /// first remote activity. @return the id its message carries.
  const finish_id& count_send(finish_state& f, place_id to);
  /// @brief The id a message of `f` carries; creates a home finish's link (counts nothing).
  finish_id message_id_of(finish_state& f);

  // ---- arrivals (handler context) ----
  /// @brief An activity of finish `id` arrived from `from`, its frame made: it runs as a strand
  /// of the proxy, counted and made runnable with the others of its delivery (flush_arrivals).
  void gather(const finish_id& id, place_id from, promise_base* activity);
  /// @brief The block that plain asyncs of finish `id` from `from` are appended to, counted
  /// and run in batches with the others of its delivery (see plain_batches.hpp).
  plain_arrivals& gather_plain(const finish_id& id, place_id from);
  /// @brief An activity of finish `id` from `from` failed before it started (its arguments did
  /// not deserialize): counted, failed with `error`, and ended.
  void arrive_failed(const finish_id& id, place_id from, std::exception_ptr error);
  /// @brief An activity of finish `id` from `from` that runs at once, on this thread, in the
  /// handler (an aggregator's batch): counted, run by `run()`, failed with what that throws,
  /// and ended.
  template <class Run>
  void run_arrived(const finish_id& id, place_id from, Run&& run) {
    flush_arrivals(); // the gathered ones are counted first
    proxy& px = arrive(id, from);
    try {
      run();
    } catch (...) {
      px.fs.add_exception(std::current_exception());
    }
    end_strands(px, 1);
  }
  /// @brief As run_arrived, for a caller that runs the activity itself: counted now; the caller
  /// ends it with end_strands(px, 1) (a relay batch, batch_relay.hpp).
  proxy& open_arrived(const finish_id& id, place_id from) {
    flush_arrivals(); // the gathered ones are counted first
    return arrive(id, from);
  }
  /// @brief One more strand of `px`, opened by a strand of it that is still running (so its
  /// count is not zero): it keeps the part open until end_strands (a held relay batch).
  static void add_strand(proxy& px) noexcept {
    // relaxed: the count cannot be zero (the opener runs), as for a local spawn; the opener's
    // own end_strands, later on this thread, releases it.
    px.fs.m_count.fetch_add(1, std::memory_order_relaxed);
  }
  /// @brief Counts the gathered activities in their proxy, then makes them runnable (after
  /// each delivery, and before anything that must see them counted).
  void flush_arrivals() noexcept;

  // ---- what core's remote_finish_hooks call ----
  /// @brief Ends `n` strands of a proxy: when its part goes quiet, reports home (at once the
  /// first time, unless the home sent a stream; once the home asks otherwise).
  void end_strands(proxy& px, std::uint64_t n) noexcept;
  /// @brief The last local strand of home finish `f` is ending and its remote part is open:
  /// asks the places that hold reports for them.
  void on_home_quiet(finish_state& f) noexcept;
  /// @brief Frees the distributed state of home finish `f` (it ended) and cleans up its proxies.
  void release_home(finish_state& f) noexcept;

  /// @brief The remote part of a home finish opened (see open_remote_part in finish_links.hpp).
  void on_remote_part_opened() noexcept;
  /// @brief Sends the held reports whose hold ran out (before every poll).
  void send_due_reports() noexcept;
  /// @brief True while some proxy holds a report (idle workers then poll at short intervals).
  bool reports_waiting() const noexcept {
    return m_held.any(); // a hint for the length of a park
  }
  /// @brief One line per open distributed finish homed here (for diagnosing a hung run).
  std::string describe_open_finishes() const;
  const finish_counters& counters() const noexcept { return m_counters; }

private:
  // Handlers (see the message list at the top).
  void on_report(place_id from, std::span<const std::byte> body);
  void on_ask(place_id from, std::span<const std::byte> body);
  void on_cleanup(place_id from, std::span<const std::byte> body);

  home_link& create_home_link(finish_state& f);
  /// The proxy of `id` here, opened on first use; counts nothing.
  proxy& find_proxy(const finish_id& id);
  /// find_proxy past its one-entry cache (out of line: the common call only compares).
  [[gnu::noinline]] proxy& find_proxy_in_map(const finish_id& id);
  /// Counts one arrival at once (not gathered).
  proxy& arrive(const finish_id& id, place_id from);
  /// Switches the arrivals being gathered to those of `px`, flushing another proxy's.
  void gather_arrivals_of(proxy& px, bool from_home) noexcept {
    if (m_arrivals_proxy != &px || m_arrivals_from_home != from_home) [[unlikely]] {
      flush_arrivals();
      m_arrivals_proxy = &px;
      m_arrivals_from_home = from_home;
    }
  }
  void take_and_send_report(proxy& px, std::unique_lock<spin_lock> guard) noexcept;
  void apply_report(const finish_report& r, const std::vector<std::exception_ptr>& errors);
  /// Asks `places` (but here) for the reports of finish `id` they hold (they leave at once).
  void send_asks(const finish_id& id, std::vector<place_id> places);
  void complete_from_outside(finish_state& f);
  void send_cleanups(const home_link& link) noexcept;

  message_dispatcher& m_dispatcher;
  tree_messaging& m_tree;
  scheduler& m_sched;
  place_id m_here;
  place_id m_places;
  message_kind m_kind_report;
  message_kind m_kind_ask;
  message_kind m_kind_cleanup;
  finish_counters m_counters;

  mutable std::mutex m_homes_mutex; ///< guards m_homes and m_next_serial
  std::unordered_map<std::uint64_t, finish_state*> m_homes;
  std::uint64_t m_next_serial = 1;

  mutable std::mutex m_proxies_mutex; ///< guards m_proxies and the proxies' counts at zero
  std::unordered_map<finish_id, proxy*, finish_id_hash> m_proxies;
  /// The proxy of the last arrival (a stream of activities usually belongs to one finish).
  /// Handler context only. An SPMD proxy may be freed elsewhere while cached, but its one
  /// arrival came already: its id never matches again, and the pointer is used only when the
  /// id matches.
  proxy* m_last_arrival = nullptr;
  finish_id m_last_arrival_id;

  // Activities of one proxy delivered in a row, made but not yet counted nor runnable:
  // counting them takes the proxy's lock once per delivery instead of once per activity.
  // Handler context only.
  proxy* m_arrivals_proxy = nullptr;
  bool m_arrivals_from_home = false;
  std::vector<promise_base*> m_arrivals;
  /// Plain asyncs gathered likewise (null: none), and the sizes to reserve for the next ones.
  std::shared_ptr<plain_arrivals> m_plain;
  std::pair<std::size_t, std::size_t> m_plain_capacity{0, 0};

  /// A proxy holds a report (see end_strands) until its home asks for it, or this long at
  /// most: a safeguard, the home always asks.
  held_reports::clock::duration m_report_hold_max;
  held_reports m_held;
};

} // namespace apgas::detail
