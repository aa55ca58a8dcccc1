// The JSON emitter: string escaping and number formatting.
#include "apgas_apps/json.hpp"

#include <fmt/format.h>

#include <cmath>

namespace apgas_apps {

namespace {

/// Length of the valid UTF-8 sequence at the start of `s`, or 0 if it is not one.
std::size_t utf8_length(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80) return 1;
  // The lead byte gives the length; each length has a smallest code point (shorter is overlong).
  std::size_t n = 0;
  if ((b0 & 0xe0) == 0xc0) n = 2;
  else if ((b0 & 0xf0) == 0xe0) n = 3;
  else if ((b0 & 0xf8) == 0xf0) n = 4;
  if (n == 0 || s.size() < n) return 0;
  constexpr char32_t k_min[] = {0, 0, 0x80, 0x800, 0x10000};
  char32_t cp = b0 & (0x7f >> n);
  for (std::size_t i = 1; i < n; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3f);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not valid UTF-8.
  if (cp < k_min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

} // namespace

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  while (!s.empty()) {
    const char c = s[0];
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
      } else if (const std::size_t n = utf8_length(s); n == 0) {
        out += "\\ufffd";
      } else {
        out.append(s.data(), n);
        s.remove_prefix(n);
        continue;
      }
    }
    s.remove_prefix(1);
  }
  out += '"';
  return out;
}

json_value::json_value(double v) {
  if (std::isfinite(v)) m_json = fmt::format("{}", v);
  else m_json = "null";
  m_text = fmt::format("{}", v);
}

json_value json_value::array(const std::vector<std::string>& items) {
  json_value v;
  v.m_json = "[";
  v.m_text.clear();
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) {
      v.m_json += ", ";
      v.m_text += "; ";
    }
    v.m_json += json_quote(items[i]);
    v.m_text += items[i];
  }
  v.m_json += "]";
  return v;
}

json_object& json_object::add(std::string_view key, json_value v) {
  for (auto& [k, old] : m_fields) {
    if (k == key) {
      old = std::move(v);
      return *this;
    }
  }
  m_fields.emplace_back(std::string(key), std::move(v));
  return *this;
}

json_object& json_object::add(const json_object& other) {
  for (const auto& [k, v] : other.m_fields) add(k, v);
  return *this;
}

std::string json_object::str() const {
  std::string out = "{";
  for (std::size_t i = 0; i < m_fields.size(); ++i) {
    if (i > 0) out += ", ";
    out += json_quote(m_fields[i].first);
    out += ": ";
    out += m_fields[i].second.json();
  }
  out += "}";
  return out;
}

} // namespace apgas_apps
