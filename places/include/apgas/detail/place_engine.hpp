// The message engine of a place: active messages (async_at, at), the distributed finish
// protocol (proxies here, tallies at home) and the collective end of a run. It sits between
// the scheduler (core) and the transport (the only code that talks to MPI).
//
// Messages (one logical message each, coalesced by the transport):
//   async    finish_id, code offset, arguments            -> an activity of a proxy finish
//   plain    the same, for a function that does not suspend: those that arrive in a row for
//            one finish run in batches (one frame per batch, see flush_arrivals)
//   plain run  finish_id, code offset, argument bytes n, zeros up to 32 bytes (a merge_head),
//            then the arguments of one or more plain asyncs, n bytes each: bitwise arguments
//            of a fixed size, so the transport merges a stream of them into one message
//            (transport::send_merged)
//   at       finish_id, code offset, reply token, args    -> the same, which replies at its end
//   rpc      code offset, reply token, args               -> an `at` of a plain function: runs
//            where it arrives, in the handler (see on_rpc), and is no activity of any finish
//   reply    token, ok flag, value bytes or error text    -> resumes the waiting `at`
//   report   finish_id, completed, sent[], errors[]       -> home tally of a finish
//   ask      finish_id                                    -> the home waits: report when quiet
//   cleanup  finish_id                                    -> frees the proxy (finish ended)
//   run_end  ok flag, result bytes or error text          -> place 0's run is over
#pragma once

#include "apgas/detail/activity.hpp"
#include "apgas/detail/byte_buffer.hpp"
#include "apgas/detail/finish_protocol.hpp"
#include "apgas/detail/network.hpp"
#include "apgas/detail/scheduler.hpp"
#include "apgas/detail/spread_counter.hpp"
#include "apgas/detail/transport.hpp"
#include "apgas/serialization.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace apgas::detail {

enum class msg_kind : std::uint8_t {
  async = 1,
  at = 2,
  reply = 3,
  report = 4,
  cleanup = 5,
  run_end = 6,
  plain_async = 7,
  rpc = 8,
  ask = 9,
  plain_run = 10,
};

/// @brief Where the value of an `at` goes back to: a place and the waiting awaiter there.
struct reply_address {
  place_id place = 0;
  std::uint64_t token = 0;
};

/// @brief Creates the frame of an activity from its serialized arguments (at the receiver).
using async_invoker = promise_base* (*)(byte_reader& args);
/// @brief Runs an activity of a plain function (one that does not suspend) from its serialized
/// arguments, on the frame of a batch of such activities (at the receiver).
using plain_async_invoker = void (*)(byte_reader& args);
/// @brief The same for the body of an `at`, which sends its value to `to` when it ends.
using at_invoker = promise_base* (*)(byte_reader& args, reply_address to);
/// @brief Runs the body of an `at` of a plain function from its serialized arguments and
/// sends its value (or its error) to `to`. Throws only if the reply cannot be sent.
using rpc_invoker = void (*)(byte_reader& args, reply_address to);

/// @brief Receives the reply of an `at` (the awaiter, at the caller's place).
class reply_sink {
public:
  virtual void on_reply(bool ok, std::span<const std::byte> payload) = 0;

protected:
  ~reply_sink() = default;
};

/// @brief Message counts of one place (all relaxed counters: statistics only).
struct engine_counters {
  explicit engine_counters(const scheduler& sched) : activities_sent(sched), replies_sent(sched) {}
  spread_counter activities_sent;                  ///< async and at requests (every remote async)
  spread_counter replies_sent;                     ///< at replies (every at)
  std::atomic<std::uint64_t> reports_sent{0};      ///< finish control messages
  std::atomic<std::uint64_t> asks_sent{0};         ///< finish control messages
  /// Reports sent unasked because their hold ran out (--report-delay-us): 0 unless the home's
  /// ask came late (a very slow machine) or never (a bug).
  std::atomic<std::uint64_t> holds_expired{0};
  std::atomic<std::uint64_t> cleanups_sent{0};     ///< finish control messages
  std::atomic<std::uint64_t> finishes_distributed{0}; ///< home finishes that went remote
};

struct proxy;

/// The anchor that code offsets are measured from: a function of this library (see
/// place_engine::code_offset).
[[gnu::noinline]] void code_anchor() noexcept;

/// @brief The distributed state of a finish at its home. In the header for the inline send
/// path of a remote async (place_engine::send_plain_async_written).
struct home_link {
  explicit home_link(place_id places)
      : touched_words((places + 63) / 64),
        touched(std::make_unique<std::atomic<std::uint64_t>[]>(touched_words)) {}
  finish_id id;
  home_tally tally;
  /// Places that may hold a proxy (told at cleanup), a bit each: one atomic operation per
  /// send instead of a lock and a search (and places / 8 bytes per distributed finish).
  std::size_t touched_words;
  std::unique_ptr<std::atomic<std::uint64_t>[]> touched;
  /// @return true if p was not touched before.
  bool touch(place_id p) {
    std::atomic<std::uint64_t>& word = touched[p / 64];
    const std::uint64_t bit = std::uint64_t{1} << (p % 64);
    // relaxed: the bits are read by the cleanup, after the finish ended (all its strands'
    // writes are acquired through its count); the load skips the RMW for known places.
    if ((word.load(std::memory_order_relaxed) & bit) != 0) return false;
    return (word.fetch_or(bit, std::memory_order_relaxed) & bit) == 0;
  }
  template <class F>
  void for_each_touched(F&& f) const {
    for (std::size_t i = 0; i < touched_words; ++i) {
      std::uint64_t bits = touched[i].load(std::memory_order_relaxed); // see touch()
      while (bits != 0) {
        const int b = __builtin_ctzll(bits);
        bits &= bits - 1;
        f(static_cast<place_id>(i * 64 + static_cast<std::size_t>(b)));
      }
    }
  }
};

/// @brief What the inline send path needs of a proxy (the part of a finish at a place other
/// than its home; the rest of it is place_engine.cpp's). A proxy's finish_state::m_remote
/// points to this.
struct proxy_link {
  explicit proxy_link(const finish_id& fid) : id(fid) {}
  finish_id id;
  proxy_tally tally; ///< what this place sent since its last report
};

/// @brief Writes the head of a message in one append: scalars in their native bytes, exactly as
/// serialize() writes them (the receiver reads them with deserialize), without one vector
/// append per field (a remote async's head costs a tenth of its sending otherwise).
template <class... T>
inline void pack_into(std::byte* at, const T&... fields) noexcept {
  static_assert((std::is_trivially_copyable_v<T> && ...));
  ((std::memcpy(at, &fields, sizeof(T)), at += sizeof(T)), ...);
}
/// @brief pack_into a new array of exactly the fields' size.
template <class... T>
inline auto pack_head(const T&... fields) noexcept {
  std::array<std::byte, (sizeof(T) + ...)> head;
  pack_into(head.data(), fields...);
  return head;
}

/// @brief Plain asyncs of one finish delivered in a row, shared by the batches that run them.
struct plain_arrivals {
  byte_buffer bytes;                 ///< entries, each a code offset then the arguments
  std::vector<std::uint32_t> starts; ///< where each entry starts in `bytes`
};

/// @brief The engine of this place. Thread-safety: any thread unless stated otherwise.
class place_engine final : public network {
public:
  /// @param report_hold_max the longest a place holds a report its home did not ask for (see
  /// end_strand); 0: every report leaves at once.
  place_engine(scheduler& sched, std::unique_ptr<transport> net,
               std::chrono::microseconds report_hold_max = std::chrono::microseconds(100'000));
  place_engine(const place_engine&) = delete;
  place_engine& operator=(const place_engine&) = delete;
  ~place_engine() override;

  /// @brief The engine of this process. pre: a runtime exists.
  static place_engine& current();
  /// @brief The engine of this process, or null.
  static place_engine* current_or_null() noexcept;

  place_id here() const noexcept { return m_here; }
  place_id places() const noexcept { return m_places; }
  /// @brief Throws apgas::bad_place unless p names a place.
  void check_place(place_id p) const;

  // ---- network (called by idle workers) ----
  bool poll() noexcept override;
  void flush() noexcept override;
  bool needs_polls_when_idle() const noexcept override;
  bool expecting_messages() const noexcept override {
    // relaxed: a hint for how long an idle worker waits before it parks.
    return m_awaited.load_signed() > 0 || reports_waiting() ||
           served_rpcs_lately();
  }

  // ---- used by async_at / at ----
  /// @brief Position of a function in this binary, the same at every place.
  static std::int64_t code_offset(const void* fn) noexcept {
    return reinterpret_cast<std::intptr_t>(fn) -
           reinterpret_cast<std::intptr_t>(reinterpret_cast<const void*>(&code_anchor));
  }
  static const void* code_at(std::int64_t offset) noexcept {
    return reinterpret_cast<const void*>(
        reinterpret_cast<std::intptr_t>(reinterpret_cast<const void*>(&code_anchor)) + offset);
  }
  /// @brief Counts an activity of `f` sent to `to` (before it is sent).
  void record_send(finish_state& f, place_id to);
  /// @brief Starts the message of an activity of `f` (a per-thread buffer holding its head):
  /// the caller appends the serialized arguments, then calls send_async, without suspending in
  /// between. Counts nothing: if the arguments fail to serialize, the caller just drops the
  /// message.
  std::vector<std::byte>& start_async(finish_state& f, async_invoker inv);
  /// @brief As above, for a plain function: the receiver runs it in a batch (see on_plain_async).
  std::vector<std::byte>& start_async(finish_state& f, plain_async_invoker inv);
  /// @brief Counts (as record_send) and sends an activity message begun by start_async.
  void send_async(finish_state& f, place_id to, const std::vector<std::byte>& bytes);
  /// @brief A plain async whose arguments are all bitwise, in one call: counts it (as
  /// send_async) and has its arguments written straight into the coalescing buffer by
  /// `write_args(at, args)` (`args_bytes` bytes): no staging copy. A stream of them to one
  /// place for one finish and function travels as one message (msg_kind::plain_run): one head,
  /// then the arguments of each. Nothing of it can throw between counting and sending.
  /// Inline for a proxy and for a home finish already distributed (a stream's common cases):
  /// no call between the caller's co_await and the transport. Inline always: GCC leaves it
  /// out of line otherwise (226 instead of 198 instructions per async from the home).
  [[gnu::always_inline]] void send_plain_async_written(finish_state& f, place_id to,
                                                      plain_async_invoker inv,
                                                      std::size_t args_bytes,
                                                      transport::message_writer write_args,
                                                      const void* args) {
    if (args_bytes == 0) [[unlikely]]
      return send_plain_async_other(f, to, inv, args_bytes, write_args, args);
    const std::int64_t code = code_offset(reinterpret_cast<const void*>(inv));
    if (f.m_reopenable) {
      // An activity of a proxy: at every place but a finish's home, the common case. A
      // proxy's link is set when it is made, before any of its activities runs.
      proxy_link& px = *static_cast<proxy_link*>(f.m_remote);
      const merge_head head = plain_run_head(px.id, code, args_bytes);
      count_proxy_send(px, to);
      m_counters.activities_sent.add();
      m_net->send_merged(to, head, args_bytes, write_args, args);
      return;
    }
    // The finish's link is there from its first remote activity on; see home_link_of.
    void* link = std::atomic_ref<void*>(f.m_remote).load(std::memory_order_acquire);
    if (link == nullptr) [[unlikely]]
      return send_plain_async_other(f, to, inv, args_bytes, write_args, args);
    home_link& home = *static_cast<home_link*>(link);
    const merge_head head = plain_run_head(home.id, code, args_bytes);
    count_home_send(f, home, to);
    m_counters.activities_sent.add();
    m_net->send_merged(to, head, args_bytes, write_args, args);
  }
  /// @brief As start_async, for the body of an `at` whose value comes back to `sink`.
  std::vector<std::byte>& start_at(finish_state& f, at_invoker inv, reply_sink* sink);
  /// @brief As start_at, for a plain function: it runs as soon as it arrives, inside the
  /// message handler of `to`, and is no activity of any finish (it cannot start one, and the
  /// caller's strand, suspended until the reply, keeps the caller's finish open meanwhile).
  /// Send it with finish_at; record_send is not called for it.
  std::vector<std::byte>& start_rpc(rpc_invoker inv, reply_sink* sink);
  /// @brief Sends a message begun by start_at or start_rpc at once (somebody waits for its
  /// answer). The transport may take `bytes` and leave another vector there.
  /// pre: record_send was called.
  void finish_at(place_id to, std::vector<std::byte>& bytes);
  /// @brief Sends the value (or the error text) of an `at` body back.
  void send_reply(reply_address to, bool ok, std::span<const std::byte> payload);
  /// @brief Writes the head of a reply to `to` into `out`, after room for the frame header
  /// (whatever `out` held is dropped); the value's bytes are then appended to it and
  /// finish_reply sends it: the value is serialized once, in place.
  /// @return where the ok flag is (finish_reply sets it).
  static std::size_t start_reply(std::vector<std::byte>& out, reply_address to);
  /// @brief This thread's buffer for an outgoing message (saves a malloc per remote activity
  /// or reply). Its contents are left over: start_async, start_at, start_rpc and start_reply
  /// reset it to k_frame_header bytes of room for the transport's frame header followed by
  /// the message's head. Use it between two suspension points only: from a start_* to the
  /// matching send (which copies the message, or takes the vector and leaves another in its
  /// place: transport::send_now_framed).
  static std::vector<std::byte>& message_buffer() noexcept;
  /// @brief Sends a reply begun by start_reply. If !ok, the bytes after the flag are the
  /// error text. The transport may take `out` and leave another vector there.
  void finish_reply(place_id to, std::vector<std::byte>& out, std::size_t ok_at, bool ok);
  /// @brief Resumes an activity that waited for an external event.
  void resume(promise_base& p) { m_sched.inject(as_independent(&p)); }

  // ---- runs (collective) ----
  /// @brief Place 0: tells every other place that the run ended (with its value or error).
  void announce_run_end(bool ok, std::span<const std::byte> payload);
  /// @brief Places other than 0: waits (serving) for place 0's announce_run_end.
  /// @return ok flag and payload.
  std::pair<bool, std::vector<std::byte>> await_run_end();
  /// @brief Collective: flushes and waits for every place, serving messages meanwhile.
  void barrier();

  /// @brief Frees the distributed state of a home finish (remote_finish_hooks::release_remote).
  void release_home(finish_state& f) noexcept;
  /// @brief Ends `n` strands of a proxy (remote_finish_hooks::end_proxy_strands): when its
  /// part goes quiet, reports home: at once the first time (unless the home sent a stream),
  /// once the home asks otherwise (see finish_protocol.hpp).
  void end_strand(proxy& px, std::uint64_t n = 1) noexcept;
  /// @brief The last local strand of home finish `f` is ending and its remote part is open
  /// (remote_finish_hooks::home_quiet): asks the places that hold reports for them.
  void on_home_quiet(finish_state& f) noexcept;
  /// @brief True while some proxy holds a report (the watcher then polls at short intervals).
  bool reports_waiting() const noexcept {
    // relaxed: a hint for the length of a park; poll() re-reads it with acquire.
    return m_deferred_count.load(std::memory_order_relaxed) != 0;
  }

  /// @brief See transport::set_coalescing.
  void set_coalescing(bool on) { m_net->set_coalescing(on); }
  const engine_counters& counters() const noexcept { return m_counters; }
  transport_stats transport_counters() const { return m_net->stats(); }
  /// @brief Makes SIGUSR1 print this place's open finishes (`kill -USR1 <pid>` on a hung run).
  static void install_dump_signal();
  /// @brief One line per open distributed finish (for diagnosing a hung run).
  std::string describe_open_finishes() const;

private:
  /// @brief send_plain_async_written's other cases, out of line: an activity of a proxy, a
  /// function without arguments, or the first remote activity of a home finish.
  void send_plain_async_other(finish_state& f, place_id to, plain_async_invoker inv,
                              std::size_t args_bytes, transport::message_writer write_args,
                              const void* args);
  /// @brief The head of a msg_kind::plain_run message (see on_plain_run): kind, finish id,
  /// code offset, argument size, then zeros.
  static merge_head plain_run_head(const finish_id& id, std::int64_t code,
                                   std::size_t args_bytes) noexcept {
    merge_head head{}; // zeros after the fields (25 bytes of 32)
    pack_into(head.data(), static_cast<std::uint8_t>(msg_kind::plain_run), id.home, id.serial,
              code, static_cast<std::uint32_t>(args_bytes));
    return head;
  }
  /// @brief count_send for a home finish whose link exists (inline: every remote async of
  /// a stream from home passes here).
  void count_home_send(finish_state& f, home_link& link, place_id to) {
    if (!link.touch(to) && is_spmd(link.id)) throw_spmd_second(to);
    // The remote part of f counts in f's count while it is open. The caller is a live strand
    // of f, and the message that could close the part is sent after this.
    if (link.tally.on_send(to)) {
      f.open_remote_part();
      // relaxed: a hint (see expecting_messages); closed again in apply_report.
      m_awaited.add();
    }
  }
  [[noreturn, gnu::cold, gnu::noinline]] static void throw_spmd_second(place_id to);
  /// @brief count_send for an activity of a proxy (inline: every remote async sent from a
  /// place other than its finish's home passes here).
  static void count_proxy_send(proxy_link& px, place_id to) {
    if (is_spmd(px.id)) [[unlikely]] throw_spmd_nested();
    px.tally.on_send(to); // counted before it is sent (see finish_protocol.hpp)
  }
  /// An activity of an SPMD finish's proxy started a remote activity (see is_spmd).
  [[noreturn, gnu::cold, gnu::noinline]] static void throw_spmd_nested();
  /// @brief record_send's body (inline: send_async calls it too).
  void count_send(finish_state& f, place_id to);
  /// @brief count_send and the statistics of one remote async (both ways of sending one).
  void count_async_sent(finish_state& f, place_id to);
  void on_message(place_id from, std::span<const std::byte> bytes);
  void on_activity(place_id from, byte_reader& r, bool is_at);
  /// @brief The part of on_message that is not a plain async (out of line: see on_message).
  [[gnu::noinline]] void on_other_message(place_id from, std::span<const std::byte> bytes);
  /// @param message the message after its kind
  void on_plain_async(place_id from, std::span<const std::byte> message);
  /// @param message the message after its kind
  void on_plain_run(place_id from, std::span<const std::byte> message);
  /// @brief The proxy of `id`, gathering arrivals from `from`, and the block of plain asyncs
  /// they go to (on_plain_async and on_plain_run).
  plain_arrivals& plain_arrivals_of(const finish_id& id, place_id from);
  void on_rpc(place_id from, byte_reader& r);
  /// @brief True if this place ran an rpc in the last k_rpc_alert (out of line: reads the clock;
  /// only idle workers ask).
  bool served_rpcs_lately() const noexcept;
  /// @brief Switches the arrivals being gathered to those of `px` (flushing another proxy's).
  /// `from_home`: they come from the finish's home (which the proxy counts, see
  /// proxy_tally::received_from_home).
  void gather_arrivals_of(proxy& px, bool from_home) noexcept {
    if (m_arrivals_proxy != &px || m_arrivals_from_home != from_home) [[unlikely]] {
      flush_arrivals();
      m_arrivals_proxy = &px;
      m_arrivals_from_home = from_home;
    }
  }
  /// @brief flush_arrivals' part for plain asyncs: their batches' frames, into m_arrivals.
  /// @return the number of plain asyncs batched.
  std::size_t batch_plain_arrivals();
  void on_reply(byte_reader& r);
  void on_report(place_id from, byte_reader& r);
  void on_cleanup(byte_reader& r);
  void on_ask(byte_reader& r);
  /// @brief Asks `places` (but here) for the reports of finish `id` they hold, then flushes.
  void send_asks(const finish_id& id, const std::vector<place_id>& places);
  proxy& arrive(const finish_id& id, place_id from);
  /// @brief The proxy of `id` here, created on first use; counts nothing. Handler context.
  proxy& find_proxy(const finish_id& id);
  /// @brief find_proxy past its one-entry cache (out of line: the common call only compares).
  [[gnu::noinline]] proxy& find_proxy_in_map(const finish_id& id);
  /// @brief Counts the activities gathered in m_arrivals in their proxy, then makes them
  /// runnable. Handler context (the end of each delivered batch, or before anything that
  /// must see them counted).
  void flush_arrivals() noexcept;
  home_link& home_link_of(finish_state& f);
  /// @brief home_link_of's first call for a finish (out of line: the common call only loads).
  [[gnu::noinline]] home_link& create_home_link(finish_state& f);
  /// @brief The id a message of `f` carries; creates a home finish's link on first use
  /// (which counts nothing: see record_send).
  finish_id send_id_of(finish_state& f);
  /// @brief start_async and start_at: the head of an activity message of `f` running `code`,
  /// then `extra` (scalars), in this thread's message buffer.
  template <class... Extra>
  std::vector<std::byte>& start_message(msg_kind kind, finish_state& f, const void* code,
                                        const Extra&... extra);
  void apply_report(const finish_report& r, const std::vector<std::string>& errors);
  void complete_from_outside(finish_state& f);
  void send_cleanups(const home_link& link) noexcept;
  using report_clock = std::chrono::steady_clock;
  void send_due_reports() noexcept;
  /// @brief Puts a proxy's report on the deferred list (pre: its lock is held, deferred set).
  void defer_report(const finish_id& id, report_clock::time_point due);
  /// @brief Takes a proxy's held report off the deferred list (pre: its lock is held).
  void forget_deferred(const finish_id& id);
  void take_and_send_report(proxy& px, std::unique_lock<spin_lock> guard) noexcept;
  void send_message(place_id to, std::span<const std::byte> bytes);

  scheduler& m_sched;
  std::unique_ptr<transport> m_net;
  place_id m_here;
  place_id m_places;
  /// One place: nothing arrives but what this place sends itself (see needs_polls_when_idle).
  bool m_loopback_only;

  mutable std::mutex m_proxies_mutex; ///< guards m_proxies and the proxies' counts at zero
  std::unordered_map<finish_id, proxy*, finish_id_hash> m_proxies;
  /// The proxy of the last arrival (a stream of activities usually belongs to one finish).
  /// Message handlers only: the transport runs them one at a time. An SPMD proxy may be
  /// freed elsewhere while cached, but its one arrival came already: its id never matches
  /// again, and the pointer is only used when the id matches.
  // Activities of one proxy delivered in a row, created but not yet counted nor runnable:
  // counting them takes the proxy's lock once per network message instead of once per
  // activity. Handler context only (the transport runs one poller at a time).
  proxy* m_arrivals_proxy = nullptr;
  bool m_arrivals_from_home = false;
  std::vector<promise_base*> m_arrivals;
  // Plain asyncs gathered likewise (null: none), and the sizes to reserve for the next ones.
  // Handler context only.
  std::shared_ptr<plain_arrivals> m_plain;
  std::pair<std::size_t, std::size_t> m_plain_capacity{0, 0};
  proxy* m_last_arrival = nullptr;
  finish_id m_last_arrival_id;
  mutable std::mutex m_homes_mutex;   ///< guards m_homes and m_next_serial
  std::unordered_map<std::uint64_t, finish_state*> m_homes;
  std::uint64_t m_next_serial = 1;

  /// A proxy holds a report (see end_strand) until its home asks for it, or this long at most
  /// (a safeguard: the home always asks, see finish_protocol.hpp).
  report_clock::duration m_report_hold_max;
  struct deferred_report {
    finish_id id;
    report_clock::time_point due;
  };
  std::mutex m_deferred_mutex; ///< guards m_deferred
  std::vector<deferred_report> m_deferred;
  std::atomic<std::size_t> m_deferred_count{0}; ///< m_deferred.size(), readable without the lock

  std::mutex m_run_mutex; ///< guards m_run_ends
  std::condition_variable m_run_cv;
  /// Ends of place 0's runs not yet taken by run() here: place 0 may be several runs ahead.
  std::deque<std::pair<bool, std::vector<std::byte>>> m_run_ends;

  /// The finish of rpc bodies that arrive while the handler runs inside a strand and so run as
  /// activities (see on_rpc): never waited for, its count never falls to zero (the one it
  /// starts with is never released), and nothing it runs can fail (failures are replied).
  finish_state m_detached_rpcs{policy::help_first};

  engine_counters m_counters;
  /// `at` replies and remote parts of home finishes this place waits for (a hint for idle
  /// workers, see expecting_messages).
  spread_counter m_awaited;
  /// A place that just answered an `at` probably gets the next one soon (a caller doing them in
  /// a row): it keeps polling instead of parking (a parked place answers only when its watcher
  /// wakes, up to a millisecond later). The handler counts rpcs (cheap, no clock); idle
  /// workers notice a change and note when. All relaxed: hints, written by one poller at a
  /// time (the transport's poll lock orders them) or racing idle workers (either value will do).
  std::atomic<std::uint64_t> m_rpcs_served{0};
  mutable std::atomic<std::uint64_t> m_rpcs_noticed{0};
  mutable std::atomic<std::int64_t> m_rpcs_noticed_at_ns{0};
};

} // namespace apgas::detail
