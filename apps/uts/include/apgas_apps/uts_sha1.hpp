// SHA-1 for UTS: a node's state is the SHA-1 of its parent's 20-byte state followed by its
// child index as 4 big-endian bytes (the UTS specification's rng_spawn), and the root's is the
// SHA-1 of 16 zero bytes followed by the seed as 4 big-endian bytes (rng_init). Every input is
// 24 or 20 bytes: one SHA-1 block once padded.
//
// Several implementations, all giving the same digests, so that they can be measured against
// each other on the same tree (bench/glb/uts_bench.cpp):
//   sha1_openssl_block  OpenSSL's compression function (SHA1_Transform, which uses the CPU's
//                       SHA instructions where they exist) on the block padded here: no
//                       per-call setup at all. The one UTS uses.
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

#define APGAS_UTS_SHA1(name)                                                                       \
  struct name {                                                                                    \
    static const char* const k_name;                                                               \
    /** The state of child `index` of the node whose state is `parent`. */                         \
    static void child(const digest& parent, std::uint32_t index, digest& out) noexcept;            \
    /** The root's state for `seed`. */                                                            \
    static void root(std::int32_t seed, digest& out) noexcept;                                     \
  }

APGAS_UTS_SHA1(sha1_openssl_block);
APGAS_UTS_SHA1(sha1_openssl);
APGAS_UTS_SHA1(sha1_evp);
APGAS_UTS_SHA1(sha1_oneshot);
APGAS_UTS_SHA1(sha1_portable);

#undef APGAS_UTS_SHA1

/// @brief The implementation UTS uses.
using sha1_fast = sha1_openssl_block;

} // namespace apgas_apps::uts
