// SHA-1 of several UTS children at once with the CPU's SHA instructions (sha1_shani in
// uts_sha1.hpp). One SHA-1 block is a chain of 20 dependent sha1rnds4 instructions, whose
// latency, not the CPU's throughput, bounds a single hash; the children of one node are
// independent, so their instruction streams are interleaved and the CPU overlaps them.
// Without SHA instructions (checked once), OpenSSL's compression function does the work.
#include "apgas_apps/uts_sha1.hpp"

#include <bit>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define APGAS_UTS_HAVE_SHANI 1
#endif

namespace apgas_apps::uts {

namespace {

std::uint32_t load_be32(const std::uint8_t* at) noexcept {
  std::uint32_t v;
  std::memcpy(&v, at, 4);
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap32(v);
  return v;
}

void store_be32(std::uint8_t* at, std::uint32_t v) noexcept {
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap32(v);
  std::memcpy(at, &v, 4);
}

#if APGAS_UTS_HAVE_SHANI

/// SHA-1's initial state.
constexpr std::uint32_t k_h0 = 0x67452301, k_h1 = 0xEFCDAB89, k_h2 = 0x98BADCFE, k_h3 = 0x10325476,
                        k_h4 = 0xC3D2E1F0;

/// One 64-byte block per stream: child index[s] of the node whose state is *parent[s], for
/// s < K. The message words are built in registers (word 0 in the high lane, as sha1rnds4 wants
/// them): the parent's 5 words, the index, the padding's 0x80000000, zeros, and the length,
/// 192 bits.
template <int K>
[[gnu::target("sha,sse4.1,ssse3"), gnu::always_inline]] inline void
compress(const digest* const (&parent)[K], const std::uint32_t (&index)[K],
         digest* const (&out)[K]) noexcept {
  const __m128i abcd_init = _mm_set_epi32(static_cast<int>(k_h0), static_cast<int>(k_h1),
                                          static_cast<int>(k_h2), static_cast<int>(k_h3));
  const __m128i e_init = _mm_set_epi32(static_cast<int>(k_h4), 0, 0, 0);
  const auto word = [](const digest& d, int i) {
    return static_cast<int>(load_be32(d.data() + 4 * i));
  };
  __m128i abcd[K], e0[K], e1[K], m[K][4];
#pragma GCC unroll 8
  for (int s = 0; s < K; ++s) {
    const digest& p = *parent[s];
    abcd[s] = abcd_init;
    m[s][0] = _mm_set_epi32(word(p, 0), word(p, 1), word(p, 2), word(p, 3));
    m[s][1] =
        _mm_set_epi32(word(p, 4), static_cast<int>(index[s]), static_cast<int>(0x80000000U), 0);
    m[s][2] = _mm_setzero_si128();
    m[s][3] = _mm_set_epi32(0, 0, 0, 192);
    // Rounds 0-3.
    e0[s] = _mm_add_epi32(e_init, m[s][0]);
    e1[s] = abcd[s];
    abcd[s] = _mm_sha1rnds4_epu32(abcd[s], e0[s], 0);
  }
  // Rounds 4j .. 4j+3: the E of these rounds comes from the state four rounds back (sha1nexte),
  // and the message schedule of the rounds ahead is built meanwhile (sha1msg1, xor, sha1msg2).
#pragma GCC unroll 19
  for (int j = 1; j < 20; ++j) {
#pragma GCC unroll 8
    for (int s = 0; s < K; ++s) {
      __m128i& cur = (j & 1) != 0 ? e1[s] : e0[s];
      __m128i& other = (j & 1) != 0 ? e0[s] : e1[s];
      cur = _mm_sha1nexte_epu32(cur, m[s][j & 3]);
      other = abcd[s];
      if (j >= 3 && j <= 18) m[s][(j + 1) & 3] = _mm_sha1msg2_epu32(m[s][(j + 1) & 3], m[s][j & 3]);
      switch (j / 5) { // the round function: an immediate operand
      case 0:
        abcd[s] = _mm_sha1rnds4_epu32(abcd[s], cur, 0);
        break;
      case 1:
        abcd[s] = _mm_sha1rnds4_epu32(abcd[s], cur, 1);
        break;
      case 2:
        abcd[s] = _mm_sha1rnds4_epu32(abcd[s], cur, 2);
        break;
      default:
        abcd[s] = _mm_sha1rnds4_epu32(abcd[s], cur, 3);
        break;
      }
      if (j <= 16) m[s][(j - 1) & 3] = _mm_sha1msg1_epu32(m[s][(j - 1) & 3], m[s][j & 3]);
      if (j >= 2 && j <= 17) m[s][(j - 2) & 3] = _mm_xor_si128(m[s][(j - 2) & 3], m[s][j & 3]);
    }
  }
#pragma GCC unroll 8
  for (int s = 0; s < K; ++s) {
    // After round 79 (j = 19, odd), e0 holds the state of four rounds back.
    const __m128i e = _mm_sha1nexte_epu32(e0[s], e_init);
    const __m128i h = _mm_add_epi32(abcd[s], abcd_init);
    std::uint8_t* d = out[s]->data();
    store_be32(d, static_cast<std::uint32_t>(_mm_extract_epi32(h, 3)));
    store_be32(d + 4, static_cast<std::uint32_t>(_mm_extract_epi32(h, 2)));
    store_be32(d + 8, static_cast<std::uint32_t>(_mm_extract_epi32(h, 1)));
    store_be32(d + 12, static_cast<std::uint32_t>(_mm_extract_epi32(h, 0)));
    store_be32(d + 16, static_cast<std::uint32_t>(_mm_extract_epi32(e, 3)));
  }
}

[[gnu::target("sha,sse4.1,ssse3")]] void children_shani(const digest& parent, std::uint32_t first,
                                                        unsigned count, digest* out) noexcept {
  for (; count >= 2; count -= 2, first += 2, out += 2)
    compress<2>({&parent, &parent}, {first, first + 1}, {out, out + 1});
  if (count == 1) compress<1>({&parent}, {first}, {out});
}

[[gnu::target("sha,sse4.1,ssse3")]] void two_shani(const digest& parent_a, std::uint32_t a,
                                                   const digest& parent_b, std::uint32_t b,
                                                   digest& out_a, digest& out_b) noexcept {
  compress<2>({&parent_a, &parent_b}, {a, b}, {&out_a, &out_b});
}

bool cpu_has_sha() noexcept {
  static const bool has = __builtin_cpu_supports("sha") && __builtin_cpu_supports("sse4.1");
  return has;
}

#endif

} // namespace

const char* const sha1_shani::k_name = "sha-ni-x2";

void sha1_shani::children(const digest& parent, std::uint32_t first, unsigned count,
                          digest* out) noexcept {
#if APGAS_UTS_HAVE_SHANI
  if (cpu_has_sha()) return children_shani(parent, first, count, out);
#endif
  for (unsigned i = 0; i < count; ++i) sha1_openssl_block::child(parent, first + i, out[i]);
}

void sha1_shani::two(const digest& parent_a, std::uint32_t a, const digest& parent_b,
                     std::uint32_t b, digest& out_a, digest& out_b) noexcept {
#if APGAS_UTS_HAVE_SHANI
  if (cpu_has_sha()) return two_shani(parent_a, a, parent_b, b, out_a, out_b);
#endif
  sha1_openssl_block::child(parent_a, a, out_a);
  sha1_openssl_block::child(parent_b, b, out_b);
}

void sha1_shani::child(const digest& parent, std::uint32_t index, digest& out) noexcept {
  children(parent, index, 1, &out);
}

void sha1_shani::root(std::int32_t seed, digest& out) noexcept {
  sha1_openssl_block::root(seed, out); // once per tree
}

bool sha1_shani::uses_sha_instructions() noexcept {
#if APGAS_UTS_HAVE_SHANI
  return cpu_has_sha();
#else
  return false;
#endif
}

} // namespace apgas_apps::uts
