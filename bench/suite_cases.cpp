// The suite's cases of bench_apps (see suite_cases.hpp).
#include "suite_cases.hpp"

#include "suite_kernels.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>

namespace apgas_bench {

namespace {

/// A run's output as a number: FNV-1a over its bytes, 53 bits of it (exact in a double).
double digest(const void* data, std::size_t bytes) {
  std::uint64_t h = 14695981039346656037ULL;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return static_cast<double>(h >> 11);
}
template <class T>
double digest(const std::vector<T>& v) {
  return digest(v.data(), v.size() * sizeof(T));
}

/// The fork of a sequential run that counts the forks (a run's tasks).
struct counting_fork {
  std::uint64_t* forks;
  template <class A, class B>
  void operator()(const A& a, const B& b) const {
    ++*forks;
    a();
    b();
  }
};

bool wanted(const std::vector<std::string>& only, const char* app) {
  return only.empty() || std::find(only.begin(), only.end(), app) != only.end();
}

template <class F>
std::function<double(unsigned)> omp_run([[maybe_unused]] F f) {
#ifdef APGAS_BENCH_HAVE_OPENMP
  return f;
#else
  return {};
#endif
}

app_case jacobi_case(const suite_sizes& s) {
  struct data {
    suite_sizes s;
    std::unique_ptr<apgas_apps::jacobi_grids> g;
  };
  auto d = std::make_shared<data>(data{s, nullptr});
  app_case c;
  c.app = "jacobi";
  c.label = fmt::format("jacobi {}x{}, {} sweeps", s.jacobi_n, s.jacobi_n, s.jacobi_sweeps);
  c.coarse = true;
  c.seq_copies = false; // its run writes the case's one buffer
  {
    apgas_apps::jacobi_grids g(s.jacobi_n);
    (void)apgas_apps::jacobi(g, s.jacobi_sweeps, s.jacobi_grain, counting_fork{&c.tasks});
  }
  c.prepare = [d] { d->g = std::make_unique<apgas_apps::jacobi_grids>(d->s.jacobi_n); };
  c.run_seq = [d] {
    return digest(apgas_apps::jacobi(*d->g, d->s.jacobi_sweeps, d->s.jacobi_grain,
                                     apgas_apps::sequential_fork{}));
  };
  c.run_apgas = [d] { return digest(*apgas_runs::jacobi(*current_runtime(), *d->g, d->s)); };
#ifdef APGAS_BENCH_HAVE_TBB
  c.run_tbb = [d] { return digest(*tbb_peer::jacobi(*d->g, d->s)); };
#endif
  c.run_omp = omp_run([d](unsigned w) { return digest(*omp_peer::jacobi(*d->g, d->s, w)); });
  return c;
}

app_case fft_case(const suite_sizes& s) {
  struct data {
    suite_sizes s;
    apgas_apps::fft_problem p;
    std::vector<apgas_apps::fft_complex> out;
  };
  auto d = std::make_shared<data>(data{s, apgas_apps::fft_problem(s.fft_n), {}});
  app_case c;
  c.app = "fft";
  c.label = fmt::format("fft 2^{}", std::countr_zero(s.fft_n));
  c.coarse = true;
  c.seq_copies = false; // its run writes the case's one buffer
  c.tasks = apgas_apps::fft_forks(s.fft_n, s.fft_cut);
  c.prepare = [d] { d->out.assign(d->s.fft_n, {}); };
  c.run_seq = [d] {
    apgas_apps::fft(d->p.in.data(), d->out.data(), d->p.n, 1, d->p.twiddles.data(), d->p.n,
                    d->s.fft_cut, apgas_apps::sequential_fork{});
    return digest(d->out);
  };
  c.run_apgas = [d] {
    apgas_runs::fft(*current_runtime(), d->p, d->out.data(), d->s);
    return digest(d->out);
  };
#ifdef APGAS_BENCH_HAVE_TBB
  c.run_tbb = [d] {
    tbb_peer::fft(d->p, d->out.data(), d->s);
    return digest(d->out);
  };
#endif
  c.run_omp = omp_run([d](unsigned w) {
    omp_peer::fft(d->p, d->out.data(), d->s, w);
    return digest(d->out);
  });
  return c;
}

app_case cilksort_case(const suite_sizes& s) {
  struct data {
    suite_sizes s;
    std::vector<int> input, v, tmp;
  };
  auto d = std::make_shared<data>(data{s, apgas_apps::cilksort_input(s.cilksort_n), {}, {}});
  app_case c;
  c.app = "cilksort";
  c.label = fmt::format("cilksort({})", s.cilksort_n);
  c.coarse = true;
  c.seq_copies = false; // its run writes the case's one buffer
  {
    std::vector<int> v = d->input;
    std::vector<int> tmp(v.size());
    apgas_apps::cilksort(v.data(), tmp.data(), v.size(), s.cilksort_cut, counting_fork{&c.tasks});
  }
  c.prepare = [d] {
    d->v = d->input;
    d->tmp.assign(d->input.size(), 0);
  };
  c.run_seq = [d] {
    apgas_apps::cilksort(d->v.data(), d->tmp.data(), d->v.size(), d->s.cilksort_cut,
                         apgas_apps::sequential_fork{});
    return digest(d->v);
  };
  c.run_apgas = [d] {
    apgas_runs::cilksort(*current_runtime(), d->v.data(), d->tmp.data(), d->s);
    return digest(d->v);
  };
#ifdef APGAS_BENCH_HAVE_TBB
  c.run_tbb = [d] {
    tbb_peer::cilksort(d->v.data(), d->tmp.data(), d->s);
    return digest(d->v);
  };
#endif
  c.run_omp = omp_run([d](unsigned w) {
    omp_peer::cilksort(d->v.data(), d->tmp.data(), d->s, w);
    return digest(d->v);
  });
  // The reference itself must be sorted (it is compared with every other run).
  {
    std::vector<int> sorted = d->input;
    std::sort(sorted.begin(), sorted.end());
    const double want = digest(sorted);
    const auto seq = c.run_seq;
    c.run_seq = [seq, want] {
      const double got = seq();
      return got == want ? got : -1.0; // a wrong sort then mismatches every run
    };
  }
  return c;
}

app_case lud_case(const suite_sizes& s) {
  struct data {
    suite_sizes s;
    apgas_apps::lud_matrix m;
  };
  auto d = std::make_shared<data>(data{s, apgas_apps::lud_matrix(1, 1)});
  app_case c;
  c.app = "lud";
  c.label = fmt::format("lud {} in {}^2 blocks", s.lud_blocks * s.lud_block, s.lud_block);
  c.coarse = true;
  c.seq_copies = false; // its run writes the case's one buffer
  c.tasks = apgas_apps::lud_forks(s.lud_blocks);
  c.prepare = [d] { d->m = apgas_apps::lud_make(d->s.lud_blocks, d->s.lud_block); };
  c.run_seq = [d] {
    apgas_apps::lud(d->m, apgas_apps::sequential_fork{});
    return digest(d->m.v);
  };
  c.run_apgas = [d] {
    apgas_runs::lud(*current_runtime(), d->m);
    return digest(d->m.v);
  };
#ifdef APGAS_BENCH_HAVE_TBB
  c.run_tbb = [d] {
    tbb_peer::lud(d->m);
    return digest(d->m.v);
  };
#endif
  c.run_omp = omp_run([d](unsigned w) {
    omp_peer::lud(d->m, w);
    return digest(d->m.v);
  });
  return c;
}

app_case barnes_hut_case(const suite_sizes& s) {
  struct data {
    suite_sizes s;
    std::vector<apgas_apps::bh_body> bodies;
    apgas_apps::bh_tree tree;
    std::vector<double> out;
  };
  auto d = std::make_shared<data>();
  d->s = s;
  d->bodies = apgas_apps::bh_bodies(s.bh_bodies);
  d->tree = apgas_apps::bh_build(d->bodies);
  app_case c;
  c.app = "barneshut";
  c.label = fmt::format("barnes-hut forces, {} bodies", s.bh_bodies);
  c.coarse = true;
  c.seq_copies = false; // its run writes the case's one buffer
  c.tasks = apgas_apps::split_range_forks(s.bh_bodies, s.bh_grain);
  c.prepare = [d] { d->out.assign(2 * d->bodies.size(), 0.0); };
  c.run_seq = [d] {
    apgas_apps::barnes_hut(d->tree, d->bodies, d->s.bh_theta, d->out.data(), d->s.bh_grain,
                           apgas_apps::sequential_fork{});
    return digest(d->out);
  };
  c.run_apgas = [d] {
    apgas_runs::barnes_hut(*current_runtime(), d->tree, d->bodies, d->out.data(), d->s);
    return digest(d->out);
  };
#ifdef APGAS_BENCH_HAVE_TBB
  c.run_tbb = [d] {
    tbb_peer::barnes_hut(d->tree, d->bodies, d->out.data(), d->s);
    return digest(d->out);
  };
#endif
  c.run_omp = omp_run([d](unsigned w) {
    omp_peer::barnes_hut(d->tree, d->bodies, d->out.data(), d->s, w);
    return digest(d->out);
  });
  return c;
}

} // namespace

std::vector<app_case> make_suite_cases(const std::vector<std::string>& only, bool quick) {
  suite_sizes s;
  if (quick) {
    s.jacobi_n = 128;
    s.jacobi_sweeps = 10;
    s.fft_n = std::size_t{1} << 14;
    s.cilksort_n = 100'000;
    s.lud_blocks = 4;
    s.lud_block = 32;
    s.bh_bodies = 5'000;
  }
  std::vector<app_case> out;
  if (wanted(only, "jacobi")) out.push_back(jacobi_case(s));
  if (wanted(only, "fft")) out.push_back(fft_case(s));
  if (wanted(only, "cilksort")) out.push_back(cilksort_case(s));
  if (wanted(only, "lud")) out.push_back(lud_case(s));
  if (wanted(only, "barneshut")) out.push_back(barnes_hut_case(s));
  return out;
}

} // namespace apgas_bench
