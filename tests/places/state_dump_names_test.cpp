// How the state dump names things: a call site inside a coroutine (GCC names the coroutine's
// body with its frame's mangled type as a parameter) and a finish (home:serial, an SPMD
// finish's serial without the bit that marks it).
#include <apgas/detail/call_site.hpp>
#include <apgas/detail/finish_name.hpp>

#include <gtest/gtest.h>

#include <coroutine>
#include <source_location>
#include <string>

namespace {

using apgas::detail::readable_function_name;

/// A coroutine that runs at once to its end: enough to ask GCC how it names one.
struct eager_coroutine {
  struct promise_type {
    eager_coroutine get_return_object() { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept {}
  };
};

std::string g_site; ///< what the coroutine below saw

void record(std::source_location site = std::source_location::current()) {
  g_site = site.function_name();
}

TEST(state_dump_names, a_call_site_inside_a_coroutine_reads_without_its_frame_type) {
  auto body = []() -> eager_coroutine {
    record();
    co_return;
  };
  body();
  const std::string readable = readable_function_name(g_site);
  EXPECT_EQ(readable.find(".Frame"), std::string::npos) << g_site << " -> " << readable;
  EXPECT_EQ(readable.find("_Z"), std::string::npos) << g_site << " -> " << readable;
  EXPECT_NE(readable.find("operator()"), std::string::npos) << readable;
  EXPECT_EQ(readable_function_name(
                "void main()::<lambda()>::<lambda()>::operator()(main()::<lambda()>::<lambda()>::"
                "_ZZZ4mainENKUlvE_clEvENKUlvE_clEv.Frame*)"),
            "void main()::<lambda()>::<lambda()>::operator()(...)");
  // A name without a frame stays as it is.
  EXPECT_EQ(readable_function_name("int f(int, long)"), "int f(int, long)");
}

TEST(state_dump_names, a_finish_reads_as_home_and_serial) {
  using apgas::detail::finish_id;
  EXPECT_EQ(describe(finish_id{3, 9}), "3:9");
  EXPECT_EQ(describe(finish_id{0, apgas::detail::k_spmd_serial_bit | 1}), "0:1 (SPMD)");
}

} // namespace
