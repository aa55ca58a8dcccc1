// spanning-tree: builds a spanning tree of a generated graph with apgas (depth-limited parallel
// DFS with overflow stages), times it against the sequential explicit-stack DFS, and checks both
// parent arrays.
#include <apgas/apgas.hpp>

#include <apgas_apps/graph.hpp>
#include <apgas_apps/spanning_tree.hpp>
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr std::string_view k_usage =
    "usage: spanning-tree <random N M | torus N | hypercube N | bintree N>\n"
    "                     [--depth-limit D] [--seed S] [--json] [--help] [runtime flags]\n"
    "\n"
    "Builds the graph (edge order shuffled with seed S), then a spanning tree rooted at vertex 0\n"
    "twice: sequentially (explicit-stack DFS) and with apgas (parallel DFS whose recursion\n"
    "stops after D levels; vertices reached there start the next stage). Checks both trees.\n"
    "\n"
    "graphs:\n"
    "  random N M     N vertices, each picks M random neighbours (2*M*N directed edges;\n"
    "                 the first pick of vertex i > 0 is an earlier vertex: always connected)\n"
    "  torus N        N x N 2D torus, degree 4\n"
    "  hypercube N    2^N vertices, degree N\n"
    "  bintree N      complete binary tree of 2^N - 1 vertices\n"
    "\n"
    "options:\n"
    "  --depth-limit D  recursion budget of each stage (default 30; 0 = one BFS level a stage)\n"
    "  --seed S         graph generator seed (default 1)\n"
    "  --json           print one JSON object on stdout instead of the text line\n"
    "  --help           this text\n"
    "\n"
    "exit status: 0 both trees verified, 1 a check or the run failed, 2 bad usage\n"
    "\n"
    "runtime flags (also APGAS_* variables):\n";

constexpr std::uint64_t k_default_seed = 1;
constexpr unsigned k_max_depth_limit = 1000000000;

/// A command-line mistake: reported in one line, exit status 2.
class cli_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct app_options {
  std::string kind;                 // random, torus, hypercube, bintree
  std::vector<std::uint64_t> sizes; // the graph's parameters
  unsigned depth_limit = apgas_apps::k_default_depth_limit;
  std::uint64_t seed = k_default_seed;
  bool json = false;
  bool help = false;
};

template <class T>
T parse_number(std::string_view what, std::string_view text, T lo, T hi) {
  T v{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc{} || ptr != end || v < lo || v > hi)
    throw cli_error(fmt::format("{}: expected a whole number from {} to {}, got '{}'", what, lo,
                                hi, text));
  return v;
}

std::size_t parameter_count(std::string_view kind) {
  if (kind == "random") return 2;
  if (kind == "torus" || kind == "hypercube" || kind == "bintree") return 1;
  throw cli_error(fmt::format("unknown graph '{}' (expected random, torus, hypercube or bintree)",
                              kind));
}

/// Parses what the runtime left of argv. Flags take `--flag V` or `--flag=V`; `--` ends them.
app_options parse_args(int argc, char** argv) {
  app_options o;
  std::vector<std::string_view> positional;
  bool flags_done = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (flags_done || arg.size() < 2 || arg.substr(0, 2) != "--") {
      positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    const std::size_t eq = arg.find('=');
    const std::string_view name = arg.substr(0, eq);
    std::optional<std::string_view> inline_value;
    if (eq != std::string_view::npos) inline_value = arg.substr(eq + 1);
    auto value = [&]() -> std::string_view {
      if (inline_value) return *inline_value;
      if (i + 1 >= argc) throw cli_error(fmt::format("{}: missing value", name));
      return argv[++i];
    };
    auto no_value = [&] {
      if (inline_value) throw cli_error(fmt::format("{}: takes no value", name));
    };
    if (name == "--depth-limit") {
      o.depth_limit = parse_number<unsigned>(name, value(), 0, k_max_depth_limit);
    } else if (name == "--seed") {
      o.seed = parse_number<std::uint64_t>(name, value(), 0, UINT64_MAX);
    } else if (name == "--json") {
      no_value();
      o.json = true;
    } else if (name == "--help") {
      no_value();
      o.help = true;
    } else {
      throw cli_error(fmt::format("unknown option '{}'", arg));
    }
  }
  if (o.help) return o;
  if (positional.empty())
    throw cli_error("missing graph (random N M, torus N, hypercube N, bintree N)");
  o.kind = positional.front();
  const std::size_t want = parameter_count(o.kind);
  if (positional.size() - 1 != want)
    throw cli_error(fmt::format("{} takes {} number{}, got {}", o.kind, want, want == 1 ? "" : "s",
                                positional.size() - 1));
  for (std::size_t k = 1; k < positional.size(); ++k) {
    // Only the form is checked here; the generators check the ranges, and say them.
    std::uint64_t v = 0;
    const std::string_view text = positional[k];
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size())
      throw cli_error(fmt::format("{}: '{}' is not a whole number in range", o.kind, text));
    o.sizes.push_back(v);
  }
  return o;
}

std::string graph_name(const app_options& o) {
  if (o.kind == "random") return fmt::format("random({},{})", o.sizes[0], o.sizes[1]);
  return fmt::format("{}({})", o.kind, o.sizes[0]);
}

/// Builds the graph; a size out of range is a usage error.
apgas_apps::csr_graph build_graph(const app_options& o) {
  auto small = [&](std::uint64_t v) {
    // Anything this large is rejected by the generators anyway; keep the message theirs.
    return static_cast<std::uint32_t>(v > UINT32_MAX ? UINT32_MAX : v);
  };
  try {
    if (o.kind == "random")
      return apgas_apps::make_random(o.sizes[0], small(o.sizes[1]), o.seed);
    if (o.kind == "torus") return apgas_apps::make_torus(small(o.sizes[0]), o.seed);
    if (o.kind == "hypercube") return apgas_apps::make_hypercube(small(o.sizes[0]), o.seed);
    return apgas_apps::make_bintree(small(o.sizes[0]), o.seed);
  } catch (const std::invalid_argument& e) {
    throw cli_error(e.what());
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", c);
    else out += c;
  }
  return out + "\"";
}

int run(apgas::runtime& rt, const app_options& o) {
  using clock = std::chrono::steady_clock;
  const std::string name = graph_name(o);

  auto t0 = clock::now();
  const apgas_apps::csr_graph g = build_graph(o);
  const double gen_seconds = seconds_since(t0);
  const std::uint32_t n = g.vertex_count();
  constexpr apgas_apps::vertex_id k_root = 0;

  // Both parent arrays are reset before their clocks start: the timings cover traversal only.
  std::vector<apgas_apps::vertex_id> seq_parent(n);
  apgas_apps::reset_parents(seq_parent);
  t0 = clock::now();
  apgas_apps::spanning_tree_seq(g, k_root, seq_parent);
  const double seq_seconds = seconds_since(t0);

  std::vector<apgas_apps::vertex_id> parent(n);
  apgas_apps::reset_parents(parent);
  t0 = clock::now();
  const apgas_apps::spanning_tree_stats stats =
      rt.run(apgas_apps::spanning_tree(g, k_root, parent, o.depth_limit));
  const double seconds = seconds_since(t0);

  const auto check = apgas_apps::check_spanning_tree(g, k_root, parent);
  const auto seq_check = apgas_apps::check_spanning_tree(g, k_root, seq_parent);
  const bool verified = check.ok && seq_check.ok;
  if (!check.ok) fmt::print(stderr, "spanning-tree: apgas tree check failed: {}\n", check.error);
  if (!seq_check.ok)
    fmt::print(stderr, "spanning-tree: sequential tree check failed: {}\n", seq_check.error);

  const auto edges = static_cast<double>(g.edge_count());
  const double medges = seconds > 0 ? edges / seconds / 1e6 : 0.0;
  const std::string policy(apgas::to_string(rt.opts().default_policy));
  if (o.json) {
    fmt::print("{{\"app\":\"spanning-tree\",\"graph\":{},\"vertices\":{},\"edges\":{},"
               "\"stages\":{},\"result\":{},\"verified\":{},\"seconds\":{:.6f},"
               "\"seq_seconds\":{:.6f},\"places\":1,\"threads\":{},\"policy\":{},"
               "\"medges_per_second\":{:.3f},\"depth_limit\":{},\"overflowed\":{},"
               "\"seed\":{},\"gen_seconds\":{:.6f}}}\n",
               json_string(name), n, g.edge_count(), stats.stages, check.tree_edges,
               verified ? "true" : "false", seconds, seq_seconds, rt.threads(),
               json_string(policy), medges, o.depth_limit, stats.overflowed, o.seed, gen_seconds);
  } else {
    fmt::print("spanning-tree {}: V={} E={} stages={} time={:.3f}s seq={:.3f}s {:.1f} Medges/s "
               "verified={} (threads={} policy={} depth-limit={} overflowed={} gen={:.2f}s)\n",
               name, n, g.edge_count(), stats.stages, seconds, seq_seconds, medges,
               verified ? "true" : "false", rt.threads(), policy, o.depth_limit,
               stats.overflowed, gen_seconds);
  }
  std::fflush(stdout);
  return verified ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  // The runtime first: it consumes its own flags (--threads, --policy, ...) from argv.
  std::optional<apgas::runtime> rt;
  try {
    rt.emplace(argc, argv);
  } catch (const apgas::usage_error& e) {
    fmt::print(stderr, "spanning-tree: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "spanning-tree: cannot start the runtime: {}\n", e.what());
    return 1;
  }
  try {
    const app_options o = parse_args(argc, argv);
    if (o.help) {
      fmt::print("{}{}", k_usage, apgas::options::help_text());
      return 0;
    }
    return run(*rt, o);
  } catch (const cli_error& e) {
    fmt::print(stderr, "spanning-tree: {} (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "spanning-tree: error: {}\n", e.what());
    return 1;
  }
}
