// The message dispatcher, on the in-process fake network (no MPI): a protocol module adds
// message kinds by registering handlers, from its own file, without any change to the
// dispatcher; modules of other folders are created from the static registry; a kind that no module
// registered is an error that names it and its sender.
#include "apgas/detail/message_dispatcher.hpp"
#include "apgas/detail/scheduler.hpp"

#include "../fake_places.hpp"
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace apgas::detail;
using apgas_test::fake_places;

/// A protocol of its own: `ping n` asks the receiver to answer `pong n+1`; the sender counts
/// pongs and remembers the last value. Its two kinds are whatever the dispatcher gives it.
class ping_module final : public protocol_module {
public:
  explicit ping_module(message_dispatcher& dispatcher)
      : m_dispatcher(dispatcher),
        m_ping(dispatcher.add_handler<&ping_module::on_ping>(*this, "test ping")),
        m_pong(dispatcher.add_handler<&ping_module::on_pong>(*this, "test pong")) {
    dispatcher.after_each_delivery<&ping_module::on_delivery_end>(*this);
  }
  void ping(place_id to, std::uint64_t n) { send(to, m_ping, n); }
  message_kind ping_kind() const { return m_ping; }
  int pongs = 0;
  std::uint64_t last_pong = 0;
  place_id last_from = 0;
  int deliveries = 0;

private:
  void send(place_id to, message_kind kind, std::uint64_t n) {
    const auto bytes = pack_head(kind, n);
    m_dispatcher.net().send(to, bytes);
    m_dispatcher.net().flush();
  }
  static std::uint64_t value(std::span<const std::byte> body) {
    std::uint64_t n = 0;
    EXPECT_EQ(body.size(), sizeof n);
    std::memcpy(&n, body.data(), std::min(body.size(), sizeof n));
    return n;
  }
  void on_ping(place_id from, std::span<const std::byte> body) {
    send(from, m_pong, value(body) + 1);
  }
  void on_pong(place_id from, std::span<const std::byte> body) {
    ++pongs;
    last_pong = value(body);
    last_from = from;
  }
  void on_delivery_end() noexcept { ++deliveries; }

  message_dispatcher& m_dispatcher;
  message_kind m_ping;
  message_kind m_pong;
};

/// A module of "another folder": registered statically, created by add_registered_modules.
class registered_echo final : public protocol_module {
public:
  explicit registered_echo(message_dispatcher& dispatcher)
      : m_kind(dispatcher.add_handler<&registered_echo::on_echo>(*this, "test echo")) {}
  message_kind kind() const { return m_kind; }
  std::vector<std::byte> heard;

private:
  void on_echo(place_id, std::span<const std::byte> body) {
    heard.assign(body.begin(), body.end());
  }
  message_kind m_kind;
};

APGAS_REGISTER_PROTOCOL_MODULE(test_registered_echo, [](message_dispatcher& dispatcher) {
  dispatcher.add_module<registered_echo>();
});

TEST(message_dispatcher, a_module_adds_message_kinds_by_registering_handlers) {
  fake_places net(3);
  std::vector<ping_module*> pings;
  for (place_id p = 0; p < net.size(); ++p)
    pings.push_back(&net.dispatcher(p).add_module<ping_module>());
  // The same registrations in the same order give every place the same kinds.
  EXPECT_EQ(pings[0]->ping_kind(), pings[1]->ping_kind());
  EXPECT_EQ(pings[0]->ping_kind(), pings[2]->ping_kind());

  pings[0]->ping(1, 41);
  pings[0]->ping(2, 99);
  while (net.network.poll_all() != 0) {
  }
  EXPECT_EQ(pings[0]->pongs, 2);
  EXPECT_TRUE(pings[0]->last_pong == 42 || pings[0]->last_pong == 100);
  EXPECT_GT(pings[1]->deliveries, 0) << "the module's after-delivery hook did not run";
  EXPECT_EQ(pings[1]->pongs, 0);
  EXPECT_EQ(net.dispatcher(1).find_module<ping_module>(), pings[1]);
}

TEST(message_dispatcher, registered_modules_of_other_folders_are_created_at_every_place) {
  fake_places net(2);
  for (place_id p = 0; p < net.size(); ++p) net.dispatcher(p).add_registered_modules();
  auto* echo0 = net.dispatcher(0).find_module<registered_echo>();
  auto* echo1 = net.dispatcher(1).find_module<registered_echo>();
  ASSERT_NE(echo0, nullptr);
  ASSERT_NE(echo1, nullptr);
  ASSERT_EQ(echo0->kind(), echo1->kind());
  const std::vector<std::byte> message{static_cast<std::byte>(echo0->kind()), std::byte{7},
                                       std::byte{9}};
  net.dispatcher(0).net().send(1, message);
  net.dispatcher(0).net().flush();
  while (net.network.poll_all() != 0) {
  }
  EXPECT_EQ(echo1->heard, (std::vector<std::byte>{std::byte{7}, std::byte{9}}));
}

TEST(message_dispatcher, a_kind_no_module_registered_is_an_error_naming_it_and_its_sender) {
  fake_places net(2);
  net.dispatcher(1).add_module<ping_module>();
  const std::vector<std::byte> unknown{std::byte{200}, std::byte{1}};
  net.dispatcher(0).net().send(1, unknown);
  net.dispatcher(0).net().flush();
  try {
    net.dispatcher(1).net().poll(); // the transport's poll: the dispatcher's own would end the job
    ADD_FAILURE() << "a message of an unregistered kind was delivered";
  } catch (const transport_error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown message kind 200 from place 0"),
              std::string::npos)
        << e.what();
  }
}

TEST(message_dispatcher, kinds_run_out_with_a_clear_error) {
  fake_places net(1);
  auto handler = [](void*, place_id, std::span<const std::byte>) {};
  int registered = 0;
  try {
    for (;; ++registered) net.dispatcher(0).add_handler("filler", handler, nullptr);
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("no message kind left"), std::string::npos);
  }
  EXPECT_EQ(registered, 255); // kind 0 is never given
}

} // namespace
