// --trace: a run at 1, 2 or 4 places writes a timeline that place 0 reads back after the runtime
// ended (the files are written as it ends): valid JSON, every place and worker named, every
// received message paired with its send, a finish's wait ending after the activities it waited
// for, and, run with tiny buffers (--expect-overflow), the buffer bound holding.
//
//   trace_test --trace DIR [--trace-events N --expect-overflow]   (under mpiexec)
#include <apgas/apgas.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

using apgas::place_id;
using apgas::task;

namespace {

// ---- a small JSON reader: enough to check that the file parses and to read its events -------

struct json;
using json_object = std::map<std::string, json>;
using json_array = std::vector<json>;
struct json {
  std::variant<std::nullptr_t, bool, double, std::string, json_array, json_object> v;
  const json_object& object() const { return std::get<json_object>(v); }
  const json_array& array() const { return std::get<json_array>(v); }
  double number() const { return std::get<double>(v); }
  const std::string& text() const { return std::get<std::string>(v); }
  bool has(const std::string& key) const { return object().count(key) != 0; }
  const json& operator[](const std::string& key) const { return object().at(key); }
};

class json_reader {
public:
  explicit json_reader(std::string text) : m_s(std::move(text)) {}
  json document() {
    json j = value();
    space();
    if (m_i != m_s.size()) fail("text after the document");
    return j;
  }

private:
  [[noreturn]] void fail(const char* what) const {
    throw std::runtime_error(std::string(what) + " at byte " + std::to_string(m_i));
  }
  void space() {
    while (m_i < m_s.size() && std::strchr(" \t\r\n", m_s[m_i]) != nullptr) ++m_i;
  }
  bool eat(char c) {
    space();
    if (m_i < m_s.size() && m_s[m_i] == c) {
      ++m_i;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail("unexpected character");
  }
  std::string string() {
    expect('"');
    std::string out;
    while (m_i < m_s.size() && m_s[m_i] != '"') {
      if (m_s[m_i] == '\\') {
        if (++m_i == m_s.size()) break;
        if (std::strchr("\"\\/bfnrt", m_s[m_i]) == nullptr) fail("bad escape");
      } else if (static_cast<unsigned char>(m_s[m_i]) < 0x20) {
        fail("control character in a string");
      }
      out += m_s[m_i++];
    }
    expect('"');
    return out;
  }
  json value() {
    space();
    if (m_i == m_s.size()) fail("end of text");
    const char c = m_s[m_i];
    if (c == '{') {
      ++m_i;
      json_object o;
      if (eat('}')) return json{std::move(o)};
      do {
        std::string key = string();
        expect(':');
        o[key] = value();
      } while (eat(','));
      expect('}');
      return json{std::move(o)};
    }
    if (c == '[') {
      ++m_i;
      json_array a;
      if (eat(']')) return json{std::move(a)};
      do a.push_back(value());
      while (eat(','));
      expect(']');
      return json{std::move(a)};
    }
    if (c == '"') return json{string()};
    for (const char* word : {"true", "false", "null"})
      if (m_s.compare(m_i, std::strlen(word), word) == 0) {
        m_i += std::strlen(word);
        if (word[0] == 'n') return json{nullptr};
        return json{word[0] == 't'};
      }
    const char* start = m_s.c_str() + m_i;
    char* end = nullptr;
    const double d = std::strtod(start, &end);
    if (end == start) fail("not a JSON value");
    m_i += static_cast<std::size_t>(end - start);
    return json{d};
  }

  std::string m_s;
  std::size_t m_i = 0;
};

// ---- the run --------------------------------------------------------------------------------

constexpr auto k_spin = std::chrono::milliseconds(5);

/// Busy for k_spin (work, not a sleep: the activity holds its worker).
void spin() {
  const auto until = std::chrono::steady_clock::now() + k_spin;
  while (std::chrono::steady_clock::now() < until) {
  }
}

task<long> fib(int n) {
  if (n < 2) co_return n;
  long a = 0;
  long b = 0;
  co_await apgas::finish([&]() -> task<> {
    co_await apgas::async([&]() -> task<> { a = co_await fib(n - 1); });
    b = co_await fib(n - 2);
  });
  co_return a + b;
}

/// What place 0's tests read, filled by main.
struct run_facts {
  std::string dir;
  place_id places = 0;
  unsigned workers = 0;
  std::size_t capacity = 0;
  bool expect_overflow = false;
};
run_facts g_run;

/// The run: one finish with a spinning activity at every place, `at` round trips to every
/// place, and fine-grained local work.
task<> workload() {
  co_await apgas::finish([]() -> task<> {
    for (place_id p = 0; p < apgas::places(); ++p)
      co_await apgas::async_at(p, []() -> task<> {
        spin();
        co_return;
      });
  });
  for (place_id p = 0; p < apgas::places(); ++p) {
    const int r = co_await apgas::at(
        p, [](int x) { return x + 1; }, static_cast<int>(p));
    if (r != static_cast<int>(p) + 1) throw std::logic_error("echo");
  }
  if (co_await fib(20) != 6765) throw std::logic_error("fib");
}

// ---- the checks, at place 0 after the runtime ended -----------------------------------------

const json& trace() {
  static const json doc = [] {
    std::ifstream in(g_run.dir + "/trace.json");
    std::stringstream s;
    s << in.rdbuf();
    return json_reader(s.str()).document();
  }();
  return doc;
}

const json_array& events() { return trace()["traceEvents"].array(); }

/// Each place's own record (apgas_place): workers, capacity, events, dropped, clock error.
std::map<place_id, json_object> place_records() {
  std::map<place_id, json_object> out;
  for (const json& e : events())
    if (e["name"].text() == "apgas_place")
      out[static_cast<place_id>(e["pid"].number())] = e["args"].object();
  return out;
}

TEST(trace, is_valid_chrome_trace_json) {
  ASSERT_NO_THROW((void)trace());
  ASSERT_TRUE(trace().has("traceEvents"));
  ASSERT_FALSE(events().empty());
  for (const json& e : events()) {
    ASSERT_TRUE(e.has("name") && e.has("ph") && e.has("pid"));
    const std::string& ph = e["ph"].text();
    ASSERT_TRUE(ph == "X" || ph == "i" || ph == "M") << ph;
    if (ph == "M") continue;
    EXPECT_GE(e["ts"].number(), 0.0);
    if (ph == "X") {
      EXPECT_GE(e["dur"].number(), 0.0);
    }
  }
}

TEST(trace, names_every_place_and_worker) {
  const auto records = place_records();
  ASSERT_EQ(records.size(), g_run.places);
  std::set<std::pair<place_id, unsigned>> threads;
  std::set<place_id> processes;
  for (const json& e : events()) {
    if (e["name"].text() == "process_name")
      processes.insert(static_cast<place_id>(e["pid"].number()));
    if (e["name"].text() == "thread_name")
      threads.insert(
          {static_cast<place_id>(e["pid"].number()), static_cast<unsigned>(e["tid"].number())});
  }
  for (place_id p = 0; p < g_run.places; ++p) {
    EXPECT_TRUE(processes.count(p)) << "place " << p;
    EXPECT_EQ(records.at(p).at("workers").number(), g_run.workers);
    for (unsigned t = 0; t <= g_run.workers; ++t) // the workers, then the network
      EXPECT_TRUE(threads.count({p, t})) << "place " << p << " thread " << t;
  }
}

TEST(trace, every_received_message_has_its_send) {
  if (g_run.expect_overflow) GTEST_SKIP() << "dropped sends leave receives unpaired";
  std::map<std::string, const json*> sends;
  for (const json& e : events())
    if (e["name"].text() == "send") {
      const bool fresh = sends.emplace(e["bind_id"].text(), &e).second;
      EXPECT_TRUE(fresh) << "two sends named " << e["bind_id"].text();
    }
  const auto records = place_records();
  std::size_t receives = 0;
  for (const json& e : events()) {
    if (e["name"].text() != "receive") continue;
    ++receives;
    const auto send = sends.find(e["bind_id"].text());
    ASSERT_NE(send, sends.end()) << "no send for " << e["bind_id"].text();
    const json& s = *send->second;
    EXPECT_EQ(s["pid"].number(), e["args"]["from"].number());
    EXPECT_EQ(s["args"]["to"].number(), e["pid"].number());
    EXPECT_EQ(s["args"]["bytes"].number(), e["args"]["bytes"].number());
    // Received after it was sent, on the common clock, within both places' clock errors.
    const double error_us =
        (records.at(static_cast<place_id>(s["pid"].number())).at("clock_error_ns").number() +
         records.at(static_cast<place_id>(e["pid"].number())).at("clock_error_ns").number()) /
        1000.0;
    EXPECT_GE(e["ts"].number() + error_us, s["ts"].number());
  }
  if (g_run.places > 1) {
    EXPECT_GT(receives, 0U);
    // Sends name the kind of their first message: the `at`s' replies came back as such.
    bool reply = false;
    for (const auto& [id, send] : sends) reply = reply || (*send)["args"]["kind"].text() == "reply";
    EXPECT_TRUE(reply) << "no send of kind reply";
  }
}

TEST(trace, a_finish_wait_ends_after_the_activities_it_waited_for) {
  if (g_run.expect_overflow) GTEST_SKIP() << "the run's events may be dropped";
  const auto records = place_records();
  const double spin_us = std::chrono::duration<double, std::micro>(k_spin).count();
  // The workload's first finish: the first long finish wait of place 0.
  const json* wait = nullptr;
  for (const json& e : events())
    if (e["name"].text() == "finish wait" && e["pid"].number() == 0 &&
        e["dur"].number() >= spin_us &&
        (wait == nullptr || e["ts"].number() < (*wait)["ts"].number()))
      wait = &e;
  ASSERT_NE(wait, nullptr);
  const double begin = (*wait)["ts"].number();
  const double end = begin + (*wait)["dur"].number();
  // Every place ran one spinning activity during the wait, in a slice of at least k_spin that
  // overlaps it (at one place, maybe the spawner's own slice: work-first runs it inline). The
  // spin began after both the slice and the co_await began, and lasted k_spin: the wait may
  // not end before. (Place 0's slice that resumes the waiter overlaps it too, and goes on.)
  std::set<place_id> spun;
  for (const json& e : events()) {
    if (e["name"].text() != "activities" || e["dur"].number() < spin_us) continue;
    const double start = e["ts"].number();
    if (start > end || start + e["dur"].number() < begin) continue;
    const auto p = static_cast<place_id>(e["pid"].number());
    const double error_us = records.at(p).at("clock_error_ns").number() / 1000.0;
    if (end + error_us >= std::max(start, begin) + spin_us) spun.insert(p);
  }
  EXPECT_EQ(spun.size(), g_run.places) << "places whose spin ended within the wait";
}

TEST(trace, buffers_hold_their_bound) {
  std::uint64_t dropped = 0;
  for (const auto& [p, r] : place_records()) {
    EXPECT_EQ(r.at("capacity").number(), static_cast<double>(g_run.capacity));
    EXPECT_LE(r.at("events").number(), static_cast<double>((g_run.workers + 1) * g_run.capacity))
        << "place " << p;
    dropped += static_cast<std::uint64_t>(r.at("dropped").number());
  }
  std::size_t recorded = 0;
  for (const json& e : events())
    if (e["ph"].text() != "M") ++recorded;
  EXPECT_LE(recorded, g_run.places * (g_run.workers + 1) * g_run.capacity);
  if (g_run.expect_overflow) {
    EXPECT_GT(dropped, 0U);
  } else {
    EXPECT_EQ(dropped, 0U);
  }
}

} // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--expect-overflow") == 0) g_run.expect_overflow = true;
    else argv[out++] = argv[i];
  }
  argc = out;
  argv[argc] = nullptr;
  place_id here = 0;
  {
    apgas::runtime rt(argc, argv);
    here = rt.here();
    g_run.dir = rt.opts().trace;
    g_run.places = rt.places();
    g_run.workers = rt.opts().threads;
    g_run.capacity = rt.opts().trace_events;
    if (g_run.dir.empty()) {
      if (here == 0) std::fprintf(stderr, "trace_test: run with --trace DIR\n");
      return 2;
    }
    rt.run(workload());
  } // every place writes its file; place 0 joins them
  if (here != 0) return 0;
  return RUN_ALL_TESTS();
}
