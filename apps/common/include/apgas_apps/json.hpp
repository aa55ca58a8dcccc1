/// @file A tiny JSON emitter for the apps' --json output: flat objects, keys kept in order.
#pragma once

#include <concepts>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace apgas_apps {

/// @brief `s` as a JSON string literal, quotes included. Control characters are escaped and
/// invalid UTF-8 becomes U+FFFD, so exception texts cannot break the output.
std::string json_quote(std::string_view s);

/// @brief One JSON value, kept as its literal (and as plain text for human-readable output).
class json_value {
public:
  json_value() : m_json("null"), m_text("-") {}
  json_value(bool b) : m_json(b ? "true" : "false"), m_text(m_json) {}
  // const char* would otherwise convert to bool rather than to string_view.
  json_value(const char* s) : json_value(std::string_view(s)) {}
  json_value(const std::string& s) : json_value(std::string_view(s)) {}
  json_value(std::string_view s) : m_json(json_quote(s)), m_text(s) {}
  template <std::integral I>
  requires(!std::same_as<I, bool>) json_value(I v) : m_json(std::to_string(v)), m_text(m_json) {}
  /// Shortest text that reads back exactly; NaN and infinities become null.
  json_value(double v);
  /// @brief A JSON array of strings.
  static json_value array(const std::vector<std::string>& items);

  const std::string& json() const noexcept { return m_json; }
  const std::string& text() const noexcept { return m_text; }

private:
  std::string m_json;
  std::string m_text;
};

/// @brief A JSON object; adding a key that exists replaces its value (no duplicate keys).
class json_object {
public:
  json_object& add(std::string_view key, json_value v);
  /// @brief Adds every field of `other`, in its order.
  json_object& add(const json_object& other);
  bool empty() const noexcept { return m_fields.empty(); }
  /// @brief The object on one line, `{"key": value, ...}`.
  std::string str() const;

private:
  std::vector<std::pair<std::string, json_value>> m_fields;
};

} // namespace apgas_apps
