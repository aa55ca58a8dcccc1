// The trace of a place written as Chrome trace events (the JSON object format that Perfetto and
// chrome://tracing open): a process per place, a thread per worker and one for the network.
// One event a line, so that place 0 joins the places' files without parsing them.
#include "apgas/detail/trace.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>

namespace apgas::detail {

trace_session::trace_session(std::string dir, unsigned workers, std::size_t capacity,
                             std::int64_t fold_ns)
    : m_dir(std::move(dir)), m_network(capacity), m_fold_ns(fold_ns), m_origin_ns(trace_now()) {
  m_workers.reserve(workers);
  for (unsigned w = 0; w < workers; ++w)
    m_workers.push_back(std::make_unique<trace_buffer>(capacity));
}

std::uint64_t trace_session::dropped() const noexcept {
  std::uint64_t n = m_network.dropped();
  for (const auto& b : m_workers) n += b->dropped();
  return n;
}

namespace {

constexpr std::string_view k_header = R"({"displayTimeUnit":"ns","traceEvents":[)";
constexpr std::string_view k_footer = "]}";

/// Appends events as JSON lines, each ending with ",\n" (the writer takes the last comma off).
class event_writer {
  fmt::memory_buffer m_buffer; // first: out() below names its type
  std::back_insert_iterator<fmt::memory_buffer> out() { return std::back_inserter(m_buffer); }

public:
  event_writer(unsigned place, std::int64_t shift_ns, const std::vector<std::string>& kinds)
      : m_place(place), m_shift_ns(shift_ns), m_kinds(kinds) {}

  void event(unsigned tid, const trace_event& e) {
    const double ts = us(e.start_ns);
    const double dur = us(e.end_ns) - ts;
    switch (e.kind) {
    case trace_kind::activities:
      slice(tid, ts, dur, "activities", "activity", fmt::format(R"("activities":{})", e.a));
      break;
    case trace_kind::steal:
      fmt::format_to(out(),
                     R"({{"name":"steal","cat":"steal","ph":"i","s":"t","ts":{:.3f},)"
                     R"("pid":{},"tid":{},"args":{{"victim":{}}}}},)"
                     "\n",
                     ts, m_place, tid, e.a);
      break;
    case trace_kind::park:
      slice(tid, ts, dur, "parked", "idle", "");
      break;
    case trace_kind::finish_wait: // the place is the finish's home
      slice(tid, ts, dur, "finish wait", "wait", "");
      break;
    case trace_kind::at_wait:
      slice(tid, ts, dur, "at wait", "wait", fmt::format(R"("place":{})", e.a));
      break;
    case trace_kind::clock_wait:
      slice(tid, ts, dur, "clock phase wait", "clock", fmt::format(R"("phase":{})", e.a));
      break;
    case trace_kind::when_wait:
      slice(tid, ts, dur, "when wait", "wait", "");
      break;
    case trace_kind::send:
      fmt::format_to(out(),
                     R"({{"name":"send","cat":"message","ph":"X","ts":{:.3f},"dur":{:.3f},)"
                     R"("pid":{},"tid":{},"bind_id":"m{}.{}.{}","flow_out":true,)"
                     R"("args":{{"to":{},"bytes":{},"messages":{},"kind":"{}","seq":{}}}}},)"
                     "\n",
                     ts, dur, m_place, tid, m_place, e.a, e.b, e.a, e.c, e.d, kind_name(e.e), e.b);
      break;
    case trace_kind::receive:
      fmt::format_to(out(),
                     R"({{"name":"receive","cat":"message","ph":"X","ts":{:.3f},"dur":{:.3f},)"
                     R"("pid":{},"tid":{},"bind_id":"m{}.{}.{}","flow_in":true,)"
                     R"("args":{{"from":{},"bytes":{},"seq":{}}}}},)"
                     "\n",
                     ts, dur, m_place, tid, e.a, m_place, e.b, e.a, e.c, e.b);
      break;
    case trace_kind::glb_steal:
      slice(tid, ts, dur, "GLB steal", "glb", fmt::format(R"("victim":{})", e.a));
      break;
    case trace_kind::glb_idle:
      slice(tid, ts, dur, "GLB idle", "glb", "");
      break;
    case trace_kind::glb_lifeline:
      instant(tid, ts, "GLB lifeline", fmt::format(R"("buddy":{})", e.a));
      break;
    case trace_kind::glb_lifeline_loot:
      instant(tid, ts, "GLB lifeline loot", fmt::format(R"("from":{},"items":{})", e.a, e.b));
      break;
    case trace_kind::collective_wait:
      slice(tid, ts, dur, "collective wait", "wait", "");
      break;
    case trace_kind::rma_wait:
      slice(tid, ts, dur, "rget/rput wait", "wait", fmt::format(R"("place":{})", e.a));
      break;
    }
  }

  void metadata(std::string_view name, std::string_view args, int tid = -1) {
    if (tid < 0)
      fmt::format_to(out(),
                     R"({{"name":"{}","ph":"M","pid":{},"args":{{{}}}}},)"
                     "\n",
                     name, m_place, args);
    else
      fmt::format_to(out(),
                     R"({{"name":"{}","ph":"M","pid":{},"tid":{},"args":{{{}}}}},)"
                     "\n",
                     name, m_place, tid, args);
  }

  /// The lines written, without the last line's comma.
  std::string take() {
    std::string s = fmt::to_string(m_buffer);
    if (s.size() >= 2 && s[s.size() - 2] == ',') s.erase(s.size() - 2, 1);
    return s;
  }

private:
  double us(std::int64_t ns) const { return static_cast<double>(ns + m_shift_ns) / 1000.0; }
  void instant(unsigned tid, double ts, std::string_view name, std::string_view args) {
    fmt::format_to(out(),
                   R"({{"name":"{}","cat":"glb","ph":"i","s":"t","ts":{:.3f},"pid":{},)"
                   R"("tid":{},"args":{{{}}}}},)"
                   "\n",
                   name, ts, m_place, tid, args);
  }
  void slice(unsigned tid, double ts, double dur, std::string_view name, std::string_view cat,
             std::string_view args) {
    fmt::format_to(out(),
                   R"({{"name":"{}","cat":"{}","ph":"X","ts":{:.3f},"dur":{:.3f},"pid":{},)"
                   R"("tid":{},"args":{{{}}}}},)"
                   "\n",
                   name, cat, ts, dur, m_place, tid, args);
  }

  /// A message kind's name (names are plain words: no JSON escaping needed), or its number.
  std::string kind_name(std::uint8_t kind) const {
    if (kind < m_kinds.size() && !m_kinds[kind].empty()) return m_kinds[kind];
    return std::to_string(kind);
  }

  unsigned m_place;
  std::int64_t m_shift_ns;
  const std::vector<std::string>& m_kinds;
};

std::string place_file(const std::string& dir, unsigned p) {
  return fmt::format("{}/place-{}.json", dir, p);
}

} // namespace

void trace_session::write_place_file(unsigned here) const {
  // Times in place 0's clock, from the common origin.
  event_writer w(here, m_offset_ns - m_origin_ns, m_kind_names);
  const auto workers = static_cast<unsigned>(m_workers.size());
  w.metadata("process_name", fmt::format(R"("name":"place {}")", here));
  w.metadata("process_sort_index", fmt::format(R"("sort_index":{})", here));
  w.metadata("process_labels", fmt::format(R"("labels":"clock +-{:.1f} us, {} events dropped")",
                                           static_cast<double>(m_error_ns) / 1000.0, dropped()));
  for (unsigned t = 0; t <= workers; ++t) {
    w.metadata("thread_name",
               t < workers ? fmt::format(R"("name":"worker {}")", t) : R"("name":"messages")",
               static_cast<int>(t));
    w.metadata("thread_sort_index", fmt::format(R"("sort_index":{})", t), static_cast<int>(t));
  }
  for (unsigned t = 0; t < workers; ++t)
    for (const trace_event& e : *m_workers[t]) w.event(t, e);
  for (const trace_event& e : m_network) w.event(workers, e);
  // What the tests and tools read: the place's shape and what its buffers lost.
  w.metadata("apgas_place",
             fmt::format(R"("place":{},"workers":{},"capacity":{},"events":{},"dropped":{},)"
                         R"("clock_offset_ns":{},"clock_error_ns":{})",
                         here, workers, m_network.capacity(),
                         [&] {
                           std::size_t n = m_network.size();
                           for (const auto& b : m_workers) n += b->size();
                           return n;
                         }(),
                         dropped(), m_offset_ns, m_error_ns));

  std::error_code ec;
  std::filesystem::create_directories(m_dir, ec); // another place may have made it meanwhile
  const std::string path = place_file(m_dir, here);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "apgas: trace: cannot write %s\n", path.c_str());
    return;
  }
  const std::string body = w.take();
  std::fprintf(f, "%.*s\n", static_cast<int>(k_header.size()), k_header.data());
  std::fwrite(body.data(), 1, body.size(), f);
  std::fprintf(f, "%.*s\n", static_cast<int>(k_footer.size()), k_footer.data());
  std::fclose(f);
  if (const std::uint64_t lost = dropped(); lost != 0)
    std::fprintf(stderr,
                 "apgas: trace: place %u dropped %llu events (buffers of %zu events full: "
                 "--trace-events)\n",
                 here, static_cast<unsigned long long>(lost), m_network.capacity());
}

bool trace_session::merge(unsigned places) const {
  const std::string path = m_dir + "/trace.json";
  std::ofstream out(path);
  out << k_header << '\n';
  bool first = true;
  for (unsigned p = 0; p < places; ++p) {
    std::ifstream in(place_file(m_dir, p));
    std::string line;
    if (!in || !std::getline(in, line) || line != k_header) {
      std::fprintf(stderr, "apgas: trace: %s is missing or not a place's trace\n",
                   place_file(m_dir, p).c_str());
      return false;
    }
    // Every line up to the footer is one event; the last has no comma.
    while (std::getline(in, line) && line != k_footer) {
      if (!first) out << ",\n";
      if (!line.empty() && line.back() == ',') line.pop_back();
      out << line;
      first = false;
    }
  }
  out << '\n' << k_footer << '\n';
  return static_cast<bool>(out);
}

} // namespace apgas::detail
