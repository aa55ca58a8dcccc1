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

struct row {
  std::string workload;
  place_id places;
  std::string scheme;
  place_id arity;
  result r;
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
    fmt::print("| places | scheme | busiest place: messages handled | messages in total | rounds "
               "to the end | rounds until quiet | largest tree-up message (entries) | entries "
               "handed to place 0 |\n");
    fmt::print("|---:|---|---:|---:|---:|---:|---:|---:|\n");
    for (place_id p : places) {
      for (const bool flat : {false, true}) {
        config c;
        c.places = p;
        c.arity = flat ? std::max<place_id>(p, 1) : arity;
        result r = w.run(c);
        const auto [busy_place, busy] = r.busiest();
        const std::string scheme = flat ? "flat" : fmt::format("tree {}", arity);
        fmt::print("| {} | {} | {} (place {}) | {} | {} | {} | {} | {} |\n", p, scheme, busy,
                   busy_place, r.total().received, r.end_round, r.quiet_round, r.largest_up_message,
                   r.places[0].entries_at_root);
        rows.push_back(row{w.name, p, flat ? "flat" : "tree", c.arity, std::move(r)});
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
    fmt::print(f, "workload,places,scheme,arity,busiest_place,busiest_messages,total_messages,"
                  "end_round,quiet_round,largest_up_message,entries_at_place_0\n");
    for (const row& r : rows) {
      const auto [busy_place, busy] = r.r.busiest();
      fmt::print(f, "{},{},{},{},{},{},{},{},{},{},{}\n", r.workload, r.places, r.scheme, r.arity,
                 busy_place, busy, r.r.total().received, r.r.end_round, r.r.quiet_round,
                 r.r.largest_up_message, r.r.places[0].entries_at_root);
    }
    std::fclose(f);
  }
  return 0;
}
