// The out-of-line part of <apgas/future.hpp>.
#include "apgas/future.hpp"

#include "apgas/detail/exception_codec.hpp"

#include <cstdio>

namespace apgas::detail {

void report_unobserved(const std::exception_ptr& error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (...) {
    try {
      std::fprintf(stderr, "apgas: a future's work failed and nobody awaited it: %s\n",
                   describe_current_exception().c_str());
    } catch (...) {
      std::fprintf(stderr, "apgas: a future's work failed and nobody awaited it\n");
    }
  }
}

} // namespace apgas::detail
