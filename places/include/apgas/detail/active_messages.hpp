// Active messages: async_at and at. A remote activity travels as a function's code offset (the
// same binary runs at every place) and its serialized arguments; the distributed finish counts
// it (finish_links.hpp) before it leaves. This header is what <apgas/place.hpp> sees: the send
// side, inline down to the coalescing buffer for a stream of plain asyncs. The handlers are in
// places/src/active_messages.cpp.
//
// Messages (one logical message each, coalesced by the transport):
//   async      finish id, code offset, arguments       -> an activity of the finish, a frame each
//   plain      the same, for a function that does not suspend: those that arrive together run
//              in batches, a frame per batch (places/src/plain_batches.hpp)
//   plain run  finish id, code offset, argument bytes n, zeros up to 32 bytes (a merge_head),
//              then the arguments of one or more plain asyncs, n bytes each: bitwise arguments
//              of a fixed size, so the transport merges a stream of them into one message (a
//              worker stages them first, plain_stages.hpp). The code is a plain_run_invoker,
//              which runs a slice of the run in one call
//   at         finish id, code offset, reply token, arguments -> the same, replying at its end
//   rpc        code offset, reply token, arguments     -> an `at` of a plain function: runs in
//              the handler where it arrives, and is no activity of any finish
//   batch      finish id, code offset, arguments       -> an aggregator's batch of updates
//              (<apgas/aggregator.hpp>): an activity of the finish that runs in the handler
//              where it arrives, straight from the received bytes, and ends there
//   relay batch  finish id, code offset, update bytes, hold bytes, target count n, n targets,
//              then updates each with its target's index -> updates for places beyond this
//              one, sorted here into held batches (routed aggregation, batch_relay.hpp)
//   reply      token, ok flag, value bytes or the error  -> resumes the waiting `at` (an error
//              is written by exception_codec.hpp, and reported to the caller only)
#pragma once

#include "apgas/detail/activity.hpp"
#include "apgas/detail/code_registry.hpp"
#include "apgas/detail/finish_links.hpp"
#include "apgas/detail/message_format.hpp"
#include "apgas/detail/place_tree.hpp"
#include "apgas/detail/plain_stages.hpp"
#include "apgas/detail/protocol_module.hpp"
#include "apgas/detail/reply_table.hpp"
#include "apgas/detail/scheduler.hpp"
#include "apgas/detail/spread_counter.hpp"
#include "apgas/detail/transport.hpp"
#include "apgas/serialization.hpp"

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace apgas::detail {

class distributed_finish;
class batch_relay;

/// @brief The bytes of a target in a relay batch's table: a global_ref's (its place first).
inline constexpr std::size_t k_relay_target_bytes = 16;

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
/// @brief Runs `n` plain asyncs of one function (a slice of a plain run) from their bitwise
/// arguments, `stride` bytes each from `args`, each an activity of `fs`: one that throws (or
/// whose arguments are not `stride` bytes) fails alone, in `fs`, and the next ones still run.
using plain_run_invoker = void (*)(const std::byte* args, std::size_t stride, std::size_t n,
                                   finish_state& fs) noexcept;
/// @brief Runs an aggregator's batch of updates from its serialized arguments, in the message
/// handler (at the receiver). Throws what a failed update threw.
using batch_invoker = void (*)(byte_reader& args);
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

/// @brief Messages counted by the active-message module (relaxed counters: statistics only).
struct active_message_counters {
  explicit active_message_counters(const scheduler& sched)
      : activities_sent(sched), replies_sent(sched) {}
  spread_counter activities_sent; ///< async and at requests (every remote async)
  spread_counter replies_sent;    ///< at replies (every at)
};

/// @brief The active-message module of a place. Thread-safety: any thread.
class active_messages final : public protocol_module {
public:
  /// @param finish the distributed finish module of the same dispatcher.
  active_messages(message_dispatcher& dispatcher, distributed_finish& finish);
  ~active_messages() override;

  /// @brief The module of this process's runtime. pre: a runtime exists.
  static active_messages& current() {
    // acquire: pairs with set_current's release, so the caller sees the module constructed.
    active_messages* m = s_current.load(std::memory_order_acquire);
    if (m == nullptr) [[unlikely]]
      throw_no_runtime();
    return *m;
  }
  /// @brief Makes `m` the runtime's module (null: none). Called by the runtime only.
  static void set_current(active_messages* m) noexcept;

  place_id here() const noexcept { return m_here; }
  place_id places() const noexcept { return m_places; }
  /// @brief Throws apgas::bad_place unless p names a place.
  void check_place(place_id p) const {
    if (p >= m_places) [[unlikely]]
      throw_bad_place(p);
  }
  /// @brief The tree of this run's places rooted at `root` (collectives spread along it).
  place_tree tree(place_id root) const noexcept { return place_tree(root, m_places, m_arity); }

  /// @brief Counts an activity of `f` sent to `to` (before it is sent).
  void record_send(finish_state& f, place_id to);
  /// @brief Starts the message of an activity of `f` (a per-thread buffer holding its head):
  /// the caller appends the serialized arguments, then calls send_async, without suspending in
  /// between. Counts nothing: if the arguments fail to serialize, the caller drops the message.
  std::vector<std::byte>& start_async(finish_state& f, async_invoker inv);
  /// @brief As above, for a plain function: the receiver runs it in a batch.
  std::vector<std::byte>& start_async(finish_state& f, plain_async_invoker inv);
  /// @brief As start_async, for an aggregator's batch (sent with send_async too).
  std::vector<std::byte>& start_batch(finish_state& f, batch_invoker inv);
  /// @brief Where an aggregator's batch for `to` goes: `to`, or the intermediate place that
  /// relays it (routing on and `to` outside this place's row and column, see batch_relay.hpp).
  place_id relay_hop(place_id to) const noexcept;
  /// @brief As start_batch, for a relay batch to an intermediate place: `targets` targets of
  /// 16 bytes follow, then the updates, each `update_bytes` bytes after its target's 32-bit
  /// index; the intermediate's batches for each destination leave once they hold
  /// `hold_bytes`. Sent with send_async.
  std::vector<std::byte>& start_relay(finish_state& f, batch_invoker inv,
                                      std::uint32_t update_bytes, std::uint32_t hold_bytes,
                                      std::uint32_t targets);
  /// @brief Counts (as record_send) and sends an activity message begun by start_async.
  void send_async(finish_state& f, place_id to, const std::vector<std::byte>& bytes);
  /// @brief A plain async whose arguments are all bitwise (and not none), in one call, `inv`
  /// the run invoker of its function: counts it and has
  /// `write_args(at, args)` write its `args_bytes` bytes of arguments straight into the
  /// coalescing buffer. A stream of them to one place for one finish and function travels as
  /// one message (plain run). Nothing can throw between counting and sending. Inline always
  /// down to the transport: it is the send path of every fine-grained remote update.
  [[gnu::always_inline]] void send_plain_async_written(finish_state& f, place_id to,
                                                       plain_run_invoker inv,
                                                       std::size_t args_bytes,
                                                       transport::message_writer write_args,
                                                       const void* args) {
    const finish_id* id = count_linked_send(f, to);
    if (id == nullptr) [[unlikely]]
      return send_plain_async_other(f, to, inv, args_bytes, write_args, args);
    const std::int64_t code = code_offset(reinterpret_cast<const void*>(inv));
    // A worker's stage first (plain_stages.hpp): one append to the coalescer per slot.
    if (m_stages.append(to, *id, code, args_bytes, write_args, args)) [[likely]]
      return;
    m_counters.activities_sent.add();
    m_net->send_merged(to, plain_run_head(*id, code, args_bytes), args_bytes, write_args, args);
  }
  /// @brief As start_async, for the body of an `at`.
  std::vector<std::byte>& start_at(finish_state& f, at_invoker inv);
  /// @brief As start_at, for a plain function: it runs in the message handler of `to` and is
  /// no activity of any finish (it cannot start one, and the caller's strand, suspended until
  /// the reply, keeps the caller's finish open meanwhile). Sent with finish_at, uncounted.
  std::vector<std::byte>& start_rpc(rpc_invoker inv);
  /// @brief Sends a message begun by start_at or start_rpc at once (somebody waits for its
  /// answer), whose reply goes to `sink` (registered now: a request that was never sent
  /// leaves nothing behind). The transport may take `bytes` and leave another vector there.
  /// pre: record_send was called for an `at`.
  void finish_at(place_id to, std::vector<std::byte>& bytes, reply_sink* sink);
  /// @brief Writes the head of a reply to `to` into `out`, after room for the frame header
  /// (whatever `out` held is dropped); the value's bytes are then appended and finish_reply
  /// sends it: the value is serialized once, in place.
  /// @return where the ok flag is (finish_reply sets it).
  std::size_t start_reply(std::vector<std::byte>& out, reply_address to) const;
  /// @brief Sends a reply begun by start_reply. If !ok, the bytes after the flag are the error
  /// (exception_codec.hpp). The transport may take `out` and leave another vector there.
  void finish_reply(place_id to, std::vector<std::byte>& out, std::size_t ok_at, bool ok);
  /// @brief Sends `error` as the reply of an `at` body (it threw, or could not start).
  void send_error_reply(reply_address to, const std::exception_ptr& error);
  /// @brief The error a failed reply carries, or why it cannot be read (a damaged message):
  /// either way what the waiting `at` throws.
  std::exception_ptr read_error_reply(std::span<const std::byte> payload) const noexcept;
  /// @brief This thread's buffer for an outgoing message (saves a malloc per remote activity
  /// or reply). The start_* functions reset it; use it from a start_* to the matching send
  /// only, without suspending in between.
  static std::vector<std::byte>& message_buffer() noexcept;
  /// @brief See message_dispatcher::wait_in_place.
  bool wait_in_place(bool (*arrived)(const void*) noexcept, const void* arg) noexcept;
  /// @brief Resumes an activity that waited for a reply.
  void resume(promise_base& p) { m_sched.inject(as_independent(&p)); }
  const active_message_counters& counters() const noexcept { return m_counters; }
  /// @brief The relay of routed aggregation (its counters).
  const batch_relay& relay() const noexcept { return *m_relay; }

private:
  /// Inline on the path of every remote call (current(), check_place), their throws are not.
  [[noreturn, gnu::cold]] static void throw_no_runtime();
  [[noreturn, gnu::cold]] void throw_bad_place(place_id p) const;
  static inline std::atomic<active_messages*> s_current{nullptr}; ///< see set_current

  /// send_plain_async_written's other case, out of line: the first remote activity of a home
  /// finish.
  void send_plain_async_other(finish_state& f, place_id to, plain_run_invoker inv,
                              std::size_t args_bytes, transport::message_writer write_args,
                              const void* args);
  /// The head of a plain run: kind, finish id, code offset, argument size, then zeros.
  merge_head plain_run_head(const finish_id& id, std::int64_t code,
                            std::size_t args_bytes) const noexcept {
    merge_head head{};
    pack_into(head.data(), m_kind_plain_run, id.home, id.serial, code,
              static_cast<std::uint32_t>(args_bytes));
    return head;
  }
  template <class... Extra>
  std::vector<std::byte>& start_message(message_kind kind, finish_state& f, const void* code,
                                        const Extra&... extra);
  void count_and_send(finish_state& f, place_id to, std::span<const std::byte> message);

  // Handlers (see the message list at the top).
  void on_async(place_id from, std::span<const std::byte> body);
  void on_plain_async(place_id from, std::span<const std::byte> body);
  void on_plain_run(place_id from, std::span<const std::byte> body);
  void on_at(place_id from, std::span<const std::byte> body);
  void on_rpc(place_id from, std::span<const std::byte> body);
  void on_batch(place_id from, std::span<const std::byte> body);
  void on_relay(place_id from, std::span<const std::byte> body);
  void on_reply(place_id from, std::span<const std::byte> body);
  void on_activity(place_id from, std::span<const std::byte> body, bool is_at);
  /// Reads a message's finish id and code offset from `r` and checks them (check_message).
  std::pair<finish_id, std::int64_t> read_checked_head(byte_reader& r, place_id from,
                                                       code_kind kind) const;
  /// Throws unless `id` can be a finish's and `code` is a registered entry point of `kind`.
  void check_message(place_id from, const finish_id& id, std::int64_t code, code_kind kind) const;
  /// plain_stages::hand_on_fn: a staged run goes on to the coalescer, one merged append.
  static void hand_on_staged(void* self, place_id to, const finish_id& id, std::int64_t code,
                             std::uint32_t args_bytes, const std::byte* bytes, std::uint32_t count);
  void switch_staging(bool on) noexcept {
    if (!on) m_stages.flush_all(); // what was staged leaves now, as later asyncs will
    m_stages.set_enabled(on);
  }
  /// True if this place ran an rpc lately (out of line: reads the clock; idle workers ask).
  bool served_rpcs_lately() const noexcept;
  /// The state dump's lines for the batches this place holds for others.
  std::string describe_relayed() const;
  /// Before each poll: staged plain runs, and relayed updates held for options::flush_us.
  void flush_polled() noexcept;
  /// Before each flush: every staged run and held relayed batch.
  void flush_all() noexcept;

  message_dispatcher& m_dispatcher;
  distributed_finish& m_finish;
  scheduler& m_sched;
  transport* m_net;
  place_id m_here;
  place_id m_places;
  place_id m_arity; ///< --tree-arity
  message_kind m_kind_async;
  message_kind m_kind_plain_async;
  message_kind m_kind_plain_run;
  message_kind m_kind_at;
  message_kind m_kind_rpc;
  message_kind m_kind_batch;
  message_kind m_kind_relay;
  message_kind m_kind_reply;
  active_message_counters m_counters;
  plain_stages m_stages;                ///< plain runs staged by this place's workers
  std::unique_ptr<batch_relay> m_relay; ///< aggregator batches this place relays
  reply_table m_replies;                ///< requests waiting for their replies, by token
  /// The finish of rpc bodies that arrive while the handler runs inside a strand and so run as
  /// activities (see on_rpc): never waited for, its count never falls to zero (the one it
  /// starts with is never released), and nothing it runs can fail (failures are replied).
  finish_state m_detached_rpcs{policy::help_first};
  /// A place that just answered an `at` probably gets the next one soon (a caller doing them in
  /// a row): it keeps polling instead of parking, since a parked place answers only when its
  /// watcher wakes. The handler counts rpcs (cheap, no clock); idle workers notice a change and
  /// note when. All relaxed: hints, written by one poller at a time (the transport's poll lock
  /// orders them) or racing idle workers (either value will do).
  std::atomic<std::uint64_t> m_rpcs_served{0};
  mutable std::atomic<std::uint64_t> m_rpcs_noticed{0};
  mutable std::atomic<std::int64_t> m_rpcs_noticed_at_ns{0};
};

} // namespace apgas::detail
