// Arguments of remote calls that fail on their way, for the multi-place suites.
#pragma once

#include <apgas/serialization.hpp>

#include <stdexcept>
#include <type_traits>

/// An argument whose serialization throws (a user type that refuses to be sent).
struct refuses_to_travel {
  int value = 0;
  template <class A>
  void serialize(A& a) {
    if constexpr (std::is_same_v<A, apgas::output_archive>)
      throw std::runtime_error("refuses to travel");
    a& value;
  }
};

/// An argument that travels but refuses to be read at the other end (value < 0).
struct unreadable_if_negative {
  int value = 0;
  template <class A>
  void serialize(A& a) {
    a& value;
    if constexpr (std::is_same_v<A, apgas::input_archive>)
      if (value < 0) throw std::runtime_error("unreadable");
  }
};
