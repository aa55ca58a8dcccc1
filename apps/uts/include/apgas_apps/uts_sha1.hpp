// SHA-1 for UTS: a node's state is the SHA-1 of its parent's 20-byte state followed by its
// child index as 4 big-endian bytes (the UTS specification's rng_spawn), and the root's is the
// SHA-1 of 16 zero bytes followed by the seed as 4 big-endian bytes (rng_init). Every input is
// 24 or 20 bytes: one SHA-1 block once padded.
//
// Several implementations, all giving the same digests, so that they can be measured against
// each other on the same tree (bench/glb/uts_sha1.cpp):
//   sha1_avx512         16 hashes at once, one per 32-bit lane of AVX-512 registers: UTS has
//                       many children pending at any time. The one UTS uses; without AVX-512
//                       it falls back to the next.
//   sha1_shani          the CPU's SHA instructions (x86 SHA extensions), two hashes at once,
//                       their instruction streams interleaved: one hash is a chain of
//                       dependent instructions, two chains keep the unit busier. Without SHA
//                       instructions it falls back to the next.
//   sha1_openssl_block  OpenSSL's compression function (SHA1_Transform, which uses the CPU's
//                       SHA instructions where they exist) on the block padded here: no
//                       per-call setup at all.
//   sha1_openssl        OpenSSL's SHA1_Init / SHA1_Update / SHA1_Final.
//   sha1_evp            OpenSSL 3's EVP interface, with the digest fetched once and a context
//                       reused by each thread.
//   sha1_oneshot        OpenSSL's SHA1(): fetches the digest from a provider on every call.
//   sha1_portable       plain C++ (the kind of code the UTS reference implementation ships:
//                       begin, hash the state, hash the index, end).
#pragma once

#include <array>
#include <cstdint>

namespace apgas_apps::uts {

/// @brief A node's random state: a SHA-1 digest.
using digest = std::array<std::uint8_t, 20>;

/// @brief OpenSSL's compression function on a block padded here.
struct sha1_openssl_block {
  static const char* const k_name;
  /// @brief The state of child `index` of the node whose state is `parent`.
  static void child(const digest& parent, std::uint32_t index, digest& out) noexcept;
  /// @brief The root's state for `seed`.
  static void root(std::int32_t seed, digest& out) noexcept;
};

/// @brief OpenSSL's SHA1_Init / SHA1_Update / SHA1_Final.
struct sha1_openssl {
  static const char* const k_name;
  static void child(const digest& parent, std::uint32_t index, digest& out) noexcept;
  static void root(std::int32_t seed, digest& out) noexcept;
};

/// @brief OpenSSL 3's EVP interface, the digest fetched once, a context per thread.
struct sha1_evp {
  static const char* const k_name;
  static void child(const digest& parent, std::uint32_t index, digest& out) noexcept;
  static void root(std::int32_t seed, digest& out) noexcept;
};

/// @brief OpenSSL's one-shot SHA1().
struct sha1_oneshot {
  static const char* const k_name;
  static void child(const digest& parent, std::uint32_t index, digest& out) noexcept;
  static void root(std::int32_t seed, digest& out) noexcept;
};

/// @brief Plain C++, as the UTS reference's rng_spawn uses its SHA-1.
struct sha1_portable {
  static const char* const k_name;
  static void child(const digest& parent, std::uint32_t index, digest& out) noexcept;
  static void root(std::int32_t seed, digest& out) noexcept;
};

/// @brief The CPU's SHA instructions, two hashes at a time (their instruction streams
/// interleaved); sha1_openssl_block where the CPU has none.
struct sha1_shani {
  static const char* const k_name;
  /// @brief The states of children first .. first + count - 1 of `parent`, into out[0..count).
  static void children(const digest& parent, std::uint32_t first, unsigned count,
                       digest* out) noexcept;
  /// @brief Child a of parent_a and child b of parent_b, together.
  static void two(const digest& parent_a, std::uint32_t a, const digest& parent_b, std::uint32_t b,
                  digest& out_a, digest& out_b) noexcept;
  static void child(const digest& parent, std::uint32_t index, digest& out) noexcept;
  static void root(std::int32_t seed, digest& out) noexcept;
  /// @brief True if this CPU has them (else the OpenSSL path runs).
  static bool uses_sha_instructions() noexcept;
};

/// @brief AVX-512: up to 16 hashes at once, one per 32-bit lane; sha1_shani where the CPU has no
/// AVX-512.
struct sha1_avx512 {
  static const char* const k_name;
  /// @brief The states of child index[i] of the node whose state is *parent[i], into out[i],
  /// for i < count (any count; 16 at a time).
  static void many(const digest* const* parent, const std::uint32_t* index, unsigned count,
                   digest* out) noexcept;
  static void child(const digest& parent, std::uint32_t index, digest& out) noexcept;
  static void root(std::int32_t seed, digest& out) noexcept;
  /// @brief True if this CPU has AVX-512 (else the SHA-instruction path runs).
  static bool uses_avx512() noexcept;
};

/// @brief The states of children first .. first + count - 1 of `parent`: several at once if
/// Hash can, else one by one.
template <class Hash>
inline void children_of(const digest& parent, std::uint32_t first, unsigned count,
                        digest* out) noexcept {
  if constexpr (requires { Hash::children(parent, first, count, out); }) {
    Hash::children(parent, first, count, out);
  } else if constexpr (requires { Hash::many(nullptr, nullptr, 0U, nullptr); }) {
    constexpr unsigned k_chunk = 16;
    const digest* parents[k_chunk];
    std::uint32_t index[k_chunk];
    for (unsigned done = 0; done < count; done += k_chunk) {
      const unsigned k = count - done < k_chunk ? count - done : k_chunk;
      for (unsigned i = 0; i < k; ++i) {
        parents[i] = &parent;
        index[i] = first + done + i;
      }
      Hash::many(parents, index, k, out + done);
    }
  } else {
    for (unsigned i = 0; i < count; ++i) Hash::child(parent, first + i, out[i]);
  }
}

/// @brief Child a of parent_a and child b of parent_b: together if Hash can.
template <class Hash>
inline void two_children(const digest& parent_a, std::uint32_t a, const digest& parent_b,
                         std::uint32_t b, digest& out_a, digest& out_b) noexcept {
  if constexpr (requires { Hash::two(parent_a, a, parent_b, b, out_a, out_b); }) {
    Hash::two(parent_a, a, parent_b, b, out_a, out_b);
  } else {
    Hash::child(parent_a, a, out_a);
    Hash::child(parent_b, b, out_b);
  }
}

/// @brief The implementation UTS uses.
using sha1_fast = sha1_avx512;

} // namespace apgas_apps::uts
