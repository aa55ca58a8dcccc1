// A discrete-event model of GLB's lifeline protocol (apgas/detail/glb_place.hpp), in one
// process and one thread, for 1 to 100,000 places: what the protocol does at a scale this
// machine cannot run, and its termination argument checked under random message delays.
//
// What is modelled, as the library does it:
//  - one worker per place (X10's GLB): the place's activities run one at a time; a working
//    activity processes n items per batch (t_item each) and only between batches delivers the
//    messages that reached its place (its poll) and serves the steal requests waiting there;
//  - the start along the tree (place h starts 3h+1..3h+3); a place without work at the start
//    registers on its lifelines and its tree parent and goes quiet;
//  - the last working activity of a place refuses the random thieves still waiting and
//    becomes the place's thief: up to w random steals (one at a time, suspended while it
//    waits), then lifeline registrations; loot along a lifeline starts a counted activity;
//  - the lifeline graph and the start tree are the library's own (glb_graph.hpp); the m random
//    victims of a place are drawn as the library draws them, but by a hash of the place and the
//    victim's index rather than kept (m per place at 100,000 places would take 400 MB).
// What is not: the workers inside a place, the coalescing of messages, the distributed
// finish's own messages (the model counts the finish's activities exactly; the finish protocol
// has tests of its own). Messages take `latency` plus a random `jitter` (which reorders them,
// even between one pair of places: stricter than the transport, which keeps their order).
//
// Work is ranges of item ids (a bag splits off the upper half of every range of two or more);
// with `chain` > 0, ids below it form a chain (each makes the next) and every `burst_every`-th
// makes `burst` new ids: work that appears late, after the other places went quiet.
//
// Checked while it runs: the finish's count (live activities and lifeline loot in flight)
// never goes negative; when it reaches zero, every item was processed exactly once (a bitset
// when `check_each_item`), no bag holds work, no loot or answer is in flight, no thief waits;
// nothing counted is created after it; and the events run out (no thief left waiting forever).
#pragma once

#include <apgas/detail/glb_graph.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <queue>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace glb_model {

using apgas::detail::glb::place_id;
using apgas::detail::glb::random_source;
using time_ns = std::int64_t;

/// @brief Where the work is at the start.
enum class start_layout : std::uint8_t { at_place_0, spread, at_last_place };

struct config {
  place_id places = 1000;
  // The protocol's parameters, as apgas::glb::parameters names them (0: resolved as the
  // library resolves them).
  unsigned items_per_batch = 511; ///< n
  unsigned random_steals = 0;     ///< w
  unsigned lifeline_base = 32;    ///< l
  unsigned lifeline_count = 0;    ///< z
  unsigned random_victims = 1024; ///< m
  bool tree = true;
  // The machine.
  time_ns t_item = 100;   ///< time to process one item
  time_ns latency = 2000; ///< one message, one way
  time_ns jitter = 0;     ///< extra delay, uniform in [0, jitter]
  // The work.
  std::uint64_t items = 0; ///< ids 0 .. items-1 (with a chain: the chain and its bursts)
  start_layout layout = start_layout::at_place_0;
  std::uint64_t chain = 0;
  std::uint64_t burst_every = 0;
  std::uint64_t burst = 0;
  bool check_each_item = false; ///< a bit per item (small runs): exactly once, item by item
  std::uint64_t seed = 1;
  /// Breaks X10's rule on purpose: lifeline loot is sent uncounted (no activity of the
  /// finish until it arrives). A test shows that the checks catch the early termination.
  bool uncounted_lifeline_loot = false;
};

/// @brief What a run of the model did.
struct result {
  time_ns end = 0;             ///< when the finish's count reached zero
  time_ns spread = 0;          ///< when the last place processed its first item
  std::uint64_t processed = 0; ///< items processed
  std::uint64_t events = 0;    ///< events simulated
  double efficiency = 0;       ///< processing time / (places x end)
  // Per place: mean and most.
  double steals_mean = 0; ///< random steal requests sent
  std::uint64_t steals_max = 0;
  double steal_messages_mean = 0; ///< GLB messages sent: requests, answers, registrations
  std::uint64_t steal_messages_max = 0;
  double received_mean = 0; ///< GLB messages received (a hot spot shows here)
  std::uint64_t received_max = 0;
  double activations_mean = 0; ///< lifeline loot received
  std::uint64_t activations_max = 0;
  std::uint64_t places_never_fed = 0; ///< places that processed nothing
  std::vector<std::string> errors;    ///< violated checks (empty: all held)
};

/// @brief The model. Single-threaded; one object per run.
class model {
public:
  explicit model(const config& c);
  result run();

private:
  using range = std::pair<std::uint64_t, std::uint64_t>; // [first, last)
  using bag = std::vector<range>;

  enum class msg : std::uint8_t { start, steal, lifeline, loot, refusal, deal };
  struct event {
    time_ns at;
    std::uint64_t seq; // ties broken by creation order
    place_id place;
    bool batch_end; // else a message
    msg kind;
    place_id from;
    std::uint32_t payload; // index into m_loot for loot and deal
    bool operator>(const event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  enum class role : std::uint8_t { start, deal, thief };
  struct activity {
    role what;
    place_id from = 0;         // deal: the lifeline that fed it
    std::uint32_t payload = 0; // deal: the loot
  };
  struct place {
    bag work;             // the running activity's bag
    bool running = false; // an activity runs (in a batch, or between steps)
    bool in_batch = false;
    std::uint64_t batch = 0;    // items in the batch in progress
    std::deque<activity> ready; // activities waiting for the worker
    std::deque<event> inbox;    // messages that arrived during a batch
    unsigned working = 0;
    bool thief = false;
    bool thief_waiting = false; // the thief is suspended for an answer
    unsigned attempts = 0;      // the thief's steals so far
    std::vector<place_id> random_thieves;
    std::vector<place_id> lifeline_thieves;
    std::vector<place_id> lifelines;
    std::vector<bool> registered;
    bag initial;
    std::optional<std::uint32_t> answer; // the thief's loot, once it arrived
    // statistics
    std::uint64_t steals = 0, sent = 0, received = 0, activations = 0, items = 0;
    time_ns first_item = -1;
  };

  // The life of activities.
  void run_next(place_id p, time_ns t);
  void start_batch(place_id p, time_ns t);
  void on_batch_end(place_id p, time_ns t);
  void serve(place_id p, time_ns t);
  void end_work(place_id p, time_ns t);
  void thief_step(place_id p, time_ns t);
  void end_activity(place_id p, time_ns t);
  void start_quiet(place_id p, time_ns t);
  place_id pick_victim(place_id p);
  // Messages.
  void send(place_id from, place_id to, msg kind, time_ns t, std::uint32_t payload = 0);
  void deliver(const event& e);
  void handle(place_id p, const event& e);
  // Bags.
  std::uint64_t size(const bag& b) const;
  bag split(bag& b) const;
  void process(place_id p, std::uint64_t k, time_ns t);
  void count_item(std::uint64_t id);
  // The finish.
  void counted(int delta, time_ns t);
  void check_end_state();
  void fail(const std::string& what);
  std::uint32_t keep_loot(bag b);
  bag take_loot(std::uint32_t i);

  config m_c;
  random_source m_rng;
  std::vector<place> m_places;
  std::priority_queue<event, std::vector<event>, std::greater<>> m_events;
  std::uint64_t m_seq = 0;
  std::vector<bag> m_loot;                // payloads in flight, by index
  std::vector<std::uint32_t> m_free_loot; // indices to reuse
  std::int64_t m_count = 0;               // the finish: live activities + deals in flight
  bool m_terminated = false;
  std::uint64_t m_total = 0; // items that exist (grows with bursts)
  std::uint64_t m_processed = 0;
  std::vector<std::uint8_t> m_seen;            // check_each_item: times each id was processed
  std::uint64_t m_uncounted_work_messages = 0; // loot and answers in flight
  result m_result;
};

} // namespace glb_model
