// The exception codec (exception_codec.hpp), without MPI or a runtime: round trips of every
// kind of exception, nesting and its depth bound, and damaged input (refused with
// serialization_error, never a crash: ASan and UBSan in the sanitizer presets).
#include <apgas/detail/exception_codec.hpp>
#include <apgas/place.hpp>
#include <apgas/remote_exceptions.hpp>

#include "coded_error.hpp"
#include <gtest/gtest.h>

#include <cstring>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

/// A registered type that refuses to be written.
class shy_error : public std::runtime_error {
public:
  explicit shy_error(const std::string& what) : std::runtime_error(what) {}
  friend void apgas_serialize(apgas::byte_writer&, const shy_error&) {
    throw std::runtime_error("shy");
  }
  friend shy_error apgas_deserialize(apgas::byte_reader&, std::type_identity<shy_error>) {
    return shy_error("never read");
  }
};

APGAS_REGISTER_EXCEPTION(shy_error);

namespace {

using apgas::detail::decode_exception;
using apgas::detail::encode_exception;
using apgas::detail::place_id;

constexpr place_id k_places = 8;

/// A type nobody registered.
class unknown_error : public std::logic_error {
public:
  using std::logic_error::logic_error;
};

template <class E>
std::exception_ptr ptr(E e) {
  return std::make_exception_ptr(std::move(e));
}

/// `e` as written at place `here` and read back.
std::exception_ptr round_trip(const std::exception_ptr& e, place_id here) {
  return decode_exception(encode_exception(e, here), k_places);
}

/// "<origin place> <origin type> | <what()>" of remote<E> exactly, or why it is not one.
template <class E>
std::string as_remote(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const E& x) {
    const auto* r = dynamic_cast<const apgas::remote<E>*>(&x);
    if (r == nullptr) return "not a remote<E>";
    const apgas::remote_origin& o = *r;
    return std::to_string(o.place()) + " " + o.type_name() + " | " + x.what();
  } catch (const std::exception& x) {
    return "another type: " + apgas::detail::demangled_name(typeid(x));
  }
}

template <class E>
void expect_text_type(place_id here) {
  const std::string name = apgas::detail::demangled_name(typeid(E));
  EXPECT_EQ(as_remote<E>(round_trip(ptr(E("some text")), here)),
            std::to_string(here) + " " + name + " | some text");
}

TEST(exception_codec, standard_and_apgas_types_come_back_as_themselves) {
  expect_text_type<std::logic_error>(1);
  expect_text_type<std::domain_error>(2);
  expect_text_type<std::invalid_argument>(3);
  expect_text_type<std::length_error>(4);
  expect_text_type<std::out_of_range>(5);
  expect_text_type<std::runtime_error>(6);
  expect_text_type<std::range_error>(7);
  expect_text_type<std::overflow_error>(0);
  expect_text_type<std::underflow_error>(1);
  expect_text_type<apgas::usage_error>(2);
  expect_text_type<apgas::serialization_error>(3);
  EXPECT_EQ(as_remote<std::bad_alloc>(round_trip(ptr(std::bad_alloc()), 4)),
            "4 std::bad_alloc | " + std::string(std::bad_alloc().what()));
  const std::exception_ptr bad = round_trip(ptr(apgas::bad_place(9, 4)), 5);
  EXPECT_EQ(as_remote<apgas::bad_place>(bad),
            "5 apgas::bad_place | apgas: place 9 does not exist (places are 0 to 3)");
  try {
    std::rethrow_exception(bad);
  } catch (const apgas::bad_place& e) {
    EXPECT_EQ(e.place(), 9U); // its own place: the one it refused
  }
}

TEST(exception_codec, a_registered_type_travels_with_its_fields) {
  const std::exception_ptr e = round_trip(ptr(coded_error("over quota", 42)), 3);
  EXPECT_EQ(as_remote<coded_error>(e), "3 coded_error | over quota");
  try {
    std::rethrow_exception(e);
  } catch (const coded_error& c) {
    EXPECT_EQ(c.code(), 42);
  }
}

TEST(exception_codec, fields_that_do_not_read_back_or_cannot_be_written_leave_the_text) {
  for (const std::exception_ptr& e : {round_trip(ptr(coded_error("unreadable", -1)), 2),
                                      round_trip(ptr(shy_error("unwritable")), 2)}) {
    try {
      std::rethrow_exception(e);
    } catch (const apgas::remote_exception& r) {
      EXPECT_EQ(r.place(), 2U);
      EXPECT_TRUE(r.text() == "coded_error: unreadable" || r.text() == "shy_error: unwritable")
          << r.text();
    } catch (...) {
      ADD_FAILURE() << "not a remote_exception";
    }
  }
}

TEST(exception_codec, other_types_arrive_as_remote_exception) {
  try {
    std::rethrow_exception(round_trip(ptr(unknown_error("who knows")), 6));
  } catch (const apgas::remote_exception& r) {
    EXPECT_EQ(r.place(), 6U);
    EXPECT_EQ(r.type_name(), "(anonymous namespace)::unknown_error");
    EXPECT_STREQ(r.what_there(), "who knows");
    EXPECT_EQ(r.text(), "(anonymous namespace)::unknown_error: who knows");
    EXPECT_STREQ(r.what(), "at place 6: (anonymous namespace)::unknown_error: who knows");
  }
  try {
    std::rethrow_exception(round_trip(std::make_exception_ptr(3.5), 1));
  } catch (const apgas::remote_exception& r) {
    EXPECT_EQ(r.type_name(), "double");
  }
}

TEST(exception_codec, an_exception_that_crossed_before_keeps_its_first_place) {
  // Written again at place 7 (it passes through): still from place 2, and of its type.
  const std::exception_ptr once = round_trip(ptr(std::out_of_range("far")), 2);
  EXPECT_EQ(as_remote<std::out_of_range>(round_trip(once, 7)), "2 std::out_of_range | far");
  const std::exception_ptr text = round_trip(ptr(unknown_error("far")), 2);
  try {
    std::rethrow_exception(round_trip(text, 7));
  } catch (const apgas::remote_exception& r) {
    EXPECT_EQ(r.place(), 2U);
    EXPECT_EQ(r.text(), "(anonymous namespace)::unknown_error: far");
  }
}

/// ME{ME{a, ME{b}}, c}: a and b thrown at place 1, c here.
std::exception_ptr nested_sample() {
  const auto a = round_trip(ptr(std::runtime_error("a")), 1);
  const auto b = round_trip(ptr(std::invalid_argument("b")), 1);
  const auto inner = ptr(apgas::multiple_exceptions({a, ptr(apgas::multiple_exceptions({b}))}));
  return ptr(apgas::multiple_exceptions({inner, ptr(std::length_error("c"))}));
}

TEST(exception_codec, multiple_exceptions_keep_their_structure_and_counts) {
  const std::exception_ptr e = round_trip(nested_sample(), 3);
  try {
    std::rethrow_exception(e);
  } catch (const apgas::multiple_exceptions& m) {
    EXPECT_STREQ(m.what(), "3 activities failed; first: at place 1: std::runtime_error: a");
    ASSERT_EQ(m.exceptions().size(), 2U);
    const auto failures = m.flattened();
    ASSERT_EQ(failures.size(), 3U);
    EXPECT_EQ(as_remote<std::runtime_error>(failures[0]), "1 std::runtime_error | a");
    EXPECT_EQ(as_remote<std::invalid_argument>(failures[1]), "1 std::invalid_argument | b");
    EXPECT_EQ(as_remote<std::length_error>(failures[2]), "3 std::length_error | c");
    try {
      std::rethrow_exception(m.exceptions()[0]);
    } catch (const apgas::multiple_exceptions& inner) {
      EXPECT_EQ(inner.exceptions().size(), 2U);
    }
  }
}

/// A multiple_exceptions `levels` deep, holding two failures at each level.
std::exception_ptr deep(unsigned levels) {
  std::exception_ptr e = ptr(std::runtime_error("bottom"));
  for (unsigned i = 0; i < levels; ++i)
    e = ptr(apgas::multiple_exceptions({e, ptr(std::runtime_error("level"))}));
  return e;
}

/// Levels of multiple_exceptions from the top of `e`, following the first element.
unsigned depth_of(std::exception_ptr e) {
  unsigned d = 0;
  for (;;) {
    try {
      std::rethrow_exception(e);
    } catch (const apgas::multiple_exceptions& m) {
      ++d;
      e = m.exceptions().front();
      continue;
    } catch (...) {
    }
    return d;
  }
}

TEST(exception_codec, nesting_beyond_the_bound_travels_flattened_and_counted) {
  constexpr unsigned k_bound = apgas::detail::k_max_exception_depth;
  for (unsigned levels : {1U, k_bound - 1, k_bound, k_bound + 1, 200U}) {
    const std::exception_ptr e = round_trip(deep(levels), 0);
    EXPECT_EQ(depth_of(e), std::min(levels, k_bound)) << levels;
    try {
      std::rethrow_exception(e);
    } catch (const apgas::multiple_exceptions& m) {
      EXPECT_EQ(m.flattened().size(), levels + 1) << levels;
      EXPECT_EQ(std::string(m.what()),
                std::to_string(levels + 1) +
                    " activities failed; first: at place 0: std::runtime_error: bottom");
    }
  }
}

TEST(exception_codec, hostile_input_is_refused) {
  const auto expect_refused = [](const std::vector<std::byte>& bytes, const char* what) {
    EXPECT_THROW((void)decode_exception(bytes, k_places), apgas::serialization_error) << what;
  };
  // Nested deeper than any writer nests: one-element multiple_exceptions, 10000 deep.
  std::vector<std::byte> bomb;
  for (int i = 0; i < 10000; ++i) {
    bomb.push_back(std::byte{1});
    const std::uint64_t one = 1;
    const auto* b = reinterpret_cast<const std::byte*>(&one);
    bomb.insert(bomb.end(), b, b + sizeof one);
  }
  expect_refused(bomb, "a depth bomb");
  // A count far beyond what the bytes hold (nothing is allocated for it).
  std::vector<std::byte> many{std::byte{1}};
  many.resize(1 + 8 + 64);
  const std::uint64_t huge = ~std::uint64_t{0} >> 4;
  std::memcpy(many.data() + 1, &huge, sizeof huge);
  expect_refused(many, "a huge count");
  // A place that does not exist, and an unknown tag.
  auto from_nowhere = encode_exception(ptr(std::runtime_error("x")), 3);
  const place_id nowhere = k_places;
  std::memcpy(from_nowhere.data() + 1, &nowhere, sizeof nowhere);
  expect_refused(from_nowhere, "a place that does not exist");
  expect_refused({std::byte{7}}, "an unknown tag");
  expect_refused({}, "nothing");
}

TEST(exception_codec, damaged_input_is_read_or_refused_never_a_crash) {
  const std::exception_ptr sample = round_trip(
      ptr(apgas::multiple_exceptions({nested_sample(), ptr(coded_error("coded", 5)),
                                      ptr(apgas::bad_place(3, 4)), ptr(unknown_error("u"))})),
      2);
  const std::vector<std::byte> good = encode_exception(sample, 2);
  long refused = 0;
  long read = 0;
  const auto attempt = [&](const std::vector<std::byte>& bytes) {
    try {
      const std::exception_ptr e = decode_exception(bytes, k_places);
      ASSERT_TRUE(e);
      (void)encode_exception(e, 0); // what was read can be written again
      ++read;
    } catch (const apgas::serialization_error&) {
      ++refused;
    }
  };
  for (std::size_t n = 0; n < good.size(); ++n) // every truncation
    attempt(std::vector<std::byte>(good.begin(), good.begin() + static_cast<long>(n)));
  EXPECT_EQ(read, 0);
  std::mt19937_64 rng(30);
  for (int round = 0; round < 20000; ++round) {
    std::vector<std::byte> bytes = good;
    switch (rng() % 3) {
    case 0: // bits flipped
      for (int i = 0, n = 1 + static_cast<int>(rng() % 4); i < n; ++i)
        bytes[rng() % bytes.size()] ^= static_cast<std::byte>(1U << (rng() % 8));
      break;
    case 1: { // an 8-byte field replaced by a random value
      const std::uint64_t v = rng();
      std::memcpy(bytes.data() + rng() % (bytes.size() - 7), &v, sizeof v);
      break;
    }
    default: // random bytes
      bytes.resize(rng() % 128);
      for (std::byte& b : bytes) b = static_cast<std::byte>(rng());
    }
    attempt(bytes);
  }
  EXPECT_GT(refused, 10000);
}

TEST(exception_codec, a_null_exception_is_not_written) {
  apgas::byte_writer w;
  EXPECT_THROW(apgas::detail::write_exception(w, nullptr, 0), std::invalid_argument);
}

} // namespace
