/// @file HPCC RandomAccess (GUPS) over places: a table of 2^n 64-bit words in equal blocks, one
/// block per place; every place generates its share of the HPCC update stream and sends each
/// update `table[ran & (size-1)] ^= ran` to the owner of the word as one async_at (the
/// transport coalesces them), all under one finish. Verified as HPCC does: applying the same
/// updates again (XOR twice restores) must give back the initial table, here block by block at
/// every place, sequentially and without messages, so that the check does not trust the
/// messaging it checks.
#pragma once

#include <apgas/apgas.hpp>

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <vector>

namespace apgas_apps {

/// @brief An allocator that asks the kernel for transparent huge pages (madvise) on large
/// blocks: a table read at random takes a TLB miss on nearly every access otherwise, and how
/// much that costs depends on where its 4 KiB pages happened to land (which varies from one
/// allocation to the next, and between the places of one run).
template <class T>
struct huge_page_allocator {
  using value_type = T;
  static constexpr std::size_t k_huge = std::size_t{2} << 20;
  huge_page_allocator() = default;
  template <class U>
  huge_page_allocator(const huge_page_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < k_huge) return std::allocator<T>{}.allocate(n);
    const std::size_t rounded = (bytes + k_huge - 1) / k_huge * k_huge;
    void* p = std::aligned_alloc(k_huge, rounded);
    if (p == nullptr) throw std::bad_alloc();
    (void)madvise(p, rounded, MADV_HUGEPAGE); // a hint: without it, 4 KiB pages
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) < k_huge) return std::allocator<T>{}.deallocate(p, n);
    std::free(p);
  }
  friend bool operator==(const huge_page_allocator&, const huge_page_allocator&) = default;
};

/// The HPCC generator: x^63 + x^2 + x + 1 over GF(2), stepped by a shift and a conditional XOR.
inline constexpr std::uint64_t k_hpcc_poly = 0x7;
inline constexpr std::int64_t k_hpcc_period = 1317624576693539401LL;

/// @brief The next value of the HPCC stream.
inline std::uint64_t hpcc_next(std::uint64_t ran) {
  return (ran << 1) ^ (static_cast<std::int64_t>(ran) < 0 ? k_hpcc_poly : 0);
}

/// @brief The n-th value of the HPCC stream (HPCC_starts): hpcc_starts(0) = 1 and
/// hpcc_starts(n + 1) = hpcc_next(hpcc_starts(n)), in O(log n) 64x64 GF(2) steps, so that
/// every place (and every chunk) can start its part of the stream without running the rest.
inline std::uint64_t hpcc_starts(std::int64_t n) {
  while (n < 0) n += k_hpcc_period;
  while (n > k_hpcc_period) n -= k_hpcc_period;
  if (n == 0) return 0x1;
  std::uint64_t m2[64];
  std::uint64_t temp = 0x1;
  for (auto& m : m2) { // m2[i] = x^(2i): the squares used by the doubling below
    m = temp;
    temp = hpcc_next(hpcc_next(temp));
  }
  int i = 62;
  for (; i >= 0; --i)
    if ((n >> i) & 1) break;
  std::uint64_t ran = 0x2;
  while (i > 0) {
    temp = 0;
    for (int j = 0; j < 64; ++j)
      if ((ran >> j) & 1) temp ^= m2[j];
    ran = temp;
    i -= 1;
    if ((n >> i) & 1) ran = hpcc_next(ran);
  }
  return ran;
}

/// @brief How the table is cut into blocks: place p owns [first(p), first(p) + words_at(p)).
/// Blocks are equal (ceil(size / places)); with a place count that does not divide the size
/// the last blocks are shorter.
struct ra_layout {
  std::uint32_t log_size = 0;
  std::uint32_t places = 1;
  std::uint64_t block = 1; ///< words per block
  int block_shift = 0;     ///< log2(block) if block is a power of two, else -1

  static ra_layout make(std::uint32_t log_size, std::uint32_t places) {
    ra_layout l;
    l.log_size = log_size;
    l.places = places;
    const std::uint64_t size = std::uint64_t{1} << log_size;
    l.block = (size + places - 1) / places;
    l.block_shift = (l.block & (l.block - 1)) == 0 ? std::countr_zero(l.block) : -1;
    return l;
  }
  std::uint64_t size() const { return std::uint64_t{1} << log_size; }
  std::uint64_t mask() const { return size() - 1; }
  /// The place that owns word `index` (a shift when the block is a power of two, which it is
  /// for the usual power-of-two place counts: this runs once per update).
  apgas::place_id owner(std::uint64_t index) const {
    return static_cast<apgas::place_id>(block_shift >= 0 ? index >> block_shift : index / block);
  }
  std::uint64_t first(apgas::place_id p) const { return std::min(size(), p * block); }
  std::uint64_t words_at(apgas::place_id p) const { return first(p + 1) - first(p); }
};

/// @brief A count kept per worker thread (see ra_block::applied): one cache line each, because
/// a counter shared by the workers of a place would move its cache line between them on every
/// update.
struct alignas(64) ra_counter {
  std::uint64_t value = 0;
};
inline constexpr unsigned k_ra_counter_slots = 64; ///< more threads share slots (still atomic)
inline std::atomic<unsigned> g_ra_next_slot{0};

/// @brief This thread's counter slot: its own among the first k_ra_counter_slots threads of
/// the process, else k_ra_counter_slots (a shared one).
inline unsigned ra_counter_slot() {
  // relaxed: only the slot numbers must differ.
  thread_local const unsigned slot =
      std::min(g_ra_next_slot.fetch_add(1, std::memory_order_relaxed), k_ra_counter_slots);
  return slot;
}

/// @brief word ^= ran, read and written as an atomic: a plain load and store where the place has
/// one worker (no other thread updates the word), else a locked read-modify-write. Relaxed: the
/// finish that ends the update phase orders these writes before anything reads the table.
[[gnu::always_inline]] inline void ra_xor_word(std::uint64_t& word, std::uint64_t ran,
                                               bool single_worker) {
  std::atomic_ref<std::uint64_t> w(word);
  if (single_worker) w.store(w.load(std::memory_order_relaxed) ^ ran, std::memory_order_relaxed);
  else w.fetch_xor(ran, std::memory_order_relaxed);
}

/// @brief The block of the table at one place. The workers of the place apply updates to it
/// concurrently, so every access during the update phase is atomic (atomic_ref: the block
/// stays a plain vector that place_local can create and the check can scan).
///
/// No update takes a locked instruction when nobody else can touch the word: a locked
/// read-modify-write waits for its cache miss before the next update's load may start, which
/// makes a stream of misses one at a time instead of several at once.
struct ra_block {
  std::uint64_t base = 0; ///< global index of words[0]
  std::uint64_t mask = 0; ///< table size - 1
  /// words[i] starts as base + i (HPCC's initial table)
  std::vector<std::uint64_t, huge_page_allocator<std::uint64_t>> words;
  /// Updates applied here: slot i by thread i alone (plain increments), the last by the
  /// threads beyond (atomic ones).
  std::vector<ra_counter> applied;
  bool single_worker = false; ///< this place has one worker: no other thread updates words

  void init(const ra_layout& l, apgas::place_id here, unsigned workers) {
    base = l.first(here);
    mask = l.mask();
    words.resize(l.words_at(here));
    for (std::size_t i = 0; i < words.size(); ++i) words[i] = base + i;
    applied.assign(k_ra_counter_slots + 1, ra_counter{});
    single_worker = workers == 1;
  }
  /// table[ran & mask] ^= ran, for a word of this block, not counted.
  void xor_word(std::uint64_t ran) { ra_xor_word(words[(ran & mask) - base], ran, single_worker); }
  /// Counts n updates applied by this thread.
  void count_applied(std::uint64_t n) {
    const unsigned slot = ra_counter_slot();
    std::atomic_ref<std::uint64_t> c(applied[slot].value);
    // relaxed: a figure read after the update phase's finish. A plain increment where the
    // slot is this thread's alone.
    if (slot < k_ra_counter_slots)
      c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    else c.fetch_add(n, std::memory_order_relaxed);
  }
  /// One update, counted.
  void apply(std::uint64_t ran) {
    xor_word(ran);
    count_applied(1);
  }
  std::uint64_t applied_total() const {
    std::uint64_t sum = 0;
    for (const ra_counter& c : applied) sum += c.value;
    return sum;
  }
};

using ra_table = apgas::place_local<ra_block>;
using ra_refs = std::vector<apgas::global_ref<ra_block>>; ///< every place's block, by place

/// @brief The update message: runs at the owner of the word.
struct ra_update {
  void operator()(apgas::global_ref<ra_block> block, std::uint64_t ran) const { block->apply(ran); }
};

/// Updates one activity generates before the next one starts: enough that HPCC_starts (about
/// 4000 word operations) is noise, few enough that the workers of a place share the work.
inline constexpr std::uint64_t k_ra_chunk = 1 << 14;

/// @brief The updates of the aggregated kernel (ra_generate_aggregated), a batch at a time at
/// the owner: the block's fields read once (a store to a word could be a store to any of them
/// for all the compiler knows), one count per batch.
struct ra_xor {
  void operator()(ra_block& block, apgas::updates<std::uint64_t> batch) const {
    const std::uint64_t mask = block.mask;
    const std::uint64_t base = block.base;
    std::uint64_t* const words = block.words.data();
    const bool single_worker = block.single_worker;
    for (const std::uint64_t ran : batch)
      ra_xor_word(words[(ran & mask) - base], ran, single_worker);
    block.count_applied(batch.size());
  }
};

/// @brief How a place sends its updates to their owners.
enum class ra_send {
  async_at,  ///< one apgas::async_at per update (the transport coalesces them)
  aggregated ///< through an apgas::aggregator: batches per owner, applied in a tight loop
};

/// @brief The updates of one place's stream, generated in runs: each run applies the place's
/// own updates at once and sets the others aside for the caller to send. The local loop stays
/// as small as the sequential one (its values in registers, many table misses in flight at
/// once); the sends, on values in the cache, cannot slow it down. Both ways of sending use it,
/// so that they differ in the send alone.
class ra_stream {
public:
  static constexpr std::size_t k_run = 1024; ///< updates per run

  /// The updates at positions [first, first + count) of the stream (1-based: the stream's
  /// first update is hpcc_starts(1)), generated at this place into `mine`.
  ra_stream(ra_block& mine, const ra_layout& l, std::uint64_t first, std::uint64_t count)
      : m_layout(l), m_mask(l.mask()), m_base(mine.base), m_words(mine.words.data()),
        m_single_worker(mine.single_worker), m_me(apgas::here()),
        m_ran(hpcc_starts(static_cast<std::int64_t>(first))), m_left(count) {}

  /// Generates the next run: applies the local updates, and returns the others (valid until
  /// the next call; empty also when the stream is done).
  std::span<const std::uint64_t> next_run() {
    // Copies of what the loop reads: a store to a word of the table could be a store to any
    // 64-bit field for all the compiler knows, so fields would be read again on every update.
    const ra_layout layout = m_layout;
    const std::uint64_t mask = m_mask;
    const std::uint64_t base = m_base;
    std::uint64_t* const words = m_words;
    const bool single_worker = m_single_worker;
    const apgas::place_id me = m_me;
    std::uint64_t ran = m_ran;
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(k_run, m_left));
    std::size_t set_aside = 0;
    for (std::size_t i = 0; i < n; ++i) {
      ran = hpcc_next(ran);
      const std::uint64_t index = ran & mask;
      if (layout.owner(index) == me) {
        ra_xor_word(words[index - base], ran, single_worker);
      } else {
        m_remote[set_aside++] = ran;
      }
    }
    m_ran = ran;
    m_left -= n;
    m_kept += n - set_aside;
    return {m_remote.data(), set_aside};
  }
  bool done() const noexcept { return m_left == 0; }
  /// Updates applied here so far.
  std::uint64_t kept() const noexcept { return m_kept; }
  /// The owner of an update's word.
  apgas::place_id owner(std::uint64_t ran) const noexcept { return m_layout.owner(ran & m_mask); }

private:
  ra_layout m_layout;
  std::uint64_t m_mask;
  std::uint64_t m_base;
  std::uint64_t* m_words;
  bool m_single_worker;
  apgas::place_id m_me;
  std::uint64_t m_ran;
  std::uint64_t m_left;
  std::uint64_t m_kept = 0;
  std::array<std::uint64_t, k_run> m_remote{};
};

/// @brief Generates the updates at positions [first, first + count) of the stream and sends
/// each remote one to its owner as one async_at; the owner's own updates are applied at once.
inline apgas::task<> ra_generate(ra_refs refs, ra_layout l, std::uint64_t first,
                                 std::uint64_t count) {
  ra_block& mine = *refs[apgas::here()];
  ra_stream stream(mine, l, first, count);
  while (!stream.done())
    for (const std::uint64_t ran : stream.next_run()) {
      const apgas::place_id owner = stream.owner(ran);
      co_await apgas::async_at(owner, ra_update{}, refs[owner], ran); // never suspends
    }
  mine.count_applied(stream.kept()); // counted once at the end
}

using ra_aggregator = apgas::aggregator<ra_xor, ra_block, std::uint64_t>;

/// @brief The loop of ra_generate_aggregated, a plain function: its locals stay in registers
/// (in the coroutine they would live in its frame, loaded and stored on every update).
inline void ra_generate_into(ra_aggregator& agg, const ra_refs& refs, const ra_layout& l,
                             std::uint64_t first, std::uint64_t count) {
  ra_block& mine = *refs[apgas::here()];
  ra_stream stream(mine, l, first, count);
  const apgas::global_ref<ra_block>* const targets = refs.data();
  while (!stream.done())
    for (const std::uint64_t ran : stream.next_run()) agg.push(targets[stream.owner(ran)], ran);
  mine.count_applied(stream.kept());
}

/// @brief As ra_generate, with the remote updates buffered per owner by an aggregator.
inline apgas::task<> ra_generate_aggregated(ra_refs refs, ra_layout l, std::uint64_t first,
                                            std::uint64_t count, std::size_t bytes_per_place) {
  auto agg = co_await apgas::make_aggregator<ra_xor, ra_block, std::uint64_t>(bytes_per_place);
  ra_generate_into(agg, refs, l, first, count);
} // the aggregator sends what is left here

/// @brief This place's share of the `total` updates, in chunks that are asyncs of the
/// enclosing (distributed) finish.
struct ra_generate_share {
  apgas::task<> operator()(ra_refs refs, ra_layout l, std::uint64_t total, ra_send how,
                           std::size_t bytes_per_place) const {
    const apgas::place_id p = apgas::here();
    // Exact split of [0, total): place q starts at floor(total * q / P), computed without
    // overflowing 64 bits.
    const auto bound = [&](apgas::place_id q) {
      const std::uint64_t places = l.places;
      return total / places * q + total % places * q / places;
    };
    const std::uint64_t begin = bound(p);
    const std::uint64_t end = bound(p + 1);
    for (std::uint64_t at = begin; at < end; at += k_ra_chunk) {
      const std::uint64_t n = std::min(k_ra_chunk, end - at);
      if (how == ra_send::aggregated)
        co_await apgas::async(ra_generate_aggregated(refs, l, at, n, bytes_per_place));
      else co_await apgas::async(ra_generate(refs, l, at, n));
    }
  }
};

/// @brief What the check of one block finds.
struct ra_check {
  std::uint64_t errors = 0;   ///< words that differ from their initial value after the undo
  std::uint64_t applied = 0;  ///< updates this block received
  std::uint64_t expected = 0; ///< updates the stream sends to this block
};

/// @brief Applies the whole stream again to this place's block, sequentially (XOR twice
/// restores), and counts the words that did not come back; also counts the updates meant for
/// this block, which must be those it received.
inline ra_check ra_check_block(ra_block& b, const ra_layout& l, std::uint64_t total) {
  ra_check c;
  c.applied = b.applied_total();
  const std::uint64_t mask = l.mask();
  const std::uint64_t end = b.base + b.words.size();
  std::uint64_t ran = 1; // hpcc_starts(0)
  for (std::uint64_t i = 0; i < total; ++i) {
    ran = hpcc_next(ran);
    const std::uint64_t index = ran & mask;
    if (index < b.base || index >= end) continue;
    b.words[index - b.base] ^= ran;
    ++c.expected;
  }
  for (std::size_t i = 0; i < b.words.size(); ++i) c.errors += b.words[i] != b.base + i;
  return c;
}

/// @brief At a place: fills its block of the table and hands back a reference to it.
struct ra_init_block {
  apgas::global_ref<ra_block> operator()(ra_table table, ra_layout l) const {
    ra_block& b = table.get();
    b.init(l, apgas::here(), apgas::workers_here());
    return apgas::global_ref<ra_block>(b);
  }
};

/// @brief At a place: checks its block (see ra_check_block).
struct ra_check_here {
  ra_check operator()(apgas::global_ref<ra_block> b, ra_layout l, std::uint64_t total) const {
    return ra_check_block(*b, l, total);
  }
};

/// @brief at(p, F{}, args...) as a task of its own, so that one per place can run at once
/// under a finish (F returns a value, not a task).
template <class F, class... Args>
apgas::task<std::invoke_result_t<F&, Args&...>> ra_at(apgas::place_id p, Args... args) {
  co_return co_await apgas::at(p, F{}, args...);
}

/// @brief The outcome of one distributed run.
struct ra_outcome {
  double seconds = 0;       ///< the update phase only (HPCC times just that)
  std::uint64_t errors = 0; ///< over the whole table
  std::uint64_t applied = 0;
  std::uint64_t expected = 0;
};

/// @brief One distributed run over every place: creates the table, times the update phase of
/// `total` updates, checks every block, frees the table. `between(phase)`, a callable
/// returning task<>, is awaited at place 0 just before ("start") and after ("end") the timed
/// phase (to snapshot message counters, say).
template <class Between>
apgas::task<ra_outcome>
ra_run(std::uint32_t log_size, std::uint64_t total, Between between,
       ra_send how = ra_send::aggregated,
       std::size_t bytes_per_place = ra_aggregator::k_default_bytes_per_place) {
  const apgas::place_id n = apgas::places();
  const ra_layout l = ra_layout::make(log_size, n);
  const ra_table table = co_await ra_table::make([](apgas::place_id) { return ra_block{}; });

  // Every place fills its block (in parallel) and hands back a reference to it.
  ra_refs refs(n);
  co_await apgas::finish([&]() -> apgas::task<> {
    for (apgas::place_id p = 0; p < n; ++p)
      co_await apgas::async(ra_at<ra_init_block>(p, table, l), refs[p]);
  });

  ra_outcome out;
  co_await between("start");
  const auto start = std::chrono::steady_clock::now();
  co_await apgas::finish([&]() -> apgas::task<> { // an SPMD finish over every place
    for (apgas::place_id p = 0; p < n; ++p)
      co_await apgas::async_at(p, ra_generate_share{}, refs, l, total, how, bytes_per_place);
  });
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  co_await between("end");

  // The check, at every place in parallel.
  std::vector<ra_check> checks(n);
  co_await apgas::finish([&]() -> apgas::task<> {
    for (apgas::place_id p = 0; p < n; ++p)
      co_await apgas::async(ra_at<ra_check_here>(p, refs[p], l, total), checks[p]);
  });
  for (const ra_check& c : checks) {
    out.errors += c.errors;
    out.applied += c.applied;
    out.expected += c.expected;
  }
  co_await table.destroy();
  co_return out;
}

/// @brief The sequential reference: the same `total` updates on one table of 2^log_size words.
/// @return the number of words that differ from their initial value after applying the
/// stream twice (0 unless something is broken), and leaves the time of the first pass in
/// `seconds`.
inline std::uint64_t ra_seq(std::uint32_t log_size, std::uint64_t total, double& seconds) {
  const std::uint64_t size = std::uint64_t{1} << log_size;
  const std::uint64_t mask = size - 1;
  std::vector<std::uint64_t> table(size);
  for (std::uint64_t i = 0; i < size; ++i) table[i] = i;
  const auto pass = [&] {
    std::uint64_t ran = 1;
    for (std::uint64_t i = 0; i < total; ++i) {
      ran = hpcc_next(ran);
      table[ran & mask] ^= ran;
    }
  };
  const auto start = std::chrono::steady_clock::now();
  pass();
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  pass();
  std::uint64_t errors = 0;
  for (std::uint64_t i = 0; i < size; ++i) errors += table[i] != i;
  return errors;
}

} // namespace apgas_apps
