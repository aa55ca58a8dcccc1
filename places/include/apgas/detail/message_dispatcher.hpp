// The message dispatcher of a place: a thin layer between the scheduler (core) and the transport
// (the only code that talks to MPI). It owns the transport and the protocol modules of its place,
// and hands each logical message to the handler its kind (first byte) names. Every protocol is
// a module of its own (protocol_module.hpp): it registers its kinds and hooks here, sends
// through the dispatcher's transport, and keeps its state to itself.
#pragma once

#include "apgas/detail/message_format.hpp"
#include "apgas/detail/network.hpp"
#include "apgas/detail/protocol_module.hpp"
#include "apgas/detail/spread_counter.hpp"
#include "apgas/detail/transport.hpp"

#include <array>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace apgas::detail {

class scheduler;

/// @brief The dispatcher of one place. Thread-safety: any thread, except registrations (before the
/// first poll, from the thread that builds the dispatcher).
class message_dispatcher final : public network {
public:
  /// @brief A message handler: `body` is the message after its kind byte, valid during the call
  /// only, without alignment. Handlers run one at a time (the transport's poller).
  using handler_fn = void (*)(void* module, place_id from, std::span<const std::byte> body);

  message_dispatcher(scheduler& sched, std::unique_ptr<transport> net);
  message_dispatcher(const message_dispatcher&) = delete;
  message_dispatcher& operator=(const message_dispatcher&) = delete;
  /// Destroys the modules (newest first), then the transport.
  ~message_dispatcher() override;

  /// @brief The dispatcher of this process's runtime. pre: a runtime exists.
  static message_dispatcher& current();
  /// @brief The dispatcher of this process's runtime, or null.
  static message_dispatcher* current_or_null() noexcept;
  /// @brief Makes `e` the runtime's dispatcher (null: none). Called by the runtime only: tests may
  /// build several dispatchers in one process, over a fake network.
  static void set_current(message_dispatcher* e) noexcept;

  place_id here() const noexcept { return m_here; }
  place_id places() const noexcept { return m_places; }
  /// @brief Throws apgas::bad_place unless p names a place.
  void check_place(place_id p) const;
  scheduler& sched() const noexcept { return m_sched; }
  transport& net() const noexcept { return *m_net; }

  // ---- modules and their registrations ----
  /// @brief Creates module M(*this, args...) and keeps it until the dispatcher ends.
  template <class M, class... A>
  M& add_module(A&&... args) {
    auto module = std::make_unique<M>(*this, std::forward<A>(args)...);
    M& m = *module;
    m_modules.push_back(std::move(module));
    return m;
  }
  /// @brief The module of type M, or null (a scan: for statistics and tests, not hot paths).
  template <class M>
  M* find_module() const noexcept {
    for (const auto& m : m_modules)
      if (auto* found = dynamic_cast<M*>(m.get())) return found;
    return nullptr;
  }
  /// @brief Creates the modules registered with register_protocol_module, in name order.
  void add_registered_modules();
  /// @brief Gives the next free kind to `fn` (called with `module`); `name` is for diagnostics.
  /// @throws std::logic_error once all 255 kinds are taken.
  message_kind add_handler(std::string name, handler_fn fn, void* module);
  /// @brief add_handler for a member `void M::Method(place_id from, span<const byte> body)`.
  template <auto Method, class M>
  message_kind add_handler(M& module, std::string name) {
    return add_handler(
        std::move(name),
        [](void* m, place_id from, std::span<const std::byte> body) {
          (static_cast<M*>(m)->*Method)(from, body);
        },
        &module);
  }
  /// @brief `M::Method()` (noexcept) runs before every poll of the network (timers that fell due).
  template <auto Method, class M>
  void before_each_poll(M& module) {
    m_before_poll.push_back({[](void* m) noexcept { (static_cast<M*>(m)->*Method)(); }, &module});
  }
  /// @brief `M::Method()` (noexcept) runs before every flush of the network (what a module
  /// holds back for coalescing of its own leaves with the transport's buffers).
  template <auto Method, class M>
  void before_each_flush(M& module) {
    m_before_flush.push_back({[](void* m) noexcept { (static_cast<M*>(m)->*Method)(); }, &module});
  }
  /// @brief `M::Method(bool on)` (noexcept) is told of every set_coalescing(on).
  template <auto Method, class M>
  void on_coalescing_switch(M& module) {
    m_coalescing_switches.push_back(
        {[](void* m, bool on) noexcept { (static_cast<M*>(m)->*Method)(on); }, &module});
  }
  /// @brief `M::Method()` (noexcept) runs after each run of handler calls that one poll made, on
  /// the same thread: a module applies there in one step what it gathered over several messages.
  template <auto Method, class M>
  void after_each_delivery(M& module) {
    m_after_delivery.push_back(
        {[](void* m) noexcept { (static_cast<M*>(m)->*Method)(); }, &module});
  }
  /// @brief `M::Method() const` (noexcept) tells idle workers that the module expects messages
  /// soon or has something due without any (see network::expecting_messages).
  template <auto Method, class M>
  void expects_messages_when(const M& module) {
    m_expecting.push_back(
        {[](const void* m) noexcept { return (static_cast<const M*>(m)->*Method)(); }, &module});
  }
  /// @brief `M::Method() const` describes the module's open state for a hung run's dump, under
  /// `title` (e.g. "open distributed finishes"): indented lines, one per open thing, or nothing.
  template <auto Method, class M>
  void describes_state_with(const M& module, std::string title) {
    m_describers.push_back({[](const void* m) { return (static_cast<const M*>(m)->*Method)(); },
                            &module, std::move(title)});
  }

  /// @brief `M::Method() const` gives the module's statistics (lines under its own heading)
  /// for the table --stats prints at exit, after the place's message table.
  template <auto Method, class M>
  void reports_stats_with(const M& module) {
    m_stats.push_back(
        {[](const void* m) { return (static_cast<const M*>(m)->*Method)(); }, &module, {}});
  }
  /// @brief The modules' statistics (see reports_stats_with), one section each.
  std::string describe_stats() const;

  /// @brief The kind registered under `name` (see add_handler), or 0 if none (for tests and
  /// diagnostics).
  message_kind kind_named(std::string_view name) const noexcept;
  /// @brief The name of every kind, indexed by kind (kind 0, unused, has an empty name), for
  /// the trace's message arrows.
  std::vector<std::string> kind_names() const {
    std::vector<std::string> names(1);
    names.insert(names.end(), m_handler_names.begin(), m_handler_names.end());
    return names;
  }
  /// @brief Hands `body` to the handler registered for `kind`, as a message from `from` (for
  /// modules that route other modules' messages, such as tree_messaging). Handler context.
  /// @throws transport_error if no module registered `kind`.
  void handle(place_id from, message_kind kind, std::span<const std::byte> body);

  /// @brief Runs the after-delivery hooks, as the end of a poll's deliveries does (for tests
  /// that hand messages to handle() themselves). Handler context.
  void end_delivery() noexcept {
    for (const hook& h : m_after_delivery) h.fn(h.module);
  }

  /// @brief `M::Method() const` adds a clause to this place's progress lines
  /// (options::progress_ms), e.g. a protocol's throughput; empty: nothing to add. It runs on
  /// the progress thread: it must only read thread-safe figures.
  template <auto Method, class M>
  void describes_progress_with(const M& module) {
    m_progress.push_back({[](const void* m) { return (static_cast<const M*>(m)->*Method)(); },
                          &module, std::string()});
  }

  // ---- hints for idle workers ----
  /// @brief A message this place waits for (an `at` reply, a finish's reports) is on its way:
  /// idle workers keep polling longer before they park.
  void expect_message() noexcept { m_awaited.add(); }
  /// @brief An expected message arrived (or is no longer expected).
  void expected_message_arrived() noexcept { m_awaited.sub(); }

  /// @brief Runs the before_each_flush hooks only: what modules hold back leaves with the
  /// transport's buffers (before a control message that should not overtake it).
  void flush_held_back() noexcept {
    for (const hook& h : m_before_flush) h.fn(h.module);
  }

  // ---- network (called by idle workers) ----
  bool poll() noexcept override;
  void flush() noexcept override;
  bool needs_polls_when_idle() const noexcept override;
  bool expecting_messages() const noexcept override;

  /// @brief Polls this place for a worker that awaits one message (an `at` reply) and has
  /// nothing else to do, until `arrived(arg)` holds: true then. Gives up (false) after
  /// --spin-us, at once if that is 0, or as soon as the place has work another activity could
  /// run (the awaiting activity then suspends as usual). Resuming straight from here saves
  /// the suspension, the handoff through the scheduler and its search loop.
  bool wait_in_place(bool (*arrived)(const void*) noexcept, const void* arg) noexcept;

  /// @brief Collective: flushes and waits for every place, delivering messages meanwhile.
  void barrier() { m_net->barrier(); }
  /// @brief See transport::set_coalescing; the modules that coalesce on their own follow.
  void set_coalescing(bool on) {
    m_net->set_coalescing(on);
    for (const switch_hook& h : m_coalescing_switches) h.fn(h.module, on);
  }
  transport_stats transport_counters() const { return m_net->stats(); }
  /// @brief What the modules hold open (a titled section each: open distributed finishes,
  /// suspended whens, ...), for a hung run: printed on SIGUSR1 (see install_dump_signal).
  std::string describe_state() const;
  /// @brief The modules' clauses for a progress line (see describes_progress_with), joined
  /// with "; "; empty if none has anything to say.
  std::string progress_text() const;
  /// @brief Makes SIGUSR1 print this place's describe_state() at its next poll.
  static void install_dump_signal();

private:
  struct handler_entry {
    handler_fn fn = nullptr;
    void* module = nullptr;
  };
  struct hook {
    void (*fn)(void*) noexcept;
    void* module;
  };
  struct switch_hook {
    void (*fn)(void*, bool) noexcept;
    void* module;
  };
  struct predicate {
    bool (*fn)(const void*) noexcept;
    const void* module;
  };
  struct describer {
    std::string (*fn)(const void*);
    const void* module;
    std::string title;
  };

  void on_message(place_id from, std::span<const std::byte> bytes);
  void dump_state() const noexcept;

  scheduler& m_sched;
  std::unique_ptr<transport> m_net;
  place_id m_here;
  place_id m_places;
  /// One place: nothing arrives but what this place sends itself (see needs_polls_when_idle).
  bool m_loopback_only;
  /// Indexed by kind; written before the first poll, read by the poller only.
  std::array<handler_entry, 256> m_handlers{};
  std::vector<std::string> m_handler_names; ///< by kind, for diagnostics
  std::vector<hook> m_before_poll;
  std::vector<hook> m_before_flush;
  std::vector<switch_hook> m_coalescing_switches;
  std::vector<hook> m_after_delivery;
  std::vector<predicate> m_expecting;
  std::vector<describer> m_describers;
  std::vector<describer> m_stats;
  std::vector<describer> m_progress; ///< progress clauses (no title)
  /// Messages this place waits for (a hint for idle workers, see expect_message).
  spread_counter m_awaited;
  /// After the transport: destroyed first (they may send while they end).
  std::vector<std::unique_ptr<protocol_module>> m_modules;
};

} // namespace apgas::detail
