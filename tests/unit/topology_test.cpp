// Worker pinning when several places share one cpuset (mpiexec --bind-to none): the PU index
// computation, the launcher's local rank/size as core reads them from the environment (core
// knows nothing of MPI), and the topology itself.
#include "apgas/detail/topology.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace {

using apgas::detail::local_placement;
using apgas::detail::local_placement_from_env;
using apgas::detail::parse_local_placement;
using apgas::detail::pin_pu_index;
using apgas::detail::workers_exceed_pus;

TEST(pinning, not_shared_worker_i_gets_pu_i) {
  // Alone on the node, or bound by the launcher to a cpuset of its own: the old behaviour.
  for (unsigned w = 0; w < 8; ++w) {
    EXPECT_EQ(pin_pu_index(w, 8, 8, {}, false), w);
    EXPECT_EQ(pin_pu_index(w, 8, 8, local_placement{3, 4}, false), w); // own cpuset: no offset
    EXPECT_EQ(pin_pu_index(w, 8, 8, local_placement{0, 1}, true), w);  // one place: no offset
  }
  EXPECT_EQ(pin_pu_index(9, 12, 8, {}, false), 1u); // more workers than PUs: wraps
}

TEST(oversubscription, counts_the_workers_of_every_place_sharing_the_cpuset) {
  // Own cpuset (bound by the launcher, or alone): only this place's workers count.
  EXPECT_FALSE(workers_exceed_pus(1, 1, local_placement{1, 2}, false)); // 2 places, a core each
  EXPECT_FALSE(workers_exceed_pus(2, 2, {}, false));
  EXPECT_TRUE(workers_exceed_pus(3, 2, {}, false));
  // Shared cpuset: every place on the node runs as many workers.
  EXPECT_FALSE(workers_exceed_pus(1, 2, local_placement{0, 2}, true)); // 2 x 1 on 2 PUs
  EXPECT_TRUE(workers_exceed_pus(1, 2, local_placement{3, 4}, true));  // 4 x 1 on 2 PUs
  EXPECT_TRUE(workers_exceed_pus(2, 2, local_placement{0, 2}, true));  // 2 x 2 on 2 PUs
  // No overflow of size x threads.
  EXPECT_TRUE(workers_exceed_pus(1U << 31, 4096, local_placement{0, 1U << 20}, true));
}

TEST(pinning, shared_cpuset_offsets_by_local_rank_times_threads) {
  // 4 places x 2 workers on 8 PUs: each place gets its own two PUs.
  std::set<unsigned> used;
  for (unsigned rank = 0; rank < 4; ++rank)
    for (unsigned w = 0; w < 2; ++w) {
      const unsigned pu = pin_pu_index(w, 2, 8, local_placement{rank, 4}, true);
      EXPECT_EQ(pu, rank * 2 + w);
      used.insert(pu);
    }
  EXPECT_EQ(used.size(), 8u) << "places piled onto the same PUs";
}

TEST(pinning, shared_cpuset_wraps_modulo_the_pu_count) {
  // 2 places x 2 workers on 2 PUs (this repository's test machine): both places cover both PUs.
  EXPECT_EQ(pin_pu_index(0, 2, 2, local_placement{1, 2}, true), 0u);
  EXPECT_EQ(pin_pu_index(1, 2, 2, local_placement{1, 2}, true), 1u);
  // 4 places x 1 worker on 2 PUs: two places a PU, instead of all four on PU 0.
  std::vector<unsigned> per_pu(2, 0);
  for (unsigned rank = 0; rank < 4; ++rank)
    ++per_pu[pin_pu_index(0, 1, 2, local_placement{rank, 4}, true)];
  EXPECT_EQ(per_pu, (std::vector<unsigned>{2, 2}));
  // 3 places x 3 workers on 4 PUs: place 1 starts at PU 3 and wraps to 0 and 1.
  EXPECT_EQ(pin_pu_index(0, 3, 4, local_placement{1, 3}, true), 3u);
  EXPECT_EQ(pin_pu_index(1, 3, 4, local_placement{1, 3}, true), 0u);
  EXPECT_EQ(pin_pu_index(2, 3, 4, local_placement{1, 3}, true), 1u);
}

TEST(pinning, large_values_do_not_overflow) {
  // rank * threads = 2^32 + 2^16 overflows 32 bits; mod 7 of the true product is 2.
  const unsigned rank = 65537;
  const unsigned threads = 65536;
  const unsigned long long product = 1ULL * rank * threads;
  EXPECT_EQ(pin_pu_index(0, threads, 7, local_placement{rank, rank + 1}, true), product % 7);
  EXPECT_LT(pin_pu_index(~0u, ~0u, 13, local_placement{~0u - 1, ~0u}, true), 13u);
  EXPECT_EQ(pin_pu_index(5, 4, 0, local_placement{1, 2}, true), 0u); // pre violated: in range
}

TEST(pinning, parses_local_rank_and_size) {
  const auto p = parse_local_placement("3", "4");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->rank, 3u);
  EXPECT_EQ(p->size, 4u);
  EXPECT_FALSE(parse_local_placement(nullptr, "4").has_value());
  EXPECT_FALSE(parse_local_placement("0", nullptr).has_value());
  EXPECT_FALSE(parse_local_placement("", "4").has_value());
  EXPECT_FALSE(parse_local_placement("4", "4").has_value()); // rank must be below size
  EXPECT_FALSE(parse_local_placement("0", "0").has_value());
  EXPECT_FALSE(parse_local_placement("-1", "4").has_value());
  EXPECT_FALSE(parse_local_placement("1x", "4").has_value());
  EXPECT_FALSE(parse_local_placement("1", "99999999999").has_value()); // out of range
}

/// Sets (or, with nullptr, unsets) an environment variable for one scope.
class scoped_env {
public:
  scoped_env(const char* name, const char* value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    if (value != nullptr) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~scoped_env() {
    if (m_old) setenv(m_name.c_str(), m_old->c_str(), 1);
    else unsetenv(m_name.c_str());
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

private:
  std::string m_name;
  std::optional<std::string> m_old;
};

TEST(pinning, placement_from_open_mpi_then_hydra_environment) {
  // No other thread runs while these change the environment (gtest runs tests one at a time).
  {
    scoped_env a("OMPI_COMM_WORLD_LOCAL_RANK", "2");
    scoped_env b("OMPI_COMM_WORLD_LOCAL_SIZE", "4");
    scoped_env c("MPI_LOCALRANKID", "1");
    scoped_env d("MPI_LOCALNRANKS", "3");
    const local_placement p = local_placement_from_env();
    EXPECT_EQ(p.rank, 2u); // Open MPI first
    EXPECT_EQ(p.size, 4u);
  }
  {
    scoped_env a("OMPI_COMM_WORLD_LOCAL_RANK", nullptr);
    scoped_env b("OMPI_COMM_WORLD_LOCAL_SIZE", nullptr);
    scoped_env c("MPI_LOCALRANKID", "1");
    scoped_env d("MPI_LOCALNRANKS", "3");
    const local_placement p = local_placement_from_env();
    EXPECT_EQ(p.rank, 1u);
    EXPECT_EQ(p.size, 3u);
  }
  {
    scoped_env a("OMPI_COMM_WORLD_LOCAL_RANK", "5"); // invalid: rank >= size
    scoped_env b("OMPI_COMM_WORLD_LOCAL_SIZE", "4");
    scoped_env c("MPI_LOCALRANKID", nullptr);
    scoped_env d("MPI_LOCALNRANKS", nullptr);
    const local_placement p = local_placement_from_env();
    EXPECT_EQ(p.rank, 0u); // alone on the node
    EXPECT_EQ(p.size, 1u);
  }
}

TEST(pinning, topology_reports_its_cpuset) {
  apgas::detail::topology& t = apgas::detail::topology::instance();
  EXPECT_GE(t.pu_count(), 1u);
  EXPECT_NE(t.describe().find("PU(s):"), std::string::npos);
}

} // namespace
