// The transport of a program started without mpirun: one place, loopback only, on the
// in-process network (so that even a single place exercises the same message paths).
#include "transport_fake.hpp"
#include "transport_single.hpp"

namespace apgas::detail {

namespace {
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

private:
  transport& ep() { return m_network.endpoint(0); }
  fake_network m_network;
  std::function<void()> m_send_hook;
};
} // namespace

std::unique_ptr<transport> make_single_place_transport(const options& opts) {
  return std::make_unique<single_place_transport>(opts);
}

} // namespace apgas::detail
