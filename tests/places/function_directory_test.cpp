// Which function pointers other places can find (function_handle.hpp): the starts of this
// program's functions, and nothing else. No MPI.
#include <apgas/apgas.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

namespace {

int free_function(int x) { return x + 1; }

struct holder {
  static int static_member(int x) { return x * 2; }
};

template <class T>
T a_template(T x) {
  return x;
}

int g_data = 0;

using apgas::detail::function_handle;
using apgas::detail::named_function;

const void* code(auto fn) { return reinterpret_cast<const void*>(fn); }

TEST(function_directory, the_start_of_a_function_of_the_program_is_named) {
  EXPECT_TRUE(named_function(code(&free_function)));
  EXPECT_TRUE(named_function(code(&holder::static_member)));
  EXPECT_TRUE(named_function(code(&a_template<long>)));
  EXPECT_TRUE(named_function(code(&named_function))); // a function of the runtime itself
}

TEST(function_directory, anything_else_is_not) {
  EXPECT_FALSE(named_function(nullptr));
  EXPECT_FALSE(named_function(&g_data));
  const int on_stack = 0;
  EXPECT_FALSE(named_function(&on_stack));
  // Inside a function: only its first byte is where it begins.
  EXPECT_FALSE(named_function(static_cast<const char*>(code(&free_function)) + 1));
  EXPECT_FALSE(named_function(code(&::getpid))); // in libc, loaded elsewhere at each place
}

TEST(function_directory, a_handle_gives_back_its_function) {
  const auto h = function_handle<int (*)(int)>::of(&free_function);
  EXPECT_EQ(h.function(), &free_function);
  EXPECT_EQ(h.function()(41), 42);
  const auto s = function_handle<int (*)(int)>::of(&holder::static_member);
  EXPECT_EQ(s.function()(21), 42);
}

TEST(function_directory, a_function_no_other_place_can_find_is_refused_with_why) {
  try {
    (void)function_handle<pid_t (*)()>::of(&::getpid);
    FAIL() << "getpid accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("a shared library"), std::string::npos) << what;
    EXPECT_NE(what.find("libc"), std::string::npos) << what;
  }
}

TEST(function_directory, a_damaged_offset_is_refused_where_it_arrives) {
  const auto h = function_handle<int (*)(int)>::of(&free_function);
  for (const std::int64_t delta : {1, -1, 4096, 1 << 20}) {
    const function_handle<int (*)(int)> damaged{h.offset + delta};
    EXPECT_THROW((void)damaged.function(), apgas::detail::transport_error) << delta;
  }
}

} // namespace
