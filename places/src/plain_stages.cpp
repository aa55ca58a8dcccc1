// Plain runs staged per worker (see plain_stages.hpp): starting, handing on and flushing.
#include "apgas/detail/plain_stages.hpp"

#include "apgas/detail/steady_time.hpp"

#include <utility>

namespace apgas::detail {

plain_stages::plain_stages(const scheduler& sched, std::chrono::microseconds flush_after,
                           hand_on_fn hand_on, void* context)
    : m_sched(&sched), m_stage_count(sched.worker_count()),
      m_flush_after_ns(std::chrono::duration_cast<std::chrono::nanoseconds>(flush_after).count()),
      m_hand_on(hand_on), m_context(context),
      m_stages(std::make_unique<stage[]>(sched.worker_count())) {}

void plain_stages::start_run_locked(stage& st, std::size_t i, place_id to, const finish_id& id,
                                    std::int64_t code, std::size_t args_bytes) noexcept {
  if (st.slots[i].id != nullptr) hand_on_locked(st, i);
  if (st.busy_slots++ == 0) {
    // relaxed: a hint for other threads' flushes (see m_busy_stages); the stage's contents
    // are read under its lock.
    m_busy_stages.fetch_add(1, std::memory_order_relaxed);
    st.since_ns.store(steady_now_ns(), std::memory_order_relaxed);
  }
  slot& s = st.slots[i];
  s.to = to;
  s.id = &id;
  s.code = code;
  s.args_bytes = static_cast<std::uint32_t>(args_bytes);
}

void plain_stages::hand_on_locked(stage& st, std::size_t i) noexcept {
  slot& s = st.slots[i];
  const std::uint32_t used = std::exchange(s.used, 0);
  const finish_id& id = *std::exchange(s.id, nullptr);
  // The slot is free before the send: the send may poll, and a poll flushes (it finds the
  // stage locked by us and leaves it, see flush).
  m_hand_on(m_context, s.to, id, s.code, s.args_bytes, st.bytes[i], used / s.args_bytes);
  if (--st.busy_slots == 0) {
    st.since_ns.store(0, std::memory_order_relaxed); // relaxed: see start_run_locked
    m_busy_stages.fetch_sub(1, std::memory_order_relaxed);
  }
}

void plain_stages::flush_stage_locked(stage& st) noexcept {
  for (std::size_t i = 0; i < k_slots; ++i)
    if (st.slots[i].id != nullptr) hand_on_locked(st, i);
}

void plain_stages::flush(bool all) noexcept {
  // relaxed: a hint (see m_busy_stages). A stage that became busy on another thread without
  // this thread seeing it yet is found at a later poll; this thread's own stage is always seen
  // (its own writes).
  if (m_busy_stages.load(std::memory_order_relaxed) == 0) return;
  const worker* w = t_worker;
  const unsigned own = w != nullptr && &w->sched() == m_sched ? w->index() : m_stage_count;
  const std::int64_t now = all ? 0 : steady_now_ns();
  for (unsigned i = 0; i < m_stage_count; ++i) {
    stage& st = m_stages[i];
    // relaxed: a hint, checked again under the lock (busy_slots).
    const std::int64_t since = st.since_ns.load(std::memory_order_relaxed);
    if (since == 0) continue;
    if (i != own && !all && now - since < m_flush_after_ns) continue;
    // Never wait: the owner holds the lock for one append, or for a hand-on that is polling
    // right now (this may be that poll, on the owner's own thread).
    if (!st.lock.try_lock()) continue;
    flush_stage_locked(st);
    st.lock.unlock();
  }
}

} // namespace apgas::detail
