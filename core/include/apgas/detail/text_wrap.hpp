/// @file Word wrapping for --help texts (the runtime's options and the apps').
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace apgas::detail {

/// --help's lines, at most.
inline constexpr std::size_t k_help_width = 100;

/// @brief The words of `text` (split at spaces).
inline std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> words;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find(' ', at), text.size());
    if (end > at) words.emplace_back(text.substr(at, end - at));
    at = end + 1;
  }
  return words;
}

/// @brief `head`, then `words` from column `column` on (on the next line if `head` reaches it),
/// in lines of at most k_help_width, the later ones indented to `column`; a word is never
/// split (one longer than a line has a line to itself).
inline std::string hanging(std::string head, std::size_t column,
                           const std::vector<std::string>& words) {
  std::string out;
  std::string line = std::move(head);
  if (line.size() + 1 > column) {
    out += line + "\n";
    line.clear();
  }
  line.resize(column, ' ');
  bool empty = true; // no word on `line` yet
  for (const std::string& word : words) {
    if (!empty && line.size() + 1 + word.size() > k_help_width) {
      out += line + "\n";
      line.assign(column, ' ');
      empty = true;
    }
    if (!empty) line += ' ';
    line += word;
    empty = false;
  }
  return out + line + "\n";
}

} // namespace apgas::detail
