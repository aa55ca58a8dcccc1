// The message engine of a place: active messages and the distributed finish protocol.
#include "apgas/detail/place_engine.hpp"

#include "apgas/exceptions.hpp"
#include "apgas/place.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <memory>
#include <type_traits>
#include <typeinfo>
#include <utility>

namespace apgas {

bad_place::bad_place(place_id p, place_id count)
    : std::out_of_range(fmt::format("apgas: place {} does not exist (places are 0 to {})", p,
                                    count == 0 ? 0 : count - 1)),
      m_place(p) {}

remote_exception::remote_exception(place_id where, const std::string& text)
    : std::runtime_error(fmt::format("at place {}: {}", where, text)), m_place(where) {}

place_id here() { return detail::place_engine::current().here(); }
place_id places() { return detail::place_engine::current().places(); }

namespace detail {

namespace {

std::atomic<place_engine*> g_engine{nullptr}; // the engine of this process (acq_rel publish)


std::string demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d != nullptr ? d : name;
  std::free(d);
  return out;
}

} // namespace

std::string describe_current_exception() {
  try {
    throw;
  } catch (const multiple_exceptions& e) {
    std::string s = "apgas::multiple_exceptions:";
    for (const auto& inner : e.exceptions()) {
      try {
        std::rethrow_exception(inner);
      } catch (...) {
        s += " [" + describe_current_exception() + "]";
      }
    }
    return s;
  } catch (const std::exception& e) {
    return demangle(typeid(e).name()) + ": " + e.what();
  } catch (...) {
    return "an exception of unknown type";
  }
}

using report_clock = std::chrono::steady_clock;

/// The part of a remote finish that runs at this place.
///
/// Lifetime: a proxy lives in m_proxies until its home's cleanup (or, for an SPMD finish,
/// until its one report). Only its own strands and code holding the proxies mutex touch it:
/// a strand keeps its arrival unreported, so the home cannot finish (and clean up) while any
/// strand is live, and the strand that takes the count to zero takes the report under
/// `lock` in the same step and does not touch the proxy afterwards.
struct proxy : proxy_link {
  proxy(place_engine& e, const finish_id& fid)
      : proxy_link(fid), engine(&e), fs(g_default_policy) {
    fs.m_reopenable = true;
    fs.m_count.store(0, std::memory_order_relaxed); // arrivals count themselves
    fs.m_remote = static_cast<proxy_link*>(this); // what the header's send path reads
  }
  place_engine* engine;
  finish_state fs;
  /// Guards a count of zero (arrivals raise it from zero, strands lower it to zero under it)
  /// and the fields below.
  spin_lock lock;
  report_clock::time_point quiet_since; ///< when the count last reached zero
  /// Arrivals raise the count (under `lock`).
  void on_arrivals_locked(std::uint64_t n) noexcept {
    // relaxed: under `lock`, which the strands that take the count to zero also hold.
    fs.m_count.fetch_add(static_cast<std::int64_t>(n), std::memory_order_relaxed);
  }
  std::uint32_t reports = 0; ///< reports taken so far
  bool asked = false;        ///< the home asked for its reports: they leave at once
  bool deferred = false;     ///< a report is owed and held (on the engine's deferred list)
};

namespace {
/// The proxy of a finish_state that is one (m_reopenable): m_remote points to its link.
proxy* proxy_of(const finish_state& f) noexcept {
  return static_cast<proxy*>(static_cast<proxy_link*>(f.m_remote));
}
} // namespace

place_engine::place_engine(scheduler& sched, std::unique_ptr<transport> net,
                           std::chrono::microseconds report_hold_max)
    : m_sched(sched), m_net(std::move(net)), m_here(m_net->here()), m_places(m_net->places()),
      m_loopback_only(m_net->loopback_only()), m_report_hold_max(report_hold_max),
      m_counters(sched), m_awaited(sched) {
  m_net->set_batch_end_handler([this] { flush_arrivals(); });
  // A place that only hears itself needs no timed polls while nothing is buffered: its
  // workers sleep until a send wakes one (see needs_polls_when_idle).
  if (m_loopback_only) m_net->set_send_hook([this] { m_sched.wake_for_network(); });
  m_net->set_handler([this](place_id from, std::span<const std::byte> bytes) {
    on_message(from, bytes);
  });
  place_engine* expected = nullptr;
  if (!g_engine.compare_exchange_strong(expected, this, std::memory_order_acq_rel))
    throw std::logic_error("apgas: a place engine already exists in this process");
  // Set before any activity can reach another place (workers run nothing remote before the
  // engine exists); the engine is unique in the process, so the hooks can name it.
  g_remote_hooks.end_proxy_strands = [](finish_state& f, std::uint64_t n) noexcept {
    auto* px = proxy_of(f);
    px->engine->end_strand(*px, n);
  };
  g_remote_hooks.release_remote = [](finish_state& f) noexcept {
    place_engine::current().release_home(f);
  };
  g_remote_hooks.home_quiet = [](finish_state& f) noexcept {
    place_engine::current().on_home_quiet(f);
  };
}

place_engine::~place_engine() {
  // release: the next engine's exchange (acq_rel) sees this one's teardown complete.
  g_engine.store(nullptr, std::memory_order_release);
  std::lock_guard guard(m_proxies_mutex);
  for (auto& [id, px] : m_proxies) delete px; // none remain after a clean run
}

place_engine& place_engine::current() {
  // acquire: pairs with the constructor's exchange, so the caller sees the engine constructed.
  place_engine* e = g_engine.load(std::memory_order_acquire);
  if (e == nullptr)
    throw std::logic_error("apgas: no runtime: create an apgas::runtime before using places");
  return *e;
}

place_engine* place_engine::current_or_null() noexcept {
  return g_engine.load(std::memory_order_acquire); // acquire: see current()
}

void place_engine::check_place(place_id p) const {
  if (p >= m_places) throw bad_place(p, m_places);
}

void code_anchor() noexcept { std::fputs("", stderr); }

// ---- progress --------------------------------------------------------------------------------

namespace {
// Set by SIGUSR1 (see runtime.cpp): the next poll prints the open finishes of this place.
// A lock-free atomic (async-signal-safe), read by another thread than the handler's. relaxed:
// a request flag; the dump reads nothing the handler wrote.
std::atomic<bool> g_dump_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);
extern "C" void request_dump(int) { g_dump_requested.store(true, std::memory_order_relaxed); }
} // namespace

void place_engine::install_dump_signal() { std::signal(SIGUSR1, &request_dump); }

bool place_engine::poll() noexcept {
  if (g_dump_requested.load(std::memory_order_relaxed)) [[unlikely]] {
    g_dump_requested.store(false, std::memory_order_relaxed);
    const std::string open = describe_open_finishes();
    std::fprintf(stderr, "apgas: place %u: open distributed finishes:\n%s", m_here,
                 open.empty() ? "  (none)\n" : open.c_str());
  }
  try {
    send_due_reports();
    return m_net->poll() > 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "apgas: place %u: message handling failed: %s\n", m_here, e.what());
    std::fflush(stderr);
    std::abort(); // a lost message would hang the job: end it, loudly
  }
}

bool place_engine::needs_polls_when_idle() const noexcept {
  if (!m_loopback_only) return true; // other places may send at any time
  // One place: only what it sent itself can arrive, so polls are needed only while something
  // is buffered, queued or undelivered. seq_cst fence: the parking worker's half of the
  // Dekker pattern with the send hook (the sender appends, then fences in notify_one and reads
  // the sleepers): either the sender sees this worker parked and wakes it, or this read sees
  // the message. A report held for another place's ask cannot exist here (every finish is
  // home), nor a reply from elsewhere.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return !m_net->quiescent();
}

void place_engine::flush() noexcept {
  try {
    m_net->flush();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "apgas: place %u: flush failed: %s\n", m_here, e.what());
    std::abort();
  }
}

void place_engine::send_message(place_id to, std::span<const std::byte> bytes) {
  m_net->send(to, bytes);
}

// ---- sending ---------------------------------------------------------------------------------

home_link& place_engine::home_link_of(finish_state& f) {
  // Only a live strand of f calls this, so f cannot end meanwhile. acquire: pairs with the
  // release in create_home_link, so a link seen without the lock is seen whole.
  if (void* known = std::atomic_ref<void*>(f.m_remote).load(std::memory_order_acquire))
    [[likely]] return *static_cast<home_link*>(known);
  return create_home_link(f);
}

home_link& place_engine::create_home_link(finish_state& f) {
  // Two strands may race to create the link: the homes mutex decides.
  std::lock_guard guard(m_homes_mutex);
  if (f.m_remote == nullptr) {
    auto* link = new home_link(m_places);
    const std::uint64_t pattern_bit = f.m_pattern == finish_pattern::spmd ? k_spmd_serial_bit : 0;
    link->id = finish_id{m_here, m_next_serial++ | pattern_bit};
    m_homes.emplace(link->id.serial, &f);
    // release: a strand that loads the link with acquire (home_link_of, the send paths) sees
    // it constructed and registered.
    std::atomic_ref<void*>(f.m_remote).store(link, std::memory_order_release);
    m_counters.finishes_distributed.fetch_add(1, std::memory_order_relaxed); // relaxed: a statistic
  }
  return *static_cast<home_link*>(f.m_remote);
}

// Out of line and cold: keeps record_send's frame small (it runs for every remote activity).
void place_engine::throw_spmd_nested() {
  throw std::logic_error("apgas: an activity of a finish_pattern::spmd finish started a "
                         "remote activity in it (use a nested finish for that)");
}

void place_engine::throw_spmd_second(place_id to) {
  throw std::logic_error(fmt::format("apgas: a finish_pattern::spmd finish started a second "
                                     "activity at place {}", to));
}

void place_engine::record_send(finish_state& f, place_id to) { count_send(f, to); }

[[gnu::always_inline]] inline void place_engine::count_send(finish_state& f, place_id to) {
  if (f.m_reopenable) {
    count_proxy_send(*proxy_of(f), to);
    return;
  }
  count_home_send(f, home_link_of(f), to);
}

namespace {
template <class T>
void put(byte_writer& w, const T& v) {
  serialize(w, v);
}
void put_finish_id(byte_writer& w, const finish_id& id) {
  put(w, id.home);
  put(w, id.serial);
}
std::vector<std::byte> rest_of(byte_reader& r) {
  std::vector<std::byte> rest(r.remaining());
  r.read_bytes(rest.data(), rest.size());
  return rest;
}
finish_id get_finish_id(byte_reader& r) {
  finish_id id;
  id.home = deserialize<place_id>(r);
  id.serial = deserialize<std::uint64_t>(r);
  return id;
}
} // namespace

namespace {
/// Makes `out` room for the transport's frame header followed by `fields`, packed: one resize
/// (which shrinks a reused buffer, without a fill) and one copy.
template <class... T>
void start_framed(std::vector<std::byte>& out, const T&... fields) {
  const auto head = pack_head(fields...);
  out.resize(k_frame_header + head.size());
  std::memcpy(out.data() + k_frame_header, head.data(), head.size());
}

/// The head of an activity message (see start_message).
auto activity_head(msg_kind kind, const finish_id& id, std::int64_t code) {
  return pack_head(static_cast<std::uint8_t>(kind), id.home, id.serial, code);
}
} // namespace

finish_id place_engine::send_id_of(finish_state& f) {
  if (f.m_reopenable) return proxy_of(f)->id;
  return home_link_of(f).id; // created if this is the finish's first remote activity
}

template <class... Extra>
std::vector<std::byte>& place_engine::start_message(msg_kind kind, finish_state& f,
                                                    const void* code, const Extra&... extra) {
  std::vector<std::byte>& bytes = message_buffer();
  const finish_id id = send_id_of(f);
  start_framed(bytes, static_cast<std::uint8_t>(kind), id.home, id.serial, code_offset(code),
               extra...);
  return bytes;
}

std::vector<std::byte>& place_engine::start_async(finish_state& f, async_invoker inv) {
  return start_message(msg_kind::async, f, reinterpret_cast<const void*>(inv));
}

std::vector<std::byte>& place_engine::start_async(finish_state& f, plain_async_invoker inv) {
  return start_message(msg_kind::plain_async, f, reinterpret_cast<const void*>(inv));
}

[[gnu::always_inline]] inline void place_engine::count_async_sent(finish_state& f, place_id to) {
  count_send(f, to); // inlined: one call on the path of every remote async, not two
  m_counters.activities_sent.add();
}

void place_engine::send_async(finish_state& f, place_id to, const std::vector<std::byte>& bytes) {
  count_async_sent(f, to);
  send_message(to, std::span<const std::byte>(bytes).subspan(k_frame_header));
}

void place_engine::send_plain_async_other(finish_state& f, place_id to, plain_async_invoker inv,
                                          std::size_t args_bytes,
                                          transport::message_writer write_args,
                                          const void* args) {
  const finish_id id = send_id_of(f);
  const std::int64_t code = code_offset(reinterpret_cast<const void*>(inv));
  if (args_bytes == 0) [[unlikely]] {
    // No arguments: nothing to split a merged message by. Sent alone, as a plain async.
    const auto head = activity_head(msg_kind::plain_async, id, code);
    count_async_sent(f, to);
    send_message(to, head);
    return;
  }
  // The argument size is part of the head: only asyncs of the same finish, function and
  // argument size merge, and the receiver splits the message by it.
  const merge_head head = plain_run_head(id, code, args_bytes);
  count_async_sent(f, to);
  m_net->send_merged(to, head, args_bytes, write_args, args);
}

std::vector<std::byte>& place_engine::start_at(finish_state& f, at_invoker inv,
                                               reply_sink* sink) {
  return start_message(msg_kind::at, f, reinterpret_cast<const void*>(inv),
                       static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(sink)));
}

std::vector<std::byte>& place_engine::start_rpc(rpc_invoker inv, reply_sink* sink) {
  std::vector<std::byte>& bytes = message_buffer();
  start_framed(bytes, static_cast<std::uint8_t>(msg_kind::rpc),
               code_offset(reinterpret_cast<const void*>(inv)),
               static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(sink)));
  return bytes;
}

void place_engine::finish_at(place_id to, std::vector<std::byte>& bytes) {
  m_counters.activities_sent.add();
  m_awaited.add(); // relaxed: a hint, undone by the reply
  m_net->send_now_framed(to, bytes); // somebody waits for the answer: latency before coalescing
}

std::vector<std::byte>& place_engine::message_buffer() noexcept {
  thread_local std::vector<std::byte> bytes;
  return bytes;
}

namespace {
/// Frame header, kind, token, ok flag (see start_reply).
constexpr std::size_t k_reply_head_bytes = k_frame_header + 1 + sizeof(std::uint64_t) + 1;
} // namespace

std::size_t place_engine::start_reply(std::vector<std::byte>& out, reply_address to) {
  static_assert(std::is_same_v<decltype(to.token), std::uint64_t>, "see k_reply_head_bytes");
  start_framed(out, static_cast<std::uint8_t>(msg_kind::reply), to.token,
               static_cast<std::uint8_t>(1));
  return out.size() - 1; // the ok flag, last
}

void place_engine::finish_reply(place_id to, std::vector<std::byte>& out, std::size_t ok_at,
                                bool ok) {
  out.at(ok_at) = static_cast<std::byte>(ok ? 1 : 0);
  m_counters.replies_sent.add();
  m_net->send_now_framed(to, out); // the caller is suspended until this arrives
}

void place_engine::send_reply(reply_address to, bool ok, std::span<const std::byte> payload) {
  std::vector<std::byte> bytes;
  bytes.reserve(k_reply_head_bytes + payload.size()); // (also spares GCC a false warning)
  const std::size_t ok_at = start_reply(bytes, to);
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  finish_reply(to.place, bytes, ok_at, ok);
}

// ---- receiving -------------------------------------------------------------------------------

void place_engine::on_message(place_id from, std::span<const std::byte> bytes) {
  if (bytes.empty()) [[unlikely]]
    return on_other_message(from, bytes); // reports it
  // The common messages first, without the switch's frame: a stream of remote asyncs, then
  // the two halves of an `at` of a plain function, whose round trip waits for each.
  const auto kind = static_cast<msg_kind>(bytes[0]);
  if (kind == msg_kind::plain_run) [[likely]]
    return on_plain_run(from, bytes.subspan(1));
  if (kind == msg_kind::rpc || kind == msg_kind::reply) {
    byte_reader r(bytes.subspan(1));
    if (kind == msg_kind::rpc) return on_rpc(from, r);
    return on_reply(r);
  }
  on_other_message(from, bytes);
}

void place_engine::on_other_message(place_id from, std::span<const std::byte> bytes) {
  byte_reader r(bytes);
  const auto kind = static_cast<msg_kind>(deserialize<std::uint8_t>(r));
  switch (kind) {
  case msg_kind::plain_async: on_plain_async(from, r.read_span(r.remaining())); break;
  case msg_kind::plain_run: on_plain_run(from, r.read_span(r.remaining())); break;
  case msg_kind::rpc: on_rpc(from, r); break;
  case msg_kind::async: on_activity(from, r, false); break;
  case msg_kind::at: on_activity(from, r, true); break;
  case msg_kind::reply: on_reply(r); break;
  case msg_kind::report: on_report(from, r); break;
  case msg_kind::cleanup: on_cleanup(r); break;
  case msg_kind::ask: on_ask(r); break;
  case msg_kind::run_end: {
    const bool ok = deserialize<std::uint8_t>(r) != 0;
    std::vector<std::byte> rest = rest_of(r);
    std::lock_guard guard(m_run_mutex);
    m_run_ends.emplace_back(ok, std::move(rest));
    m_run_cv.notify_all();
    break;
  }
  default:
    throw transport_error(fmt::format("apgas: place {}: unknown message kind {} from place {}",
                                      m_here, static_cast<int>(kind), from));
  }
}

proxy& place_engine::find_proxy(const finish_id& id) {
  if (m_last_arrival != nullptr && m_last_arrival_id == id)
    [[likely]] return *m_last_arrival; // alive: only on_cleanup (a handler too) frees a general proxy
  return find_proxy_in_map(id);
}

proxy& place_engine::find_proxy_in_map(const finish_id& id) {
  std::lock_guard guard(m_proxies_mutex);
  auto [it, inserted] = m_proxies.try_emplace(id, nullptr);
  if (inserted) it->second = new proxy(*this, id);
  m_last_arrival = it->second;
  m_last_arrival_id = id;
  return *it->second;
}

proxy& place_engine::arrive(const finish_id& id, place_id from) {
  proxy& px = find_proxy(id);
  std::lock_guard count_guard(px.lock);
  // The proxy's lock orders the increment against a strand taking the count to zero; the
  // activity's own decrement comes later on the same causal chain (the inject below).
  px.on_arrivals_locked(1);
  px.tally.on_arrivals(1, from == id.home);
  return px; // alive: the arrival is unreported until this activity ends
}

namespace {

/// Bytes of entries a block of plain asyncs holds at most before it is made runnable, even in
/// the middle of a delivery: a merged message may hold a whole buffer of asyncs, and one poll
/// delivers up to 512 messages (their entries' offsets are 32-bit, and the next block
/// reserves what the largest one held).
constexpr std::size_t k_max_plain_block_bytes = std::size_t{1} << 20;

/// Largest batch of plain asyncs run on one frame: a stream of tiny asyncs (a counter update,
/// a table update) then costs a frame, a deque push and a strand end per 64 asyncs instead
/// of per async, while one batch of costly ones stays short next to a whole network message.
constexpr std::size_t k_max_plain_batch = 64;

/// The activity that runs a batch of plain asyncs of one finish: entries [first, last) of
/// `arrived`, one after the other. Each is an activity of `fs` of its own: an exception ends
/// that one (gathered in `fs`, as a frame's would be), the next ones still run.
task<> run_plain_batch(std::shared_ptr<const plain_arrivals> arrived, std::size_t first,
                       std::size_t last, finish_state* fs) {
  const std::byte* bytes = arrived->bytes.data();
  const std::vector<std::uint32_t>& starts = arrived->starts;
  for (std::size_t i = first; i < last; ++i) {
    const std::size_t begin = starts[i];
    const std::size_t end = i + 1 < starts.size() ? starts[i + 1] : arrived->bytes.size();
    std::int64_t offset;
    std::memcpy(&offset, bytes + begin, sizeof offset);
    byte_reader args(std::span(bytes + begin + sizeof offset, end - begin - sizeof offset));
    try {
      reinterpret_cast<plain_async_invoker>(const_cast<void*>(place_engine::code_at(offset)))(
          args);
    } catch (...) { // the function threw, or its arguments did not deserialize
      fs->add_exception(std::current_exception());
    }
  }
  co_return;
}

} // namespace

plain_arrivals& place_engine::plain_arrivals_of(const finish_id& id, place_id from) {
  // A full block is counted and made runnable now (as at the end of the batch), and a new
  // one begins: blocks stay small enough for their offsets and for the reserve of the next.
  if (m_plain != nullptr && m_plain->bytes.size() >= k_max_plain_block_bytes) [[unlikely]]
    flush_arrivals();
  // Not counted yet, and not freed meanwhile (as in on_activity). The arguments are kept as
  // bytes and deserialized when the batch runs: a failure then is that activity's exception.
  proxy& px = find_proxy(id);
  gather_arrivals_of(px, from == id.home);
  if (m_plain == nullptr) [[unlikely]] {
    m_plain = std::make_shared<plain_arrivals>();
    m_plain->bytes.reserve(m_plain_capacity.first);
    m_plain->starts.reserve(m_plain_capacity.second);
  }
  return *m_plain;
}

void place_engine::on_plain_async(place_id from, std::span<const std::byte> message) {
  // The head in one bounds check: finish id, then the code offset that starts the entry.
  byte_reader r(message);
  const std::byte* head = r.read_span(sizeof(place_id) + sizeof(std::uint64_t) + sizeof(std::int64_t)).data();
  finish_id id;
  std::memcpy(&id.home, head, sizeof id.home);
  std::memcpy(&id.serial, head + sizeof id.home, sizeof id.serial);
  plain_arrivals& block = plain_arrivals_of(id, from);
  // The entry is the rest of the message as it came: code offset, then the arguments.
  const std::size_t entry_at = sizeof id.home + sizeof id.serial;
  block.starts.push_back(static_cast<std::uint32_t>(block.bytes.size())); // < 2 GiB
  block.bytes.append(message.data() + entry_at, message.size() - entry_at);
}

namespace {
[[noreturn, gnu::cold, gnu::noinline]] void throw_bad_run(place_id here, place_id from,
                                                          std::size_t bytes,
                                                          std::uint32_t args_bytes) {
  throw transport_error(fmt::format("apgas: place {}: a run of plain asyncs from place {} has {} "
                                    "bytes of arguments, not a positive multiple of {}",
                                    here, from, bytes, args_bytes));
}
} // namespace

void place_engine::on_plain_run(place_id from, std::span<const std::byte> message) {
  byte_reader r(message);
  // The merge_head after its kind: finish id, code offset, argument size, zeros.
  constexpr std::size_t k_head = std::tuple_size_v<merge_head> - 1;
  const std::byte* head = r.read_span(k_head).data();
  finish_id id;
  std::int64_t code;
  std::uint32_t args_bytes;
  std::memcpy(&id.home, head, sizeof id.home);
  std::memcpy(&id.serial, head + sizeof id.home, sizeof id.serial);
  std::memcpy(&code, head + sizeof id.home + sizeof id.serial, sizeof code);
  std::memcpy(&args_bytes, head + sizeof id.home + sizeof id.serial + sizeof code,
              sizeof args_bytes);
  const std::span<const std::byte> args = r.read_span(r.remaining());
  if (args_bytes == 0 || args.empty() || args.size() % args_bytes != 0) [[unlikely]]
    throw_bad_run(m_here, from, args.size(), args_bytes);
  // One entry per async, as on_plain_async makes them: code offset, then its arguments. A
  // run may hold more than a block should (see k_max_plain_block_bytes): it is split.
  const std::size_t entry_bytes = sizeof code + args_bytes;
  const std::byte* in = args.data();
  for (std::size_t left = args.size() / args_bytes; left != 0;) {
    plain_arrivals& block = plain_arrivals_of(id, from);
    std::size_t at = block.bytes.size();
    const std::size_t room =
        at < k_max_plain_block_bytes ? (k_max_plain_block_bytes - at) / entry_bytes : 0;
    const std::size_t n = std::min(left, std::max<std::size_t>(room, 1));
    std::byte* out = block.bytes.extend(n * entry_bytes);
    const std::size_t first = block.starts.size();
    block.starts.resize(first + n);
    std::uint32_t* starts = block.starts.data() + first;
    for (std::size_t i = 0; i < n; ++i, at += entry_bytes, out += entry_bytes, in += args_bytes) {
      starts[i] = static_cast<std::uint32_t>(at);
      std::memcpy(out, &code, sizeof code);
      std::memcpy(out + sizeof code, in, args_bytes);
    }
    left -= n;
  }
}

std::size_t place_engine::batch_plain_arrivals() {
  if (m_plain == nullptr) return 0;
  const std::size_t n = m_plain->starts.size();
  // Every worker of the place should get several batches of a network message's worth
  // (several: the asyncs may differ in cost); one worker gets the biggest batches.
  const std::size_t workers = m_sched.worker_count();
  const std::size_t per_batch =
      workers <= 1 ? k_max_plain_batch
                   : std::clamp<std::size_t>(n / (4 * workers), 1, k_max_plain_batch);
  // The next arrivals start as big as these: the next network message is probably alike.
  m_plain_capacity = {std::max(m_plain_capacity.first, m_plain->bytes.size()),
                      std::max(m_plain_capacity.second, n)};
  std::shared_ptr<const plain_arrivals> arrived = std::move(m_plain);
  finish_state* fs = &m_arrivals_proxy->fs;
  for (std::size_t first = 0; first < n; first += per_batch) {
    const std::size_t last = std::min(first + per_batch, n);
    promise_base* p = &run_plain_batch(arrived, first, last, fs).release().promise();
    p->m_finish = fs;
    p->m_role = promise_base::role::strand;
    p->m_parent = nullptr;
    m_arrivals.push_back(p);
  }
  return n;
}

void place_engine::flush_arrivals() noexcept {
  if (m_arrivals.empty() && m_plain == nullptr) return;
  proxy& px = *m_arrivals_proxy;
  // Batches of plain asyncs are strands of the finish like other arrivals, but hold several
  // activities each: the proxy counts strands (to know when its part is quiet) and reports
  // activities. Out of memory here cannot be reported to anyone: it ends the job (noexcept).
  const std::size_t others = m_arrivals.size();
  const std::size_t activities = others + batch_plain_arrivals();
  {
    std::lock_guard count_guard(px.lock);
    // As in arrive(); the injects below come after, on this thread.
    px.on_arrivals_locked(m_arrivals.size());
    px.tally.on_arrivals(activities, m_arrivals_from_home);
  }
  // The proxy stays alive: its count now holds these activities until they end.
  for (promise_base* p : m_arrivals) m_sched.inject(as_independent(p));
  m_arrivals.clear(); // keeps the capacity
  m_arrivals_proxy = nullptr;
}

void place_engine::on_activity(place_id from, byte_reader& r, bool is_at) {
  const finish_id id = get_finish_id(r);
  const auto offset = deserialize<std::int64_t>(r);
  std::uint64_t token = 0;
  if (is_at) token = deserialize<std::uint64_t>(r);
  // Not counted yet, and not freed meanwhile: a cleanup of its finish cannot come before this
  // place reported these activities, which it has not even counted.
  proxy& px = find_proxy(id);
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
    flush_arrivals();
    arrive(id, from);
    px.fs.add_exception(std::current_exception());
    if (is_at) {
      const std::string text = describe_current_exception();
      send_reply(reply_address{from, token}, false,
                 std::as_bytes(std::span(text.data(), text.size())));
    }
    end_strand(px);
    return;
  }
  p->m_finish = &px.fs;
  p->m_role = promise_base::role::strand;
  p->m_parent = nullptr;
  gather_arrivals_of(px, from == id.home);
  try {
    m_arrivals.push_back(p);
  } catch (...) { // out of memory: count and run it alone
    flush_arrivals();
    arrive(id, from);
    m_sched.inject(as_independent(p));
  }
}

namespace {
/// An rpc body run as an activity (see on_rpc), on its own copy of the arguments.
task<> run_rpc_later(std::vector<std::byte> args, rpc_invoker inv, reply_address to) {
  byte_reader r(args);
  inv(r, to);
  co_return;
}
} // namespace

void place_engine::on_rpc(place_id from, byte_reader& r) {
  const auto offset = deserialize<std::int64_t>(r);
  const reply_address to{from, deserialize<std::uint64_t>(r)};
  auto inv = reinterpret_cast<rpc_invoker>(const_cast<void*>(code_at(offset)));
  // Run here, now, unless this handler runs inside a strand (a busy worker's poll, a sender
  // waiting for room): the body then could wait for something that strand holds (a lock, say)
  // on the same thread, so it runs as an activity instead. A worker between strands, the
  // watcher and a thread waiting for a run's end hold nothing of any activity.
  // relaxed load and store, no read-modify-write: one poller at a time (see m_rpcs_served).
  m_rpcs_served.store(m_rpcs_served.load(std::memory_order_relaxed) + 1,
                      std::memory_order_relaxed);
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

bool place_engine::served_rpcs_lately() const noexcept {
  // As long as the spin of an idle worker that expects messages (see scheduler.cpp).
  constexpr std::int64_t k_rpc_alert_ns = 1'000'000;
  const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  // relaxed: hints (see m_rpcs_served).
  const std::uint64_t served = m_rpcs_served.load(std::memory_order_relaxed);
  if (served != m_rpcs_noticed.load(std::memory_order_relaxed)) {
    m_rpcs_noticed.store(served, std::memory_order_relaxed);
    m_rpcs_noticed_at_ns.store(now, std::memory_order_relaxed);
    return true;
  }
  return now - m_rpcs_noticed_at_ns.load(std::memory_order_relaxed) < k_rpc_alert_ns;
}

void place_engine::on_reply(byte_reader& r) {
  const auto token = deserialize<std::uint64_t>(r);
  const bool ok = deserialize<std::uint8_t>(r) != 0;
  auto* sink = reinterpret_cast<reply_sink*>(static_cast<std::uintptr_t>(token));
  m_awaited.sub(); // relaxed: a hint
  sink->on_reply(ok, r.read_span(r.remaining())); // read in place: no copy of the value
}

// ---- the finish protocol ---------------------------------------------------------------------

void place_engine::end_strand(proxy& px, std::uint64_t n) noexcept {
  std::unique_lock guard(px.lock);
  // acq_rel: release these strands' writes (and sends) to whoever takes the report; acquire
  // the other strands' if we are the last.
  const auto ends = static_cast<std::int64_t>(n);
  if (px.fs.m_count.fetch_sub(ends, std::memory_order_acq_rel) != ends) return;
  if (!px.asked && px.id.home != m_here && m_report_hold_max.count() > 0 &&
      (px.reports > 0 || px.tally.received_from_home() >= k_stream_activities)) {
    // Not the first quiet period (or a stream from the home), and the home has not asked: it
    // is still busy itself, and more of this finish's activities are probably on their way (a
    // stream of asyncs arrives one coalesced buffer at a time). The report waits for the
    // home's ask (see on_ask and finish_protocol.hpp), or m_report_hold_max if none comes.
    const auto now = report_clock::now();
    px.quiet_since = now;
    if (!px.deferred) {
      px.deferred = true;
      defer_report(px.id, now + m_report_hold_max);
    }
    return;
  }
  take_and_send_report(px, std::move(guard));
}

void place_engine::defer_report(const finish_id& id, report_clock::time_point due) {
  std::lock_guard list_guard(m_deferred_mutex);
  m_deferred.push_back(deferred_report{id, due});
  // release: poll() reads the count without the lock to skip the list when it is empty.
  m_deferred_count.store(m_deferred.size(), std::memory_order_release);
}

void place_engine::send_due_reports() noexcept {
  // acquire: pairs with the release stores in end_strand and below.
  if (m_deferred_count.load(std::memory_order_acquire) == 0) return;
  // Held reports are due only after m_report_hold_max (a safeguard, see end_strand): a look at
  // the list every 64 polls of a thread is soon enough, and spares the busy polls of a place
  // that holds a report through a whole stream a lock, a clock read and a scan each.
  thread_local unsigned polls_until_look = 1;
  if (--polls_until_look != 0) return;
  polls_until_look = 64;
  std::vector<deferred_report> due;
  const auto now = report_clock::now();
  {
    std::unique_lock list_guard(m_deferred_mutex, std::try_to_lock);
    if (!list_guard.owns_lock()) return; // another worker is at it
    std::erase_if(m_deferred, [&](const deferred_report& d) {
      if (now < d.due) return false;
      due.push_back(d);
      return true;
    });
    m_deferred_count.store(m_deferred.size(), std::memory_order_release);
  }
  for (const deferred_report& d : due) {
    std::unique_lock map_guard(m_proxies_mutex);
    auto it = m_proxies.find(d.id);
    if (it == m_proxies.end()) continue; // an ask took its report meanwhile; the finish ended
    proxy& px = *it->second;
    std::unique_lock guard(px.lock);
    map_guard.unlock(); // px cannot go away: its report is not taken (see struct proxy)
    if (!px.deferred) continue; // an ask took it
    if (px.fs.m_count.load(std::memory_order_relaxed) != 0) {
      // Busy again: the strand that ends it will defer again.
      px.deferred = false;
      continue;
    }
    const auto due = px.quiet_since + m_report_hold_max;
    if (now < due) { // it woke up and went quiet again meanwhile: wait from then on
      defer_report(px.id, due);
      continue;
    }
    m_counters.holds_expired.fetch_add(1, std::memory_order_relaxed);
    take_and_send_report(px, std::move(guard));
  }
}

void place_engine::take_and_send_report(proxy& px, std::unique_lock<spin_lock> guard) noexcept {
  // pre: guard holds px.lock and px's count is zero.
  try {
    finish_report rep = px.tally.take_report(px.id, m_here);
    std::vector<std::string> errors;
    {
      std::lock_guard exceptions_guard(px.fs.m_exceptions_lock);
      if (px.fs.m_exceptions) {
        for (const auto& e : *px.fs.m_exceptions) {
          try {
            std::rethrow_exception(e);
          } catch (...) {
            errors.push_back(describe_current_exception());
          }
        }
        px.fs.discard_exceptions();
      }
    }
    ++px.reports;
    const finish_id id = px.id;
    // A held report leaves the deferred list with it (an ask came, or its hold expired):
    // otherwise the place would think a report due and poll often until then (see
    // expecting_messages).
    if (std::exchange(px.deferred, false)) forget_deferred(id);
    guard.unlock();
    // From here on px may be freed (the home may finish and clean up): use the copies only.
    if (is_spmd(id)) { // its one activity has ended: nothing more can arrive, no cleanup will
      proxy* owned = nullptr;
      {
        std::lock_guard map_guard(m_proxies_mutex);
        auto it = m_proxies.find(id);
        if (it != m_proxies.end()) {
          owned = it->second;
          m_proxies.erase(it);
        }
      }
      delete owned;
    }
    if (id.home == m_here) {
      apply_report(rep, errors);
      return;
    }
    std::vector<std::byte> bytes;
    byte_writer w(bytes);
    put(w, static_cast<std::uint8_t>(msg_kind::report));
    put_finish_id(w, rep.id);
    put(w, rep.seq);
    put(w, rep.completed);
    put(w, rep.sent);
    put(w, errors);
    m_counters.reports_sent.fetch_add(1, std::memory_order_relaxed);
    send_message(id.home, bytes);
    m_net->flush(); // a finish may be waiting for exactly this report
  } catch (const std::exception& e) {
    std::fprintf(stderr, "apgas: place %u: cannot report a finish: %s\n", m_here, e.what());
    std::abort(); // the home would wait forever
  }
}

void place_engine::on_report(place_id from, byte_reader& r) {
  finish_report rep;
  rep.from = from;
  rep.id = get_finish_id(r);
  rep.seq = deserialize<std::uint64_t>(r);
  rep.completed = deserialize<std::uint64_t>(r);
  rep.sent = deserialize<std::vector<std::pair<place_id, std::uint64_t>>>(r);
  const auto errors = deserialize<std::vector<std::string>>(r);
  apply_report(rep, errors);
}

void place_engine::apply_report(const finish_report& rep, const std::vector<std::string>& errors) {
  finish_state* f = nullptr;
  {
    std::lock_guard guard(m_homes_mutex);
    auto it = m_homes.find(rep.id.serial);
    if (it == m_homes.end()) {
      std::fprintf(stderr, "apgas: place %u: report for unknown finish %u:%llu\n", m_here,
                   rep.id.home, static_cast<unsigned long long>(rep.id.serial));
      std::abort();
    }
    f = it->second;
  }
  auto& link = *static_cast<home_link*>(f->m_remote);
  for (const auto& text : errors)
    f->add_exception(std::make_exception_ptr(remote_exception(rep.from, text)));
  for (const auto& [to, n] : rep.sent) link.touch(to);
  link.touch(rep.from);
  std::vector<place_id> ask;
  const bool closed = link.tally.on_report(rep, &ask);
  // Once this report is applied, a report applied by another thread (the home's own proxy's,
  // from the worker that ended its last strand) may close the tally and end the finish: `f`
  // and `link` may be freed from here on unless this report closed it (then the finish waits
  // for the release below). So the asks use the report's copy of the id, not link.id.
  send_asks(rep.id, ask); // (none if closed)
  if (closed) {
    m_awaited.sub(); // relaxed: a hint
    if (f->release_remote_part()) complete_from_outside(*f);
  }
}

void place_engine::on_home_quiet(finish_state& f) noexcept {
  // acquire: pairs with create_home_link's release (the link is non-null: the remote part is
  // open, and the caller's acquire of the count saw it open, see open_remote_part).
  auto* link = static_cast<home_link*>(
      std::atomic_ref<void*>(f.m_remote).load(std::memory_order_acquire));
  try {
    send_asks(link->id, link->tally.on_home_quiet());
  } catch (const std::exception& e) {
    // The places asked report anyway, once their hold expires (--report-delay-us).
    std::fprintf(stderr, "apgas: place %u: cannot ask for a finish's reports: %s\n", m_here,
                 e.what());
  }
}

void place_engine::send_asks(const finish_id& id, const std::vector<place_id>& places) {
  if (places.empty() || is_spmd(id)) return; // an SPMD proxy never holds its one report
  std::vector<std::byte> bytes;
  byte_writer w(bytes);
  put(w, static_cast<std::uint8_t>(msg_kind::ask));
  put_finish_id(w, id);
  bool sent = false;
  for (place_id p : places) {
    if (p == m_here) continue; // the home's own proxy never holds a report
    m_counters.asks_sent.fetch_add(1, std::memory_order_relaxed);
    send_message(p, bytes);
    sent = true;
  }
  if (sent) m_net->flush(); // the home waits for what it asked
}

void place_engine::on_ask(byte_reader& r) {
  flush_arrivals(); // count what arrived before the ask: the report then includes it
  const finish_id id = get_finish_id(r);
  std::unique_lock map_guard(m_proxies_mutex);
  auto it = m_proxies.find(id);
  // No proxy yet: the home was told of activities sent here by another place, and they are
  // still on their way. This place's first report then leaves at once (they do not come from
  // the home, see finish_protocol.hpp): nothing to ask for.
  if (it == m_proxies.end()) return;
  proxy& px = *it->second;
  std::unique_lock guard(px.lock);
  map_guard.unlock(); // px cannot go away: the home waits for it (pending there)
  px.asked = true;
  // A held report leaves now; if the part is busy, its end reports at once (asked).
  if (px.deferred && px.fs.m_count.load(std::memory_order_relaxed) == 0)
    take_and_send_report(px, std::move(guard));
}

void place_engine::forget_deferred(const finish_id& id) {
  std::lock_guard list_guard(m_deferred_mutex);
  std::erase_if(m_deferred, [&](const deferred_report& d) { return d.id == id; });
  // release: as in defer_report.
  m_deferred_count.store(m_deferred.size(), std::memory_order_release);
}

void place_engine::complete_from_outside(finish_state& f) {
  if (f.m_waiter != nullptr) m_sched.inject(as_independent(f.m_waiter));
  else (void)f.on_complete(); // a root finish: wakes the thread in run()
}

void place_engine::release_home(finish_state& f) noexcept {
  auto* link = static_cast<home_link*>(f.m_remote);
  {
    std::lock_guard guard(m_homes_mutex);
    m_homes.erase(link->id.serial);
  }
  // SPMD proxies freed themselves when they reported: no cleanup for them.
  if (!is_spmd(link->id)) send_cleanups(*link);
  f.m_remote = nullptr;
  delete link;
}

void place_engine::send_cleanups(const home_link& link) noexcept {
  try {
    std::vector<std::byte> bytes;
    byte_writer w(bytes);
    put(w, static_cast<std::uint8_t>(msg_kind::cleanup));
    put_finish_id(w, link.id);
    link.for_each_touched([&](place_id p) {
      // To this place too, through the transport's loopback: proxies are freed by message
      // handlers only (see m_last_arrival). Only messages to other places are counted.
      if (p != m_here) m_counters.cleanups_sent.fetch_add(1, std::memory_order_relaxed);
      send_message(p, bytes);
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "apgas: place %u: cannot clean up a finish: %s\n", m_here, e.what());
  }
}

void place_engine::on_cleanup(byte_reader& r) {
  flush_arrivals(); // (none can be of this finish: it ended, so they were all reported)
  const finish_id id = get_finish_id(r);
  proxy* px = nullptr;
  {
    std::lock_guard guard(m_proxies_mutex);
    auto it = m_proxies.find(id);
    if (it == m_proxies.end()) return; // nothing ever arrived here
    px = it->second;
    m_proxies.erase(it);
  }
  if (m_last_arrival == px) m_last_arrival = nullptr; // handler context, like arrive()
  // Every report of px was taken (the home finished), and whoever took the last one no longer
  // touches it; the lock is free unless a deferred-report scan looks at it: wait for that.
  { std::lock_guard wait_for_scan(px->lock); }
  delete px;
}

std::string place_engine::describe_open_finishes() const {
  std::string s;
  std::lock_guard guard(m_homes_mutex);
  for (const auto& [serial, f] : m_homes) {
    const auto* link = static_cast<const home_link*>(f->m_remote);
    s += fmt::format("  finish {}:{} pending (activities sent minus completed)", m_here, serial);
    for (const auto& [p, n] : link->tally.snapshot()) s += fmt::format(" place {}={}", p, n);
    s += "\n";
  }
  return s;
}

// ---- runs ------------------------------------------------------------------------------------

void place_engine::announce_run_end(bool ok, std::span<const std::byte> payload) {
  std::vector<std::byte> bytes;
  byte_writer w(bytes);
  put(w, static_cast<std::uint8_t>(msg_kind::run_end));
  put(w, static_cast<std::uint8_t>(ok ? 1 : 0));
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  for (place_id p = 0; p < m_places; ++p)
    if (p != m_here) send_message(p, bytes);
  m_net->flush();
}

std::pair<bool, std::vector<std::byte>> place_engine::await_run_end() {
  std::unique_lock lock(m_run_mutex);
  // The workers serve (and poll the network) meanwhile; this thread is not a worker.
  m_run_cv.wait(lock, [this] { return !m_run_ends.empty(); });
  auto end = std::move(m_run_ends.front());
  m_run_ends.pop_front();
  return end;
}

void place_engine::barrier() { m_net->barrier(); }

} // namespace detail
} // namespace apgas
