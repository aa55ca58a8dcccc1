// Timeline tracing (--trace DIR): what each worker of a place did and when, kept in bounded
// per-thread buffers while the place runs and written as Chrome trace events when it ends
// (core/src/trace.cpp). Off, every hook is one test of g_trace_on, a flag set before any
// worker starts and never changed while they run, so the branch is always predicted.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace apgas::detail {

/// @brief What a trace event records; the names in the file are in trace.cpp.
enum class trace_kind : std::uint8_t {
  activities,   ///< a worker ran items (a = activities spawned meanwhile + 1, folded)
  steal,        ///< a worker took an item from another worker (a = victim)
  park,         ///< a worker slept on the idle gate
  finish_wait,  ///< an activity waited for a finish of its place (from co_await to resume)
  at_wait,      ///< an activity waited for an `at` reply (a = the place it ran at)
  clock_wait,   ///< an activity waited for a clock phase to end (a = phase)
  when_wait,    ///< an activity waited for a `when` condition
  send,         ///< a network message left (a = destination, b = sequence, c = bytes, d = frames)
  receive,      ///< a network message arrived (a = source, b = sequence, c = bytes)
  glb_steal,    ///< GLB: a place out of work asked a victim for loot (a = victim)
  glb_idle,     ///< GLB: a place out of work waited on its lifelines
  glb_lifeline, ///< GLB: a place registered on a lifeline (a = the buddy)
  glb_lifeline_loot, ///< GLB: loot came along a lifeline (a = from, b = items)
  collective_wait,   ///< an activity waited for a team collective to complete
  rma_wait,          ///< an activity waited for an rget or rput (a = target place)
};

/// @brief One event: a slice from start to end (equal for an instant). 40 bytes.
struct trace_event {
  std::int64_t start_ns = 0; ///< steady clock of this place
  std::int64_t end_ns = 0;
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  std::uint32_t c = 0;
  std::uint16_t d = 0;
  trace_kind kind = trace_kind::activities;
  std::uint8_t e = 0; ///< send: the kind of the first message inside
};

/// @brief Events of one thread (a worker, or the place's network), in a buffer sized once.
/// Thread-safety: one writer at a time (its worker, or whoever holds the network lock), read
/// after the writers stopped. Full, it keeps the oldest events and counts the newer ones.
class trace_buffer {
public:
  explicit trace_buffer(std::size_t capacity)
      : m_events(std::make_unique<trace_event[]>(capacity)), m_capacity(capacity) {}

  /// @brief Appends `e` or, full, counts it as dropped: no lock, no allocation.
  void add(const trace_event& e) noexcept {
    if (m_size < m_capacity) m_events[m_size++] = e;
    else ++m_dropped;
  }
  /// @brief Activities that ran from start_ns to end_ns: folded with the slices before them
  /// while those are shorter than `fold_ns` together (see flush_fold).
  void add_activities(std::int64_t start_ns, std::int64_t end_ns, std::uint64_t count,
                      std::int64_t fold_ns) noexcept {
    if (m_fold_count != 0 && start_ns - m_fold.start_ns > fold_ns) flush_fold();
    if (m_fold_count == 0) m_fold.start_ns = start_ns;
    m_fold.end_ns = end_ns;
    m_fold_count += count;
    if (end_ns - m_fold.start_ns >= fold_ns) flush_fold();
  }
  /// @brief Writes the folded activities, if any, as one slice.
  void flush_fold() noexcept {
    if (m_fold_count == 0) return;
    m_fold.kind = trace_kind::activities;
    m_fold.a = m_fold_count;
    add(m_fold);
    m_fold_count = 0;
  }

  const trace_event* begin() const noexcept { return m_events.get(); }
  const trace_event* end() const noexcept { return m_events.get() + m_size; }
  std::size_t size() const noexcept { return m_size; }
  std::size_t capacity() const noexcept { return m_capacity; }
  std::uint64_t dropped() const noexcept { return m_dropped; }

private:
  std::unique_ptr<trace_event[]> m_events;
  std::size_t m_capacity;
  std::size_t m_size = 0;
  std::uint64_t m_dropped = 0;
  trace_event m_fold;             ///< the slice being folded
  std::uint64_t m_fold_count = 0; ///< activities in m_fold, 0: none
};

/// @brief True while a place records a trace. Written before the workers start and after they
/// stop (thread creation and join order it), read by every hook: a plain bool.
inline bool g_trace_on = false;

/// @brief This thread's trace buffer (a worker's), or null: events of other threads are not
/// recorded (the main thread only waits).
inline thread_local trace_buffer* t_trace = nullptr;

/// @brief Now, on the clock every event of this place uses.
inline std::int64_t trace_now() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// @brief Records `e` in this thread's buffer, if tracing and if it has one.
inline void trace_record(const trace_event& e) noexcept {
  if (trace_buffer* b = t_trace; b != nullptr) b->add(e);
}

/// @brief Times an activity's wait (for a finish, a reply, a phase): started where it suspends,
/// recorded where it resumes, maybe on another worker. Lives in the waiting frame's awaiter.
struct trace_wait {
  std::int64_t start_ns = 0;
  /// @brief Called where the activity suspends (tracing on).
  void begin() noexcept { start_ns = trace_now(); }
  /// @brief Called where it resumes: one slice of `kind` on the resuming worker, if it lasted
  /// `min_ns` at least (a finish whose body never suspended is no wait worth a slice).
  void end(trace_kind kind, std::uint64_t a = 0, std::int64_t min_ns = 0) const noexcept {
    if (start_ns == 0) return; // began before tracing started
    const std::int64_t now = trace_now();
    if (now - start_ns >= min_ns) trace_record(trace_event{start_ns, now, a, 0, 0, 0, kind});
  }
};

/// @brief The trace of one place: a buffer per worker and one for its network, the clock
/// offset to place 0, and the writer of the place's file. Made by the local runtime when
/// options::trace names a directory.
class trace_session {
public:
  /// @brief Buffers for `workers` workers and the network, of `capacity` events each;
  /// activities shorter than `fold_ns` are folded together.
  trace_session(std::string dir, unsigned workers, std::size_t capacity, std::int64_t fold_ns);

  trace_buffer& worker_buffer(unsigned w) noexcept { return *m_workers[w]; }
  trace_buffer& network_buffer() noexcept { return m_network; }
  std::int64_t fold_ns() const noexcept { return m_fold_ns; }
  const std::string& dir() const noexcept { return m_dir; }

  /// @brief Place 0's clock minus this place's, how far that may be off (from round trips),
  /// and the time on place 0's clock that the file's times count from (the same everywhere).
  void set_clock(std::int64_t offset_ns, std::int64_t error_ns, std::int64_t origin_ns) noexcept {
    m_offset_ns = offset_ns;
    m_error_ns = error_ns;
    m_origin_ns = origin_ns;
  }
  /// @brief Names of the message kinds, by kind (the file names a send's first message by it).
  void set_message_kinds(std::vector<std::string> names) { m_kind_names = std::move(names); }
  /// @brief Events dropped by full buffers, all threads together.
  std::uint64_t dropped() const noexcept;
  /// @brief Writes DIR/place-<here>.json (creating DIR), times shifted to place 0's clock, and
  /// says on stderr how many events were dropped, if any. pre: the workers have stopped.
  void write_place_file(unsigned here) const;
  /// @brief Place 0, after every place wrote its file: joins them into DIR/trace.json.
  /// @return false (and a line on stderr) if a place's file is missing or malformed.
  bool merge(unsigned places) const;

private:
  std::string m_dir;
  std::vector<std::unique_ptr<trace_buffer>> m_workers;
  trace_buffer m_network;
  std::int64_t m_fold_ns;
  std::int64_t m_origin_ns; ///< on place 0's clock: times in the file count from here
  std::int64_t m_offset_ns = 0;
  std::int64_t m_error_ns = 0;
  std::vector<std::string> m_kind_names;
};

/// @brief The trace session of this process while tracing, else null (set with g_trace_on).
inline trace_session* g_trace = nullptr;

} // namespace apgas::detail
