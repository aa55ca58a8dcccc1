// bench_on_demand: on-demand splitting (apgas/on_demand.hpp) against its peers, at one place.
//
//   bench_on_demand [--rounds R] [--workers 1,2] [--only loop,tree] [--rows N] [--quick]
//
// loop: a triangular loop (row i costs i steps, bench/irregular_loop.hpp) over N rows (default
//   20000): sequentially, with apgas::for_on_demand, with TBB's parallel_for (auto partitioner)
//   and with OpenMP's parallel for schedule(dynamic). Every run's rows are checked against the
//   sequential ones.
// tree: the spanning tree of the research seed's four graphs (apps/kernels spanning_tree.hpp):
//   the sequential explicit-stack DFS, apgas by on-demand splitting, and apgas's depth-limited
//   parallel DFS (the paper's Cilk version). Every tree is checked. The last column is the
//   machine's ceiling for two workers: twice the sequential DFS's time over the time of two
//   of them at once, on two threads.
//
// Each round runs every configuration once, in turn (the machine's speed drifts); the tables
// give medians over the rounds, and the ratios are taken within each round, then their median.
// A mismatch or a wrong tree exits 1. --quick: small sizes, one round (the smoke test).
#include <apgas/apgas.hpp>

#include "comma_list.hpp"
#include "irregular_loop.hpp"
#include "machine_state.hpp"
#include <apgas_apps/graph.hpp>
#include <apgas_apps/spanning_tree.hpp>
#ifdef APGAS_BENCH_HAVE_TBB
#include "peers/tbb_irregular.hpp"
#include <tbb/global_control.h>
#endif
#ifdef APGAS_BENCH_HAVE_OPENMP
#include "peers/omp_irregular.hpp"
#endif

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using apgas_apps::vertex_id;
using clock_type = std::chrono::steady_clock;

struct settings {
  int rounds = 5;
  std::vector<unsigned> workers{1, 2};
  bool loop = true;
  bool tree = true;
  std::uint64_t rows = 20000;
  bool quick = false;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "bench_on_demand: %s\nusage: bench_on_demand [--rounds R] [--workers 1,2] "
               "[--only loop,tree] [--rows N] [--quick]\n",
               why.c_str());
  std::exit(2);
}

std::uint64_t parse_positive(std::string_view flag, const std::string& text, std::uint64_t hi) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v == 0 || v > hi)
    usage(fmt::format("{} wants a number from 1 to {}, got '{}'", flag, hi, text));
  return v;
}

settings parse(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(fmt::format("{} needs a value", a));
      return argv[++i];
    };
    if (a == "--rounds") s.rounds = static_cast<int>(parse_positive(a, value(), 1000));
    else if (a == "--rows") s.rows = parse_positive(a, value(), 10'000'000);
    else if (a == "--quick") s.quick = true;
    else if (a == "--workers") {
      s.workers.clear();
      for (const std::string& w : apgas_bench::split_commas(value()))
        s.workers.push_back(static_cast<unsigned>(parse_positive(a, w, 1024)));
    } else if (a == "--only") {
      s.loop = s.tree = false;
      for (const std::string& what : apgas_bench::split_commas(value())) {
        if (what == "loop") s.loop = true;
        else if (what == "tree") s.tree = true;
        else usage(fmt::format("--only takes loop and tree, got '{}'", what));
      }
    } else usage(fmt::format("unknown flag '{}'", a));
  }
  if (s.quick) {
    s.rounds = 1;
    s.rows = std::min<std::uint64_t>(s.rows, 3000);
  }
  return s;
}

template <class F>
double seconds_of(F&& f) {
  const auto t0 = clock_type::now();
  f();
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

apgas::options one_place(unsigned workers) {
  apgas::options o;
  o.threads = workers;
  return o;
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "bench_on_demand: %s\n", what.c_str());
  std::exit(1);
}

/// Times of one configuration over the rounds, and its ratios to a reference taken per round.
struct series {
  std::vector<double> seconds;
  std::vector<double> ratios;
};

// ---- the triangular loop ------------------------------------------------------------------

void run_loop(const settings& s) {
  const std::uint64_t n = s.rows;
  std::vector<std::uint64_t> expected(n);
  std::vector<std::uint64_t> out(n);
  std::map<std::string, series> results; // "apgas 2", "TBB 2", "OpenMP 2", "seq"
  auto check = [&](const std::string& who) {
    if (out != expected) fail(who + ": the triangular loop's rows differ from the sequential ones");
  };
  for (int round = 0; round < s.rounds; ++round) {
    const double seq = seconds_of([&] {
      for (std::uint64_t i = 0; i < n; ++i) expected[i] = apgas_bench::triangular_row(i);
    });
    results["seq"].seconds.push_back(seq);
    for (const unsigned w : s.workers) {
      auto record = [&](const std::string& who, double t) {
        check(who);
        series& r = results[fmt::format("{} {}", who, w)];
        r.seconds.push_back(t);
        r.ratios.push_back(seq / t);
        std::fill(out.begin(), out.end(), 0);
      };
      {
        apgas::local_runtime rt(one_place(w));
        const double t = seconds_of([&] {
          rt.run([&]() -> apgas::task<> {
            co_await apgas::for_on_demand(std::uint64_t{0}, n, [&](std::uint64_t i) {
              out[i] = apgas_bench::triangular_row(i);
            });
          });
        });
        record("apgas", t);
      }
#ifdef APGAS_BENCH_HAVE_TBB
      {
        tbb::global_control threads(tbb::global_control::max_allowed_parallelism, w);
        record("TBB", seconds_of([&] { apgas_bench::tbb_peer::triangular(out.data(), n); }));
      }
#endif
#ifdef APGAS_BENCH_HAVE_OPENMP
      record("OpenMP", apgas_bench::omp_peer::triangular(out.data(), n, w, 1));
#endif
    }
  }
  fmt::print("\nloop: triangular, {} rows (row i costs i steps); medians of {} round(s); speedup = "
             "sequential time / time, per round\n\n",
             n, s.rounds);
  fmt::print("| workers | sequential | apgas for_on_demand | TBB parallel_for | OpenMP dynamic | "
             "apgas speedup | TBB speedup | OpenMP speedup |\n|---:|---:|---:|---:|---:|---:|---:|"
             "---:|\n");
  const double seq = median(results["seq"].seconds);
  for (const unsigned w : s.workers) {
    auto time_of = [&](const char* who) {
      auto it = results.find(fmt::format("{} {}", who, w));
      return it == results.end() ? std::string("not built")
                                 : fmt::format("{:.1f} ms", median(it->second.seconds) * 1e3);
    };
    auto speedup_of = [&](const char* who) {
      auto it = results.find(fmt::format("{} {}", who, w));
      return it == results.end() ? std::string("-")
                                 : fmt::format("{:.2f}x", median(it->second.ratios));
    };
    fmt::print("| {} | {:.1f} ms | {} | {} | {} | {} | {} | {} |\n", w, seq * 1e3, time_of("apgas"),
               time_of("TBB"), time_of("OpenMP"), speedup_of("apgas"), speedup_of("TBB"),
               speedup_of("OpenMP"));
  }
}

// ---- the spanning tree --------------------------------------------------------------------

struct graph_case {
  std::string name;
  std::function<apgas_apps::csr_graph()> make;
};

std::vector<graph_case> graph_cases(bool quick) {
  // The research seed's four graphs, at the sizes of docs/performance.md (--quick: small).
  const std::uint64_t random_n = quick ? 40000 : 4000000;
  const std::uint32_t cube = quick ? 14 : 21;
  const std::uint32_t side = quick ? 200 : 4000;
  const std::uint32_t levels = quick ? 15 : 24;
  return {
      {fmt::format("random {} 2", random_n),
       [=] { return apgas_apps::make_random(random_n, 2, 1); }},
      {fmt::format("hypercube {}", cube), [=] { return apgas_apps::make_hypercube(cube, 1); }},
      {fmt::format("torus {}", side), [=] { return apgas_apps::make_torus(side, 1); }},
      {fmt::format("bintree {}", levels), [=] { return apgas_apps::make_bintree(levels, 1); }},
  };
}

void check_tree(const apgas_apps::csr_graph& g, const std::vector<vertex_id>& parent,
                const std::string& who) {
  const auto c = apgas_apps::check_spanning_tree(g, 0, parent);
  if (!c.ok) fail(who + ": not a spanning tree: " + c.error);
}

void run_tree(const settings& s) {
  fmt::print("\ntree: spanning tree from vertex 0; medians of {} round(s); x serial = time / "
             "the sequential DFS's time, speedup = its inverse, per round\n\n",
             s.rounds);
  std::string header = "| graph | serial DFS |";
  std::string rule = "|---|---:|";
  for (const char* method : {"on-demand", "depth-limited"})
    for (const unsigned w : s.workers) {
      header += fmt::format(" {} {}w |", method, w);
      rule += "---:|";
    }
  header += " 2 serial DFS at once: ceiling |";
  rule += "---:|";
  fmt::print("{}\n{}\n", header, rule);
  for (const graph_case& gc : graph_cases(s.quick)) {
    const apgas_apps::csr_graph g = gc.make();
    std::vector<vertex_id> parent(g.vertex_count());
    std::vector<vertex_id> other_parent(g.vertex_count());
    std::vector<double> seq_times;
    std::vector<double> ceilings;
    std::map<std::string, series> results;
    for (int round = 0; round < s.rounds; ++round) {
      apgas_apps::reset_parents(parent);
      const double seq = seconds_of([&] { apgas_apps::spanning_tree_seq(g, 0, parent); });
      check_tree(g, parent, gc.name + " serial DFS");
      seq_times.push_back(seq);
      // The machine's ceiling for 2 workers on this graph: two sequential DFS at once, on two
      // threads, each with its own parent array (what the memory system allows two cores).
      apgas_apps::reset_parents(parent);
      apgas_apps::reset_parents(other_parent);
      const double both = seconds_of([&] {
        std::thread other([&] { apgas_apps::spanning_tree_seq(g, 0, other_parent); });
        apgas_apps::spanning_tree_seq(g, 0, parent);
        other.join();
      });
      check_tree(g, other_parent, gc.name + " serial DFS on a second thread");
      ceilings.push_back(2 * seq / both);
      for (const bool on_demand : {true, false}) {
        for (const unsigned w : s.workers) {
          const std::string key = fmt::format("{} {}", on_demand ? "on-demand" : "limited", w);
          apgas::local_runtime rt(one_place(w));
          apgas_apps::reset_parents(parent);
          const double t = seconds_of([&] {
            if (on_demand) {
              rt.run([&] { return apgas_apps::spanning_tree_on_demand(g, 0, parent); });
            } else {
              (void)rt.run([&] { return apgas_apps::spanning_tree(g, 0, parent); });
            }
          });
          check_tree(g, parent, gc.name + " " + key);
          results[key].seconds.push_back(t);
          results[key].ratios.push_back(t / seq);
        }
      }
    }
    std::string row = fmt::format("| {} | {:.1f} ms |", gc.name, median(seq_times) * 1e3);
    for (const char* method : {"on-demand", "limited"})
      for (const unsigned w : s.workers) {
        const series& r = results[fmt::format("{} {}", method, w)];
        const double x = median(r.ratios);
        row += w == 1
                   ? fmt::format(" {:.1f} ms ({:.2f}x serial) |", median(r.seconds) * 1e3, x)
                   : fmt::format(" {:.1f} ms ({:.2f}x speedup) |", median(r.seconds) * 1e3, 1 / x);
      }
    row += fmt::format(" {:.2f}x |", median(ceilings));
    fmt::print("{}\n", row);
    std::fflush(stdout);
  }
}

} // namespace

int main(int argc, char** argv) {
  const settings s = parse(argc, argv);
  fmt::print("bench_on_demand: on-demand splitting against its peers, at one place\n");
  apgas_bench::print_machine_state();
  if (s.loop) run_loop(s);
  if (s.tree) run_tree(s);
  return 0;
}
