// Places in one process, on the in-process fake network (no MPI), for the unit tests of the
// message dispatcher and its protocol modules: each place a scheduler of one worker and a
// dispatcher over an endpoint of the network. The test drives the deliveries itself
// (network.poll_all(), or dispatcher.handle()); the schedulers never poll, having no network.
// Needs places/src/transport on the include path (fake_transport.hpp).
#pragma once

#include <apgas/detail/message_dispatcher.hpp>
#include <apgas/detail/scheduler.hpp>

#include "fake_transport.hpp"

#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace apgas_test {

/// @brief A transport that forwards to an endpoint of a fake network: a dispatcher owns its
/// transport, while the network owns its endpoints.
class endpoint_transport final : public apgas::detail::transport {
public:
  explicit endpoint_transport(apgas::detail::transport& endpoint) : m_ep(endpoint) {}
  apgas::detail::place_id here() const noexcept override { return m_ep.here(); }
  apgas::detail::place_id places() const noexcept override { return m_ep.places(); }
  void send(apgas::detail::place_id to, std::span<const std::byte> message) override {
    m_ep.send(to, message);
  }
  void send_merged(apgas::detail::place_id to, const apgas::detail::merge_head& head,
                   std::size_t body_size, message_writer write_body, const void* context) override {
    m_ep.send_merged(to, head, body_size, write_body, context);
  }
  void flush() override { m_ep.flush(); }
  std::size_t poll() override { return m_ep.poll(); }
  void set_handler(handler h) override { m_ep.set_handler(std::move(h)); }
  void set_batch_end_handler(batch_end_handler h) override {
    m_ep.set_batch_end_handler(std::move(h));
  }
  bool quiescent() const override { return m_ep.quiescent(); }
  apgas::detail::transport_stats stats() const override { return m_ep.stats(); }
  void barrier() override { m_ep.barrier(); }

private:
  apgas::detail::transport& m_ep;
};

/// @brief Options for a place of these tests: one worker, not pinned (several schedulers share
/// the process).
inline apgas::options one_worker() {
  apgas::options o;
  o.threads = 1;
  o.pin_workers = false;
  return o;
}

/// @brief Place `p` of `network`: its scheduler and its dispatcher (destroyed first: it uses
/// the scheduler's counters).
struct fake_place {
  fake_place(apgas::detail::fake_network& network, apgas::detail::place_id p)
      : dispatcher(sched, std::make_unique<endpoint_transport>(network.endpoint(p))) {}
  apgas::detail::scheduler sched{one_worker()};
  apgas::detail::message_dispatcher dispatcher;
};

/// @brief `n` places on one fake network.
struct fake_places {
  explicit fake_places(std::size_t n) : network(n) {
    for (apgas::detail::place_id p = 0; p < n; ++p)
      m_places.push_back(std::make_unique<fake_place>(network, p));
  }
  /// @brief The dispatcher of place `p`.
  apgas::detail::message_dispatcher& dispatcher(apgas::detail::place_id p) {
    return m_places[p]->dispatcher;
  }
  std::size_t size() const noexcept { return m_places.size(); }

  apgas::detail::fake_network network;

private:
  std::vector<std::unique_ptr<fake_place>> m_places; ///< after the network: destroyed first
};

} // namespace apgas_test
