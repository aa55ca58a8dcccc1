// Active messages (see active_messages.hpp): sending activities and `at` requests and
// replies, and the handlers that start them where they arrive.
#include "apgas/detail/active_messages.hpp"

#include "apgas/detail/code_registry.hpp"
#include "apgas/detail/exception_codec.hpp"
#include "apgas/detail/message_dispatcher.hpp"
#include "apgas/detail/steady_time.hpp"
#include "apgas/place.hpp"

#include "batch_relay.hpp"
#include "distributed_finish.hpp"
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <type_traits>

namespace apgas::detail {

active_messages::active_messages(message_dispatcher& dispatcher, distributed_finish& finish)
    : m_dispatcher(dispatcher), m_finish(finish), m_sched(dispatcher.sched()),
      m_net(&dispatcher.net()), m_here(dispatcher.here()), m_places(dispatcher.places()),
      m_arity(dispatcher.sched().opts().tree_arity),
      m_kind_async(dispatcher.add_handler<&active_messages::on_async>(*this, "async")),
      m_kind_plain_async(
          dispatcher.add_handler<&active_messages::on_plain_async>(*this, "plain async")),
      m_kind_plain_run(dispatcher.add_handler<&active_messages::on_plain_run>(*this, "plain run")),
      m_kind_at(dispatcher.add_handler<&active_messages::on_at>(*this, "at")),
      m_kind_rpc(dispatcher.add_handler<&active_messages::on_rpc>(*this, "rpc")),
      m_kind_batch(dispatcher.add_handler<&active_messages::on_batch>(*this, "batch")),
      m_kind_relay(dispatcher.add_handler<&active_messages::on_relay>(*this, "relay batch")),
      m_kind_reply(dispatcher.add_handler<&active_messages::on_reply>(*this, "reply")),
      m_counters(dispatcher.sched()),
      m_stages(dispatcher.sched(), std::chrono::microseconds(dispatcher.sched().opts().flush_us),
               &active_messages::hand_on_staged, this),
      m_relay(std::make_unique<batch_relay>(
          finish, dispatcher.net(), m_here, m_places, dispatcher.sched().opts().route_above,
          m_kind_batch, std::chrono::microseconds(dispatcher.sched().opts().flush_us))) {
  m_stages.set_enabled(dispatcher.sched().opts().coalesce);
  dispatcher.expects_messages_when<&active_messages::served_rpcs_lately>(*this);
  dispatcher.before_each_poll<&active_messages::flush_polled>(*this);
  dispatcher.before_each_flush<&active_messages::flush_all>(*this);
  dispatcher.describes_state_with<&active_messages::describe_relayed>(
      *this, "aggregated updates held for other places (routed aggregation)");
  dispatcher.on_coalescing_switch<&active_messages::switch_staging>(*this);
}

active_messages::~active_messages() = default;

void active_messages::flush_polled() noexcept {
  m_stages.flush_polled();
  m_relay->flush_aged();
}

void active_messages::flush_all() noexcept {
  m_stages.flush_all();
  m_relay->flush_all();
}

place_id active_messages::relay_hop(place_id to) const noexcept { return m_relay->hop(to); }

std::string active_messages::describe_relayed() const { return m_relay->describe(); }

void active_messages::throw_no_runtime() {
  throw std::logic_error("apgas: no runtime: create an apgas::runtime before using places");
}

void active_messages::set_current(active_messages* m) noexcept {
  s_current.store(m, std::memory_order_release); // release: see current()
}

void active_messages::throw_bad_place(place_id p) const { throw bad_place(p, m_places); }

// ---- sending ---------------------------------------------------------------------------------

void active_messages::record_send(finish_state& f, place_id to) { m_finish.count_send(f, to); }

template <class... Extra>
std::vector<std::byte>& active_messages::start_message(message_kind kind, finish_state& f,
                                                       const void* code, const Extra&... extra) {
  std::vector<std::byte>& bytes = message_buffer();
  const finish_id id = m_finish.message_id_of(f); // creates a home finish's link, counts nothing
  start_framed(bytes, kind, id.home, id.serial, code_offset(code), extra...);
  return bytes;
}

std::vector<std::byte>& active_messages::start_async(finish_state& f, async_invoker inv) {
  return start_message(m_kind_async, f, reinterpret_cast<const void*>(inv));
}

std::vector<std::byte>& active_messages::start_async(finish_state& f, plain_async_invoker inv) {
  return start_message(m_kind_plain_async, f, reinterpret_cast<const void*>(inv));
}

std::vector<std::byte>& active_messages::start_batch(finish_state& f, batch_invoker inv) {
  return start_message(m_kind_batch, f, reinterpret_cast<const void*>(inv));
}

std::vector<std::byte>& active_messages::start_relay(finish_state& f, batch_invoker inv,
                                                     std::uint32_t update_bytes,
                                                     std::uint32_t hold_bytes,
                                                     std::uint32_t targets) {
  return start_message(m_kind_relay, f, reinterpret_cast<const void*>(inv), update_bytes,
                       hold_bytes, targets);
}

void active_messages::count_and_send(finish_state& f, place_id to,
                                     std::span<const std::byte> message) {
  m_finish.count_send(f, to);
  m_counters.activities_sent.add();
  m_net->send(to, message);
}

void active_messages::send_async(finish_state& f, place_id to,
                                 const std::vector<std::byte>& bytes) {
  count_and_send(f, to, std::span<const std::byte>(bytes).subspan(k_frame_header));
}

void active_messages::send_plain_async_other(finish_state& f, place_id to, plain_run_invoker inv,
                                             std::size_t args_bytes,
                                             transport::message_writer write_args,
                                             const void* args) {
  // The argument size is part of the head: only asyncs of the same finish, function and
  // argument size merge, and the receiver splits the message by it.
  const finish_id& id = m_finish.count_send(f, to);
  m_counters.activities_sent.add();
  m_net->send_merged(
      to, plain_run_head(id, code_offset(reinterpret_cast<const void*>(inv)), args_bytes),
      args_bytes, write_args, args);
}

namespace {
/// The body of a staged run handed on: its bytes, copied in place.
struct staged_body {
  const std::byte* bytes;
  std::size_t size;
};
void write_staged(std::byte* at, const void* body) noexcept {
  const auto& b = *static_cast<const staged_body*>(body);
  std::memcpy(at, b.bytes, b.size);
}
} // namespace

void active_messages::hand_on_staged(void* self, place_id to, const finish_id& id,
                                     std::int64_t code, std::uint32_t args_bytes,
                                     const std::byte* bytes, std::uint32_t count) {
  auto& m = *static_cast<active_messages*>(self);
  // Counted one logical message per async, as when each was appended alone.
  m.m_counters.activities_sent.add(count);
  const staged_body body{bytes, std::size_t{args_bytes} * count};
  m.m_net->send_merged(to, m.plain_run_head(id, code, args_bytes), body.size, &write_staged, &body);
}

namespace {
/// Where the reply token is in an `at` or rpc request (see the message list): after the frame
/// header, the kind and the fields before it. Written by finish_at.
constexpr std::size_t k_at_token_at = k_frame_header + sizeof(message_kind) + sizeof(place_id) +
                                      sizeof(std::uint64_t) + sizeof(std::int64_t);
constexpr std::size_t k_rpc_token_at = k_frame_header + sizeof(message_kind) + sizeof(std::int64_t);
} // namespace

std::vector<std::byte>& active_messages::start_at(finish_state& f, at_invoker inv) {
  return start_message(m_kind_at, f, reinterpret_cast<const void*>(inv), std::uint64_t{0});
}

std::vector<std::byte>& active_messages::start_rpc(rpc_invoker inv) {
  std::vector<std::byte>& bytes = message_buffer();
  start_framed(bytes, m_kind_rpc, code_offset(reinterpret_cast<const void*>(inv)),
               std::uint64_t{0});
  return bytes;
}

void active_messages::finish_at(place_id to, std::vector<std::byte>& bytes, reply_sink* sink) {
  const std::uint64_t token = m_replies.issue(sink);
  const bool rpc = static_cast<message_kind>(bytes[k_frame_header]) == m_kind_rpc;
  std::memcpy(bytes.data() + (rpc ? k_rpc_token_at : k_at_token_at), &token, sizeof token);
  m_counters.activities_sent.add();
  m_dispatcher.expect_message();     // the reply
  m_net->send_now_framed(to, bytes); // somebody waits for the answer: latency before coalescing
}

bool active_messages::wait_in_place(bool (*arrived)(const void*) noexcept,
                                    const void* arg) noexcept {
  return m_dispatcher.wait_in_place(arrived, arg);
}

std::vector<std::byte>& active_messages::message_buffer() noexcept {
  thread_local std::vector<std::byte> bytes;
  return bytes;
}

std::size_t active_messages::start_reply(std::vector<std::byte>& out, reply_address to) const {
  start_framed(out, m_kind_reply, to.token, static_cast<std::uint8_t>(1));
  return out.size() - 1; // the ok flag, last
}

void active_messages::finish_reply(place_id to, std::vector<std::byte>& out, std::size_t ok_at,
                                   bool ok) {
  out.at(ok_at) = static_cast<std::byte>(ok ? 1 : 0);
  m_counters.replies_sent.add();
  m_net->send_now_framed(to, out); // the caller is suspended until this arrives
}

void active_messages::send_error_reply(reply_address to, const std::exception_ptr& error) {
  // A buffer of its own, not this thread's message buffer: a handler may call this while the
  // thread is inside a send that waits for room (and polls), whose message that buffer holds.
  std::vector<std::byte> out;
  const std::size_t ok_at = start_reply(out, to);
  byte_writer w(out);
  write_exception(w, error, m_here);
  finish_reply(to.place, out, ok_at, false);
}

std::exception_ptr
active_messages::read_error_reply(std::span<const std::byte> payload) const noexcept {
  try {
    return decode_exception(payload, m_places);
  } catch (...) {
    return std::current_exception();
  }
}

// ---- receiving -------------------------------------------------------------------------------

namespace {

finish_id read_finish_id(const std::byte* at) noexcept {
  finish_id id;
  std::memcpy(&id.home, at, sizeof id.home);
  std::memcpy(&id.serial, at + sizeof id.home, sizeof id.serial);
  return id;
}
constexpr std::size_t k_finish_id_bytes = sizeof(place_id) + sizeof(std::uint64_t);

[[noreturn, gnu::cold, gnu::noinline]] void throw_no_entry(place_id here, place_id from,
                                                           const char* what) {
  throw transport_error(fmt::format("apgas: place {}: a message from place {} names no {} "
                                    "(a damaged message, or a different build at that place?)",
                                    here, from, what));
}

[[noreturn, gnu::cold, gnu::noinline]] void
throw_bad_run(place_id here, place_id from, std::size_t bytes, std::uint32_t args_bytes) {
  throw transport_error(fmt::format("apgas: place {}: a run of plain asyncs from place {} has {} "
                                    "bytes of arguments, not a positive multiple of {}",
                                    here, from, bytes, args_bytes));
}

} // namespace

void active_messages::on_async(place_id from, std::span<const std::byte> body) {
  on_activity(from, body, false);
}

void active_messages::on_at(place_id from, std::span<const std::byte> body) {
  on_activity(from, body, true);
}

std::pair<finish_id, std::int64_t> active_messages::read_checked_head(byte_reader& r, place_id from,
                                                                      code_kind kind) const {
  // In one bounds check: the finish id, then the code offset.
  const std::byte* head = r.read_span(k_finish_id_bytes + sizeof(std::int64_t)).data();
  const finish_id id = read_finish_id(head);
  std::int64_t code;
  std::memcpy(&code, head + k_finish_id_bytes, sizeof code);
  check_message(from, id, code, kind);
  return {id, code};
}

void active_messages::check_message(place_id from, const finish_id& id, std::int64_t code,
                                    code_kind kind) const {
  if (id.home >= m_places) [[unlikely]]
    throw_no_entry(m_here, from, "place as a finish's home");
  if (!registered_code(code, kind)) [[unlikely]]
    throw_no_entry(m_here, from, "remote function");
}

void active_messages::on_activity(place_id from, std::span<const std::byte> body, bool is_at) {
  byte_reader r(body);
  const finish_id id = read_finish_id(r.read_span(k_finish_id_bytes).data());
  const auto offset = deserialize<std::int64_t>(r);
  const std::uint64_t token = is_at ? deserialize<std::uint64_t>(r) : 0;
  check_message(from, id, offset, is_at ? code_kind::at : code_kind::async);
  promise_base* p = nullptr;
  try {
    if (is_at) {
      auto inv = reinterpret_cast<at_invoker>(const_cast<void*>(code_at(offset)));
      p = inv(r, reply_address{from, token});
    } else {
      auto inv = reinterpret_cast<async_invoker>(const_cast<void*>(code_at(offset)));
      p = inv(r);
    }
  } catch (...) { // the arguments did not deserialize: the activity fails at once
    std::exception_ptr error = std::current_exception();
    // An `at`'s failure goes to its caller only (as when its body throws): its activity ends
    // without failing the finish, unless the reply cannot be sent.
    if (is_at) m_finish.run_arrived(id, from, [&] { send_error_reply({from, token}, error); });
    else m_finish.arrive_failed(id, from, std::move(error));
    return;
  }
  m_finish.gather(id, from, p);
}

void active_messages::on_plain_async(place_id from, std::span<const std::byte> body) {
  byte_reader r(body);
  const auto [id, code] = read_checked_head(r, from, code_kind::plain_async);
  plain_arrivals& block = m_finish.gather_plain(id, from);
  // A run of one, its arguments as they came.
  const std::span<const std::byte> args = r.read_span(r.remaining());
  const auto at = static_cast<std::uint32_t>(block.bytes.size()); // < 2 GiB
  block.bytes.append(args.data(), args.size());
  block.runs.push_back({code, at, 0, 1, static_cast<std::uint32_t>(args.size())});
  ++block.asyncs;
}

void active_messages::on_plain_run(place_id from, std::span<const std::byte> body) {
  byte_reader r(body);
  // The merge_head after its kind: finish id, code offset, argument size, zeros.
  constexpr std::size_t k_head = std::tuple_size_v<merge_head> - 1;
  const std::byte* head = r.read_span(k_head).data();
  const finish_id id = read_finish_id(head);
  std::int64_t code;
  std::uint32_t args_bytes;
  std::memcpy(&code, head + k_finish_id_bytes, sizeof code);
  std::memcpy(&args_bytes, head + k_finish_id_bytes + sizeof code, sizeof args_bytes);
  const std::span<const std::byte> args = r.read_span(r.remaining());
  if (args_bytes == 0 || args.empty() || args.size() % args_bytes != 0) [[unlikely]]
    throw_bad_run(m_here, from, args.size(), args_bytes);
  check_message(from, id, code, code_kind::plain_run);
  // The arguments are copied as one block, the run stays one entry. A run may hold more than
  // a block should (see k_max_plain_block_bytes): it is split.
  const std::byte* in = args.data();
  for (std::size_t left = args.size() / args_bytes; left != 0;) {
    plain_arrivals& block = m_finish.gather_plain(id, from);
    const std::size_t at = block.bytes.size();
    const std::size_t room =
        at < k_max_plain_block_bytes ? (k_max_plain_block_bytes - at) / args_bytes : 0;
    const std::size_t n = std::min(left, std::max<std::size_t>(room, 1));
    block.bytes.append(in, n * args_bytes);
    // The run before, if it is of the same function and ends here, grows instead (a stream
    // of runs, one per network message).
    plain_arrivals::run* last = block.runs.empty() ? nullptr : &block.runs.back();
    if (last != nullptr && last->code == code && last->stride == args_bytes &&
        last->at + last->size == at) {
      last->count += static_cast<std::uint32_t>(n);
      last->size += static_cast<std::uint32_t>(n * args_bytes);
    } else {
      block.runs.push_back({code, static_cast<std::uint32_t>(at), args_bytes,
                            static_cast<std::uint32_t>(n),
                            static_cast<std::uint32_t>(n * args_bytes)});
    }
    block.asyncs += n;
    in += n * args_bytes;
    left -= n;
  }
}

void active_messages::on_batch(place_id from, std::span<const std::byte> body) {
  byte_reader r(body);
  const auto [id, code] = read_checked_head(r, from, code_kind::batch);
  const auto inv = reinterpret_cast<batch_invoker>(const_cast<void*>(code_at(code)));
  // Run here and now, from the received bytes: a batch is many tiny updates that would
  // otherwise be copied, wait behind this place's own work (piling up in memory) and take a
  // frame; a failed update fails the batch's activity.
  m_finish.run_arrived(id, from, [&] { inv(r); });
}

void active_messages::on_relay(place_id from, std::span<const std::byte> body) {
  byte_reader r(body);
  const auto [id, code] = read_checked_head(r, from, code_kind::batch);
  const auto update_bytes = deserialize<std::uint32_t>(r);
  const auto hold_bytes = deserialize<std::uint32_t>(r);
  const auto target_count = deserialize<std::uint32_t>(r);
  const std::span<const std::byte> targets =
      r.read_span(std::size_t{target_count} * k_relay_target_bytes);
  const std::span<const std::byte> records = r.read_span(r.remaining());
  const std::size_t record = batch_relay::k_index_bytes + std::size_t{update_bytes};
  if (update_bytes == 0 || target_count == 0 || records.empty() || records.size() % record != 0)
      [[unlikely]]
    throw transport_error(fmt::format("apgas: place {}: a relay batch from place {} has {} bytes "
                                      "of updates, not a positive multiple of {}",
                                      m_here, from, records.size(), record));
  m_relay->take(from, id, code, update_bytes, hold_bytes, targets, records);
}

namespace {
/// An rpc body run as an activity (see on_rpc), on its own copy of the arguments.
task<> run_rpc_later(std::vector<std::byte> args, rpc_invoker inv, reply_address to) {
  byte_reader r(args);
  inv(r, to);
  co_return;
}
} // namespace

void active_messages::on_rpc(place_id from, std::span<const std::byte> body) {
  byte_reader r(body);
  const auto offset = deserialize<std::int64_t>(r);
  const reply_address to{from, deserialize<std::uint64_t>(r)};
  if (!registered_code(offset, code_kind::rpc)) [[unlikely]]
    throw_no_entry(m_here, from, "remote function");
  auto inv = reinterpret_cast<rpc_invoker>(const_cast<void*>(code_at(offset)));
  // relaxed load and store, no read-modify-write: one poller at a time (see m_rpcs_served).
  m_rpcs_served.store(m_rpcs_served.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  // Run here, now, unless this handler runs inside a strand (a busy worker's poll, a sender
  // waiting for room): the body then could wait for something that strand holds (a lock, say)
  // on the same thread, so it runs as an activity instead. A worker between strands, the
  // watcher and a thread waiting for a run's end hold nothing of any activity.
  if (const worker* w = t_worker; w == nullptr || w->m_between_strands) [[likely]] {
    inv(r, to); // sends the value or the error; throws only if the reply cannot be sent
    return;
  }
  const std::span<const std::byte> rest = r.read_span(r.remaining());
  promise_base* p =
      &run_rpc_later(std::vector<std::byte>(rest.begin(), rest.end()), inv, to).release().promise();
  p->m_finish = &m_detached_rpcs;
  p->m_role = promise_base::role::strand;
  p->m_parent = nullptr;
  // relaxed: published to whoever runs it by the inject below (as any spawn's count).
  m_detached_rpcs.m_count.fetch_add(1, std::memory_order_relaxed);
  m_sched.inject(as_independent(p));
}

bool active_messages::served_rpcs_lately() const noexcept {
  // As long as the spin of an idle worker that expects messages (see scheduler.cpp).
  constexpr std::int64_t k_rpc_alert_ns = 1'000'000;
  const std::int64_t now = steady_now_ns();
  // relaxed: hints (see m_rpcs_served).
  const std::uint64_t served = m_rpcs_served.load(std::memory_order_relaxed);
  if (served != m_rpcs_noticed.load(std::memory_order_relaxed)) {
    m_rpcs_noticed.store(served, std::memory_order_relaxed);
    m_rpcs_noticed_at_ns.store(now, std::memory_order_relaxed);
    return true;
  }
  return now - m_rpcs_noticed_at_ns.load(std::memory_order_relaxed) < k_rpc_alert_ns;
}

void active_messages::on_reply(place_id from, std::span<const std::byte> body) {
  byte_reader r(body);
  const auto token = deserialize<std::uint64_t>(r);
  const bool ok = deserialize<std::uint8_t>(r) != 0;
  reply_sink* sink = m_replies.take(token);
  if (sink == nullptr) [[unlikely]]
    throw transport_error(fmt::format("apgas: place {}: a reply from place {} answers no "
                                      "request waiting here (a damaged message?)",
                                      m_here, from));
  m_dispatcher.expected_message_arrived();
  sink->on_reply(ok, r.read_span(r.remaining())); // read in place: no copy of the value
}

} // namespace apgas::detail
