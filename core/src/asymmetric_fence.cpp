// The only file that makes membarrier system calls (see asymmetric_fence.hpp).
#include "apgas/detail/asymmetric_fence.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace apgas::detail {

namespace {
long membarrier(int command) noexcept { return ::syscall(__NR_membarrier, command, 0, 0); }
} // namespace

bool register_asymmetric_fence() noexcept {
  const long commands = membarrier(MEMBARRIER_CMD_QUERY);
  if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

void heavy_fence() noexcept {
  // Cannot fail once registered; if it ever did, owners would pop unfenced: stop, loudly.
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
    std::fputs("apgas: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed after registration\n",
               stderr);
    std::abort();
  }
}

} // namespace apgas::detail
