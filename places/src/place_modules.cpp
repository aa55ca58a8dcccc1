// The places layer's own protocol modules, as every runtime builds them (see place_modules.hpp).
#include "apgas/detail/place_modules.hpp"

#include "apgas/detail/active_messages.hpp"
#include "apgas/detail/message_dispatcher.hpp"
#include "apgas/detail/tree_messaging.hpp"

#include "distributed_finish.hpp"
#include "run_protocol.hpp"

#include <chrono>

namespace apgas::detail {

place_modules add_place_modules(message_dispatcher& dispatcher, const options& opts) {
  place_modules m{};
  m.runs = &dispatcher.add_module<run_protocol>();
  tree_messaging& tree = dispatcher.add_module<tree_messaging>();
  m.finish = &dispatcher.add_module<distributed_finish>(
      tree, std::chrono::microseconds(opts.report_delay_us));
  m.messages = &dispatcher.add_module<active_messages>(*m.finish);
  dispatcher.add_registered_modules();
  return m;
}

} // namespace apgas::detail
