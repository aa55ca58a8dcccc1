// bench_lockstep: the stencil apps' phase loops at one place, apgas against OpenMP, in one run.
//
//   bench_lockstep [--rounds R] [--workers 1,2] [--only averaging,heat,heat-512] [--quick]
//
// Each case runs the sequential loop once (the reference), then, round after round with the
// configurations taking turns, the apgas app kernel (apgas_apps/averaging.hpp, heat.hpp: chunks
// of points or rows, one activity each, registered on one clock whose advance carries the
// largest change; the app's defaults: 8 activities, lazy waits) and the OpenMP lock-step loop
// (peers/omp_lockstep.hpp: one parallel region, a worksharing loop and a barrier per phase), on
// each worker count. Every run's phases and values are checked against the sequential loop (a
// mismatch exits 1). Times are the solve's alone (the arrays exist before), medians over the
// rounds; the table gives apgas / OpenMP per worker count.
#include <apgas/apgas.hpp>

#include "comma_list.hpp"
#include "machine_state.hpp"
#include <apgas_apps/averaging.hpp>
#include <apgas_apps/heat.hpp>
#ifdef APGAS_BENCH_HAVE_OPENMP
#include "peers/omp_lockstep.hpp"
#endif

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

struct settings {
  int rounds = 5;
  std::vector<unsigned> workers{1, 2};
  std::vector<std::string> only;
  bool quick = false;
};

[[noreturn]] void usage_exit(const std::string& why) {
  std::fprintf(stderr,
               "bench_lockstep: %s\nusage: bench_lockstep [--rounds R] [--workers 1,2] "
               "[--only averaging,heat,heat-512] [--quick]\n",
               why.c_str());
  std::exit(64);
}

settings parse(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_exit(a + " needs a value");
      return argv[++i];
    };
    if (a == "--rounds") {
      s.rounds = std::atoi(value().c_str());
      if (s.rounds < 1) usage_exit("--rounds must be at least 1");
    } else if (a == "--workers") {
      s.workers.clear();
      for (const auto& w : apgas_bench::split_commas(value())) {
        const int n = std::atoi(w.c_str());
        if (n < 1 || n > 1024) usage_exit("--workers: counts from 1 to 1024");
        s.workers.push_back(static_cast<unsigned>(n));
      }
    } else if (a == "--only") {
      s.only = apgas_bench::split_commas(value());
    } else if (a == "--quick") {
      s.quick = true;
    } else if (a == "--help" || a == "-h") {
      usage_exit("the phase loops of averaging and heat, apgas against OpenMP");
    } else {
      usage_exit("unknown argument '" + a + "'");
    }
  }
  return s;
}

/// What one configuration gives: its phases, values and the solve's seconds.
struct outcome {
  std::uint64_t phases = 0;
  std::vector<double> values;
  double seconds = 0;
};

/// One case: an app kernel at one size, its reference and its runners.
struct bench_case {
  std::string name;
  apgas_apps::stencil_params prm;
  std::function<apgas_apps::stencil_seq_result()> seq;
  std::function<outcome(apgas::runtime&)> apgas_run;
  std::function<outcome(unsigned)> omp_run; ///< empty: the OpenMP peer is not built
};

template <class K>
bench_case make_case(std::string name, std::uint64_t n, double epsilon) {
  bench_case c;
  c.name = std::move(name);
  c.prm = apgas_apps::stencil_params{n, epsilon, 1'000'000, 8, 0};
  const apgas_apps::stencil_params prm = c.prm;
  c.seq = [prm] { return K::seq(prm); };
  c.apgas_run = [prm](apgas::runtime& rt) {
    outcome o;
    const auto r =
        rt.run(apgas_apps::stencil_detail::run<K>(prm, true, apgas::signal::lazy, &o.values));
    o.phases = r.iterations;
    o.seconds = r.seconds;
    return o;
  };
#ifdef APGAS_BENCH_HAVE_OPENMP
  c.omp_run = [prm, name = c.name](unsigned threads) {
    const auto r =
        name.rfind("averaging", 0) == 0
            ? apgas_bench::omp_peer::averaging(prm.n, prm.epsilon, prm.max_iterations, threads)
            : apgas_bench::omp_peer::heat(prm.n, prm.epsilon, prm.max_iterations, threads);
    return outcome{r.phases, r.values, r.seconds};
  };
#endif
  return c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// Exits 1 if `got` is not the reference's phases and values.
void check(const std::string& who, const outcome& got, const apgas_apps::stencil_seq_result& ref) {
  bool same = got.phases == ref.iterations && got.values.size() == ref.values.size();
  for (std::size_t i = 0; same && i < got.values.size(); ++i)
    same = std::abs(got.values[i] - ref.values[i]) <= 1e-12;
  if (same) return;
  std::fprintf(stderr, "bench_lockstep: %s: %llu phases, the sequential loop %llu; values %s\n",
               who.c_str(), static_cast<unsigned long long>(got.phases),
               static_cast<unsigned long long>(ref.iterations),
               got.values.size() == ref.values.size() ? "differ" : "of another size");
  std::exit(1);
}

} // namespace

int main(int argc, char** argv) {
  const settings s = parse(argc, argv);
  std::vector<bench_case> cases;
  if (s.quick) {
    cases.push_back(make_case<apgas_apps::averaging_kernel>("averaging", 2000, 1e-3));
    cases.push_back(make_case<apgas_apps::heat_kernel>("heat", 64, 1e-2));
  } else {
    cases.push_back(make_case<apgas_apps::averaging_kernel>("averaging", 100'000, 1e-4));
    cases.push_back(make_case<apgas_apps::heat_kernel>("heat", 256, 1e-3));
    cases.push_back(make_case<apgas_apps::heat_kernel>("heat-512", 512, 1e-3));
  }
  if (!s.only.empty())
    std::erase_if(cases, [&](const bench_case& c) {
      return std::find(s.only.begin(), s.only.end(), c.name) == s.only.end();
    });
  if (cases.empty()) usage_exit("--only names no case (averaging, heat, heat-512)");

  fmt::print("bench_lockstep: phase loops at one place, apgas (a clock, 8 activities) against "
             "OpenMP (a worksharing loop and a barrier per phase); medians of {} rounds\n",
             s.rounds);
  apgas_bench::print_machine_state();
  fmt::print(
      "\n| case | phases | sequential s | workers | OpenMP s | apgas s | apgas / OpenMP |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|---:|\n");
  for (const bench_case& c : cases) {
    const auto t0 = std::chrono::steady_clock::now();
    const apgas_apps::stencil_seq_result ref = c.seq();
    const double seq_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (unsigned w : s.workers) {
      std::vector<double> omp_s, apgas_s;
      for (int r = 0; r < s.rounds; ++r) {
        const auto run_omp = [&] {
          if (!c.omp_run) return;
          const outcome o = c.omp_run(w);
          check(fmt::format("{} OpenMP x {}", c.name, w), o, ref);
          omp_s.push_back(o.seconds);
          // OpenMP's threads spin a while after the region (GOMP_SPINCOUNT) before they
          // sleep: on a machine with few cores they would take the next run's.
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        };
        const auto run_apgas = [&] {
          apgas::options opts;
          opts.threads = w;
          apgas::runtime rt(opts);
          const outcome o = c.apgas_run(rt);
          check(fmt::format("{} apgas x {}", c.name, w), o, ref);
          apgas_s.push_back(o.seconds);
        };
        if (r % 2 == 0) {
          run_omp();
          run_apgas();
        } else {
          run_apgas();
          run_omp();
        }
      }
      const double a = median(apgas_s);
      if (omp_s.empty())
        fmt::print("| {} | {} | {:.4f} | {} | not built | {:.4f} | - |\n", c.name, ref.iterations,
                   seq_s, w, a);
      else
        fmt::print("| {} | {} | {:.4f} | {} | {:.4f} | {:.4f} | {:.2f} |\n", c.name, ref.iterations,
                   seq_s, w, median(omp_s), a, a / median(omp_s));
      std::fflush(stdout);
    }
  }
  return 0;
}
