// sim_protocols: what the many-place protocols cost at up to 100,000 places, simulated in rounds
// in one process (protocol_model.hpp): for each workload, place count and scheme (the tree of
// --tree-arity children, or flat: every place a child of the home), the messages handled by the
// busiest place, the messages in total and the rounds (hops) to the workload's end.
//
//     sim_protocols [--places 1,2,4,1000,10000,100000] [--arity 32] [--stream 1000]
//                   [--csv FILE]
#include "protocol_model.hpp"
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

namespace {

using apgas::model::config;
using apgas::model::place_id;
using apgas::model::result;

struct workload {
  std::string name;
  std::string what;
  std::function<result(config)> run;
};

/// What the tables and the CSV show of a result.
struct summary {
  std::uint64_t handled = 0, handled_by = 0; ///< the busiest place's messages handled, and it
  std::uint64_t sent = 0, sent_by = 0;       ///< the most messages a place sent, and it
  std::uint64_t messages = 0;                ///< messages in total
  std::uint64_t end_round = 0, quiet_round = 0;
  std::uint64_t entries_at_0 = 0; ///< tree-up entries handed to place 0 (the home's handlers)
  std::uint64_t largest_up = 0;   ///< entries in the largest tree-up message
  std::uint64_t most_relayed = 0; ///< the most entries a place relayed
};

summary summarize(const result& r) {
  using apgas::model::place_counts;
  summary s;
  std::tie(s.handled_by, s.handled) = r.busiest();
  std::tie(s.sent_by, s.sent) = r.most([](const place_counts& c) { return c.sent; });
  s.messages = r.total().received;
  s.end_round = r.end_round;
  s.quiet_round = r.quiet_round;
  s.entries_at_0 = r.places[0].entries_at_root;
  s.largest_up = r.largest_up_message;
  s.most_relayed = r.most([](const place_counts& c) { return c.entries_relayed; }).second;
  return s;
}

struct row {
  std::string workload;
  place_id places;
  std::string scheme;
  place_id arity;
  summary s;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "sim_protocols: %s\nusage: sim_protocols [--places P,P,...] [--arity N] "
               "[--stream N] [--csv FILE]\n",
               why);
  std::exit(2);
}

std::vector<place_id> parse_places(const char* s) {
  std::vector<place_id> out;
  for (const char* p = s; *p != '\0';) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(p, &end, 10);
    if (end == p || v == 0 || v > 10'000'000) usage("--places takes place counts, e.g. 1,1000");
    out.push_back(static_cast<place_id>(v));
    p = *end == ',' ? end + 1 : end;
    if (*end != ',' && *end != '\0') usage("--places takes place counts, e.g. 1,1000");
  }
  return out;
}

unsigned long parse_number(const char* s, const char* flag) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(s, &end, 10);
  if (end == s || *end != '\0' || v == 0)
    usage(fmt::format("{} takes a positive number", flag).c_str());
  return v;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<place_id> places{1, 2, 4, 1000, 10000, 100000};
  place_id arity = 32;
  std::uint64_t stream = 1000;
  std::string csv;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage(fmt::format("{} needs a value", a).c_str());
    if (a == "--places") places = parse_places(argv[++i]);
    else if (a == "--arity") arity = static_cast<place_id>(parse_number(argv[++i], "--arity"));
    else if (a == "--stream") stream = parse_number(argv[++i], "--stream");
    else if (a == "--csv") csv = argv[++i];
    else usage(fmt::format("unknown argument {}", a).c_str());
  }

  namespace m = apgas::model;
  const std::vector<workload> workloads{
      {"dense_finish", "a finish whose home starts one activity at every place",
       [](config c) { return m::dense_finish(c); }},
      {"stream_finish",
       fmt::format("a finish whose home sends a stream of {} asyncs to every other place "
                   "(coalesced: one message per place)",
                   stream),
       [stream](config c) { return m::stream_finish(c, stream); }},
      {"for_each_place", "for_each_place from place 0",
       [](config c) { return m::for_each_place(c); }},
      {"at_each_place", "at_each_place of a plain function from place 0",
       [](config c) { return m::at_each_place(c); }},
      {"clock_phase", "one phase of a clock with a registrant at every place",
       [](config c) { return m::clock_phase(c); }},
      {"single_remote", "a finish with one activity at the place deepest in the home's tree",
       [](config c) { return m::single_remote(c); }},
  };

  const auto start = std::chrono::steady_clock::now();
  std::vector<row> rows;
  for (const workload& w : workloads) {
    fmt::print("\n## {}: {}\n\n", w.name, w.what);
    fmt::print("| places | scheme | most handled by a place | most sent by a place | messages | "
               "rounds to the end | rounds until quiet | entries handed to place 0 | largest "
               "tree-up message (entries) | most entries relayed by a place |\n");
    fmt::print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (place_id p : places) {
      for (const bool flat : {false, true}) {
        config c;
        c.places = p;
        c.arity = flat ? std::max<place_id>(p, 1) : arity;
        row r{w.name, p, flat ? "flat" : "tree", c.arity, summarize(w.run(c))};
        const summary& s = r.s;
        fmt::print("| {} | {} | {} (place {}) | {} (place {}) | {} | {} | {} | {} | {} | {} |\n", p,
                   flat ? std::string("flat") : fmt::format("tree {}", arity), s.handled,
                   s.handled_by, s.sent, s.sent_by, s.messages, s.end_round, s.quiet_round,
                   s.entries_at_0, s.largest_up, s.most_relayed);
        rows.push_back(std::move(r));
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("\n(simulated in {:.1f} s)\n", seconds);

  if (!csv.empty()) {
    std::FILE* f = std::fopen(csv.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "sim_protocols: cannot write %s: %s\n", csv.c_str(),
                   std::strerror(errno));
      return 1;
    }
    fmt::print(f, "workload,places,scheme,arity,most_handled,most_handled_by,most_sent,"
                  "most_sent_by,messages,end_round,quiet_round,entries_at_place_0,"
                  "largest_up_message,most_entries_relayed\n");
    for (const row& r : rows) {
      const summary& s = r.s;
      fmt::print(f, "{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.workload, r.places, r.scheme,
                 r.arity, s.handled, s.handled_by, s.sent, s.sent_by, s.messages, s.end_round,
                 s.quiet_round, s.entries_at_0, s.largest_up, s.most_relayed);
    }
    std::fclose(f);
  }
  return 0;
}
