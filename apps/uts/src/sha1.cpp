// The SHA-1 implementations of uts_sha1.hpp that call OpenSSL, and the portable one.
#define OPENSSL_SUPPRESS_DEPRECATED // SHA1_Init etc.: deprecated in OpenSSL 3, still the fastest
#include "apgas_apps/uts_sha1.hpp"
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace apgas_apps::uts {

namespace {

constexpr std::size_t k_block = 64;

void put_be32(std::uint8_t* at, std::uint32_t v) noexcept {
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap32(v);
  std::memcpy(at, &v, 4);
}

std::uint32_t get_be32(const std::uint8_t* at) noexcept {
  std::uint32_t v;
  std::memcpy(&v, at, 4);
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap32(v);
  return v;
}

/// The input of rng_spawn: parent state, then the index in big-endian.
void spawn_input(const digest& parent, std::uint32_t index, std::uint8_t (&in)[24]) noexcept {
  std::memcpy(in, parent.data(), 20);
  put_be32(in + 20, index);
}

/// The input of rng_init: 16 zero bytes, then the seed in big-endian.
void init_input(std::int32_t seed, std::uint8_t (&in)[20]) noexcept {
  std::memset(in, 0, 16);
  put_be32(in + 16, static_cast<std::uint32_t>(seed));
}

// ---- OpenSSL's compression function on a block padded here ---------------------------------

/// A message of `n` < 56 bytes padded to one block: the bytes, 0x80, zeros, the bit length.
struct padded_block {
  alignas(16) std::uint8_t bytes[k_block] = {};
  explicit padded_block(std::size_t n) noexcept {
    bytes[n] = 0x80;
    const std::uint64_t bits = static_cast<std::uint64_t>(n) * 8;
    put_be32(bytes + 56, static_cast<std::uint32_t>(bits >> 32));
    put_be32(bytes + 60, static_cast<std::uint32_t>(bits));
  }
};

/// SHA-1's initial state, set once (SHA1_Init's values).
const SHA_CTX& initial_context() noexcept {
  static const SHA_CTX ctx = [] {
    SHA_CTX c;
    SHA1_Init(&c);
    return c;
  }();
  return ctx;
}

void compress_one(const padded_block& block, digest& out) noexcept {
  SHA_CTX ctx = initial_context();
  SHA1_Transform(&ctx, block.bytes);
  put_be32(out.data(), ctx.h0);
  put_be32(out.data() + 4, ctx.h1);
  put_be32(out.data() + 8, ctx.h2);
  put_be32(out.data() + 12, ctx.h3);
  put_be32(out.data() + 16, ctx.h4);
}

// ---- OpenSSL 3's EVP interface ------------------------------------------------------------------

struct evp_md_free {
  void operator()(EVP_MD* md) const noexcept { EVP_MD_free(md); }
};
struct evp_ctx_free {
  void operator()(EVP_MD_CTX* c) const noexcept { EVP_MD_CTX_free(c); }
};

const EVP_MD* fetched_sha1() {
  static const std::unique_ptr<EVP_MD, evp_md_free> md(EVP_MD_fetch(nullptr, "SHA1", nullptr));
  return md.get();
}

void evp_digest(const void* in, std::size_t n, digest& out) noexcept {
  thread_local const std::unique_ptr<EVP_MD_CTX, evp_ctx_free> ctx(EVP_MD_CTX_new());
  EVP_DigestInit_ex(ctx.get(), fetched_sha1(), nullptr);
  EVP_DigestUpdate(ctx.get(), in, n);
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), out.data(), &len);
}

// ---- portable ---------------------------------------------------------------------------------

/// A streaming SHA-1 in plain C++ (begin / hash / end), as the UTS reference code uses one.
class portable_sha1 {
public:
  portable_sha1() noexcept = default;
  void hash(const std::uint8_t* data, std::size_t n) noexcept {
    while (n > 0) {
      const std::size_t take = std::min(n, k_block - m_fill);
      std::memcpy(m_buffer + m_fill, data, take);
      m_fill += take;
      m_length += take;
      data += take;
      n -= take;
      if (m_fill == k_block) {
        compile();
        m_fill = 0;
      }
    }
  }
  void end(digest& out) noexcept {
    const std::uint64_t bits = m_length * 8;
    m_buffer[m_fill++] = 0x80;
    if (m_fill > 56) { // no room for the length: one more block
      std::memset(m_buffer + m_fill, 0, k_block - m_fill);
      compile();
      m_fill = 0;
    }
    std::memset(m_buffer + m_fill, 0, 56 - m_fill);
    put_be32(m_buffer + 56, static_cast<std::uint32_t>(bits >> 32));
    put_be32(m_buffer + 60, static_cast<std::uint32_t>(bits));
    compile();
    for (int i = 0; i < 5; ++i) put_be32(out.data() + 4 * i, m_h[i]);
  }

private:
  static std::uint32_t rotl(std::uint32_t x, int n) noexcept { return (x << n) | (x >> (32 - n)); }
  void compile() noexcept {
    std::uint32_t w[16]; // the message schedule, 16 words rolling
    for (int i = 0; i < 16; ++i) w[i] = get_be32(m_buffer + 4 * i);
    std::uint32_t a = m_h[0], b = m_h[1], c = m_h[2], d = m_h[3], e = m_h[4];
    // Unrolled, as the reference's macros do: the round's function and constant are then known.
#pragma GCC unroll 80
    for (int i = 0; i < 80; ++i) {
      if (i >= 16)
        w[i & 15] = rotl(w[(i - 3) & 15] ^ w[(i - 8) & 15] ^ w[(i - 14) & 15] ^ w[i & 15], 1);
      std::uint32_t f = 0;
      std::uint32_t k = 0;
      if (i < 20) {
        f = d ^ (b & (c ^ d));
        k = 0x5A827999;
      } else if (i < 40) {
        f = b ^ c ^ d;
        k = 0x6ED9EBA1;
      } else if (i < 60) {
        f = (b & c) | (d & (b | c));
        k = 0x8F1BBCDC;
      } else {
        f = b ^ c ^ d;
        k = 0xCA62C1D6;
      }
      const std::uint32_t t = rotl(a, 5) + f + e + k + w[i & 15];
      e = d;
      d = c;
      c = rotl(b, 30);
      b = a;
      a = t;
    }
    m_h[0] += a;
    m_h[1] += b;
    m_h[2] += c;
    m_h[3] += d;
    m_h[4] += e;
  }

  std::uint32_t m_h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  std::uint8_t m_buffer[k_block] = {};
  std::size_t m_fill = 0;
  std::uint64_t m_length = 0;
};

} // namespace

// ---- the implementations ---------------------------------------------------------------------

const char* const sha1_openssl_block::k_name = "openssl-block";
void sha1_openssl_block::child(const digest& parent, std::uint32_t index, digest& out) noexcept {
  padded_block block(24);
  std::memcpy(block.bytes, parent.data(), 20);
  put_be32(block.bytes + 20, index);
  compress_one(block, out);
}
void sha1_openssl_block::root(std::int32_t seed, digest& out) noexcept {
  padded_block block(20);
  put_be32(block.bytes + 16, static_cast<std::uint32_t>(seed));
  compress_one(block, out);
}

const char* const sha1_openssl::k_name = "openssl";
void sha1_openssl::child(const digest& parent, std::uint32_t index, digest& out) noexcept {
  std::uint8_t in[24];
  spawn_input(parent, index, in);
  SHA_CTX ctx;
  SHA1_Init(&ctx);
  SHA1_Update(&ctx, in, sizeof in);
  SHA1_Final(out.data(), &ctx);
}
void sha1_openssl::root(std::int32_t seed, digest& out) noexcept {
  std::uint8_t in[20];
  init_input(seed, in);
  SHA_CTX ctx;
  SHA1_Init(&ctx);
  SHA1_Update(&ctx, in, sizeof in);
  SHA1_Final(out.data(), &ctx);
}

const char* const sha1_evp::k_name = "openssl-evp";
void sha1_evp::child(const digest& parent, std::uint32_t index, digest& out) noexcept {
  std::uint8_t in[24];
  spawn_input(parent, index, in);
  evp_digest(in, sizeof in, out);
}
void sha1_evp::root(std::int32_t seed, digest& out) noexcept {
  std::uint8_t in[20];
  init_input(seed, in);
  evp_digest(in, sizeof in, out);
}

const char* const sha1_oneshot::k_name = "openssl-oneshot";
void sha1_oneshot::child(const digest& parent, std::uint32_t index, digest& out) noexcept {
  std::uint8_t in[24];
  spawn_input(parent, index, in);
  SHA1(in, sizeof in, out.data());
}
void sha1_oneshot::root(std::int32_t seed, digest& out) noexcept {
  std::uint8_t in[20];
  init_input(seed, in);
  SHA1(in, sizeof in, out.data());
}

const char* const sha1_portable::k_name = "portable";
void sha1_portable::child(const digest& parent, std::uint32_t index, digest& out) noexcept {
  std::uint8_t bytes[4];
  put_be32(bytes, index);
  portable_sha1 h; // as the reference's rng_spawn: begin, hash the state, hash the index, end
  h.hash(parent.data(), 20);
  h.hash(bytes, 4);
  h.end(out);
}
void sha1_portable::root(std::int32_t seed, digest& out) noexcept {
  std::uint8_t in[20];
  init_input(seed, in);
  portable_sha1 h;
  h.hash(in, sizeof in);
  h.end(out);
}

} // namespace apgas_apps::uts
