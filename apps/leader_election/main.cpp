// leader-election [--algorithm lcr|hs] [--n N] [--seed S] [--activities A] [--sync
// clock|finish|both]: leader election on a synchronous ring of N nodes with random distinct ids,
// the two high-synchronisation IMSuite kernels of the uClocks paper: LCR (LeLann, Chang and
// Roberts: every id travels clockwise until a larger node swallows it; the largest comes back to
// its node after N rounds) and HS (Hirschberg and Sinclair: candidates probe both ways 2^k nodes
// far in phase k, and survive while no larger id is that close).
//
// The nodes are in one block per place (the ring goes on from the last place to the first),
// each block in A chunks of nodes, one activity each. A round: every node reads the messages
// its neighbours sent it in the previous round and sends at most one message each way. Nodes
// whose neighbour lives at another place send it their message with an async_at.
// With a clock (--sync clock): one activity per chunk for the whole run, registered on one
// clock, one phase per round; the round's advance carries (as a clock reduction) how many
// nodes were elected, the largest of their ids and the messages sent, so every activity
// learns at once that the election is over. Messages to other places are clocked async_ats:
// the round cannot end before they have arrived.
// With a finish per round (--sync finish): each round, place 0 starts one activity per place
// under a finish; it starts one activity per chunk, and sends its messages to other places
// and its round's summary (to place 0) as async_ats governed by that finish.
// Checked: one node is elected, the node with the largest id; LCR takes N rounds, HS
// 2 (2^K - 1) + N (2^K the smallest power of two >= N); the rounds and messages match the
// sequential simulation of the same rounds.
#include <apgas/clock.hpp>

#include "apgas_apps/cli.hpp"
#include "apgas_apps/phased.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using apgas::place_id;
using apgas::task;

constexpr std::uint64_t k_default_n = 512; // IMSuite's input size in the uClocks paper
constexpr std::uint32_t k_default_activities = 8;
constexpr std::uint64_t k_default_seed = 1;

enum class algorithm : std::uint8_t { lcr, hs };

/// What every place needs to know of the run (bitwise: it travels as an argument).
struct params {
  std::uint64_t n = 0;
  std::uint64_t seed = 0;
  std::uint32_t activities = 0;
  algorithm alg = algorithm::lcr;
  std::uint8_t zero[3] = {}; ///< fills what would be padding
};

/// Node i's id: distinct for distinct i (a bijection of 64-bit words: splitmix64's finaliser
/// of an injective function of i), random-looking, reproducible from the seed.
std::uint64_t node_id(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ULL + i;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// The rounds an election takes: the round in which the leader learns it (round 0 is the
/// first sends). LCR: the largest id goes round the ring, one node a round. HS: phase k takes
/// 2^(k+1) rounds (out and back), and the first phase with 2^k >= n ends when the leader's
/// probe comes back round the ring, after n rounds.
std::uint64_t known_rounds(const params& prm) {
  if (prm.alg == algorithm::lcr) return prm.n;
  std::uint64_t reach = 1;
  while (reach < prm.n) reach *= 2;
  return 2 * (reach - 1) + prm.n;
}

/// A safety net: a run that has not elected anyone after this many rounds is broken.
std::uint64_t round_limit(const params& prm) { return 2 * known_rounds(prm) + 16; }

// ---- one node's round
// ----------------------------------------------------------------------------

enum class kind : std::uint8_t { none, out, in };

/// A message on one link in one round. LCR sends ids (kind out). HS: (id, out, hops) is a
/// probe with `hops` nodes still to go; (id, in) the reply going back to node `id`.
struct message {
  std::uint64_t id = 0;
  std::uint32_t hops = 0;
  kind what = kind::none;
  std::uint8_t zero[3] = {}; ///< fills what would be padding (the message travels)
};

/// A node's state between rounds.
struct node {
  std::uint64_t id = 0;
  std::uint32_t phase = 0;   ///< HS: the phase of its probes
  std::uint32_t replies = 0; ///< HS: replies of this phase back so far
};

/// What a node sends in a round, and whether it learnt that it is the leader.
struct step_out {
  message to_left;
  message to_right;
  bool elected = false;
  std::uint32_t sent = 0;
};

void send(step_out& out, bool right, message m) {
  message& slot = right ? out.to_right : out.to_left;
  if (slot.what != kind::none) // the algorithms never do it on a synchronous ring
    throw std::logic_error("leader-election: a node sends two messages one way in one round");
  slot = m;
  ++out.sent;
}

/// What LCR's node v does with `m` from its left neighbour.
void lcr_receive(const node& v, const message& m, step_out& out) {
  if (m.what == kind::none) return;
  if (m.id == v.id) out.elected = true;
  else if (m.id > v.id) send(out, true, m); // a smaller id stops here
}

/// What HS's node v does with `m`, from its left neighbour if `from_left`.
void hs_receive(node& v, const message& m, bool from_left, step_out& out) {
  const bool onward = from_left; // the way the message travels: right if it came from the left
  if (m.what == kind::out) {
    if (m.id == v.id) out.elected = true; // its probe went round the ring
    else if (m.id > v.id && m.hops > 1) send(out, onward, {m.id, m.hops - 1, kind::out});
    else if (m.id > v.id) send(out, !onward, {m.id, 1, kind::in}); // as far as it goes: reply
  } else if (m.what == kind::in) {
    if (m.id != v.id) {
      send(out, onward, m);
    } else if (++v.replies == 2) { // both probes came back: the next phase, twice as far
      v.replies = 0;
      ++v.phase;
      const message probe{v.id, std::uint32_t{1} << v.phase, kind::out};
      send(out, false, probe);
      send(out, true, probe);
    }
  }
}

/// Node v's round t, given what its neighbours sent it in round t - 1.
step_out step(node& v, const message& from_left, const message& from_right, std::uint64_t t,
              algorithm alg) {
  step_out out;
  if (t == 0) { // the first sends
    const message first{v.id, 1, kind::out};
    send(out, true, first);
    if (alg == algorithm::hs) send(out, false, first);
    return out;
  }
  if (alg == algorithm::lcr) {
    lcr_receive(v, from_left, out);
  } else {
    hs_receive(v, from_left, true, out);
    hs_receive(v, from_right, false, out);
  }
  return out;
}

/// A round's outcome, over the nodes of a chunk, a place, or all of them (a clock reduction:
/// bitwise, at most 64 bytes).
struct summary {
  std::uint64_t elected = 0;  ///< nodes elected
  std::uint64_t leader = 0;   ///< the largest id elected (valid if elected > 0)
  std::uint64_t messages = 0; ///< messages sent

  void add(const step_out& o, std::uint64_t id) {
    if (o.elected) {
      leader = elected == 0 ? id : std::max(leader, id);
      ++elected;
    }
    messages += o.sent;
  }
};

/// The clock reduction of summaries (stateless and associative).
struct combine_summaries {
  summary operator()(const summary& a, const summary& b) const {
    summary s;
    s.elected = a.elected + b.elected;
    s.leader = a.elected == 0 ? b.leader : b.elected == 0 ? a.leader : std::max(a.leader, b.leader);
    s.messages = a.messages + b.messages;
    return s;
  }
};

/// The whole election's outcome.
struct election {
  std::uint64_t rounds = 0; ///< the round in which the leader was elected
  std::uint64_t elected = 0;
  std::uint64_t leader = 0;
  std::uint64_t messages = 0; ///< over every round

  template <class A>
  void serialize(A& a) {
    a& rounds& elected& leader& messages;
  }
};

// ---- sequential --------------------------------------------------------------------------------

/// The same rounds, one node after the other. Inboxes [round parity][node][0: from the left,
/// 1: from the right].
election election_seq(const params& prm) {
  const std::uint64_t n = prm.n;
  std::vector<node> nodes(n);
  for (std::uint64_t i = 0; i < n; ++i) nodes[i].id = node_id(prm.seed, i);
  std::array<std::vector<std::array<message, 2>>, 2> inbox;
  for (auto& v : inbox) v.assign(n, {});
  election e;
  for (std::uint64_t t = 0;; ++t) {
    auto& in = inbox[t % 2];
    auto& next = inbox[(t + 1) % 2];
    summary s;
    for (std::uint64_t i = 0; i < n; ++i) {
      const step_out o = step(nodes[i], in[i][0], in[i][1], t, prm.alg);
      in[i] = {};
      next[(i + 1) % n][0] = o.to_right;
      next[(i + n - 1) % n][1] = o.to_left;
      s.add(o, nodes[i].id);
    }
    e.messages += s.messages;
    if (s.elected > 0) {
      e.rounds = t;
      e.elected = s.elected;
      e.leader = s.leader;
      return e;
    }
    if (t == round_limit(prm)) throw std::logic_error("leader-election: no leader (sequential)");
  }
}

// ---- one place's block -------------------------------------------------------------------------

/// The nodes of one place: local 0 .. count - 1 are global first .. first + count - 1. Round t
/// reads inbox[t % 2] and writes inbox[(t + 1) % 2]; each inbox slot has one writer (the
/// neighbour on that side), and the reader clears it after reading.
struct block {
  params prm;
  std::uint64_t first = 0;
  std::uint64_t count = 0;
  std::uint32_t chunks = 0;
  bool alone = false;  ///< one place: the ring closes inside the block
  place_id before = 0; ///< the place of the node before the first (the ring wraps round)
  place_id after = 0;  ///< the place of the node after the last
  std::vector<node> nodes;
  std::array<std::vector<std::array<message, 2>>, 2> inbox;
  std::vector<summary> chunk_summary; ///< --sync finish: each chunk's summary of the round
  election result;                    ///< once the run is over

  /// Chunk a's nodes, [lo, hi) in local indices.
  std::pair<std::uint64_t, std::uint64_t> chunk(std::uint32_t a) const {
    return {count * a / chunks, count * (a + 1) / chunks};
  }
};

using block_handle = apgas::place_local<block>;

std::uint64_t first_node(const params& prm, place_id p) { return prm.n * p / apgas::places(); }

struct setup_block {
  void operator()(block_handle h, params prm) const {
    block& b = h.get();
    const place_id p = apgas::here();
    b.prm = prm;
    b.first = first_node(prm, p);
    b.count = first_node(prm, p + 1) - b.first;
    b.chunks = static_cast<std::uint32_t>(std::min<std::uint64_t>(prm.activities, b.count));
    b.alone = apgas::places() == 1;
    b.before = (p + apgas::places() - 1) % apgas::places();
    b.after = (p + 1) % apgas::places();
    b.chunk_summary.assign(b.chunks, summary{});
    b.nodes.assign(b.count, node{});
    for (std::uint64_t i = 0; i < b.count; ++i) b.nodes[i].id = node_id(prm.seed, b.first + i);
    for (auto& v : b.inbox) v.assign(b.count, {});
    b.result = election{};
  }
};

/// Puts a message from a neighbouring place into an inbox: from the place before (`from_left`)
/// it is for the first node, from the place after for the last.
inline void store_message(block_handle h, std::uint8_t parity, bool from_left, message m) {
  block& b = h.get();
  message& slot = b.inbox[parity][from_left ? 0 : b.count - 1][from_left ? 0 : 1];
  if (slot.what != kind::none)
    throw std::logic_error("leader-election: two messages on one link in one round");
  slot = m;
}
struct deliver {
  void operator()(block_handle h, std::uint8_t parity, bool from_left, message m) const {
    store_message(h, parity, from_left, m);
  }
};
struct deliver_clocked { // registered on the clock: the round waits for it
  void operator()(apgas::clock, block_handle h, std::uint8_t parity, bool from_left,
                  message m) const {
    store_message(h, parity, from_left, m);
  }
};

/// Messages of a round for other places: to the place before (to_left) and after (to_right).
struct remote_out {
  message to_left;
  message to_right;
};

/// Runs local node i's round t: its messages to nodes of this place go to their inboxes, those
/// for other places into `remote`.
void run_node(block& b, std::uint64_t i, std::uint64_t t, summary& s, remote_out& remote) {
  auto& in = b.inbox[t % 2][i];
  auto& next = b.inbox[(t + 1) % 2];
  const step_out o = step(b.nodes[i], in[0], in[1], t, b.prm.alg);
  in = {};
  s.add(o, b.nodes[i].id);
  if (o.to_right.what != kind::none) {
    if (i + 1 < b.count) next[i + 1][0] = o.to_right;
    else if (b.alone) next[0][0] = o.to_right;
    else remote.to_right = o.to_right;
  }
  if (o.to_left.what != kind::none) {
    if (i > 0) next[i - 1][1] = o.to_left;
    else if (b.alone) next[b.count - 1][1] = o.to_left;
    else remote.to_left = o.to_left;
  }
}

/// Runs the round of nodes [lo, hi): the block's end nodes first (their messages for other
/// places go into `remote` so that they can leave at once), narrowing [lo, hi) to the nodes
/// left to run.
void run_ends(block& b, std::uint64_t t, std::uint64_t& lo, std::uint64_t& hi, summary& s,
              remote_out& remote) {
  if (b.alone) return;
  if (lo == 0 && hi > lo) run_node(b, lo++, t, s, remote);
  if (hi == b.count && hi > lo) run_node(b, --hi, t, s, remote);
}

void run_nodes(block& b, std::uint64_t t, std::uint64_t lo, std::uint64_t hi, summary& s) {
  remote_out none; // nodes away from the block's ends have their neighbours here
  for (std::uint64_t i = lo; i < hi; ++i) run_node(b, i, t, s, none);
}

// ---- with a clock ------------------------------------------------------------------------------

/// One chunk's activity: every round of the election.
task<> chunk_rounds(apgas::clock c, block_handle h, std::uint32_t a) {
  block& b = h.get();
  const auto [chunk_lo, chunk_hi] = b.chunk(a);
  std::uint64_t messages = 0;
  for (std::uint64_t t = 0;; ++t) {
    std::uint64_t lo = chunk_lo;
    std::uint64_t hi = chunk_hi;
    summary s;
    remote_out remote;
    run_ends(b, t, lo, hi, s, remote);
    const auto parity = static_cast<std::uint8_t>((t + 1) % 2);
    // A message to the place before travels left: it reaches that place's last node from its
    // right (from_left false); one to the place after reaches its first node from the left.
    if (remote.to_left.what != kind::none)
      co_await apgas::async_at(b.before, apgas::clocked(c), deliver_clocked{}, h, parity, false,
                               remote.to_left);
    if (remote.to_right.what != kind::none)
      co_await apgas::async_at(b.after, apgas::clocked(c), deliver_clocked{}, h, parity, true,
                               remote.to_right);
    run_nodes(b, t, lo, hi, s);
    const summary all = co_await c.advance(combine_summaries{}, s);
    messages += all.messages;
    if (all.elected > 0) {
      if (a == 0) b.result = election{t, all.elected, all.leader, messages};
      co_return;
    }
    if (t == round_limit(b.prm)) throw std::logic_error("leader-election: no leader (clock)");
  }
}

/// Starts the chunks' activities of this place, registered on the clock.
struct start_chunks {
  task<> operator()(apgas::clock mine, block_handle h) const {
    const std::uint32_t chunks = h.get().chunks;
    for (std::uint32_t a = 0; a < chunks; ++a)
      co_await apgas::async(apgas::clocked(mine),
                            [h, a](apgas::clock c) { return chunk_rounds(std::move(c), h, a); });
  } // this activity's registration drops here: the rounds wait only for the chunks
};

task<election> elect_clocked(block_handle h, apgas::signal s) {
  co_await apgas::finish([&]() -> task<> {
    apgas::clock c = co_await apgas::clock::make(s);
    for (place_id p = 0; p < apgas::places(); ++p)
      co_await apgas::async_at(p, apgas::clocked(c), start_chunks{}, h);
  }); // the maker's registration drops as the finish body ends
  co_return h.get().result;
}

// ---- with a finish per round -------------------------------------------------------------------

using summary_slots = std::vector<summary>; ///< at place 0: each place's summary of a round

struct store_summary {
  void operator()(apgas::global_ref<summary_slots> slots, place_id p, summary s) const {
    (*slots)[p] = s;
  }
};

/// Round t at this place: the end nodes first (their messages to other places sent at once),
/// the chunks in parallel, then the round's summary to place 0.
struct place_round {
  task<> operator()(block_handle h, std::uint64_t t, apgas::global_ref<summary_slots> slots) const {
    block& b = h.get();
    std::uint64_t lo = 0;
    std::uint64_t hi = b.count;
    summary s;
    remote_out remote;
    run_ends(b, t, lo, hi, s, remote);
    const auto parity = static_cast<std::uint8_t>((t + 1) % 2);
    if (remote.to_left.what != kind::none)
      co_await apgas::async_at(b.before, deliver{}, h, parity, false, remote.to_left);
    if (remote.to_right.what != kind::none)
      co_await apgas::async_at(b.after, deliver{}, h, parity, true, remote.to_right);
    co_await apgas::finish([&]() -> task<> {
      for (std::uint32_t a = 0; a < b.chunks; ++a) {
        const auto [c_lo, c_hi] = b.chunk(a);
        const std::uint64_t from = std::max(c_lo, lo);
        const std::uint64_t to = std::min(c_hi, hi);
        co_await apgas::async([&b, a, t, from, to] {
          summary mine;
          run_nodes(b, t, from, to, mine);
          b.chunk_summary[a] = mine;
        });
      }
    });
    for (const summary& c : b.chunk_summary) s = combine_summaries{}(s, c);
    co_await apgas::async_at(slots.home(), store_summary{}, slots, apgas::here(), s);
  }
};

task<election> elect_finish(block_handle h, const params& prm) {
  summary_slots slots(apgas::places());
  const apgas::global_ref<summary_slots> slots_ref(slots);
  election e;
  for (std::uint64_t t = 0;; ++t) {
    co_await apgas::finish([&]() -> task<> {
      for (place_id p = 0; p < apgas::places(); ++p)
        co_await apgas::async_at(p, place_round{}, h, t, slots_ref);
    });
    summary all;
    for (const summary& s : slots) all = combine_summaries{}(all, s);
    e.messages += all.messages;
    if (all.elected > 0) {
      e.rounds = t;
      e.elected = all.elected;
      e.leader = all.leader;
      co_return e;
    }
    if (t == round_limit(prm)) throw std::logic_error("leader-election: no leader (finish)");
  }
}

// ---- a run -------------------------------------------------------------------------------------

struct run_result {
  double seconds = 0;
  election e;

  template <class A>
  void serialize(A& a) {
    a& seconds& e;
  }
};

task<run_result> run_election(params prm, bool clocked, apgas::signal s) {
  const block_handle h = co_await block_handle::make([](place_id) { return block{}; });
  co_await apgas::for_each_place(setup_block{}, h, prm);
  const auto start = std::chrono::steady_clock::now();
  run_result r;
  // Not `clocked ? co_await a : co_await b`: GCC 12 runs both awaits of a conditional whose
  // value is a class.
  if (clocked) r.e = co_await elect_clocked(h, s);
  else r.e = co_await elect_finish(h, prm);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  r.seconds = took.count();
  co_await h.destroy();
  co_return r;
}

std::string describe(const election& e) {
  return fmt::format("{} elected (leader id {:#x}) in round {}, {} messages", e.elected, e.leader,
                     e.rounds, e.messages);
}

/// Empty if `e` is the expected outcome, else what is wrong.
std::string check(std::string_view who, const election& e, const params& prm,
                  std::uint64_t largest) {
  if (e.elected != 1)
    return fmt::format("{}: {} nodes elected, not one ({})", who, e.elected, describe(e));
  if (e.leader != largest)
    return fmt::format("{}: leader {:#x}, the largest id is {:#x}", who, e.leader, largest);
  if (e.rounds != known_rounds(prm))
    return fmt::format("{}: elected in round {}, not {}", who, e.rounds, known_rounds(prm));
  return {};
}

} // namespace

int main(int argc, char** argv) {
  params prm;
  prm.n = k_default_n;
  prm.seed = k_default_seed;
  prm.activities = k_default_activities;
  apgas_apps::sync_mode sync = apgas_apps::sync_mode::clock;
  apgas::signal signal = apgas::signal::lazy;
  apgas_apps::cli cli(
      "leader-election",
      "Leader election on a synchronous ring of N nodes with random distinct ids, LCR or HS\n"
      "(the uClocks paper's IMSuite kernels): the nodes in one block per place, each block in\n"
      "A chunks of nodes, one activity each, messages between places as async_ats. One round\n"
      "per phase of a clock whose advance carries the round's outcome (--sync clock), or one\n"
      "finish per round (--sync finish). Checked: exactly one leader, the largest id, in the\n"
      "known number of rounds; rounds and messages as in the sequential simulation.");
  cli.choice("--algorithm", "lcr (one way round the ring) or hs (probes both ways); default lcr",
             prm.alg, {"lcr", "hs"});
  cli.option("--n", "N", fmt::format("nodes on the ring (default {})", k_default_n), prm.n,
             std::uint64_t{1}, std::uint64_t{1} << 30);
  cli.option("--seed", "S", fmt::format("seed of the ids (default {})", k_default_seed), prm.seed,
             std::uint64_t{0}, ~std::uint64_t{0});
  cli.option(
      "--activities", "A",
      fmt::format("activities (chunks of nodes) per place (default {})", k_default_activities),
      prm.activities, std::uint32_t{1}, std::uint32_t{1} << 20);
  apgas_apps::add_sync_flag(cli, sync);
  apgas_apps::add_signal_flag(cli, signal);
  return cli.run(argc, argv, [&](apgas::runtime& rt, const apgas_apps::common_flags& flags) {
    if (prm.n < rt.places())
      throw apgas::usage_error(
          fmt::format("--n {} is fewer nodes than places ({})", prm.n, rt.places()));
    const char* alg_name = prm.alg == algorithm::lcr ? "lcr" : "hs";
    apgas_apps::report r;
    r.title = fmt::format("leader-election({}, {} nodes) rounds", alg_name, prm.n);
    std::uint64_t largest = 0;
    for (std::uint64_t i = 0; i < prm.n; ++i) largest = std::max(largest, node_id(prm.seed, i));
    election first;
    bool have_first = false;
    const auto run = [&](bool clocked) {
      const run_result got = rt.run(run_election(prm, clocked, signal));
      const char* who = clocked ? "clock" : "finish";
      if (r.failure.empty()) r.failure = check(who, got.e, prm, largest);
      if (!have_first) {
        first = got.e;
        have_first = true;
      } else if (r.failure.empty() && got.e.messages != first.messages) {
        r.failure = fmt::format("{}: {} messages, the first run sent {}", who, got.e.messages,
                                first.messages);
      }
      return got.seconds;
    };
    const apgas_apps::sync_times times = apgas_apps::time_modes(sync, flags.repeat, run);
    election seq_e;
    apgas_apps::run_seq_and_compare(
        r, flags, first.rounds, "election_seq",
        [&seq_e](const params& in) {
          seq_e = election_seq(in);
          return seq_e.rounds;
        },
        prm);
    if (flags.run_seq && r.failure.empty() && seq_e.messages != first.messages) {
      r.failure = fmt::format("{} messages, election_seq sends {}", first.messages, seq_e.messages);
    }
    apgas_apps::report_sync(r, times);
    r.result = first.rounds;
    r.verified = r.failure.empty();
    r.work = apgas_apps::work_amount{static_cast<double>(first.rounds + 1), "rounds"};
    r.details.push_back(fmt::format("{} nodes over {} place(s) x {} activities: {}", prm.n,
                                    rt.places(), prm.activities, describe(first)));
    r.extra.add("algorithm", alg_name).add("n", prm.n).add("seed", prm.seed);
    r.extra.add("activities", prm.activities).add("rounds", first.rounds);
    r.extra.add("known_rounds", known_rounds(prm)).add("messages", first.messages);
    r.extra.add("leader", fmt::format("{:#x}", first.leader));
    r.extra.add("signal", signal == apgas::signal::lazy ? "lazy" : "eager");
    return r;
  });
}
