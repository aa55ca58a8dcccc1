// The out-of-line part of aggregator.hpp: the text of a batch whose updates failed.
#include "apgas/aggregator.hpp"

namespace apgas::detail {

std::string describe_failed_updates(std::size_t failed, std::size_t total,
                                    const std::exception_ptr& first) {
  std::string text = std::to_string(failed) + " of " + std::to_string(total) +
                     " aggregated updates failed; the first: ";
  try {
    std::rethrow_exception(first);
  } catch (...) {
    text += describe_current_exception();
  }
  return text;
}

} // namespace apgas::detail
