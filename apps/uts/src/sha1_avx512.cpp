// SHA-1 of up to 16 UTS children at once, one in each 32-bit lane of AVX-512 registers
// (sha1_avx512 in uts_sha1.hpp). SHA-1 is a chain of 80 dependent rounds of 32-bit additions,
// rotations and bitwise functions: one hash keeps few execution units busy, 16 hashes side by
// side in vector lanes keep them all busy (a round is a handful of instructions for 16 hashes:
// a three-input logic instruction for the round's function, two rotations, four additions).
// UTS hashes a node's children and many nodes are pending at once, so the lanes are full.
// Without AVX-512 (checked once), the SHA instructions take pairs (sha1_shani).
#include "apgas_apps/uts_sha1.hpp"

#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#define APGAS_UTS_HAVE_AVX512 1
#endif

namespace apgas_apps::uts {

namespace {

constexpr unsigned k_lanes = 16;

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

#if APGAS_UTS_HAVE_AVX512

// The masked form, all lanes: the same instruction, without the plain form's undefined source
// operand (which GCC 12 reports as used uninitialised).
#define APGAS_UTS_ROL(x, n) _mm512_maskz_rol_epi32(0xFFFF, (x), (n))

/// The 16 lanes: child index[l] of the node whose state is *parent[l], for l < count (the
/// other lanes hash the last one again). The message words: the parent's 5 words, the index,
/// the padding's 0x80000000, zeros, and the length, 192 bits.
[[gnu::target("avx512f")]] void many_avx512(const digest* const* parent, const std::uint32_t* index,
                                            unsigned count, digest* out) noexcept {
  alignas(64) std::uint32_t words[6][k_lanes]; // words[j][l]: word j of lane l's block
  for (unsigned l = 0; l < k_lanes; ++l) {
    const unsigned from = l < count ? l : count - 1;
    const std::uint8_t* p = parent[from]->data();
    for (int j = 0; j < 5; ++j) words[j][l] = load_be32(p + 4 * j);
    words[5][l] = index[from];
  }
  __m512i w[16];
  for (int j = 0; j < 6; ++j) w[j] = _mm512_load_si512(words[j]);
  w[6] = _mm512_set1_epi32(static_cast<int>(0x80000000U));
  for (int j = 7; j < 15; ++j) w[j] = _mm512_setzero_si512();
  w[15] = _mm512_set1_epi32(192);
  const __m512i h0 = _mm512_set1_epi32(0x67452301),
                h1 = _mm512_set1_epi32(static_cast<int>(0xEFCDAB89)),
                h2 = _mm512_set1_epi32(static_cast<int>(0x98BADCFE)),
                h3 = _mm512_set1_epi32(0x10325476),
                h4 = _mm512_set1_epi32(static_cast<int>(0xC3D2E1F0));
  __m512i a = h0, b = h1, c = h2, d = h3, e = h4;
#pragma GCC unroll 80
  for (int i = 0; i < 80; ++i) {
    if (i >= 16) { // the message schedule, 16 words rolling
      const __m512i x = _mm512_ternarylogic_epi32(w[(i - 3) & 15], w[(i - 8) & 15],
                                                  w[(i - 14) & 15], 0x96); // three-way xor
      w[i & 15] = APGAS_UTS_ROL(_mm512_xor_si512(x, w[i & 15]), 1);
    }
    __m512i f;
    std::uint32_t k = 0;
    if (i < 20) { // choose: b ? c : d
      f = _mm512_ternarylogic_epi32(b, c, d, 0xCA);
      k = 0x5A827999;
    } else if (i < 40) { // parity
      f = _mm512_ternarylogic_epi32(b, c, d, 0x96);
      k = 0x6ED9EBA1;
    } else if (i < 60) { // majority
      f = _mm512_ternarylogic_epi32(b, c, d, 0xE8);
      k = 0x8F1BBCDC;
    } else {
      f = _mm512_ternarylogic_epi32(b, c, d, 0x96);
      k = 0xCA62C1D6;
    }
    const __m512i t = _mm512_add_epi32(
        _mm512_add_epi32(APGAS_UTS_ROL(a, 5), f),
        _mm512_add_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(static_cast<int>(k))), w[i & 15]));
    e = d;
    d = c;
    c = APGAS_UTS_ROL(b, 30);
    b = a;
    a = t;
  }
  alignas(64) std::uint32_t h[5][k_lanes];
  _mm512_store_si512(h[0], _mm512_add_epi32(a, h0));
  _mm512_store_si512(h[1], _mm512_add_epi32(b, h1));
  _mm512_store_si512(h[2], _mm512_add_epi32(c, h2));
  _mm512_store_si512(h[3], _mm512_add_epi32(d, h3));
  _mm512_store_si512(h[4], _mm512_add_epi32(e, h4));
  for (unsigned l = 0; l < count; ++l)
    for (int j = 0; j < 5; ++j) store_be32(out[l].data() + 4 * j, h[j][l]);
}

#undef APGAS_UTS_ROL

bool cpu_has_avx512() noexcept {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

#endif

} // namespace

const char* const sha1_avx512::k_name = "avx512-x16";

void sha1_avx512::many(const digest* const* parent, const std::uint32_t* index, unsigned count,
                       digest* out) noexcept {
#if APGAS_UTS_HAVE_AVX512
  if (cpu_has_avx512()) {
    for (; count > k_lanes; count -= k_lanes, parent += k_lanes, index += k_lanes, out += k_lanes)
      many_avx512(parent, index, k_lanes, out);
    if (count > 0) many_avx512(parent, index, count, out);
    return;
  }
#endif
  unsigned i = 0;
  for (; i + 1 < count; i += 2)
    sha1_shani::two(*parent[i], index[i], *parent[i + 1], index[i + 1], out[i], out[i + 1]);
  if (i < count) sha1_shani::child(*parent[i], index[i], out[i]);
}

void sha1_avx512::child(const digest& parent, std::uint32_t index, digest& out) noexcept {
  sha1_shani::child(parent, index, out); // one alone: no lanes to fill
}

void sha1_avx512::root(std::int32_t seed, digest& out) noexcept {
  sha1_openssl_block::root(seed, out); // once per tree
}

bool sha1_avx512::uses_avx512() noexcept {
#if APGAS_UTS_HAVE_AVX512
  return cpu_has_avx512();
#else
  return false;
#endif
}

} // namespace apgas_apps::uts
