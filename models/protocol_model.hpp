// A model of the messages of apgas's many-place protocols, simulated in rounds in one process:
// the distributed finish (reports up the home's tree, asks and cleanups down it), the
// collectives (for_each_place, at_each_place) and distributed clocks (all-to-all reports, or
// reports up and releases down the home's tree). sim_protocols prints what they cost at up to
// 100,000 places; the scaling test runs the same programs on real places and compares the
// counts each place sent with the ones simulated here.
//
// A round is one hop: a message sent in round r is handled in round r + 1, and a place handles
// everything that reached it in a round as one delivery (so the entries it relays up a tree in
// that round leave as one message per next place, as tree_messaging relays those of one poll).
// Activities run, and end, in the round they arrive (or when what they wait for arrives).
// What the model reuses of the runtime is what decides where messages go and when the home
// asks: place_tree (routes) and home_tally (pending counts, whom to ask). Everything else
// (proxies, held reports, the tree's relays and splits, the clock's tallies) is restated here
// in a few lines each, after places/src/distributed_finish.cpp, tree_messaging.cpp and
// clocks/src/clock_proxy.cpp.
#pragma once

#include "apgas/detail/finish_tally.hpp"
#include "apgas/detail/place_tree.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace apgas::model {

using detail::place_id;
using detail::place_tree;

/// @brief The options of a simulated run (those of the runtime that change the messages).
struct config {
  place_id places = 1;
  place_id arity = 32;                   ///< --tree-arity
  place_id clock_all_to_all_places = 16; ///< --clock-all-to-all-places
};

/// @brief What one place sent, counted as the runtime's counters count it, and what it handled.
struct place_counts {
  std::uint64_t received = 0;        ///< messages from other places handled (loopback not)
  std::uint64_t sent = 0;            ///< messages to other places (loopback not)
  std::uint64_t entries_at_root = 0; ///< tree-up entries handed to this place's handlers
  std::uint64_t activities_sent = 0; ///< message_counts::activities_sent (loopback included)
  std::uint64_t at_replies_sent = 0; ///< message_counts::at_replies_sent
  std::uint64_t finish_reports_sent = 0;
  std::uint64_t finish_asks_sent = 0;     ///< places asked (logical messages)
  std::uint64_t finish_cleanups_sent = 0; ///< places cleaned up, this one excluded
  std::uint64_t clock_reports_sent = 0;   ///< clock_counters::reports_sent
  std::uint64_t clock_releases_sent = 0;  ///< clock_counters::releases_sent (places released)
  std::uint64_t up_sent = 0;              ///< tree_counters::up_sent
  std::uint64_t up_relays_sent = 0;       ///< of up_sent, the relays (depend on timing)
  std::uint64_t entries_relayed = 0;      ///< tree_counters::entries_relayed
  std::uint64_t down_sent = 0;            ///< tree_counters::down_sent (loopback included)

  place_counts& operator+=(const place_counts& o) noexcept {
    received += o.received;
    sent += o.sent;
    entries_at_root += o.entries_at_root;
    activities_sent += o.activities_sent;
    at_replies_sent += o.at_replies_sent;
    finish_reports_sent += o.finish_reports_sent;
    finish_asks_sent += o.finish_asks_sent;
    finish_cleanups_sent += o.finish_cleanups_sent;
    clock_reports_sent += o.clock_reports_sent;
    clock_releases_sent += o.clock_releases_sent;
    up_sent += o.up_sent;
    up_relays_sent += o.up_relays_sent;
    entries_relayed += o.entries_relayed;
    down_sent += o.down_sent;
    return *this;
  }
};

/// @brief The outcome of a simulated workload.
struct result {
  std::vector<place_counts> places;
  std::uint64_t end_round = 0;   ///< the workload's end: its finish completed, its phase ended...
  std::uint64_t quiet_round = 0; ///< the last message handled (cleanups included)
  std::uint64_t largest_up_message = 0; ///< entries in the largest tree-up message

  place_counts total() const {
    place_counts t;
    for (const place_counts& c : places) t += c;
    return t;
  }
  /// @brief The place with the most of `field` (the lowest such), and how many.
  template <class Field>
  std::pair<place_id, std::uint64_t> most(Field field) const {
    std::pair<place_id, std::uint64_t> b{0, 0};
    for (place_id p = 0; p < places.size(); ++p)
      if (field(places[p]) > b.second) b = {p, field(places[p])};
    return b;
  }
  /// @brief The place that handled the most messages, and how many.
  std::pair<place_id, std::uint64_t> busiest() const {
    return most([](const place_counts& c) { return c.received; });
  }
};

/// @brief Simulated places exchanging the protocols' messages in rounds. The workloads below
/// (dense_finish, ...) drive it; each models one program and returns its counts.
class simulation {
public:
  explicit simulation(config c) : m_cfg(c), m_counts(c.places) {}

  // ---- finishes (distributed_finish.cpp) ----

  /// What runs when an activity runs (see run_activity).
  enum class behavior : std::uint8_t {
    leaf,           ///< runs and ends
    broadcast_step, ///< for_each_place along the tree: sends one to each child, then ends
    gather_step,    ///< at_each_place along the tree: an `at` to each child, then replies
    clocked,        ///< a registrant of the clock: advances once, then drops
  };

  /// @brief A finish homed at `home` (general, or SPMD: no asks, no cleanup). `on_done` runs
  /// when it completes. @return its index. The caller holds one local strand of it (its body):
  /// end_local ends it.
  std::uint32_t open_finish(place_id home, bool spmd, std::function<void()> on_done) {
    finish_model& f = m_finishes.emplace_back();
    f.home = home;
    f.spmd = spmd;
    f.local = 1;
    f.on_done = std::move(on_done);
    return static_cast<std::uint32_t>(m_finishes.size() - 1);
  }
  /// @brief Sends an activity of finish `fi` from `from` (a strand of its proxy there if
  /// `from_proxy`, else of its home) to `to`: `n` > 1 is a stream of n plain asyncs, which
  /// coalescing delivers as one message (one strand at `to`).
  void send_activity(std::uint32_t fi, place_id from, place_id to, behavior b, place_id root,
                     bool from_proxy, std::uint64_t n = 1) {
    finish_model& f = m_finishes[fi];
    if (from_proxy) {
      add_sent(f.proxies[from].sent, to, n);
    } else {
      f.touch(to);
      for (std::uint64_t i = 0; i < n; ++i)
        if (f.tally.on_send(to)) f.remote_open = true;
    }
    m_counts[from].activities_sent += n;
    message m{from, to, channel::activity};
    m.index = static_cast<std::uint32_t>(m_activities.size());
    m_activities.push_back(activity{fi, b, root, n});
    post(std::move(m));
  }
  /// @brief A gather step at `here` (of the tree rooted at `root`): an `at` of the step to each
  /// child, all at once, as activities of finish `fi` (the caller's: the gather opens none);
  /// once every child has replied, `here` replies to its parent (or, at the root, the gather
  /// returns and the caller's body ends).
  void gather_children(std::uint32_t fi, place_id here, place_id root) {
    std::uint32_t children = 0;
    tree(root).for_each_child(here, [&](place_id c) {
      ++children;
      send_activity(fi, here, c, behavior::gather_step, root, here != m_finishes[fi].home);
    });
    m_gather_left[here] = children;
    if (children == 0) gather_done(fi, here, root);
  }
  void gather_done(std::uint32_t fi, place_id here, place_id root) {
    if (here == root) {
      mark_end();
      return end_local(fi);
    }
    m_counts[here].at_replies_sent++;
    post(message{here, tree(root).parent(here), channel::reply, fi});
    end_strand(fi, here);
  }
  /// @brief A local strand of the home finish `fi` ended (its body, or an `at` awaiting).
  void end_local(std::uint32_t fi) {
    finish_model& f = m_finishes[fi];
    if (--f.local != 0) return;
    if (f.remote_open) send_asks(fi, f.tally.on_home_quiet());
    check_done(fi);
  }

  // ---- clocks (clock_protocol.cpp, clock_proxy.cpp) ----

  /// @brief A clock homed at `home` with one registrant at each place of `registered`, each
  /// in phase 1, their activities strands of finish `fi` (or local strands of it at the home;
  /// k_none: no finish). Registrants advance once; then they drop (and their activities end)
  /// if `drop_after`, else they stay, idle. Reports go all-to-all up to
  /// --clock-all-to-all-places places, else up the home's tree.
  void open_clock(place_id home, std::vector<place_id> registered, bool drop_after,
                  std::uint32_t fi) {
    m_clock = std::make_unique<clock_model>();
    clock_model& c = *m_clock;
    c.home = home;
    c.all_to_all = m_cfg.places <= m_cfg.clock_all_to_all_places;
    c.drop_after = drop_after;
    c.finish = fi;
    c.registrants.assign(m_cfg.places, 0);
    for (place_id p : registered) c.registrants[p] = 1;
    c.participants = registered.size();
    c.tallies.resize(c.all_to_all ? m_cfg.places : 1);
  }
  /// @brief The registrant at `p` advances in phase 1 (pre: open_clock registered it).
  void clock_resume(place_id p) { clock_report(p, 1, true); }

  // ---- gathering without a finish (at_each_place flat, with a plain function) ----

  /// @brief `at(to, f)` of a plain function from `from`: a request handled in `to`'s message
  /// handler, which replies at once. The reply ends one of `from`'s outstanding requests; the
  /// last one ends the workload.
  void send_rpc(place_id from, place_id to) {
    ++m_rpcs_outstanding;
    m_counts[from].activities_sent++;
    post(message{from, to, channel::request});
  }

  static constexpr std::uint32_t k_none = ~std::uint32_t{0};

  /// @brief Marks the workload's end now.
  void mark_end() { m_result.end_round = m_round; }

  /// @brief Runs rounds until no message is in flight. @return the counts.
  result run() {
    while (!m_next.empty()) {
      ++m_round;
      std::vector<message> now = std::move(m_next);
      m_next.clear();
      // Per destination, in the order sent (each channel is FIFO).
      std::stable_sort(now.begin(), now.end(),
                       [](const message& a, const message& b) { return a.to < b.to; });
      for (std::size_t i = 0; i < now.size();) {
        const place_id here = now[i].to;
        std::size_t j = i;
        for (; j < now.size() && now[j].to == here; ++j) {
          if (now[j].from != here) m_counts[here].received++;
          handle(here, now[j]);
        }
        flush_relays(here);
        run_arrived(here);
        i = j;
      }
      m_result.quiet_round = m_round;
    }
    m_result.places = std::move(m_counts);
    return std::move(m_result);
  }

private:
  enum class channel : std::uint8_t { activity, request, reply, up, down, direct };
  enum class control : std::uint8_t {
    finish_report,
    finish_ask,
    finish_cleanup,
    clock_report,
    clock_release
  };
  /// What a tree message or a clock report carries (by index into m_payloads).
  struct payload {
    explicit payload(control w, std::uint32_t finish = 0) : what(w), object(finish) {}
    control what;
    std::uint32_t object; ///< the finish
    detail::finish_report report;
    std::uint64_t phase = 0; ///< clock report or release
    bool carried = false;    ///< clock report: its registrant goes on into the next phase
  };
  struct entry {
    place_id root;
    place_id from;
    std::uint32_t payload;
  };
  struct message {
    message(place_id f, place_id t, channel c, std::uint32_t i = 0, place_id r = 0)
        : from(f), to(t), ch(c), index(i), root(r) {}
    place_id from;
    place_id to;
    channel ch;
    std::uint32_t index; ///< activity, reply (the finish awaiting it), payload (down, direct)
    place_id root;       ///< down
    std::vector<entry> entries;
    std::vector<place_id> targets;
  };
  struct activity {
    std::uint32_t finish;
    behavior what;
    place_id root;
    std::uint64_t count; ///< activities in the message (a stream)
  };
  struct proxy_model {
    std::uint64_t received = 0;  ///< activities since the last report
    std::uint64_t from_home = 0; ///< activities from the home, ever
    std::uint64_t strands = 0;   ///< live
    std::vector<std::pair<place_id, std::uint64_t>> sent;
    std::uint64_t seq = 0;
    bool asked = false;
    bool deferred = false;
  };
  struct finish_model {
    place_id home = 0;
    std::uint64_t serial = 0;
    bool spmd = false;
    detail::home_tally tally;
    std::vector<bool> touched_bits;
    std::vector<place_id> touched;
    std::int64_t local = 0;
    bool remote_open = false;
    bool done = false;
    std::function<void()> on_done;
    std::unordered_map<place_id, proxy_model> proxies;
    void touch(place_id p) {
      if (touched_bits.size() <= p) touched_bits.resize(p + 1, false);
      if (!touched_bits[p]) {
        touched_bits[p] = true;
        touched.push_back(p);
      }
    }
  };
  struct clock_tally {
    std::vector<std::uint64_t> reports; ///< by phase
    std::uint64_t ended = 0;            ///< the last phase ended here
  };
  struct clock_model {
    place_id home = 0;
    bool all_to_all = false;
    bool drop_after = false;
    std::uint32_t finish = k_none;
    std::vector<std::uint8_t> registrants;          ///< per place: 1 while registered
    std::uint64_t participants = 0;                 ///< places reporting phase 1
    std::vector<std::uint64_t> carried_count;       ///< by phase: registrants going on
    std::vector<std::vector<place_id>> reported_at; ///< by phase (home mode): who
    std::vector<clock_tally> tallies;               ///< every place, or the home alone
    std::uint64_t ended_first_phase = 0;            ///< places where phase 1 ended
  };

  static void add_sent(std::vector<std::pair<place_id, std::uint64_t>>& sent, place_id to,
                       std::uint64_t n) {
    for (auto& [p, k] : sent)
      if (p == to) {
        k += n;
        return;
      }
    sent.emplace_back(to, n);
  }
  place_tree tree(place_id root) const { return place_tree(root, m_cfg.places, m_cfg.arity); }
  void post(message m) {
    if (m.from != m.to) m_counts[m.from].sent++;
    m_next.push_back(std::move(m));
  }
  std::uint32_t store(payload p) {
    m_payloads.push_back(std::move(p));
    return static_cast<std::uint32_t>(m_payloads.size() - 1);
  }

  // ---- tree messaging ----

  void send_up(place_id from, place_id root, payload p) {
    if (root == from) return deliver(from, from, m_payloads[store(std::move(p))]);
    m_counts[from].up_sent++;
    message m{from, tree(root).parent(from), channel::up};
    m.entries.push_back(entry{root, from, store(std::move(p))});
    post(std::move(m));
  }
  void send_down(place_id from, place_id to, place_id root, std::vector<place_id> targets,
                 std::uint32_t pi) {
    m_counts[from].down_sent++;
    message m{from, to, channel::down, pi, root};
    m.targets = std::move(targets);
    post(std::move(m));
  }
  void multicast(place_id root, std::vector<place_id> targets, payload p) {
    const std::uint32_t pi = store(std::move(p));
    std::vector<place_id> others;
    bool here_too = false;
    for (place_id t : targets) {
      if (t == root) here_too = true;
      else others.push_back(t);
    }
    if (here_too) send_down(root, root, root, {root}, pi); // through the loopback
    tree(root).split_by_child(root, others, [&](place_id child, const std::vector<place_id>& g) {
      send_down(root, child, root, g, pi);
    });
  }
  void deliver_or_relay_up(place_id here, const message& m) {
    m_result.largest_up_message =
        std::max<std::uint64_t>(m_result.largest_up_message, m.entries.size());
    for (const entry& e : m.entries) {
      if (e.root == here) {
        m_counts[here].entries_at_root++;
        deliver(here, e.from, m_payloads[e.payload]);
        continue;
      }
      m_relays[tree(e.root).parent(here)].push_back(e);
      m_counts[here].entries_relayed++;
    }
  }
  void flush_relays(place_id here) {
    for (auto& [next, entries] : m_relays) {
      m_counts[here].up_sent++;
      m_counts[here].up_relays_sent++;
      message m{here, next, channel::up};
      m.entries = std::move(entries);
      post(std::move(m));
    }
    m_relays.clear();
  }
  void deliver_and_pass_down(place_id here, const message& m) {
    std::vector<place_id> others;
    bool here_too = false;
    for (place_id t : m.targets) {
      if (t == here) here_too = true;
      else others.push_back(t);
    }
    tree(m.root).split_by_child(here, others, [&](place_id child, const std::vector<place_id>& g) {
      send_down(here, child, m.root, g, m.index);
    });
    if (here_too) deliver(here, m.root, m_payloads[m.index]);
  }

  // ---- delivery ----

  void handle(place_id here, const message& m) {
    switch (m.ch) {
    case channel::activity:
      return arrive(here, m.from, m.index);
    case channel::request:
      m_counts[here].at_replies_sent++;
      return post(message{here, m.from, channel::reply, k_none});
    case channel::reply:
      if (m.index != k_none) { // a child's gather: the last one completes this place's
        if (--m_gather_left[here] == 0) gather_done(m.index, here, m_gather_root[here]);
        return;
      }
      if (--m_rpcs_outstanding == 0) mark_end();
      return;
    case channel::up:
      return deliver_or_relay_up(here, m);
    case channel::down:
      return deliver_and_pass_down(here, m);
    case channel::direct:
      return deliver(here, m.from, m_payloads[m.index]);
    }
  }
  void deliver(place_id here, place_id from, const payload& p) {
    switch (p.what) {
    case control::finish_report:
      return apply_report(p.object, p.report);
    case control::finish_ask:
      return on_ask(here, p.object);
    case control::finish_cleanup:
      m_finishes[p.object].proxies.erase(here);
      return;
    case control::clock_report:
      return clock_apply(here, from, p.phase);
    case control::clock_release:
      return clock_phase_end(here, p.phase);
    }
  }

  // ---- finishes: arrivals, quiet proxies, reports, asks, cleanups ----

  void arrive(place_id here, place_id from, std::uint32_t ai) {
    const activity& a = m_activities[ai];
    proxy_model& px = m_finishes[a.finish].proxies[here];
    px.received += a.count;
    if (from == m_finishes[a.finish].home) px.from_home += a.count;
    px.strands++;
    m_arrived.push_back(ai); // run after the delivery, as the workers do
  }
  void run_arrived(place_id here) {
    std::vector<std::uint32_t> arrived = std::move(m_arrived);
    m_arrived.clear();
    for (std::uint32_t ai : arrived) run_activity(here, ai);
  }
  void run_activity(place_id here, std::uint32_t ai) {
    const activity a = m_activities[ai];
    switch (a.what) {
    case behavior::leaf:
      return end_strand(a.finish, here);
    case behavior::broadcast_step:
      tree(a.root).for_each_child(here, [&](place_id c) {
        send_activity(a.finish, here, c, behavior::broadcast_step, a.root, true);
      });
      return end_strand(a.finish, here);
    case behavior::gather_step:
      m_gather_root[here] = a.root;
      return gather_children(a.finish, here, a.root);
    case behavior::clocked:
      return clock_resume(here);
    }
  }

  void end_strand(std::uint32_t fi, place_id here) {
    finish_model& f = m_finishes[fi];
    proxy_model& px = f.proxies[here];
    if (--px.strands != 0) return;
    if (!px.asked && f.home != here &&
        (px.seq > 0 || px.from_home >= detail::k_stream_activities)) {
      px.deferred = true; // held until the home asks
      return;
    }
    take_report(fi, here);
  }
  void take_report(std::uint32_t fi, place_id here) {
    finish_model& f = m_finishes[fi];
    proxy_model& px = f.proxies[here];
    payload p{control::finish_report, fi};
    p.report = detail::finish_report{detail::finish_id{f.home, fi}, here, px.seq++, px.received,
                                     std::move(px.sent)};
    px.received = 0;
    px.sent.clear();
    px.deferred = false;
    if (f.spmd) f.proxies.erase(here);
    if (f.home == here) return apply_report(fi, p.report);
    m_counts[here].finish_reports_sent++;
    send_up(here, f.home, std::move(p));
  }
  void apply_report(std::uint32_t fi, const detail::finish_report& r) {
    finish_model& f = m_finishes[fi];
    for (const auto& [to, n] : r.sent) f.touch(to);
    f.touch(r.from);
    std::vector<place_id> ask;
    if (f.tally.on_report(r, &ask)) f.remote_open = false;
    send_asks(fi, std::move(ask));
    check_done(fi);
  }
  void send_asks(std::uint32_t fi, std::vector<place_id> places) {
    const finish_model& f = m_finishes[fi];
    if (f.spmd) return;
    std::erase(places, f.home);
    if (places.empty()) return;
    m_counts[f.home].finish_asks_sent += places.size();
    multicast(f.home, std::move(places), payload{control::finish_ask, fi});
  }
  void on_ask(place_id here, std::uint32_t fi) {
    // An ask that overtakes its activities opens the proxy, asked (distributed_finish.cpp).
    auto it = m_finishes[fi].proxies.try_emplace(here).first;
    it->second.asked = true;
    if (it->second.deferred && it->second.strands == 0) take_report(fi, here);
  }
  void check_done(std::uint32_t fi) {
    finish_model& f = m_finishes[fi];
    if (f.done || f.local != 0 || f.remote_open) return;
    f.done = true;
    if (!f.spmd && !f.touched.empty()) {
      std::vector<place_id> places = f.touched;
      std::sort(places.begin(), places.end());
      m_counts[f.home].finish_cleanups_sent +=
          places.size() -
          static_cast<std::size_t>(std::count(places.begin(), places.end(), f.home));
      multicast(f.home, std::move(places), payload{control::finish_cleanup, fi});
    }
    if (f.on_done) f.on_done();
  }

  // ---- clocks ----

  void clock_report(place_id from, std::uint64_t phase, bool carried) {
    clock_model& c = *m_clock;
    if (c.carried_count.size() <= phase) {
      c.carried_count.resize(phase + 1, 0);
      c.reported_at.resize(phase + 1);
    }
    if (carried) c.carried_count[phase]++;
    payload p{control::clock_report};
    p.phase = phase;
    p.carried = carried;
    if (c.all_to_all) {
      const std::uint32_t pi = store(p);
      for (place_id q = 0; q < m_cfg.places; ++q) {
        if (q == from) continue;
        m_counts[from].clock_reports_sent++;
        post(message{from, q, channel::direct, pi});
      }
      return clock_apply(from, from, phase);
    }
    if (from != c.home) m_counts[from].clock_reports_sent++;
    send_up(from, c.home, std::move(p));
  }
  void clock_apply(place_id here, place_id from, std::uint64_t phase) {
    clock_model& c = *m_clock;
    clock_tally& t = c.tallies[c.all_to_all ? here : 0];
    if (t.reports.size() <= phase) t.reports.resize(phase + 1, 0);
    t.reports[phase]++;
    // Home mode: the home tells every place that reported in a phase of its end.
    if (!c.all_to_all) c.reported_at[phase].push_back(from);
    // Phases end in order, each once all its registrants' places have reported.
    for (;;) {
      const std::uint64_t next = t.ended + 1;
      if (next >= t.reports.size()) return;
      const std::uint64_t expected = next == 1 ? c.participants : c.carried_count[next - 1];
      if (expected == 0 || t.reports[next] != expected) return;
      t.ended = next;
      if (!c.all_to_all) {
        std::vector<place_id> targets = c.reported_at[next];
        std::erase(targets, c.home);
        if (!targets.empty()) {
          m_counts[c.home].clock_releases_sent += targets.size();
          payload p{control::clock_release};
          p.phase = next;
          multicast(c.home, std::move(targets), std::move(p));
        }
      }
      clock_phase_end(here, next);
    }
  }
  void clock_phase_end(place_id here, std::uint64_t phase) {
    clock_model& c = *m_clock;
    if (!c.registrants[here]) return;
    if (phase == 1 && ++c.ended_first_phase == c.participants && !c.drop_after) mark_end();
    if (!c.drop_after) return;
    c.registrants[here] = 0; // drops: reports the next phase, carrying nothing
    clock_report(here, phase + 1, false);
    if (c.finish == k_none) return;
    if (here == m_finishes[c.finish].home) end_local(c.finish);
    else end_strand(c.finish, here);
  }

  config m_cfg;
  std::vector<place_counts> m_counts;
  result m_result;
  std::uint64_t m_round = 0;
  std::vector<message> m_next;
  std::deque<payload> m_payloads; // handlers hold references while others are stored
  std::deque<activity> m_activities;
  std::deque<finish_model> m_finishes; // home_tally does not move
  std::vector<std::uint32_t> m_arrived;
  std::unordered_map<place_id, std::vector<entry>> m_relays; ///< of the place handling now
  std::unique_ptr<clock_model> m_clock;
  std::uint64_t m_rpcs_outstanding = 0;
  std::unordered_map<place_id, std::uint32_t> m_gather_left; ///< replies a gather awaits
  std::unordered_map<place_id, place_id> m_gather_root;      ///< the tree each gathers along
};

// ---- the workloads --------------------------------------------------------------------------

/// @brief (a) A finish at place 0 whose body starts one activity at every place (at place 0
/// itself too, through the loopback, if `with_home`); each runs and ends.
inline result dense_finish(config c, bool with_home = true) {
  simulation s(c);
  const std::uint32_t fi = s.open_finish(0, false, [&s] { s.mark_end(); });
  for (place_id p = with_home ? 0 : 1; p < c.places; ++p)
    s.send_activity(fi, 0, p, simulation::behavior::leaf, 0, false);
  s.end_local(fi);
  return s.run();
}

/// @brief (b) A finish at place 0 whose body sends a stream of `n` plain asyncs to every other
/// place (coalesced: one message per place).
inline result stream_finish(config c, std::uint64_t n) {
  simulation s(c);
  const std::uint32_t fi = s.open_finish(0, false, [&s] { s.mark_end(); });
  for (place_id p = 1; p < c.places; ++p)
    s.send_activity(fi, 0, p, simulation::behavior::leaf, 0, false, n);
  s.end_local(fi);
  return s.run();
}

/// @brief (c) for_each_place from place 0 (collectives.hpp): flat, an SPMD finish with one
/// activity per place (place 0's through the loopback); beyond --tree-arity + 1 places, a
/// finish around the root's step, each step sending one to each child.
inline result for_each_place(config c) {
  simulation s(c);
  const bool flat = place_tree(0, c.places, c.arity).flat();
  const std::uint32_t fi = s.open_finish(0, flat, [&s] { s.mark_end(); });
  if (flat) {
    for (place_id p = 0; p < c.places; ++p)
      s.send_activity(fi, 0, p, simulation::behavior::leaf, 0, false);
  } else {
    place_tree(0, c.places, c.arity).for_each_child(0, [&](place_id child) {
      s.send_activity(fi, 0, child, simulation::behavior::broadcast_step, 0, false);
    });
  }
  s.end_local(fi);
  return s.run();
}

/// @brief (d) at_each_place of a plain function from place 0, in a finish there: flat, an `at`
/// (a remote procedure call) per place, place 0's through the loopback; beyond, the tree
/// gather: at each place an `at` of the gather step to each child, all under that finish (its
/// reports and cleanups follow the gather's end, which is when at_each_place returns).
inline result at_each_place(config c) {
  simulation s(c);
  if (place_tree(0, c.places, c.arity).flat()) {
    for (place_id p = 0; p < c.places; ++p) s.send_rpc(0, p);
    return s.run();
  }
  const std::uint32_t fi = s.open_finish(0, false, {});
  s.gather_children(fi, 0, 0); // the root's gather; its end ends the finish's body
  return s.run();
}

/// @brief (e) One phase of a clock homed at place 0 with one registrant at every place, the
/// clock distributed already: each resumes at once, and the phase ends everywhere (the
/// registrants stay registered, idle).
inline result clock_phase(config c) {
  simulation s(c);
  if (c.places == 1) return s.run(); // a local clock: no message
  std::vector<place_id> all(c.places);
  for (place_id p = 0; p < c.places; ++p) all[p] = p;
  s.open_clock(0, all, false, simulation::k_none);
  for (place_id p = 0; p < c.places; ++p) s.clock_resume(p);
  return s.run();
}

/// @brief The clock program of the scaling test: in a finish at place 0, a clock made there
/// and a clocked activity at every other place; every registrant (the maker too) advances
/// once, then drops.
inline result clock_program(config c) {
  simulation s(c);
  const std::uint32_t fi = s.open_finish(0, false, [&s] { s.mark_end(); });
  if (c.places == 1) { // a local clock: the maker's advance ends the phase at once
    s.end_local(fi);
    return s.run();
  }
  std::vector<place_id> all(c.places);
  for (place_id p = 0; p < c.places; ++p) all[p] = p;
  s.open_clock(0, all, true, fi);
  for (place_id p = 1; p < c.places; ++p)
    s.send_activity(fi, 0, p, simulation::behavior::clocked, 0, false);
  s.clock_resume(0); // the maker's advance; the body ends once it has dropped
  return s.run();
}

/// @brief (f) A finish at place 0 with one activity at the last place (the deepest in place
/// 0's tree): what a finish with a single remote activity pays in hops.
inline result single_remote(config c) {
  simulation s(c);
  const std::uint32_t fi = s.open_finish(0, false, [&s] { s.mark_end(); });
  if (c.places > 1) s.send_activity(fi, 0, c.places - 1, simulation::behavior::leaf, 0, false);
  s.end_local(fi);
  return s.run();
}

} // namespace apgas::model
