// The in-process fake network (see fake_transport.hpp).
#include "fake_transport.hpp"

#include "transport_base.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace apgas::detail {

namespace {

/// A network message between two endpoints.
struct wire_message {
  place_id from = 0;
  byte_buffer bytes;
  bool injected = false;
};

/// The queue of network messages towards one endpoint. Guarded by `lock`.
struct inbox {
  std::mutex lock;
  std::vector<wire_message> fifo;                  ///< arrival order (no reordering)
  std::vector<std::deque<wire_message>> by_source; ///< per source (reordering)
  std::size_t count = 0;                           ///< messages queued
  std::uint64_t bytes = 0;                         ///< bytes queued
  std::uint64_t peak_bytes = 0;                    ///< high-water mark of `bytes`
  std::vector<std::size_t> queued_from;            ///< per source: its messages queued here
  std::vector<std::size_t> peak_from;              ///< high-water mark of queued_from
  std::mt19937_64 rng;                             ///< reordering choices
  std::vector<place_id> sources;                   ///< scratch: non-empty sources
};

class fake_endpoint;

} // namespace

struct fake_network::impl {
  impl(std::size_t places, const options& opts, std::uint64_t seed, bool reorder, bool same_source);

  void push(place_id from, place_id to, byte_buffer&& bytes, bool injected);
  void take(place_id to, std::vector<wire_message>& out);

  const bool reorder;
  const bool reorder_same_source;
  std::vector<std::unique_ptr<inbox>> inboxes;
  std::vector<std::unique_ptr<fake_endpoint>> endpoints;

  std::mutex barrier_lock;
  std::size_t barrier_arrived = 0; ///< guarded by barrier_lock
  /// Completed barrier rounds. Written under barrier_lock, read by waiters without it.
  std::atomic<std::uint64_t> barrier_generation{0};
  std::vector<std::uint64_t> gathered; ///< all_gather's values by place; guarded by barrier_lock
};

namespace {

class fake_endpoint final : public transport_base {
public:
  fake_endpoint(fake_network::impl& net, place_id here, place_id places, const options& opts)
      : transport_base(here, places, opts), m_net(net) {}

  void barrier() override {
    flush_to_network(); // as over MPI: every earlier send is in flight before we arrive
    std::uint64_t generation;
    {
      std::lock_guard lock(m_net.barrier_lock);
      // relaxed: written only under barrier_lock, which we hold.
      generation = m_net.barrier_generation.load(std::memory_order_relaxed);
      if (++m_net.barrier_arrived == m_net.endpoints.size()) {
        m_net.barrier_arrived = 0;
        // release: everything every place did before arriving happens-before the waiters'
        // acquire below (they arrived under the same lock, so it is transitive).
        m_net.barrier_generation.store(generation + 1, std::memory_order_release);
        return;
      }
    }
    // acquire: pairs with the last arriver's release.
    while (m_net.barrier_generation.load(std::memory_order_acquire) == generation) {
      if (poll() == 0) std::this_thread::yield();
    }
  }

  std::vector<std::uint64_t> all_gather(std::uint64_t value) override {
    {
      std::lock_guard lock(m_net.barrier_lock);
      m_net.gathered.resize(m_net.endpoints.size());
      m_net.gathered[m_here] = value;
    }
    barrier(); // every value is in
    std::vector<std::uint64_t> all;
    {
      std::lock_guard lock(m_net.barrier_lock);
      all = m_net.gathered;
    }
    barrier(); // every place copied them: the next round may overwrite them
    return all;
  }

  /// The network took `bytes` of our frames towards `to` (called by the receiver).
  void completed_to(place_id to, std::size_t bytes) noexcept { network_done(to, bytes); }
  /// A buffer of ours towards `to` comes back from the receiver.
  void recycle_to(place_id to, byte_buffer&& bytes) { m_coalescer.recycle(to, std::move(bytes)); }

protected:
  void net_send(place_id to, sealed_buffer&& buffer) override {
    m_net.push(m_here, to, std::move(buffer.bytes), false);
  }
  void net_complete_sends() override {} // completion happens when the receiver takes it
  void net_receive() override;
  void net_release(received&& message) override {
    if (message.kind == origin::network)
      m_net.endpoints[message.from]->recycle_to(m_here, std::move(message.bytes));
  }

private:
  fake_network::impl& m_net;
  std::vector<wire_message> m_taken; ///< scratch of net_receive (under m_net_lock)
};

void fake_endpoint::net_receive() {
  m_net.take(m_here, m_taken);
  for (wire_message& m : m_taken) {
    const std::size_t bytes = m.bytes.size();
    const place_id from = m.from;
    const bool injected = m.injected;
    accept(received{from, std::move(m.bytes), injected ? origin::injected : origin::network});
    // After accept(): the sender is not seen idle before we are seen busy (see accept()).
    if (!injected) m_net.endpoints[from]->completed_to(m_here, bytes);
  }
  m_taken.clear();
}

} // namespace

fake_network::impl::impl(std::size_t places, const options& opts, std::uint64_t seed,
                         bool reorder_sources, bool same_source)
    : reorder(reorder_sources), reorder_same_source(same_source) {
  if (places == 0) throw std::invalid_argument("apgas fake_network: no places");
  inboxes.reserve(places);
  endpoints.reserve(places);
  for (std::size_t p = 0; p < places; ++p) {
    auto box = std::make_unique<inbox>();
    box->by_source.resize(places);
    box->queued_from.assign(places, 0);
    box->peak_from.assign(places, 0);
    box->rng.seed(seed * 0x9e3779b97f4a7c15ull + p);
    inboxes.push_back(std::move(box));
  }
  for (std::size_t p = 0; p < places; ++p)
    endpoints.push_back(std::make_unique<fake_endpoint>(*this, static_cast<place_id>(p),
                                                        static_cast<place_id>(places), opts));
}

void fake_network::impl::push(place_id from, place_id to, byte_buffer&& bytes, bool injected) {
  inbox& box = *inboxes[to];
  std::lock_guard lock(box.lock);
  box.bytes += bytes.size();
  box.peak_bytes = std::max(box.peak_bytes, box.bytes);
  ++box.count;
  if (!injected) {
    const std::size_t queued = ++box.queued_from[from];
    box.peak_from[from] = std::max(box.peak_from[from], queued);
  }
  wire_message m{from, std::move(bytes), injected};
  if (reorder) box.by_source[from].push_back(std::move(m));
  else box.fifo.push_back(std::move(m));
}

void fake_network::impl::take(place_id to, std::vector<wire_message>& out) {
  inbox& box = *inboxes[to];
  std::lock_guard lock(box.lock);
  if (box.count == 0) return;
  if (!reorder) {
    for (wire_message& m : box.fifo) out.push_back(std::move(m));
    box.fifo.clear();
  } else {
    // Everything queued, in a random interleaving of the sources (and, if asked, a random
    // order within each source).
    while (out.size() < box.count) {
      box.sources.clear();
      for (std::size_t s = 0; s < box.by_source.size(); ++s)
        if (!box.by_source[s].empty()) box.sources.push_back(static_cast<place_id>(s));
      std::uniform_int_distribution<std::size_t> pick_source(0, box.sources.size() - 1);
      std::deque<wire_message>& q = box.by_source[box.sources[pick_source(box.rng)]];
      std::size_t i = 0;
      if (reorder_same_source)
        i = std::uniform_int_distribution<std::size_t>(0, q.size() - 1)(box.rng);
      out.push_back(std::move(q[i]));
      q.erase(q.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  box.count = 0;
  box.bytes = 0;
  std::fill(box.queued_from.begin(), box.queued_from.end(), std::size_t{0});
}

fake_network::fake_network(std::size_t places, const options& opts, std::uint64_t seed,
                           bool reorder, bool reorder_same_source)
    : m_impl(std::make_unique<impl>(places, opts, seed, reorder, reorder_same_source)) {}

fake_network::~fake_network() = default;

transport& fake_network::endpoint(place_id p) {
  if (p >= m_impl->endpoints.size())
    throw std::out_of_range("apgas fake_network: no place " + std::to_string(p));
  return *m_impl->endpoints[p];
}

place_id fake_network::places() const noexcept {
  return static_cast<place_id>(m_impl->endpoints.size());
}

std::size_t fake_network::poll_all() {
  std::size_t delivered = 0;
  for (auto& e : m_impl->endpoints) delivered += e->poll();
  return delivered;
}

void fake_network::inject(place_id from, place_id to, std::span<const std::byte> raw) {
  if (from >= places() || to >= places())
    throw std::out_of_range("apgas fake_network: inject between unknown places");
  byte_buffer bytes(raw.size());
  bytes.append(raw.data(), raw.size());
  m_impl->push(from, to, std::move(bytes), true);
}

std::uint64_t fake_network::peak_queued_bytes(place_id to) const {
  inbox& box = *m_impl->inboxes.at(to);
  std::lock_guard lock(box.lock);
  return box.peak_bytes;
}

std::size_t fake_network::peak_queued_messages(place_id from, place_id to) const {
  inbox& box = *m_impl->inboxes.at(to);
  std::lock_guard lock(box.lock);
  return box.peak_from.at(from);
}

} // namespace apgas::detail
