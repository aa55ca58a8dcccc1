// GLB at one place: the lifeline protocol's state during a run (place_base, glb/src/glb_place.cpp)
// and the activities that work on bags (typed_place<Bag>, here: they know the bag's type).
//
// Two levels. Inside a place, every worker works on bags: an activity processes its bag n items
// at a time and, when its worker's deque is empty (the place's other workers may be hungry),
// splits the bag and starts an async with half of it, which the local scheduler balances like
// any other. Across places, the lifeline protocol (after X10's GLB, Saraswat et al., PPoPP'11):
//  - Between batches, an activity polls the network and serves the steal requests waiting at
//    its place: it splits its bag and sends the loot.
//  - When the place's last working activity runs out of work, it becomes the place's thief: up
//    to w random steal attempts, one at a time, each waiting (suspended) for its answer, loot
//    or a refusal. If none brings loot, it registers on its lifelines (the places of the
//    lifeline graph in glb_graph.hpp, at most z) and ends: the place goes quiet.
//  - A place that has work feeds the places registered on it: split, and an async_at that
//    starts the loot as a new activity there.
//  - At the start, a place with an empty bag registers on its lifelines and on its tree parent
//    (place h feeds 3h+1..3h+3) and stays quiet: no random steals then, when nearly everybody
//    is empty; work from place 0 reaches every place in log3 P hops.
//
// Messages of the GLB module (glb/src/glb_module.cpp), none of them counted by any finish:
//   steal      run                 thief -> victim: a random steal request (the thief waits)
//   lifeline   run                 thief -> lifeline buddy: feed me when you have work
//   loot       run, bag bytes      victim -> thief: the answer to a steal, with work
//   refusal    run                 victim -> thief: the answer to a steal, without
//   freeze     run                 a checkpoint: along the start tree from place 0 (see freeze())
// and one active message, counted: the loot a place sends along a lifeline is an async_at
// (deal_fn below) under the run's finish, which starts the loot as an activity at the thief.
//
// Termination: one finish, at the place that called glb::run, governs every activity of the
// run (the start tree, the bags' activities, their local asyncs, the lifeline deliveries), and
// it ends when they have all ended; it never ends early, and work is never lost. The
// distributed finish (places/src/distributed_finish.hpp) counts exactly the activities that
// async_at starts, each before it leaves its sender; the GLB module's messages go through the
// transport alone (message_dispatcher::net()), so no finish sees them. A thief waiting for its
// answer is still a strand of its place's part of the finish (steal_awaiter suspends it as an `at`
// suspends its caller), so that part cannot go quiet meanwhile. Why, with most GLB messages
// uncounted:
// an activity ends only with an empty bag, so all work not yet done is always in (1) the bag
// of a live activity, (2) random loot in flight, or (3) lifeline loot in flight. (3) is an
// activity of the finish, counted by its sender before it leaves. (2) was sent in answer to a
// steal request, and its thief is a live activity of the finish that waits, suspended, for
// exactly that answer: it cannot end before the loot arrives and becomes its bag. Requests,
// refusals and lifeline registrations carry no work. So while work remains, some activity of
// the finish is alive. And every waiting thief is answered: a request that reaches a place
// with a working activity waits there until one serves it (loot) or gives it back, and the last
// working activity to end refuses those still waiting, under the same lock under which a place
// without working activities refuses new ones at once. This is X10's rule (random steals
// uncounted, lifeline loot counted); it keeps termination traffic proportional to lifeline
// traffic. A lifeline registration may still be in flight when the run ends: each message
// carries its run's id, and a place drops one of a run that is not its current one.
//
// Checkpoints (glb_checkpoint.hpp has the protocol and its argument) freeze the place: working
// activities park at their next batch boundary with their bags, random thieves are refused,
// and the checkpoint's activity waits until every working activity of the place is parked
// and its thief's turn is over (until_parked). Then the parked bags are the place's work.
#pragma once

#include "apgas/detail/checkpoint_store.hpp"
#include "apgas/detail/glb_graph.hpp"
#include "apgas/detail/trace.hpp"
#include "apgas/detail/worker.hpp"
#include "apgas/finish.hpp"
#include "apgas/glb_parameters.hpp"
#include "apgas/place.hpp"
#include "apgas/serialization.hpp"
#include "apgas/task.hpp"

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <typeinfo>
#include <utility>
#include <vector>

namespace apgas::detail {
class message_dispatcher;
}

namespace apgas::detail::glb {

class glb_module;

/// @brief A steal request waiting at its victim: the thief, and whether it came along a
/// lifeline (a registration) or at random (its thief waits for the answer).
struct request {
  place_id thief = 0;
  bool lifeline = false;
};

/// @brief The GLB module's messages (see the top of this file).
enum class message : std::uint8_t { steal, lifeline, loot, refusal, freeze };

/// @brief What the place's last working activity does once its bag is empty.
enum class after_work : std::uint8_t {
  end,   ///< end: another activity has work, or steals one, or the place is alone
  steal, ///< become the place's thief
};

/// @brief The lifeline protocol's state of one run at one place, without the bag's type.
/// Thread-safety: any thread (a lock guards the shared state; counters say otherwise).
class place_base {
public:
  /// @param resolved the run's parameters, resolved for its places.
  place_base(std::uint64_t run, const apgas::glb::parameters& resolved,
             message_dispatcher& dispatcher);
  virtual ~place_base();
  place_base(const place_base&) = delete;
  place_base& operator=(const place_base&) = delete;

  std::uint64_t run_id() const noexcept { return m_run; }
  place_id here() const noexcept { return m_here; }
  place_id places() const noexcept { return m_places; }
  const apgas::glb::parameters& params() const noexcept { return m_params; }
  unsigned workers() const noexcept { return static_cast<unsigned>(m_workers.size()); }

  // ---- what working activities call ----
  /// @brief The start activity begins: with `bags` bags of work (each counted as working; 0:
  /// none). From here on the place's initial work is in its activities.
  void begin_start_work(unsigned bags);
  /// @brief A working activity split off a bag for a local async: counted as working.
  void begin_local_work();
  /// @brief Counts `n` items processed by the calling worker (relaxed: read by the progress
  /// line and at the end of the run).
  void count_items(std::size_t n) noexcept {
    auto& items = m_workers[t_worker->index()].items;
    // relaxed: one writer (the slot's worker); readers want a figure, not an ordering.
    items.store(items.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  /// @brief Polls the network between batches (other places' requests reach this place even
  /// while all its workers are busy).
  void poll() noexcept;
  /// @brief At one place (no network polls): fires the checkpoint alarm if it fell due.
  void fire_alarm_if_due() noexcept;
  /// @brief True if a steal request may be waiting (a hint: a relaxed read).
  bool requests_waiting() const noexcept {
    return m_requests.load(std::memory_order_relaxed) != 0; // a hint, rechecked under the lock
  }
  /// @brief Takes a waiting request (random ones first: their thieves wait), or none.
  std::optional<request> take_request();
  /// @brief The caller could not split its bag for `r`: a lifeline request stays registered;
  /// a random one waits for another working activity, or is refused if there is none.
  void give_back(request r);
  /// @brief Sends loot to a random thief (uncounted: the thief waits for it).
  void send_loot(place_id thief, std::uint64_t items, std::span<const std::byte> bag);
  /// @brief Counts loot about to leave along a lifeline (as an async_at, see deal_fn).
  void note_lifeline_loot(std::uint64_t items, std::size_t bytes);
  /// @brief The caller's bag is empty: it stops working. The place's last working activity
  /// refuses the random thieves still waiting and may become the thief (see after_work).
  after_work end_work();
  /// @brief The caller, working or the thief, failed with an exception: the place refuses
  /// every random thief from now on, so that no thief waits for an answer that never comes.
  void fail(bool was_working, bool was_thief) noexcept;

  // ---- the thief ----
  /// @brief True while the thief should go on: no activity of the place works, none failed.
  /// If false, the caller is no longer the thief.
  bool keep_stealing();
  /// @brief A random victim (one of the m drawn at the start).
  place_id pick_victim() noexcept;
  /// @brief co_await steal_from(victim): sends a steal request and suspends until the
  /// answer: the loot's bytes, or nullopt for a refusal.
  class steal_awaiter;
  steal_awaiter steal_from(place_id victim) noexcept;
  /// @brief The thief got loot: it works again (counted as working).
  void found_loot(std::uint64_t items, std::size_t bytes);
  /// @brief The thief's steals failed: ends the thief's turn and, if the place still has no
  /// work, registers on the lifelines it is not registered on.
  void give_up();
  /// @brief The start activity has no work: registers on the lifelines and the tree parent.
  void start_quiet();

  // ---- lifeline loot (a counted activity) ----
  /// @brief Loot from `from` arrived along a lifeline: counted as working.
  void lifeline_loot_arrived(place_id from, std::uint64_t items, std::size_t bytes);

  // ---- checkpoints (see glb_checkpoint.hpp) ----
  /// @brief True while a checkpoint wants the working activities parked (a hint: a relaxed
  /// read, rechecked under the lock by park()).
  bool freeze_requested() const noexcept {
    return m_freeze_hint.load(std::memory_order_relaxed); // a hint, rechecked under the lock
  }
  /// @brief co_await park(&bag): a working activity, between batches, waits with its bag until
  /// thaw() (at once if the place is not frozen any more).
  class checkpoint_wait;
  checkpoint_wait park(void* bag) noexcept;
  /// @brief Freezes the place: random steal requests are refused from now on (those waiting
  /// at once), and working activities park at their next batch boundary. Idempotent.
  void freeze();
  /// @brief The coordinator's step: freezes every place of the run. A freeze message goes
  /// to place 0 and down the start tree, handled where it arrives (a place whose workers are
  /// all busy in bags polls between batches, and runs no new activity before they park).
  void freeze_everywhere();
  /// @brief A freeze message arrived: passes it on to the tree children, freezes this place.
  void on_freeze();
  /// @brief co_await until_parked(): suspends until every working activity of the frozen
  /// place is parked, its thief's turn is over and it has started.
  checkpoint_wait until_parked() noexcept;
  /// @brief What the place tells the checkpoint's coordinator (the counts since the run began).
  struct freeze_state {
    std::uint64_t lifeline_sent = 0;    ///< lifeline loot sent (counted asyncs)
    std::uint64_t lifeline_arrived = 0; ///< lifeline loot that arrived and is counted as working
    bool failed = false;                ///< an activity failed: the checkpoint is abandoned
  };
  freeze_state frozen_state() const;
  /// @brief The parked activities' bags (type-erased). pre: until_parked() returned and no
  /// thaw since.
  std::vector<void*> parked_bags() const;
  /// @brief Resumes the parked activities; stealing and serving go on.
  void thaw();
  /// @brief Starts writing `bytes` as this place's part of checkpoint `seq` into `dir`, on a
  /// thread of its own (the workers go on). pre: no part is being written.
  void start_writing_part(std::string dir, std::uint64_t seq, std::vector<std::byte> bytes);
  /// @brief Waits for the part started by start_writing_part (started a checkpoint interval
  /// ago: done, as a rule). @return its record for the manifest, and the seconds the write
  /// took. @throws checkpoint_error if it could not be written.
  std::pair<checkpoint::part_record, double> finish_writing_part();

  // ---- handlers (the GLB module, one at a time) ----
  void on_steal_request(place_id from);
  void on_lifeline_request(place_id from);
  /// @brief The answer to this place's steal: `bag` is the loot, or nullopt for a refusal.
  void on_answer(std::optional<std::span<const std::byte>> bag);

  // ---- the end of the run ----
  /// @brief Items processed so far at this place (any thread).
  std::uint64_t items_so_far() const noexcept;
  /// @brief The run's state here, for the place's state dump (any thread).
  std::string describe() const;
  /// @brief A bag reported work but its process() did nothing `rounds` times in a row: it
  /// breaks the bag's contract and would loop forever, so the run fails.
  /// @throws usage_error naming this place and the bag's type.
  [[noreturn]] void fail_no_progress(const std::type_info& bag, std::uint64_t rounds) const;
  /// @brief This place's statistics. pre: the run's finish ended.
  apgas::glb::place_stats stats() const;

private:
  /// Sends a request or an answer at once: someone waits for it, or will.
  void send(place_id to, message what, std::span<const std::byte> payload = {});
  void refuse_all(std::vector<place_id>& thieves);
  void register_on(std::vector<place_id>& buddies);
  void set_requests_locked() noexcept;
  void note_working_locked() noexcept; ///< the place goes from idle to working
  /// The waiter of until_parked() if the place is frozen and parked now (it is to be resumed,
  /// after the lock is released, with resume_waiter); else null.
  promise_base* parked_waiter_locked() noexcept;
  bool parked_locked() const noexcept;
  void resume_waiter(promise_base* waiter);
  /// park()'s suspension: keeps the caller and its bag until thaw(), unless thawed already.
  std::coroutine_handle<> suspend_parked(std::coroutine_handle<> me, promise_base& p, void* bag);
  /// until_parked()'s: keeps the caller until the place is parked, unless it is already.
  std::coroutine_handle<> suspend_until_parked(std::coroutine_handle<> me, promise_base& p, void*);

  using clock = std::chrono::steady_clock;

  std::uint64_t m_run;
  apgas::glb::parameters m_params;
  message_dispatcher& m_dispatcher;
  glb_module& m_module;
  place_id m_here;
  place_id m_places;
  std::vector<place_id> m_lifelines; ///< the places this one registers on
  std::vector<place_id> m_victims;   ///< random victims, drawn at the start
  random_source m_rng;               ///< the thief's only (one thief at a time)

  struct alignas(128) worker_slot { // a cache line each: workers count items without sharing
    std::atomic<std::uint64_t> items{0};
  };
  std::vector<worker_slot> m_workers;

  mutable std::mutex m_lock;                ///< guards the fields below, up to m_requests
  unsigned m_working = 0;                   ///< activities with work at this place
  bool m_thief = false;                     ///< an activity of this place is stealing
  bool m_failed = false;                    ///< an activity failed: refuse every random thief
  std::vector<place_id> m_random_thieves;   ///< waiting for an answer
  std::vector<place_id> m_lifeline_thieves; ///< registered here, no duplicates
  /// Per lifeline (same index as m_lifelines): registered there and not fed since.
  std::vector<bool> m_registered;
  clock::time_point m_started_at{}; ///< the place's part of the run was set up
  clock::time_point m_idle_since{}; ///< the place stopped working (valid while idle)
  clock::duration m_idle{};         ///< idle time so far
  apgas::glb::place_stats m_stats;  ///< rare events (items are in m_workers)
  /// Requests waiting (random thieves + lifeline thieves): what working activities look at
  /// between batches. Written under m_lock, read without it (relaxed: a hint).
  std::atomic<std::uint32_t> m_requests{0};
  // Checkpoints (under m_lock):
  bool m_started = false;                                ///< begin_start_work ran here
  bool m_frozen = false;                                 ///< between freeze() and thaw()
  std::vector<std::pair<promise_base*, void*>> m_parked; ///< parked activities and their bags
  promise_base* m_parked_waiter = nullptr;               ///< the until_parked() activity
  std::thread m_writer; ///< writes a checkpoint's part (start_writing_part)
  std::pair<checkpoint::part_record, double> m_written; ///< its result, once joined
  std::exception_ptr m_write_failure;                   ///< its failure, once joined
  /// m_frozen, for the working activities' look between batches (relaxed: a hint, see
  /// freeze_requested()).
  std::atomic<bool> m_freeze_hint{false};

  // The thief's wait for an answer. The thief stores itself (release) before it sends its
  // request; the answer's handler takes it (acquire: it sees the thief's writes), stores the
  // loot in m_answer and resumes the thief (the scheduler's hand-over orders that store before
  // the thief's read).
  std::atomic<promise_base*> m_waiting_thief{nullptr};
  std::optional<std::vector<std::byte>> m_answer;
};

class place_base::steal_awaiter {
public:
  steal_awaiter(place_base& place, place_id victim) noexcept : m_place(place), m_victim(victim) {}
  bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> thief) {
    require_apgas_caller<P>();
    return suspend(thief.promise());
  }
  std::optional<std::vector<std::byte>> await_resume() noexcept {
    if (g_trace_on) [[unlikely]]
      m_wait.end(trace_kind::glb_steal, m_victim);
    return std::move(m_place.m_answer);
  }

private:
  std::coroutine_handle<> suspend(promise_base& thief);
  place_base& m_place;
  place_id m_victim;
  trace_wait m_wait; ///< the thief's, begun before its request leaves
};

inline place_base::steal_awaiter place_base::steal_from(place_id victim) noexcept {
  return {*this, victim};
}

/// The awaiter of park() and until_parked(): the place's `Suspend` decides, under its lock,
/// whether the caller waits (and where it is kept until resumed).
class place_base::checkpoint_wait {
public:
  using suspend_fn = std::coroutine_handle<> (place_base::*)(std::coroutine_handle<>, promise_base&,
                                                             void*);
  checkpoint_wait(place_base& place, suspend_fn suspend, void* bag) noexcept
      : m_place(place), m_suspend(suspend), m_bag(bag) {}
  bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> me) {
    require_apgas_caller<P>();
    return (m_place.*m_suspend)(me, me.promise(), m_bag);
  }
  void await_resume() const noexcept {}

private:
  place_base& m_place;
  suspend_fn m_suspend;
  void* m_bag;
};

inline place_base::checkpoint_wait place_base::park(void* bag) noexcept {
  return {*this, &place_base::suspend_parked, bag};
}

inline place_base::checkpoint_wait place_base::until_parked() noexcept {
  return {*this, &place_base::suspend_until_parked, nullptr};
}

/// @brief The module's run with this id at this place. pre: installed (the run's setup
/// finished everywhere, its gather has not reached this place).
place_base& place_of_run(std::uint64_t run);
/// @brief Makes `place` this place's current run. @throws std::logic_error if a GLB run is
/// in progress already (one at a time).
void install_place(std::shared_ptr<place_base> place);
/// @brief Forgets the run: messages of it that arrive later are dropped.
void uninstall_place(std::uint64_t run) noexcept;
/// @brief The run with this id at this place if it is in progress here, else null.
std::shared_ptr<place_base> find_place(std::uint64_t run);
/// @brief The dispatcher of this process's runtime (for the places' constructors).
message_dispatcher& current_dispatcher();

/// @brief Items in `b`, for the loot statistics, if the bag can tell (a size() member).
template <class Bag>
std::uint64_t items_of(const Bag& b) {
  if constexpr (requires { b.size(); }) return static_cast<std::uint64_t>(b.size());
  else return 0;
}

template <class Bag>
struct deal_fn;

/// @brief Rounds of a bag's process() that did nothing, in a row, before the run fails.
inline constexpr std::uint64_t k_no_progress_rounds = 100'000;

/// @brief The run of one place with bags of type Bag: the activities that work on bags.
template <class Bag>
class typed_place final : public place_base {
public:
  using result_type = typename Bag::result_type;

  /// @param initial the place's initial bags: Make's one, or those a resume gives it.
  /// @param resumed the results of the checkpointed places a resume gives it, reduced.
  typed_place(std::uint64_t run, const apgas::glb::parameters& resolved, std::vector<Bag> initial,
              std::optional<result_type> resumed = std::nullopt)
      : place_base(run, resolved, current_dispatcher()), m_initial(std::move(initial)),
        m_results(workers()) {
    std::erase_if(m_initial, [](const Bag& b) { return b.empty(); });
    m_results[0].value = std::move(resumed);
  }

  static typed_place& of(std::uint64_t run) { return static_cast<typed_place&>(place_of_run(run)); }

  /// @brief The place's first activity: works on the initial bags, or waits quietly.
  task<> start() {
    std::vector<Bag> bags = std::exchange(m_initial, {});
    begin_start_work(static_cast<unsigned>(bags.size()));
    if (bags.empty()) {
      start_quiet();
      co_return;
    }
    for (std::size_t i = 1; i < bags.size(); ++i) co_await apgas::async(work(std::move(bags[i])));
    co_await work(std::move(bags[0]));
  }

  /// @brief Loot that arrived along a lifeline, as an activity of the run's finish.
  task<> deal(place_id from, std::vector<std::byte> bytes) {
    byte_reader r(bytes);
    Bag bag = deserialize<Bag>(r);
    lifeline_loot_arrived(from, items_of(bag), bytes.size());
    co_await work(std::move(bag));
  }

  /// @brief This place's result so far: the reduction of its workers'. pre: the finish ended,
  /// or the place is parked.
  result_type take_result() const {
    result_type total{};
    for (const result_slot& s : m_results)
      if (s.value) Bag::reduce(total, *s.value);
    return total;
  }

  /// @brief Appends the parked bags and the result so far (a checkpoint's part of this place)
  /// to `w`. pre: the place is frozen and parked.
  void write_snapshot(byte_writer& w) const {
    const std::vector<void*> bags = parked_bags();
    serialize(w, static_cast<std::uint64_t>(bags.size()));
    for (void* b : bags) serialize(w, *static_cast<const Bag*>(b));
    serialize(w, take_result());
  }

  /// @brief What write_snapshot wrote: bags and a result, appended to `bags` and reduced into
  /// `result`. @throws serialization_error if the bytes are not that.
  static void read_snapshot(byte_reader& r, std::vector<Bag>& bags, result_type& result) {
    const std::uint64_t n = deserialize<std::uint64_t>(r);
    if (n > r.remaining()) r.fail("a checkpoint part with more bags than bytes");
    for (std::uint64_t i = 0; i < n; ++i) bags.push_back(deserialize<Bag>(r));
    Bag::reduce(result, deserialize<result_type>(r));
  }

private:
  struct alignas(128) result_slot { // a cache line each: workers reduce without sharing
    std::optional<result_type> value;
  };

  /// Works on `bag` until it is empty, then maybe steals more. pre: counted as working.
  task<> work(Bag bag) {
    bool working = true;
    bool thief = false;
    try {
      for (;;) {
        co_await drain(bag);
        working = false;
        if (end_work() == after_work::end) co_return;
        thief = true;
        std::optional<Bag> loot = co_await steal();
        thief = false;
        if (!loot) co_return;
        working = true;
        bag = std::move(*loot);
      }
    } catch (...) {
      fail(working, thief);
      throw;
    }
  }

  /// Processes `bag` until it is empty, serving steal requests and feeding idle local workers
  /// between batches.
  task<> drain(Bag& bag) {
    const std::size_t n = params().items_per_batch;
    const bool remote = places() > 1;
    const bool local = workers() > 1;
    std::uint64_t idle_rounds = 0; // process() did nothing while the bag said it had work
    while (!bag.empty()) {
      if (freeze_requested()) [[unlikely]]
        co_await park(&bag); // a checkpoint: this bag is part of it
      const std::size_t done = bag.process(n, result_here());
      count_items(done);
      if (done == 0 && ++idle_rounds == k_no_progress_rounds) [[unlikely]]
        fail_no_progress(typeid(Bag), idle_rounds);
      else if (done != 0) idle_rounds = 0;
      if (remote) {
        poll(); // also fires a checkpoint alarm that fell due
        if (requests_waiting()) co_await serve(bag);
      } else {
        fire_alarm_if_due(); // no network to poll at one place
      }
      // A thief that asked takes what our deque holds (our continuation); an empty deque:
      // nothing of ours for idle workers to steal, half of the bag is.
      if (local) t_worker->m_deque.serve_requests();
      if (local && t_worker->m_deque.owner_sees_empty()) {
        Bag half = bag.split();
        if (!half.empty()) {
          begin_local_work();
          co_await apgas::async(work(std::move(half)));
        }
      }
    }
  }

  /// Answers the requests waiting at this place with loot split from `bag`.
  task<> serve(Bag& bag) {
    while (std::optional<request> r = take_request()) {
      std::vector<std::byte> bytes;
      std::uint64_t items = 0;
      try {
        Bag loot = bag.split();
        if (loot.empty()) {
          give_back(*r);
          co_return;
        }
        items = items_of(loot);
        byte_writer w(bytes);
        serialize(w, loot);
      } catch (...) {
        give_back(*r); // its thief is answered (fail() refuses it) before this activity ends
        throw;
      }
      if (r->lifeline) {
        note_lifeline_loot(items, bytes.size());
        // Counted: the thief went quiet, and this activity starts it again.
        co_await apgas::async_at(r->thief, deal_fn<Bag>{}, run_id(), here(), bytes);
      } else {
        send_loot(r->thief, items, bytes);
      }
    }
  }

  /// The thief's turn: random steals, then the lifelines. @return loot, counted as working.
  task<std::optional<Bag>> steal() {
    for (unsigned i = 0; i < params().random_steals; ++i) {
      if (!keep_stealing()) co_return std::nullopt; // the place works again
      std::optional<std::vector<std::byte>> answer = co_await steal_from(pick_victim());
      if (answer) {
        byte_reader r(*answer);
        std::optional<Bag> loot(deserialize<Bag>(r));
        found_loot(items_of(*loot), answer->size());
        co_return loot;
      }
    }
    give_up();
    co_return std::nullopt;
  }

  /// The calling worker's result (looked up after every suspension: an activity may move).
  result_type& result_here() {
    std::optional<result_type>& v = m_results[t_worker->index()].value;
    if (!v) v.emplace();
    return *v;
  }

  std::vector<Bag> m_initial;         ///< until start()
  std::vector<result_slot> m_results; ///< one per worker
};

/// @brief Lifeline loot at the thief: an activity of the run's finish.
template <class Bag>
struct deal_fn {
  task<> operator()(std::uint64_t run, place_id from, std::vector<std::byte> bytes) const {
    co_await typed_place<Bag>::of(run).deal(from, std::move(bytes));
  }
};

} // namespace apgas::detail::glb
