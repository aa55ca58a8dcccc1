// The triangular loop under TBB (see tbb_irregular.hpp).
#include "tbb_irregular.hpp"

#include "../irregular_loop.hpp"
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace apgas_bench::tbb_peer {

void triangular(std::uint64_t* out, std::uint64_t n) {
  tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, n),
                    [out](const tbb::blocked_range<std::uint64_t>& r) {
                      for (std::uint64_t i = r.begin(); i != r.end(); ++i)
                        out[i] = triangular_row(i);
                    });
}

} // namespace apgas_bench::tbb_peer
