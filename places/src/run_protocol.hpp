// The end of a run: place 0 runs the root task while the other places serve; when it ends,
// place 0 tells every other place, with the root's value or its error, and each place's run()
// returns it. (A run's start needs no message: the runtime's start-up barrier has every place
// ready before any sends.)
//
// Messages:
//   run end  ok flag, then the value's bytes or the error (as exception_codec.hpp writes it)
//            place 0 -> every other place
#pragma once

#include "apgas/detail/message_format.hpp"
#include "apgas/detail/protocol_module.hpp"

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <span>
#include <vector>

namespace apgas::detail {

/// @brief How a run ended, as place 0 announced it.
struct run_end {
  bool ok = true;
  std::vector<std::byte> payload; ///< the value's bytes, or the error
};

/// @brief The run-end module of a place. Thread-safety: any thread.
class run_protocol final : public protocol_module {
public:
  explicit run_protocol(message_dispatcher& dispatcher);

  /// @brief Place 0: tells every other place that the run ended, with its value (ok) or its
  /// error.
  void announce_run_end(bool ok, std::span<const std::byte> payload);
  /// @brief Places other than 0: waits for place 0's announce_run_end (the workers serve
  /// meanwhile; the caller is not a worker).
  run_end await_run_end();

private:
  void on_run_end(place_id from, std::span<const std::byte> body);

  message_dispatcher& m_dispatcher;
  message_kind m_kind_run_end;
  std::mutex m_mutex; ///< guards m_ends
  std::condition_variable m_cv;
  /// Ends of place 0's runs not yet taken here: place 0 may be several runs ahead.
  std::deque<run_end> m_ends;
};

} // namespace apgas::detail
