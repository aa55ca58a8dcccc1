// What the scheduler of a place needs from the places layer: a way to make progress on
// messages when a worker has nothing else to do. Core knows no MPI; places implements this.
#pragma once

namespace apgas::detail {

/// @brief The message engine of a place, as seen by its idle workers.
/// Thread-safety: any worker may call these concurrently (implementations try-lock).
class network {
public:
  virtual ~network() = default;
  /// @brief Delivers what arrived, sends what is due. @return true if it delivered anything.
  virtual bool poll() noexcept = 0;
  /// @brief A worker is about to park: send everything buffered now.
  virtual void flush() noexcept = 0;
  /// @brief True if something is due soon even without incoming messages (a delayed report):
  /// the parked watcher then polls again after the shortest wait.
  virtual bool poll_due_soon() const noexcept { return false; }
};

} // namespace apgas::detail
