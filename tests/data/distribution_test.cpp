// Distributions (no MPI): every global index has one owner and one offset there, offsets of a
// part are 0 .. local_size-1 in the order of the global indices, and back again, for block,
// cyclic and block-cyclic over sizes and part counts around their edge cases.
#include <apgas/distribution.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace {

using apgas::distribution;

void check_consistent(const distribution& d) {
  std::vector<std::size_t> next(d.parts(), 0); // the next offset expected in each part
  for (std::size_t i = 0; i < d.size(); ++i) {
    const std::uint32_t p = d.owner(i);
    ASSERT_LT(p, d.parts()) << i;
    ASSERT_EQ(d.local_index(i), next[p]) << "index " << i << " part " << p;
    ASSERT_EQ(d.global_index(p, next[p]), i) << "index " << i;
    ++next[p];
  }
  std::size_t total = 0;
  for (std::uint32_t p = 0; p < d.parts(); ++p) {
    EXPECT_EQ(d.local_size(p), next[p]) << "part " << p;
    total += d.local_size(p);
  }
  EXPECT_EQ(total, d.size());
}

TEST(distribution, every_index_has_one_owner_and_offset_and_maps_back) {
  for (std::size_t n : {0UL, 1UL, 2UL, 3UL, 7UL, 16UL, 17UL, 100UL, 1001UL})
    for (std::uint32_t parts : {1U, 2U, 3U, 4U, 7U, 16U}) {
      SCOPED_TRACE(testing::Message() << "n " << n << " parts " << parts);
      check_consistent(distribution::block(n, parts));
      check_consistent(distribution::cyclic(n, parts));
      for (std::size_t b : {1UL, 2UL, 3UL, 5UL, 64UL})
        check_consistent(distribution::block_cyclic(n, parts, b));
    }
}

TEST(distribution, block_gives_contiguous_ranges_within_one_of_each_other) {
  const distribution d = distribution::block(10, 4); // 3 3 2 2
  EXPECT_EQ(d.local_size(0), 3U);
  EXPECT_EQ(d.local_size(3), 2U);
  EXPECT_EQ(d.first(2), 6U);
  EXPECT_EQ(d.owner(5), 1U);
  EXPECT_EQ(d.owner(6), 2U);
}

TEST(distribution, block_cyclic_deals_whole_blocks_and_the_tail) {
  const distribution d = distribution::block_cyclic(10, 2, 3); // [0,3)->0 [3,6)->1 [6,9)->0 9->1
  EXPECT_EQ(d.owner(7), 0U);
  EXPECT_EQ(d.local_index(7), 4U);
  EXPECT_EQ(d.owner(9), 1U);
  EXPECT_EQ(d.local_size(0), 6U);
  EXPECT_EQ(d.local_size(1), 4U);
  EXPECT_THROW((void)distribution::block_cyclic(10, 2, 0), std::invalid_argument);
  EXPECT_THROW((void)distribution::block(10, 0), std::invalid_argument);
}

TEST(distribution, a_2d_block_distribution_is_a_grid_of_row_major_parts) {
  const auto [gr, gc] = apgas::distribution_2d::square_grid(6); // 3 x 2
  EXPECT_EQ(gr, 3U);
  EXPECT_EQ(gc, 2U);
  const auto d = apgas::distribution_2d::block(10, 7, gr, gc);
  EXPECT_EQ(d.parts(), 6U);
  EXPECT_EQ(d.owner(9, 6), 5U);
  EXPECT_EQ(d.local_rows(0), 4U); // rows 4 3 3
  EXPECT_EQ(d.local_cols(1), 3U); // columns 4 3
  std::size_t cells = 0;
  for (std::uint32_t p = 0; p < d.parts(); ++p) cells += d.local_rows(p) * d.local_cols(p);
  EXPECT_EQ(cells, 70U);
}

} // namespace
