// What the scheduler of a place needs from the places layer: a way to make progress on
// messages when a worker has nothing else to do. Core knows no MPI; places implements this.
#pragma once

namespace apgas::detail {

/// @brief The message dispatcher of a place, as seen by its idle workers.
/// Thread-safety: any worker may call these concurrently (implementations try-lock).
class network {
public:
  virtual ~network() = default;
  /// @brief Delivers what arrived, sends what is due. @return true if it delivered anything.
  virtual bool poll() noexcept = 0;
  /// @brief A worker is about to park: send everything buffered now.
  virtual void flush() noexcept = 0;
  /// @brief True if this place expects messages soon (the reply of an `at`, the reports of a
  /// finish whose activities went elsewhere) or has something due without any (a delayed
  /// report): idle workers then keep polling longer before they park, and the parked watcher
  /// polls at short intervals.
  virtual bool expecting_messages() const noexcept { return false; }
  /// @brief True if a parked place must still wake up now and then to poll: messages can come
  /// from other places, or something here waits for a poll (a buffered message, a held
  /// report). Called by a worker about to park, after it announced itself to the idle gate.
  /// A network that ever answers false must call scheduler::wake_for_network() after each
  /// thing that could make it answer true (a send), so that nothing waits for workers that
  /// all sleep without a time limit; and it must order its reads after the caller's
  /// announcement (a seq_cst fence first), the other half of that Dekker pattern.
  virtual bool needs_polls_when_idle() const noexcept { return true; }
};

} // namespace apgas::detail
