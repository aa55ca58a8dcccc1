// The transport of a program started without mpirun: one place, loopback only, on the
// in-process network (so that even a single place exercises the same message paths).
#include "single_place_transport.hpp"

#include "apgas/detail/collective_network.hpp"

#include "fake_transport.hpp"

#include <atomic>
#include <cstring>
#include <vector>

namespace apgas::detail {

namespace {

/// The collectives of a team of one: each completes inside start(), as a copy (or nothing).
class single_member_collectives final : public collective_network {
public:
  const std::vector<place_id>& members(team_handle) const override { return m_members; }
  place_id rank(team_handle) const override { return 0; }
  bool completes_at_once() const noexcept override { return true; }
  void start(const collective_call& c, collective_done& done) override {
    const std::size_t size = c.type.size;
    const auto copy = [&](const void* from, void* to, std::size_t n) {
      if (from != to && n != 0) std::memmove(to, from, n * size);
    };
    switch (c.kind) {
    case collective_kind::barrier:
    case collective_kind::broadcast:
    case collective_kind::exscan:
      break; // nothing (rank 0's exscan result is left as it was)
    case collective_kind::reduce:
    case collective_kind::allreduce:
    case collective_kind::scan:
    case collective_kind::gather:
    case collective_kind::allgather:
    case collective_kind::alltoall:
      copy(c.send, c.recv, c.count);
      break;
    case collective_kind::allgatherv:
      copy(c.send, static_cast<std::byte*>(c.recv) + c.recv_displs[0] * size, c.count);
      break;
    case collective_kind::alltoallv:
      copy(static_cast<const std::byte*>(c.send) + c.send_displs[0] * size,
           static_cast<std::byte*>(c.recv) + c.recv_displs[0] * size,
           static_cast<std::size_t>(c.send_counts[0]));
      break;
    case collective_kind::neighbour_exchange:
      break; // a team of one has no neighbours
    }
    done.done(nullptr);
  }
  team_handle split(team_handle, int color, int) override {
    // relaxed: only that the handles differ matters.
    return color < 0 ? k_no_team : m_teams.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  void free(team_handle) noexcept override {}
  std::size_t pending() const noexcept override { return 0; }

private:
  std::vector<place_id> m_members{0};
  std::atomic<team_handle> m_teams{0}; ///< handles given out
};

/// One-sided access at one place: a copy, done at once.
class single_place_rma final : public rma_network {
public:
  void attach(void*, std::size_t) override {}
  void detach(void*) noexcept override {}
  void start_get(place_id, std::uintptr_t address, void* to, std::size_t bytes,
                 collective_done& done) override {
    std::memmove(to, reinterpret_cast<const void*>(address), bytes);
    done.done(nullptr);
  }
  void start_put(place_id, std::uintptr_t address, const void* from, std::size_t bytes,
                 collective_done& done) override {
    std::memmove(reinterpret_cast<void*>(address), from, bytes);
    done.done(nullptr);
  }
};

class single_place_transport final : public transport {
public:
  explicit single_place_transport(const options& opts) : m_network(1, opts) {}
  place_id here() const noexcept override { return 0; }
  place_id places() const noexcept override { return 1; }
  // send_now and send_now_framed are transport's defaults, which call send(): every message
  // passes here or through send_merged, so the hook sees every send.
  void send(place_id to, std::span<const std::byte> message) override {
    ep().send(to, message);
    if (m_send_hook) m_send_hook();
  }
  void send_merged(place_id to, const merge_head& head, std::size_t body_size,
                   message_writer write_body, const void* context) override {
    ep().send_merged(to, head, body_size, write_body, context);
    if (m_send_hook) m_send_hook();
  }
  void flush() override { ep().flush(); }
  std::size_t poll() override { return ep().poll(); }
  void set_handler(handler h) override { ep().set_handler(std::move(h)); }
  void set_batch_end_handler(batch_end_handler h) override {
    ep().set_batch_end_handler(std::move(h));
  }
  bool quiescent() const override {
    return const_cast<single_place_transport*>(this)->ep().quiescent();
  }
  transport_stats stats() const override {
    return const_cast<single_place_transport*>(this)->ep().stats();
  }
  void barrier() override { ep().barrier(); }
  bool loopback_only() const noexcept override { return true; }
  void set_send_hook(std::function<void()> hook) override { m_send_hook = std::move(hook); }
  collective_network* collectives() noexcept override { return &m_collectives; }
  rma_network* rma() noexcept override { return &m_rma; }

private:
  transport& ep() { return m_network.endpoint(0); }
  fake_network m_network;
  std::function<void()> m_send_hook;
  single_member_collectives m_collectives;
  single_place_rma m_rma;
};
} // namespace

std::unique_ptr<transport> make_single_place_transport(const options& opts) {
  return std::make_unique<single_place_transport>(opts);
}

} // namespace apgas::detail
