// The protocol modules of the places layer itself, as the runtime builds them on its dispatcher.
#pragma once

#include "apgas/options.hpp"

namespace apgas::detail {

class message_dispatcher;
class active_messages;
class distributed_finish;
class run_protocol;

/// @brief The places layer's own modules of one dispatcher (owned by the dispatcher).
struct place_modules {
  run_protocol* runs;
  distributed_finish* finish;
  active_messages* messages;
};

/// @brief Adds the places layer's modules to `dispatcher` (in the order that fixes their message
/// kinds, the same at every place), then the modules registered by other folders.
place_modules add_place_modules(message_dispatcher& dispatcher, const options& opts);

} // namespace apgas::detail
