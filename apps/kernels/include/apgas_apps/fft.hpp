/// @file FFT (the Friendly Barriers suite's): a recursive radix-2 Cooley-Tukey transform of
/// 2^k complex numbers, out of place. The even and odd halves are transformed in parallel
/// down to a cutoff, and each level's butterflies are a parallel loop over blocks. Every
/// version computes each value with the same operations in the same order, so all give the
/// same spectrum to the bit.
#pragma once

#include "apgas_apps/split_range.hpp"

#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <vector>

namespace apgas_apps {

using fft_complex = std::complex<double>;

/// @brief The problem: the input and the twiddle factors w^k = exp(-2 pi i k / n), k < n / 2.
struct fft_problem {
  std::size_t n = 0;
  std::vector<fft_complex> in, twiddles;
  explicit fft_problem(std::size_t size) : n(size), in(size), twiddles(size / 2) {
    std::uint64_t x = 12345;
    for (auto& v : in) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      const double re = static_cast<double>(x >> 11) * 0x1.0p-53;
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      v = {re, static_cast<double>(x >> 11) * 0x1.0p-53};
    }
    for (std::size_t k = 0; k < size / 2; ++k)
      twiddles[k] = std::polar(1.0, -2.0 * std::numbers::pi * static_cast<double>(k) /
                                        static_cast<double>(size));
  }
};

/// @brief Butterflies [lo, hi) of a level of size m: out[k], out[k + m/2] from the halves.
[[gnu::noinline]] inline void fft_butterflies(fft_complex* out, std::size_t m,
                                              const fft_complex* twiddles,
                                              std::size_t twiddle_stride, std::size_t lo,
                                              std::size_t hi) {
  const std::size_t half = m / 2;
  for (std::size_t k = lo; k < hi; ++k) {
    const fft_complex t = twiddles[k * twiddle_stride] * out[k + half];
    out[k + half] = out[k] - t;
    out[k] += t;
  }
}

/// @brief The sequential transform of m values of `in` taken every `stride` into `out`.
[[gnu::noinline]] inline void fft_seq(const fft_complex* in, fft_complex* out, std::size_t m,
                                      std::size_t stride, const fft_complex* twiddles,
                                      std::size_t n) {
  if (m == 1) {
    out[0] = in[0];
    return;
  }
  fft_seq(in, out, m / 2, 2 * stride, twiddles, n);
  fft_seq(in + stride, out + m / 2, m / 2, 2 * stride, twiddles, n);
  fft_butterflies(out, m, twiddles, n / m, 0, m / 2);
}

/// @brief The cutoffs: transforms of at most `cutoff` values are sequential; a level's
/// butterflies go in blocks of `grain`.
struct fft_cutoffs {
  std::size_t cutoff = 2048;
  std::size_t grain = 8192;
};

/// @brief With any fork.
template <class Fork>
void fft(const fft_complex* in, fft_complex* out, std::size_t m, std::size_t stride,
         const fft_complex* twiddles, std::size_t n, fft_cutoffs c, const Fork& fork) {
  if (m <= c.cutoff) return fft_seq(in, out, m, stride, twiddles, n);
  fork([&] { fft(in, out, m / 2, 2 * stride, twiddles, n, c, fork); },
       [&] { fft(in + stride, out + m / 2, m / 2, 2 * stride, twiddles, n, c, fork); });
  split_range(0, m / 2, c.grain, fork, [=](std::size_t lo, std::size_t hi) {
    fft_butterflies(out, m, twiddles, n / m, lo, hi);
  });
}

/// @brief apgas.
inline apgas::task<> fft(const fft_complex* in, fft_complex* out, std::size_t m, std::size_t stride,
                         const fft_complex* twiddles, std::size_t n, fft_cutoffs c) {
  if (m <= c.cutoff) {
    fft_seq(in, out, m, stride, twiddles, n);
    co_return;
  }
  co_await apgas::finish_all(fft(in, out, m / 2, 2 * stride, twiddles, n, c),
                             fft(in + stride, out + m / 2, m / 2, 2 * stride, twiddles, n, c));
  const auto leaf = [=](std::size_t lo, std::size_t hi) {
    fft_butterflies(out, m, twiddles, n / m, lo, hi);
  };
  co_await split_range(0, m / 2, c.grain, leaf);
}

/// @brief The forks of one transform of m values (for ns-per-task figures).
inline std::uint64_t fft_forks(std::size_t m, fft_cutoffs c) {
  if (m <= c.cutoff) return 0;
  return 1 + 2 * fft_forks(m / 2, c) + split_range_forks(m / 2, c.grain);
}

} // namespace apgas_apps
