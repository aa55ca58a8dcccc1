/// @file How the state dump names the function of a call site (a std::source_location).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace apgas::detail {

/// @brief `function_name()` of a std::source_location as people read it. Inside a coroutine
/// GCC names the coroutine's body, whose one parameter is its frame, of a mangled type
/// ("void f()::<lambda()>::operator()(f()::<lambda()>::_ZZ1fvENKUlvE_clEv.Frame*)"): that
/// parameter list becomes "(...)". Any other name is kept as it is.
inline std::string readable_function_name(std::string_view name) {
  constexpr std::string_view k_frame = ".Frame*)";
  const std::size_t frame = name.find(k_frame);
  if (frame == std::string_view::npos) return std::string(name);
  // The "(" that opens this parameter list: the frame's type holds balanced "()" of its own.
  const std::size_t close = frame + k_frame.size() - 1;
  int depth = 0;
  for (std::size_t i = close + 1; i-- > 0;) {
    if (name[i] == ')') ++depth;
    else if (name[i] == '(' && --depth == 0)
      return std::string(name.substr(0, i)) + "(...)" + std::string(name.substr(close + 1));
  }
  return std::string(name);
}

} // namespace apgas::detail
