// The shape of the lifeline protocol (glb_graph.hpp): the lifeline graph has low degree both
// ways and lets work reach every place from any place; the start tree covers every place; the
// random victims are other places.
#include <apgas/detail/glb_graph.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <set>
#include <vector>

namespace {

using namespace apgas::detail::glb;

/// The places work can reach from `from`: it flows from a lifeline to the places registered
/// on it, against the graph's edges.
std::vector<bool> fed_from(place_id from, place_id places, unsigned base, unsigned z) {
  std::vector<std::vector<place_id>> thieves(places);
  for (place_id h = 0; h < places; ++h)
    for (place_id b : lifelines_of(h, places, base, z)) thieves[b].push_back(h);
  std::vector<bool> seen(places, false);
  std::deque<place_id> todo{from};
  seen[from] = true;
  while (!todo.empty()) {
    const place_id v = todo.front();
    todo.pop_front();
    for (place_id t : thieves[v])
      if (!seen[t]) {
        seen[t] = true;
        todo.push_back(t);
      }
  }
  return seen;
}

TEST(glb_graph, dimensions_are_the_smallest_power_of_the_base_that_covers_the_places) {
  EXPECT_EQ(lifeline_dimensions(1, 32), 1U);
  EXPECT_EQ(lifeline_dimensions(32, 32), 1U);
  EXPECT_EQ(lifeline_dimensions(33, 32), 2U);
  EXPECT_EQ(lifeline_dimensions(1024, 2), 10U);
  EXPECT_EQ(lifeline_dimensions(1025, 2), 11U);
  EXPECT_EQ(lifeline_dimensions(100'000, 32), 4U);
}

TEST(glb_graph, a_hypercube_of_base_2_links_each_place_to_its_neighbours) {
  // 8 places, base 2: the lifeline of h in dimension j is h with bit j flipped.
  for (place_id h = 0; h < 8; ++h) {
    const auto l = lifelines_of(h, 8, 2, 3);
    ASSERT_EQ(l.size(), 3U);
    for (unsigned j = 0; j < 3; ++j) EXPECT_EQ(l[j], h ^ (1U << j));
  }
}

TEST(glb_graph, low_degree_both_ways_and_work_reaches_every_place) {
  for (unsigned base : {2U, 3U, 4U, 8U, 32U}) {
    for (place_id places : {2U, 3U, 5U, 7U, 31U, 32U, 33U, 100U, 257U, 1000U}) {
      const unsigned z = lifeline_dimensions(places, base);
      std::vector<unsigned> in(places, 0);
      for (place_id h = 0; h < places; ++h) {
        const auto l = lifelines_of(h, places, base, z);
        EXPECT_LE(l.size(), z);
        EXPECT_GE(l.size(), 1U) << "place " << h << " of " << places << " has no lifeline";
        for (place_id b : l) {
          ASSERT_LT(b, places);
          EXPECT_NE(b, h);
          ++in[b];
        }
        EXPECT_EQ(std::set<place_id>(l.begin(), l.end()).size(), l.size()) << "a duplicate";
      }
      EXPECT_LE(*std::max_element(in.begin(), in.end()), z);
      for (place_id from : {place_id{0}, places / 2, places - 1}) {
        const auto seen = fed_from(from, places, base, z);
        EXPECT_EQ(std::count(seen.begin(), seen.end(), true), places)
            << "base " << base << ", " << places << " places, from " << from;
      }
    }
  }
}

TEST(glb_graph, more_dimensions_than_needed_add_no_lifelines) {
  EXPECT_EQ(lifelines_of(5, 10, 32, 9), lifelines_of(5, 10, 32, 1));
}

TEST(glb_graph, the_start_tree_covers_every_place_once) {
  for (place_id places : {1U, 2U, 4U, 10U, 1000U}) {
    std::vector<int> parents(places, 0);
    for (place_id h = 0; h < places; ++h)
      for (place_id c : tree_children_of(h, places)) {
        ++parents[c];
        EXPECT_EQ(tree_parent_of(c), h);
      }
    EXPECT_EQ(parents[0], 0);
    for (place_id h = 1; h < places; ++h) EXPECT_EQ(parents[h], 1) << h;
  }
}

TEST(glb_graph, victims_are_other_places) {
  random_source rng(7);
  const auto few = victims_of(3, 10, 1024, rng);
  EXPECT_EQ(few.size(), 9U); // every other place, once
  EXPECT_EQ(std::count(few.begin(), few.end(), 3U), 0);
  const auto many = victims_of(3, 100'000, 1024, rng);
  EXPECT_EQ(many.size(), 1024U); // m of them, not O(places)
  for (place_id v : many) {
    EXPECT_LT(v, 100'000U);
    EXPECT_NE(v, 3U);
  }
}

} // namespace
