// UTS's SHA-1 implementations give the same digests: the AVX-512 one (16 lanes, any parents),
// the interleaved SHA-instruction one (on siblings and on pairs of different parents), OpenSSL's
// paths and the portable one, and the known SHA-1 of 20 zero bytes; and the instruction paths are
// the ones taken where the CPU has the instructions.
#include "apgas_apps/uts.hpp"
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace {

namespace uts = apgas_apps::uts;

std::string hex(const uts::digest& d) {
  std::string s;
  char buf[3];
  for (std::uint8_t b : d) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    s += buf;
  }
  return s;
}

/// The CPU's flags as the kernel lists them (the first processor's "flags" line of
/// /proc/cpuinfo); none where there is no such file.
std::set<std::string> cpu_flags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string flag; words >> flag;) flags.insert(flag);
    return flags;
  }
  return {};
}

uts::digest some_state(std::uint32_t i) {
  uts::digest d;
  uts::sha1_portable::root(static_cast<std::int32_t>(i * 2654435761U), d);
  return d;
}

TEST(uts_sha1, every_implementation_gives_the_same_children) {
  for (std::uint32_t i = 0; i < 200; ++i) {
    const uts::digest parent = some_state(i);
    const std::uint32_t index = i * 7919U;
    uts::digest want, got;
    uts::sha1_portable::child(parent, index, want);
    uts::sha1_openssl_block::child(parent, index, got);
    EXPECT_EQ(hex(got), hex(want));
    uts::sha1_openssl::child(parent, index, got);
    EXPECT_EQ(hex(got), hex(want));
    uts::sha1_evp::child(parent, index, got);
    EXPECT_EQ(hex(got), hex(want));
    uts::sha1_oneshot::child(parent, index, got);
    EXPECT_EQ(hex(got), hex(want));
    uts::sha1_shani::child(parent, index, got);
    EXPECT_EQ(hex(got), hex(want));
    uts::sha1_avx512::child(parent, index, got);
    EXPECT_EQ(hex(got), hex(want));
  }
}

TEST(uts_sha1, many_hashed_in_lanes_match_one_at_a_time) {
  // Different parents per lane, counts around the 16 lanes (partial and several rounds).
  uts::digest parents[40];
  for (std::uint32_t i = 0; i < 40; ++i) parents[i] = some_state(i + 77);
  for (unsigned count : {1U, 2U, 7U, 15U, 16U, 17U, 33U, 40U}) {
    const uts::digest* p[40];
    std::uint32_t index[40];
    for (unsigned i = 0; i < count; ++i) {
      p[i] = &parents[(i * 7) % 40];
      index[i] = 1000 * i + count;
    }
    uts::digest out[40];
    uts::sha1_avx512::many(p, index, count, out);
    for (unsigned i = 0; i < count; ++i) {
      uts::digest want;
      uts::sha1_portable::child(*p[i], index[i], want);
      EXPECT_EQ(hex(out[i]), hex(want)) << "lane " << i << " of " << count;
    }
  }
}

TEST(uts_sha1, siblings_and_pairs_hashed_together_match_one_at_a_time) {
  for (std::uint32_t i = 0; i < 50; ++i) {
    const uts::digest a = some_state(i), b = some_state(i + 1000);
    for (unsigned count = 1; count <= 5; ++count) {
      uts::digest out[5];
      uts::sha1_shani::children(a, 100 * i, count, out);
      for (unsigned k = 0; k < count; ++k) {
        uts::digest want;
        uts::sha1_portable::child(a, 100 * i + k, want);
        EXPECT_EQ(hex(out[k]), hex(want)) << "child " << k << " of " << count;
      }
    }
    uts::digest x, y, want_x, want_y;
    uts::sha1_shani::two(a, i, b, i + 1, x, y);
    uts::sha1_portable::child(a, i, want_x);
    uts::sha1_portable::child(b, i + 1, want_y);
    EXPECT_EQ(hex(x), hex(want_x));
    EXPECT_EQ(hex(y), hex(want_y));
  }
}

TEST(uts_sha1, roots_match) {
  uts::digest want, got;
  uts::sha1_portable::root(19, want);
  uts::sha1_shani::root(19, got);
  EXPECT_EQ(hex(got), hex(want));
  uts::sha1_openssl::root(19, got);
  EXPECT_EQ(hex(got), hex(want));
}

TEST(uts_sha1, the_portable_digest_of_20_zero_bytes_is_sha1s) {
  // The test's reference checked against SHA-1 itself: seed 0 hashes 20 zero bytes.
  uts::digest d;
  uts::sha1_portable::root(0, d);
  EXPECT_EQ(hex(d), "6768033e216468247bd031a0a2d9876d79818f8f"); // SHA-1 of 20 zero bytes
}

// The tests above check the SHA-instruction and AVX-512 paths only where they are taken: each
// falls back (to OpenSSL, to the SHA-instruction path) on a CPU without its instructions, and
// would fault if it took them there. The kernel's list of the CPU's flags says independently
// which paths should be taken.
TEST(uts_sha1, the_instruction_paths_are_taken_exactly_where_the_cpu_has_the_instructions) {
  const std::set<std::string> flags = cpu_flags();
  if (flags.empty()) GTEST_SKIP() << "no CPU flags in /proc/cpuinfo to compare with";
  std::printf("sha1_shani uses the CPU's SHA instructions: %s; sha1_avx512 uses AVX-512: %s\n",
              uts::sha1_shani::uses_sha_instructions() ? "yes" : "no (OpenSSL path)",
              uts::sha1_avx512::uses_avx512() ? "yes" : "no (SHA-instruction path)");
#if defined(__x86_64__)
  EXPECT_EQ(uts::sha1_shani::uses_sha_instructions(),
            flags.contains("sha_ni") && flags.contains("sse4_1"));
  EXPECT_EQ(uts::sha1_avx512::uses_avx512(), flags.contains("avx512f"));
#elif !defined(__i386__)
  EXPECT_FALSE(uts::sha1_shani::uses_sha_instructions()); // no such instructions here
  EXPECT_FALSE(uts::sha1_avx512::uses_avx512());
#endif
}

} // namespace
