// The application kernels agree with their sequential versions under both policies.
#include "test_support.hpp"
#include <apgas_apps/fib.hpp>
#include <apgas_apps/integrate.hpp>
#include <apgas_apps/nqueens.hpp>
#include <apgas_apps/quicksort.hpp>
#include <apgas_apps/spanning_tree.hpp>

#include <algorithm>
#include <random>
#include <vector>

namespace {

class app_kernels : public apgas_test::runtime_test {};

TEST_P(app_kernels, fib_matches_sequential_with_and_without_cutoff) {
  EXPECT_EQ(rt().run(apgas_apps::fib(20)), apgas_apps::fib_seq(20));
  EXPECT_EQ(rt().run(apgas_apps::fib(22, 12)), apgas_apps::fib_seq(22));
}

TEST_P(app_kernels, integrate_matches_sequential_and_the_exact_integral) {
  const double n = 64.0 / (apgas_test::k_sanitizer_slowdown * apgas_test::k_sanitizer_slowdown);
  const double par = rt().run(apgas_apps::integrate(n));
  EXPECT_DOUBLE_EQ(par, apgas_apps::integrate_seq(n));
  // Each accepted interval may be off by up to epsilon: a loose check against the exact value.
  EXPECT_NEAR(par, apgas_apps::integrate_exact(n), 1e-6 * apgas_apps::integrate_exact(n));
}

TEST_P(app_kernels, nqueens_matches_the_known_counts) {
  for (int n = 1; n <= 9; ++n)
    EXPECT_EQ(rt().run(apgas_apps::nqueens(n, n)), apgas_apps::nqueens_known(n));
  EXPECT_EQ(rt().run(apgas_apps::nqueens(10, 3)), apgas_apps::nqueens_known(10));
}

TEST_P(app_kernels, quicksort_sorts) {
  for (std::size_t n :
       {0UL, 1UL, 2UL, 3UL, 17UL, 1000UL, 50000UL / apgas_test::k_sanitizer_slowdown}) {
    std::vector<int> v(n);
    std::mt19937 g(static_cast<unsigned>(n));
    for (int& x : v) x = static_cast<int>(g() % 1000); // many duplicates on purpose
    std::vector<int> want = v;
    std::sort(want.begin(), want.end());
    rt().run(apgas_apps::quicksort(v.data(), v.size()));
    EXPECT_EQ(v, want) << "n=" << n;
  }
}

TEST_P(app_kernels, spanning_trees_are_trees_by_both_methods) {
  // Both traversals race for vertices at 2 and 4 workers: every tree is checked whole.
  const std::uint32_t k = static_cast<std::uint32_t>(apgas_test::k_sanitizer_slowdown);
  std::vector<apgas_apps::csr_graph> graphs; // move-only
  graphs.push_back(apgas_apps::make_random(200000 / k, 2, 7));
  graphs.push_back(apgas_apps::make_torus(300 / k + 2, 7));
  graphs.push_back(apgas_apps::make_hypercube(k == 1 ? 15 : 11, 7));
  graphs.push_back(apgas_apps::make_bintree(k == 1 ? 17 : 13, 7));
  for (const apgas_apps::csr_graph& g : graphs) {
    std::vector<apgas_apps::vertex_id> parent(g.vertex_count());
    for (const bool on_demand : {true, false}) {
      apgas_apps::reset_parents(parent);
      if (on_demand) rt().run(apgas_apps::spanning_tree_on_demand(g, 0, parent));
      else (void)rt().run(apgas_apps::spanning_tree(g, 0, parent, 50));
      const auto c = apgas_apps::check_spanning_tree(g, 0, parent);
      EXPECT_TRUE(c.ok) << (on_demand ? "on-demand" : "depth-limited") << ", " << g.vertex_count()
                        << " vertices: " << c.error;
    }
  }
}

APGAS_INSTANTIATE_CONFIGS(app_kernels);

} // namespace
