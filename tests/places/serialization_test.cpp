// Serialization (no MPI): round trips of every supported kind, what apgas::serializable<T>
// says of many types, and truncated or corrupt input throwing serialization_error without
// reading out of bounds or allocating what a corrupt count asks for.
#include <apgas/serialization.hpp>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <bitset>
#include <chrono>
#include <cmath>
#include <complex>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

// --- Allocation tracking: the largest single operator new while a read runs ----------------

namespace {
std::atomic<bool> g_tracking{false};
std::atomic<std::size_t> g_largest{0};

void* tracked_alloc(std::size_t n) {
  if (g_tracking.load(std::memory_order_relaxed)) {
    std::size_t prev = g_largest.load(std::memory_order_relaxed);
    while (n > prev && !g_largest.compare_exchange_weak(prev, n, std::memory_order_relaxed)) {
    }
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
} // namespace

// GCC sees malloc in new and free in delete and warns of a mismatch it cannot see is paired.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) { return tracked_alloc(n); }
void* operator new[](std::size_t n) { return tracked_alloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace {

using apgas::byte_reader;
using apgas::byte_writer;
using apgas::serializable;
using apgas::serialization_error;
using bytes_t = std::vector<std::byte>;

// --- Types used by the tests -------------------------------------------------------------

enum class color : std::uint8_t { red, green, blue };
enum legacy { legacy_a = 1, legacy_b = 1000 };

struct pod {
  int m_i;
  double m_d;
  char m_c[3];
  color m_color;
  friend bool operator==(const pod&, const pod&) = default;
};

/// Bitwise (trivially copyable, no padding) but not trivially default constructible: a vector
/// of these is read without first value-initialising its elements (see read_value).
struct with_defaults {
  std::int32_t m_a = 7;
  std::int32_t m_b = -1;
  friend bool operator==(const with_defaults&, const with_defaults&) = default;
};
static_assert(apgas::detail::is_bitwise_v<with_defaults>);
static_assert(!std::is_trivially_default_constructible_v<with_defaults>);

/// A user type with a member serialize(): strings, containers, a nested user type, C array.
struct inner {
  std::string m_name;
  std::vector<int> m_values;
  template <class A>
  void serialize(A& a) {
    a& m_name& m_values;
  }
  friend bool operator==(const inner&, const inner&) = default;
  friend auto operator<=>(const inner&, const inner&) = default;
};

struct outer {
  inner m_inner;
  std::map<std::string, inner> m_by_name;
  std::optional<inner> m_maybe;
  int m_grid[2][3] = {};
  std::array<std::string, 2> m_pair_of_names;
  bool m_flag = false;
  template <class A>
  void serialize(A& a) {
    a& m_inner& m_by_name& m_maybe& m_grid& m_pair_of_names& m_flag;
  }
  friend bool operator==(const outer&, const outer&) = default;
};

/// Trivially copyable, but declares serialize(): that wins (it sends m_kept only).
struct partial {
  int m_kept = 0;
  int m_dropped = 0;
  template <class A>
  void serialize(A& a) {
    a& m_kept;
  }
};
static_assert(std::is_trivially_copyable_v<partial>);

/// Recursive user type.
struct tree {
  int m_value = 0;
  std::vector<tree> m_children;
  template <class A>
  void serialize(A& a) {
    a& m_value& m_children;
  }
  friend bool operator==(const tree&, const tree&) = default;
};

/// Writes nothing at all.
struct nothing {
  template <class A>
  void serialize(A&) {}
  friend bool operator==(const nothing&, const nothing&) = default;
};

struct base {
  int m_a = 0;
  template <class A>
  void serialize(A& a) {
    a& m_a;
  }
};
/// Inherits serialize(): its m_b would be lost, so it is rejected.
struct derived_silent : base {
  int m_b = 0;
};
/// Declares its own serialize() that calls the base's: fine.
struct derived_ok : base {
  int m_b = 0;
  template <class A>
  void serialize(A& a) {
    base::serialize(a);
    a& m_b;
  }
};

/// Declares serialize() but cannot be default constructed.
struct no_default {
  explicit no_default(int v) : m_v(v) {}
  int m_v;
  template <class A>
  void serialize(A& a) {
    a& m_v;
  }
};

struct with_mutex {
  int m_i = 0;
  std::mutex m_lock;
};
struct with_pointer_free_but_not_copyable {
  std::string m_s; // not trivially copyable, declares nothing
};
struct functor {
  int m_k = 0;
  int operator()(int x) const { return x + m_k; }
};
struct empty_functor {
  void operator()() const {}
};

} // namespace

// ADL serialization: found through the type's namespace, including for types that cannot be
// default constructed and for trivially copyable types (where it overrides the bytewise copy).
namespace geo {

class point {
public:
  point(int x, int y) : m_x(x), m_y(y) {}
  int x() const { return m_x; }
  int y() const { return m_y; }
  friend bool operator==(const point&, const point&) = default;
  friend auto operator<=>(const point&, const point&) = default;

private:
  int m_x;
  int m_y;
};

inline void apgas_serialize(apgas::byte_writer& w, const point& p) {
  apgas::serialize_all(w, p.x(), p.y());
}
inline point apgas_deserialize(apgas::byte_reader& r, std::type_identity<point>) {
  auto [x, y] = apgas::deserialize_all<int, int>(r);
  return point(x, y);
}

/// Trivially copyable, 4 bytes, but sent as 2 by its own functions.
struct small {
  std::uint32_t m_v = 0;
  friend bool operator==(const small&, const small&) = default;
};
inline void apgas_serialize(apgas::byte_writer& w, const small& s) {
  const auto v = static_cast<std::uint16_t>(s.m_v);
  apgas::serialize(w, v);
}
inline small apgas_deserialize(apgas::byte_reader& r, std::type_identity<small>) {
  return small{apgas::deserialize<std::uint16_t>(r)};
}

/// Only one of the two functions: rejected.
struct half {
  int m_i = 0;
};
void apgas_serialize(apgas::byte_writer& w, const half& h);

} // namespace geo

namespace {

// --- Helpers -----------------------------------------------------------------------------

/// Serializes, checks serialized_size, reads back (all bytes must be consumed).
template <class T>
T round_trip(const T& value) {
  const bytes_t bytes = apgas::to_bytes(value);
  EXPECT_EQ(apgas::serialized_size(value), bytes.size());
  return apgas::from_bytes<T>(bytes);
}

/// Every strict prefix of value's bytes must throw serialization_error. Each prefix is copied
/// into a buffer of its exact size, so that a read past its end is caught by ASan.
template <class T>
void expect_truncations_throw(const T& value) {
  const bytes_t bytes = apgas::to_bytes(value);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const auto prefix = std::make_unique<std::byte[]>(n == 0 ? 1 : n);
    std::memcpy(prefix.get(), bytes.data(), n);
    EXPECT_THROW((void)apgas::from_bytes<T>(std::span<const std::byte>(prefix.get(), n)),
                 serialization_error)
        << "prefix of " << n << " of " << bytes.size() << " bytes";
  }
}

/// Round trip equal, and every truncation throws.
template <class T>
void check(const T& value) {
  EXPECT_EQ(round_trip(value), value);
  expect_truncations_throw(value);
}

/// A count followed by a few zero bytes.
bytes_t with_count(std::uint64_t count, std::size_t tail_bytes = 64) {
  bytes_t bytes(sizeof count + tail_bytes);
  std::memcpy(bytes.data(), &count, sizeof count);
  return bytes;
}

/// Reads a T from `bytes`; returns the largest single allocation made meanwhile and whether
/// serialization_error was thrown (any other exception fails the test).
template <class T>
std::size_t largest_allocation_reading(std::span<const std::byte> bytes, bool& threw) {
  threw = false;
  g_largest.store(0);
  g_tracking.store(true);
  try {
    (void)apgas::from_bytes<T>(bytes);
  } catch (const serialization_error&) {
    threw = true;
  }
  g_tracking.store(false);
  return g_largest.load();
}

// --- The concept -------------------------------------------------------------------------

// Sendable.
static_assert(serializable<int>);
static_assert(serializable<const int>);
static_assert(serializable<bool>);
static_assert(serializable<char>);
static_assert(serializable<unsigned char>);
static_assert(serializable<long double>);
static_assert(serializable<std::byte>);
static_assert(serializable<color>);
static_assert(serializable<legacy>);
static_assert(serializable<std::nullptr_t>);
static_assert(serializable<pod>);
static_assert(serializable<std::complex<double>>);
static_assert(serializable<std::chrono::nanoseconds>);
static_assert(serializable<std::bitset<100>>);
static_assert(serializable<std::monostate>);
static_assert(serializable<std::string>);
static_assert(serializable<std::u32string>);
static_assert(serializable<std::vector<int>>);
static_assert(serializable<std::vector<bool>>);
static_assert(serializable<std::vector<std::string>>);
static_assert(serializable<std::vector<std::vector<pod>>>);
static_assert(serializable<std::deque<int>>);
static_assert(serializable<std::list<std::string>>);
static_assert(serializable<std::array<int, 4>>);
static_assert(serializable<std::array<std::string, 4>>);
static_assert(serializable<int[4]>);
static_assert(serializable<std::string[2][3]>);
static_assert(serializable<std::pair<int, std::string>>);
static_assert(serializable<std::tuple<>>);
static_assert(serializable<std::tuple<int, std::string, std::vector<double>>>);
static_assert(serializable<std::optional<std::string>>);
static_assert(serializable<std::variant<std::monostate, int, std::string>>);
static_assert(serializable<std::map<std::string, int>>);
static_assert(serializable<std::multimap<int, int>>);
static_assert(serializable<std::unordered_map<int, std::vector<int>>>);
static_assert(serializable<std::unordered_multimap<int, int>>);
static_assert(serializable<std::set<std::string>>);
static_assert(serializable<std::multiset<int>>);
static_assert(serializable<std::unordered_set<int>>);
static_assert(serializable<std::unordered_multiset<int>>);
static_assert(
    serializable<
        std::vector<std::map<std::string, std::optional<std::pair<int, std::vector<double>>>>>>);
static_assert(serializable<inner>);
static_assert(serializable<outer>);
static_assert(serializable<partial>);
static_assert(serializable<tree>);
static_assert(serializable<nothing>);
static_assert(serializable<derived_ok>);
static_assert(serializable<geo::point>);
static_assert(serializable<geo::small>);
static_assert(serializable<std::vector<geo::point>>);
static_assert(serializable<std::map<geo::point, std::optional<geo::point>>>);

// Not sendable: addresses of this place.
struct some_class {
  int m_x;
  void f() {}
};
static_assert(!serializable<int*>);
static_assert(!serializable<const int*>);
static_assert(!serializable<int* const>);
static_assert(!serializable<void*>);
static_assert(!serializable<const char*>);
static_assert(!serializable<pod*>);
static_assert(!serializable<void (*)()>);
static_assert(!serializable<int some_class::*>);
static_assert(!serializable<void (some_class::*)()>);
static_assert(!serializable<int&>);
static_assert(!serializable<const int&>);
static_assert(!serializable<int&&>);
static_assert(!serializable<std::unique_ptr<int>>);
static_assert(!serializable<std::shared_ptr<int>>);
static_assert(!serializable<std::weak_ptr<int>>);
static_assert(!serializable<std::string_view>);
static_assert(!serializable<std::span<int>>);
static_assert(!serializable<std::span<const int, 3>>);
static_assert(!serializable<std::vector<int>::iterator>);
static_assert(!serializable<std::map<int, int>::const_iterator>);
static_assert(!serializable<std::reference_wrapper<int>>);
static_assert(!serializable<std::coroutine_handle<>>);
// ... also when nested anywhere.
static_assert(!serializable<std::vector<int*>>);
static_assert(!serializable<std::vector<std::unique_ptr<int>>>);
static_assert(!serializable<std::array<int*, 3>>);
static_assert(!serializable<int* [3]>);
static_assert(!serializable<std::pair<int, int*>>);
static_assert(!serializable<const std::pair<int, int*>>);
static_assert(!serializable<std::tuple<int, std::string, const char*>>);
static_assert(!serializable<std::optional<int*>>);
static_assert(!serializable<std::variant<int, std::string_view>>);
static_assert(!serializable<std::map<std::string, int*>>);
static_assert(!serializable<std::map<int*, int>>);
static_assert(!serializable<std::set<int*>>);
static_assert(!serializable<std::vector<std::map<int, std::optional<std::shared_ptr<int>>>>>);
// Callables.
using lambda_t = decltype([] { return 1; });
using capturing_lambda_t = decltype([k = 3](int x) { return x + k; });
static_assert(std::is_trivially_copyable_v<capturing_lambda_t>); // hence the check
static_assert(!serializable<lambda_t>);
static_assert(!serializable<capturing_lambda_t>);
static_assert(!serializable<std::function<void()>>);
static_assert(!serializable<functor>);
static_assert(!serializable<empty_functor>);
static_assert(!serializable<std::vector<std::function<int(int)>>>);
// Neither trivially copyable nor declaring how.
static_assert(!serializable<std::mutex>);
static_assert(!serializable<with_mutex>);
static_assert(!serializable<with_pointer_free_but_not_copyable>);
static_assert(!serializable<std::atomic<int>>);
static_assert(!serializable<std::vector<with_mutex>>);
// Declaring how, wrongly.
static_assert(!serializable<derived_silent>);
static_assert(!serializable<no_default>);
static_assert(!serializable<geo::half>);
// Not types of values.
static_assert(!serializable<void>);
static_assert(!serializable<int[]>);
static_assert(!serializable<void()>);

// The reason given is that of the innermost culprit.
using apgas::detail::ser_kind;
using apgas::detail::verdict_v;
static_assert(verdict_v<int> == ser_kind::none);
static_assert(verdict_v<std::vector<int*>> == ser_kind::bad_pointer);
static_assert(verdict_v<std::map<int, void (*)()>> == ser_kind::bad_function_pointer);
static_assert(verdict_v<std::optional<std::unique_ptr<int>>> == ser_kind::bad_smart_pointer);
static_assert(verdict_v<std::tuple<int, std::span<int>>> == ser_kind::bad_view);
static_assert(verdict_v<std::pair<int, std::function<void()>>> == ser_kind::bad_callable);
static_assert(verdict_v<std::vector<with_mutex>> == ser_kind::bad_not_trivially_copyable);
static_assert(verdict_v<derived_silent> == ser_kind::bad_member_inherited);
static_assert(verdict_v<no_default> == ser_kind::bad_member_not_default_constructible);
static_assert(verdict_v<geo::half> == ser_kind::bad_adl_half);
static_assert(verdict_v<std::tuple<int&>> == ser_kind::bad_reference);

// --- Writer and reader -------------------------------------------------------------------

TEST(byte_writer, owns_its_buffer_or_appends_to_the_given_one) {
  byte_writer owned;
  apgas::serialize(owned, std::int32_t{7});
  EXPECT_EQ(owned.size(), 4U);
  byte_writer moved(std::move(owned)); // the owned buffer moves with it
  apgas::serialize(moved, std::int32_t{8});
  EXPECT_EQ(moved.size(), 8U);
  bytes_t taken = moved.take();
  EXPECT_EQ(taken.size(), 8U);
  EXPECT_EQ(moved.size(), 0U);

  bytes_t external{std::byte{0xAA}};
  byte_writer w(external);
  w.reserve(100);
  apgas::serialize(w, std::uint16_t{0x0102});
  ASSERT_EQ(external.size(), 3U); // appended after the byte it held
  EXPECT_EQ(external[0], std::byte{0xAA});
  byte_writer w2;
  w2 = std::move(w); // still writes to `external`
  apgas::serialize(w2, std::uint8_t{5});
  EXPECT_EQ(external.size(), 4U);
  EXPECT_EQ(w2.bytes().size(), 4U);
}

TEST(byte_reader, reads_are_bounds_checked) {
  const bytes_t bytes{std::byte{1}, std::byte{2}, std::byte{3}};
  byte_reader r(bytes);
  std::byte two[2];
  r.read_bytes(two, 2);
  EXPECT_EQ(two[1], std::byte{2});
  EXPECT_EQ(r.position(), 2U);
  EXPECT_EQ(r.remaining(), 1U);
  EXPECT_THROW(r.expect_end(), serialization_error);
  EXPECT_THROW(r.read_bytes(two, 2), serialization_error);
  EXPECT_THROW((void)r.read_span(2), serialization_error);
  EXPECT_EQ(r.position(), 2U); // a failed read consumes nothing
  EXPECT_EQ(r.read_span(1)[0], std::byte{3});
  EXPECT_TRUE(r.at_end());
  EXPECT_NO_THROW(r.expect_end());
  EXPECT_THROW((void)r.read_span(1), serialization_error);
  EXPECT_NO_THROW((void)r.read_span(0));
}

TEST(byte_reader, errors_say_what_and_where) {
  const bytes_t bytes = apgas::to_bytes(std::int32_t{1});
  byte_reader r(bytes);
  try {
    (void)apgas::deserialize<std::int64_t>(r);
    FAIL() << "no exception";
  } catch (const serialization_error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  EXPECT_THROW(r.fail("bad tag"), serialization_error);
  static_assert(std::is_base_of_v<std::runtime_error, serialization_error>);
}

TEST(byte_reader, read_length_checks_against_the_bytes_left) {
  byte_writer w;
  w.write_length(3);
  w.write_bytes(bytes_t(12).data(), 12);
  {
    byte_reader r(w.bytes());
    EXPECT_EQ(r.read_length(4), 3U); // 3 x 4 = 12 bytes: fits
  }
  {
    byte_reader r(w.bytes());
    EXPECT_THROW((void)r.read_length(5), serialization_error); // 15 > 12
  }
  {
    byte_reader r(w.bytes());
    EXPECT_EQ(r.read_length(0), 3U); // 0 counts as 1
  }
}

// --- Round trips -------------------------------------------------------------------------

TEST(round_trip, arithmetic) {
  check(std::int32_t{-123456});
  check(std::numeric_limits<std::int64_t>::min());
  check(std::numeric_limits<std::uint64_t>::max());
  check(std::int8_t{-5});
  check('x');
  check(static_cast<char>(0xFF));
  check(3.25);
  check(-0.0f);
  check(std::numeric_limits<double>::infinity());
  check(true);
  check(false);
  check(std::byte{0x7F});
  check(nullptr);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double back = round_trip(nan);
  EXPECT_EQ(std::memcmp(&nan, &back, sizeof nan), 0);
  EXPECT_EQ(apgas::serialized_size(1.0), sizeof(double));
  EXPECT_EQ(apgas::serialized_size(true), 1U);
}

TEST(round_trip, enums) {
  check(color::blue);
  check(legacy_b);
  EXPECT_EQ(apgas::serialized_size(color::green), 1U);
}

TEST(round_trip, trivially_copyable_struct) {
  check(pod{42, 2.5, {'a', 'b', 'c'}, color::green});
  EXPECT_EQ(apgas::serialized_size(pod{}), sizeof(pod));
  check(std::complex<double>(1.5, -2.0));
  check(std::chrono::milliseconds(1234));
  check(std::bitset<70>(0x123456789ULL));
}

TEST(round_trip, strings) {
  check(std::string());
  check(std::string("hello, places"));
  check(std::string("with\0nul", 8));
  check(std::string(3000, 'z'));
  check(std::u16string(u"été"));
  check(std::u32string(U"\U0001F600 wide"));
  check(std::wstring(L"wide"));
  EXPECT_EQ(apgas::serialized_size(std::string("abc")), 8U + 3U);
}

TEST(round_trip, vectors) {
  check(std::vector<int>{});
  check(std::vector<int>{1, 2, 3, -4});
  check(std::vector<double>(1000, 0.5));
  check(std::vector<std::string>{"", "a", "bcd"});
  check(std::vector<std::vector<int>>{{}, {1}, {2, 3}});
  check(std::vector<pod>{pod{1, 1.0, {'x', 'y', 'z'}, color::red}});
  check(std::vector<std::array<int, 3>>{{1, 2, 3}, {4, 5, 6}});
  check(std::vector<color>{color::red, color::blue});
  check(std::vector<with_defaults>{{1, 2}, {3, 4}, {}});
  check(std::vector<with_defaults>{});
  EXPECT_EQ(apgas::serialized_size(std::vector<int>{1, 2, 3}), 8U + 12U);
}

TEST(round_trip, vectors_read_from_any_alignment) {
  // A vector's elements are read straight from the message bytes, wherever the vector starts
  // in it (here after 1 to 7 bytes): every element must come back, the first and last ones
  // included.
  std::vector<double> values(257);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.25 * static_cast<double>(i) - 3;
  for (std::size_t skew = 1; skew < 8; ++skew) {
    std::vector<std::byte> bytes;
    apgas::byte_writer w(bytes);
    for (std::size_t i = 0; i < skew; ++i) apgas::serialize(w, static_cast<std::uint8_t>(i));
    apgas::serialize(w, values);
    apgas::byte_reader r(bytes);
    for (std::size_t i = 0; i < skew; ++i) EXPECT_EQ(apgas::deserialize<std::uint8_t>(r), i);
    EXPECT_EQ(apgas::deserialize<std::vector<double>>(r), values) << "after " << skew << " bytes";
    EXPECT_EQ(r.remaining(), 0U);
  }
}

TEST(round_trip, vector_of_bool_is_packed) {
  for (std::size_t n : {0, 1, 7, 8, 9, 64, 100}) {
    std::vector<bool> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = (i * 7) % 3 == 0;
    check(v);
    EXPECT_EQ(apgas::to_bytes(v).size(), 8 + (n + 7) / 8);
  }
}

TEST(round_trip, other_sequences) {
  check(std::deque<int>{});
  check(std::deque<int>{5, 6, 7});
  check(std::list<std::string>{"x", "", "yz"});
}

TEST(round_trip, arrays) {
  check(std::array<int, 4>{1, 2, 3, 4});
  check(std::array<int, 0>{});
  check(std::array<std::string, 3>{"a", "", "c"});
  check(std::array<bool, 3>{true, false, true});
  check(std::array<std::array<double, 2>, 2>{{{1.0, 2.0}, {3.0, 4.0}}});
  EXPECT_EQ(apgas::serialized_size(std::array<int, 4>{}), 16U);
}

TEST(round_trip, c_arrays) {
  const int ints[4] = {1, -2, 3, -4};
  const bytes_t bytes = apgas::to_bytes(ints);
  EXPECT_EQ(bytes.size(), sizeof ints);
  int back[4] = {};
  byte_reader r(bytes);
  apgas::deserialize(r, back);
  EXPECT_TRUE(std::equal(std::begin(ints), std::end(ints), std::begin(back)));

  const std::string names[2][2] = {{"a", "b"}, {"", "dd"}};
  const bytes_t name_bytes = apgas::to_bytes(names);
  EXPECT_EQ(apgas::serialized_size(names), name_bytes.size());
  std::string names_back[2][2];
  byte_reader r2(name_bytes);
  apgas::deserialize(r2, names_back);
  EXPECT_EQ(names_back[1][1], "dd");
  EXPECT_EQ(names_back[0][1], "b");
  EXPECT_TRUE(r2.at_end());

  for (std::size_t n = 0; n < name_bytes.size(); ++n) {
    byte_reader cut(std::span<const std::byte>(name_bytes).first(n));
    EXPECT_THROW(apgas::deserialize(cut, names_back), serialization_error);
  }
}

TEST(round_trip, pairs_and_tuples) {
  check(std::pair<int, std::string>{7, "seven"});
  check(std::tuple<>{});
  check(std::tuple<int, std::string, std::vector<double>, bool>{1, "one", {1.0}, true});
  check(std::pair<const int, std::string>{3, "c"});
  EXPECT_EQ(apgas::serialized_size(std::tuple<>{}), 0U);
}

TEST(round_trip, optionals) {
  check(std::optional<int>{});
  check(std::optional<int>{5});
  check(std::optional<std::string>{"x"});
  check(std::optional<std::optional<int>>{std::optional<int>{}});
  EXPECT_EQ(apgas::serialized_size(std::optional<int>{}), 1U);
}

TEST(round_trip, variants) {
  using v_t = std::variant<std::monostate, int, std::string, std::vector<int>, int>;
  check(v_t{});
  check(v_t{std::in_place_index<1>, 5});
  check(v_t{std::in_place_index<4>, 6}); // same type, other index: the index travels
  check(v_t{std::string("s")});
  check(v_t{std::vector<int>{1, 2}});
  EXPECT_EQ(round_trip(v_t{std::in_place_index<4>, 6}).index(), 4U);
}

/// Not trivially copyable, so that a failed emplace leaves a variant valueless.
struct throws_on_int {
  throws_on_int() = default;
  throws_on_int(const throws_on_int&) {}
  throws_on_int& operator=(const throws_on_int&) { return *this; }
  explicit throws_on_int(int) { throw std::runtime_error("no"); }
  template <class A>
  void serialize(A&) {}
};

TEST(round_trip, valueless_variant_cannot_be_written) {
  std::variant<int, throws_on_int> v;
  EXPECT_THROW(v.emplace<throws_on_int>(1), std::runtime_error);
  ASSERT_TRUE(v.valueless_by_exception());
  byte_writer w;
  EXPECT_THROW(apgas::serialize(w, v), serialization_error);
}

TEST(round_trip, maps_and_sets) {
  check(std::map<std::string, int>{});
  check(std::map<std::string, int>{{"a", 1}, {"b", 2}});
  check(std::multimap<int, std::string>{{1, "x"}, {1, "y"}, {0, "z"}});
  check(std::unordered_map<int, std::vector<int>>{{1, {1}}, {2, {}}, {3, {3, 3}}});
  check(std::unordered_multimap<int, int>{{1, 1}, {1, 2}});
  check(std::set<std::string>{"p", "q"});
  check(std::multiset<int>{3, 3, 1});
  check(std::unordered_set<int>{});
  check(std::unordered_set<int>{4, 5, 6});
  check(std::unordered_multiset<std::string>{"a", "a"});
}

TEST(round_trip, nested_containers) {
  using nested =
      std::vector<std::map<std::string, std::optional<std::pair<int, std::vector<double>>>>>;
  nested value(3);
  value[0]["one"] = std::pair<int, std::vector<double>>{1, {1.5, 2.5}};
  value[0]["none"] = std::nullopt;
  value[0]["empty"] = std::pair<int, std::vector<double>>{0, {}};
  value[2][""] = std::pair<int, std::vector<double>>{-1, std::vector<double>(50, 3.0)};
  check(value);
  check(nested{});
}

// --- User types --------------------------------------------------------------------------

inner make_inner(std::string name, int n) {
  inner i{std::move(name), {}};
  for (int k = 0; k < n; ++k) i.m_values.push_back(k * k);
  return i;
}

TEST(user_types, member_serialize) {
  check(make_inner("alpha", 3));
  check(inner{});
  outer o;
  o.m_inner = make_inner("in", 2);
  o.m_by_name["k"] = make_inner("v", 1);
  o.m_maybe = make_inner("maybe", 0);
  o.m_grid[1][2] = 9;
  o.m_pair_of_names = {"left", "right"};
  o.m_flag = true;
  check(o);
  check(outer{});
  check(std::vector<inner>{make_inner("a", 1), make_inner("b", 2)});
  check(std::map<inner, std::optional<inner>>{{make_inner("k", 1), std::nullopt}});
}

TEST(user_types, declared_serialization_wins_over_bytewise_copy) {
  const partial p{5, 6};
  EXPECT_EQ(apgas::to_bytes(p).size(), sizeof(int));
  const partial back = round_trip(p);
  EXPECT_EQ(back.m_kept, 5);
  EXPECT_EQ(back.m_dropped, 0);

  const geo::small s{0x12345};
  EXPECT_EQ(apgas::to_bytes(s).size(), 2U);
  EXPECT_EQ(round_trip(s).m_v, 0x2345U);
}

TEST(user_types, recursive) {
  tree t{1, {tree{2, {}}, tree{3, {tree{4, {}}}}}};
  check(t);
}

TEST(user_types, derived_with_its_own_serialize) {
  derived_ok d;
  d.m_a = 1;
  d.m_b = 2;
  const derived_ok back = round_trip(d);
  EXPECT_EQ(back.m_a, 1);
  EXPECT_EQ(back.m_b, 2);
}

TEST(user_types, adl_functions) {
  check(geo::point(3, -4));
  check(std::vector<geo::point>{geo::point(1, 2), geo::point(3, 4)});
  check(std::optional<geo::point>(geo::point(5, 6)));
  check(std::variant<int, geo::point>(geo::point(7, 8)));
  check(std::map<geo::point, geo::point>{{geo::point(0, 0), geo::point(1, 1)}});
  check(std::array<geo::point, 2>{geo::point(1, 1), geo::point(2, 2)}); // not default constructible
  check(std::pair<geo::point, std::string>{geo::point(9, 9), "p"});
  EXPECT_EQ(apgas::serialized_size(geo::point(1, 2)), 8U);
}

TEST(user_types, in_place_deserialize) {
  outer o;
  o.m_inner = make_inner("x", 4);
  const bytes_t bytes = apgas::to_bytes(o);
  outer back;
  back.m_by_name["stale"] = inner{};
  byte_reader r(bytes);
  apgas::deserialize(r, back);
  EXPECT_EQ(back, o); // every serialized field was overwritten
  int i = 0;
  const bytes_t int_bytes = apgas::to_bytes(17);
  byte_reader r2(int_bytes);
  apgas::deserialize(r2, i);
  EXPECT_EQ(i, 17);
}

TEST(user_types, elements_that_write_nothing) {
  EXPECT_EQ(apgas::to_bytes(nothing{}).size(), 0U);
  check(std::vector<nothing>{});
  // A receiver could not bound the count of elements that take no bytes: refused when sent.
  byte_writer w;
  EXPECT_THROW(apgas::serialize(w, std::vector<nothing>(3)), serialization_error);
  EXPECT_THROW(apgas::serialize(w, std::list<std::tuple<>>(2)), serialization_error);
  // ... unless the message has as many bytes after the count.
  check(std::vector<std::pair<nothing, char>>(3, {nothing{}, 'c'}));
}

// --- Argument packs ----------------------------------------------------------------------

TEST(argument_packs, serialize_all_reads_back_in_order) {
  byte_writer w;
  const std::string s = "two";
  apgas::serialize_all(w, 1, s, std::vector<double>{3.0}, geo::point(4, 4), make_inner("five", 5));
  const bytes_t bytes = w.take();
  byte_reader r(bytes);
  auto [a, b, c, d, e] =
      apgas::deserialize_all<int, std::string, std::vector<double>, geo::point, inner>(r);
  EXPECT_TRUE(r.at_end());
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, "two");
  EXPECT_EQ(c, std::vector<double>{3.0});
  EXPECT_EQ(d, geo::point(4, 4));
  EXPECT_EQ(e, make_inner("five", 5));

  for (std::size_t n = 0; n < bytes.size(); ++n) {
    byte_reader cut(std::span<const std::byte>(bytes).first(n));
    EXPECT_THROW(
        (apgas::deserialize_all<int, std::string, std::vector<double>, geo::point, inner>(cut)),
        serialization_error);
  }
}

TEST(argument_packs, empty) {
  byte_writer w;
  apgas::serialize_all(w);
  EXPECT_EQ(w.size(), 0U);
  byte_reader r(w.bytes());
  EXPECT_EQ(apgas::deserialize_all<>(r), std::tuple<>{});
}

// --- Corrupt input -----------------------------------------------------------------------

template <class T>
void expect_huge_count_rejected_cheaply() {
  for (std::uint64_t count :
       {std::uint64_t{1} << 20, std::uint64_t{1} << 28, std::uint64_t{1} << 40,
        std::uint64_t{1} << 60, std::numeric_limits<std::uint64_t>::max()}) {
    const bytes_t bytes = with_count(count);
    bool threw = false;
    const std::size_t largest = largest_allocation_reading<T>(bytes, threw);
    EXPECT_TRUE(threw) << "count " << count;
    EXPECT_LT(largest, 4096U) << "count " << count << " made the reader allocate " << largest;
  }
}

TEST(corrupt_input, huge_counts_throw_without_allocating) {
  expect_huge_count_rejected_cheaply<std::string>();
  expect_huge_count_rejected_cheaply<std::u32string>();
  expect_huge_count_rejected_cheaply<std::vector<int>>();
  expect_huge_count_rejected_cheaply<std::vector<char>>();
  expect_huge_count_rejected_cheaply<std::vector<std::string>>();
  expect_huge_count_rejected_cheaply<std::vector<bool>>();
  expect_huge_count_rejected_cheaply<std::vector<inner>>();
  expect_huge_count_rejected_cheaply<std::vector<geo::point>>();
  expect_huge_count_rejected_cheaply<std::vector<std::vector<double>>>();
  expect_huge_count_rejected_cheaply<std::deque<int>>();
  expect_huge_count_rejected_cheaply<std::list<int>>();
  expect_huge_count_rejected_cheaply<std::map<int, int>>();
  expect_huge_count_rejected_cheaply<std::unordered_map<int, std::string>>();
  expect_huge_count_rejected_cheaply<std::set<int>>();
  expect_huge_count_rejected_cheaply<std::unordered_set<int>>();
  expect_huge_count_rejected_cheaply<inner>(); // its string's count
}

TEST(corrupt_input, count_just_beyond_the_bytes_left) {
  bytes_t bytes = apgas::to_bytes(std::vector<std::int32_t>{1, 2, 3});
  const std::uint64_t four = 4;
  std::memcpy(bytes.data(), &four, sizeof four);
  EXPECT_THROW((void)apgas::from_bytes<std::vector<std::int32_t>>(bytes), serialization_error);
}

TEST(corrupt_input, checked_bytes) {
  EXPECT_THROW((void)apgas::from_bytes<bool>(bytes_t{std::byte{2}}), serialization_error);
  EXPECT_THROW((void)apgas::from_bytes<std::optional<int>>(bytes_t{std::byte{7}}),
               serialization_error);
  bytes_t variant_bytes = apgas::to_bytes(std::variant<int, char>{'c'});
  const std::uint64_t bad_index = 2;
  std::memcpy(variant_bytes.data(), &bad_index, sizeof bad_index);
  EXPECT_THROW((void)(apgas::from_bytes<std::variant<int, char>>(variant_bytes)),
               serialization_error);
  EXPECT_THROW((void)apgas::from_bytes<int>(bytes_t(5)), serialization_error); // left over
}

/// Random byte flips and random garbage: every read either succeeds or throws
/// serialization_error (never another exception; under ASan, never an invalid access).
template <class T>
void fuzz(const T& value, std::mt19937_64& rng, int rounds) {
  const bytes_t good = apgas::to_bytes(value);
  std::uniform_int_distribution<int> byte_value(0, 255);
  for (int round = 0; round < rounds; ++round) {
    bytes_t bytes = good;
    if (round % 4 == 3) { // garbage of a random length
      bytes.resize(std::uniform_int_distribution<std::size_t>(0, 2 * good.size())(rng));
      for (auto& b : bytes) b = static_cast<std::byte>(byte_value(rng));
    } else if (!bytes.empty()) { // flip a few bytes (sometimes high bytes of counts)
      const int flips = 1 + round % 3;
      for (int f = 0; f < flips; ++f) {
        const auto at = std::uniform_int_distribution<std::size_t>(0, bytes.size() - 1)(rng);
        bytes[at] = static_cast<std::byte>(byte_value(rng));
      }
    }
    const auto exact = std::make_unique<std::byte[]>(bytes.empty() ? 1 : bytes.size());
    std::memcpy(exact.get(), bytes.data(), bytes.size());
    try {
      (void)apgas::from_bytes<T>(std::span<const std::byte>(exact.get(), bytes.size()));
    } catch (const serialization_error&) {
    }
  }
}

TEST(corrupt_input, random_corruption_only_ever_throws_serialization_error) {
  std::mt19937_64 rng(12345);
  using nested =
      std::vector<std::map<std::string, std::optional<std::pair<int, std::vector<double>>>>>;
  nested n(2);
  n[0]["a"] = std::pair<int, std::vector<double>>{1, {1.0, 2.0}};
  n[1]["b"] = std::nullopt;
  fuzz(n, rng, 3000);
  outer o;
  o.m_inner = make_inner("in", 3);
  o.m_by_name["k"] = make_inner("v", 2);
  fuzz(o, rng, 3000);
  fuzz(tree{1, {tree{2, {tree{3, {}}}}}}, rng, 2000);
  fuzz(std::variant<int, std::string, std::vector<bool>>(std::vector<bool>(20, true)), rng, 1000);
  fuzz(
      std::tuple<std::set<int>, std::unordered_map<std::string, geo::point>, std::list<int>>{
          {1, 2}, {{"p", geo::point(1, 2)}}, {3}},
      rng, 2000);
}

} // namespace
