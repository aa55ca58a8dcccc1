// Exceptions across places (see exception_codec.hpp): the registry of the types that keep
// their type, the writer and the reader, and how an exception is told in one line.
#include "apgas/detail/exception_codec.hpp"

#include "apgas/detail/transport.hpp"
#include "apgas/place.hpp"
#include "apgas/remote_exceptions.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <typeindex>
#include <unordered_map>

namespace apgas {

remote_exception::remote_exception(detail::place_id where, std::string type_name,
                                   std::string what_there)
    : std::runtime_error(fmt::format("at place {}: {}{}{}", where, type_name,
                                     type_name.empty() ? "" : ": ", what_there)),
      remote_origin(where, type_name), m_what_there(std::move(what_there)),
      m_text(type_name.empty() ? m_what_there : type_name + ": " + m_what_there) {}

namespace detail {

namespace {

enum : std::uint8_t { k_leaf = 0, k_multiple = 1 };

/// A type's id on the wire: a hash of its mangled name, the same at every place of one binary
/// (and across builds), whatever the order of registrations. 0 means "not registered".
std::uint64_t type_id(const std::type_info& type) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL; // FNV-1a
  for (const char* c = type.name(); *c != '\0'; ++c)
    h = (h ^ static_cast<unsigned char>(*c)) * 0x100000001b3ULL;
  return h == 0 ? 1 : h;
}

/// The registered types, by id and by the type of an object (E and remote<E> alike). Filled
/// mostly before main, read on failures only: one mutex is enough.
class type_registry {
public:
  static type_registry& instance() {
    static type_registry r;
    return r;
  }
  bool add(const exception_type& t) noexcept {
    const std::uint64_t id = type_id(*t.type);
    std::lock_guard guard(m_mutex);
    try {
      const auto [it, inserted] = m_by_id.try_emplace(id, t);
      if (!inserted && *it->second.type != *t.type) {
        std::fprintf(stderr,
                     "apgas: register_exception: two exception types are named %s; one would "
                     "arrive at other places as the other (give them names of their own)\n",
                     demangled_name(*t.type).c_str());
        std::abort();
      }
      m_by_type.try_emplace(std::type_index(*t.type), id);
      m_by_type.try_emplace(std::type_index(*t.remote_type), id);
    } catch (...) { // out of memory, most likely before main: nothing could run anyway
      std::fputs("apgas: cannot register an exception type\n", stderr);
      std::abort();
    }
    return true;
  }
  /// The id and entry of an object of dynamic type `type`, or id 0.
  std::pair<std::uint64_t, exception_type> find(const std::type_info& type) const {
    std::lock_guard guard(m_mutex);
    const auto it = m_by_type.find(std::type_index(type));
    if (it == m_by_type.end()) return {0, {}};
    return {it->second, m_by_id.at(it->second)};
  }
  /// The entry of `id`, or one whose read is null.
  exception_type find(std::uint64_t id) const {
    std::lock_guard guard(m_mutex);
    const auto it = m_by_id.find(id);
    return it == m_by_id.end() ? exception_type{} : it->second;
  }

private:
  mutable std::mutex m_mutex;
  std::unordered_map<std::uint64_t, exception_type> m_by_id;
  std::unordered_map<std::type_index, std::uint64_t> m_by_type;
};

void write_tag(byte_writer& w, std::uint8_t tag) { w.write_bytes(&tag, 1); }

/// A leaf: see the wire format. A type whose fields fail to serialize goes as unregistered.
void write_leaf(byte_writer& w, const std::exception& e, place_id here) {
  const remote_origin* origin = origin_of(e);
  const std::string type_name = origin != nullptr ? origin->type_name() : demangled_name(typeid(e));
  const char* what = origin != nullptr ? origin->what_there() : e.what();
  write_tag(w, k_leaf);
  serialize(w, origin != nullptr ? origin->place() : here);
  const std::size_t start = w.size();
  auto [id, type] = type_registry::instance().find(typeid(e));
  try {
    serialize_all(w, id, type_name, std::string(what));
    const std::size_t length_at = w.size();
    w.write_length(0);
    if (id != 0) type.write(w, e);
    const std::uint64_t length = w.size() - length_at - sizeof(std::uint64_t);
    std::memcpy(w.buffer().data() + length_at, &length, sizeof length);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (...) { // its own serialization refused: it travels as text
    w.buffer().resize(start);
    serialize_all(w, std::uint64_t{0}, type_name, std::string(what), std::uint64_t{0});
  }
}

/// A leaf for what is no std::exception: its type's name, if the ABI tells it.
void write_foreign_leaf(byte_writer& w, place_id here) {
  const std::type_info* type = abi::__cxa_current_exception_type();
  write_tag(w, k_leaf);
  serialize_all(w, here, std::uint64_t{0},
                type != nullptr ? demangled_name(*type) : std::string("an unknown type"),
                std::string("an exception that is no std::exception"), std::uint64_t{0});
}

void write_node(byte_writer& w, const std::exception_ptr& e, place_id here, unsigned depth) {
  try {
    std::rethrow_exception(e);
  } catch (const multiple_exceptions& m) {
    write_tag(w, k_multiple);
    // The last level a reader accepts holds the failures themselves: counts stay right.
    const auto write_all = [&](const std::vector<std::exception_ptr>& inner) {
      w.write_length(inner.size());
      for (const std::exception_ptr& x : inner) write_node(w, x, here, depth + 1);
    };
    if (depth + 1 < k_max_exception_depth) write_all(m.exceptions());
    else write_all(m.flattened());
  } catch (const std::exception& x) {
    write_leaf(w, x, here);
  } catch (...) {
    write_foreign_leaf(w, here);
  }
}

std::exception_ptr read_leaf(byte_reader& r, place_id places) {
  const auto origin = deserialize<place_id>(r);
  if (origin >= places) r.fail(fmt::format("an exception from place {} of {}", origin, places));
  auto [id, type_name, what] = deserialize_all<std::uint64_t, std::string, std::string>(r);
  const std::span<const std::byte> fields = r.read_span(r.read_length());
  if (id != 0) {
    if (const exception_type type = type_registry::instance().find(id); type.read != nullptr) {
      try {
        byte_reader fr(fields);
        std::exception_ptr e = type.read(fr, what, origin, type_name);
        fr.expect_end();
        return e;
      } catch (const std::bad_alloc&) {
        throw;
      } catch (...) { // its fields do not read back: the text still does
      }
    }
  }
  return std::make_exception_ptr(remote_exception(origin, std::move(type_name), std::move(what)));
}

std::exception_ptr read_node(byte_reader& r, place_id places, unsigned depth) {
  if (depth > k_max_exception_depth)
    r.fail(fmt::format("exceptions nested more than {} deep", k_max_exception_depth));
  const auto tag = deserialize<std::uint8_t>(r);
  if (tag == k_leaf) return read_leaf(r, places);
  if (tag != k_multiple) r.fail(fmt::format("an exception tagged {}", tag));
  const std::size_t n = r.read_length(k_min_exception_bytes);
  std::vector<std::exception_ptr> inner;
  inner.reserve(n);
  for (std::size_t i = 0; i < n; ++i) inner.push_back(read_node(r, places, depth + 1));
  return std::make_exception_ptr(multiple_exceptions(std::move(inner)));
}

// The types apgas knows: the standard ones, and its own (clocks registers its own type).
[[maybe_unused]] const bool k_known_types_registered =
    register_exception<std::logic_error>() && register_exception<std::domain_error>() &&
    register_exception<std::invalid_argument>() && register_exception<std::length_error>() &&
    register_exception<std::out_of_range>() && register_exception<std::runtime_error>() &&
    register_exception<std::range_error>() && register_exception<std::overflow_error>() &&
    register_exception<std::underflow_error>() && register_exception<std::bad_alloc>() &&
    register_exception<bad_place>() && register_exception<usage_error>() &&
    register_exception<serialization_error>() && register_exception<transport_error>();

} // namespace

bool register_exception_type(const exception_type& type) noexcept {
  return type_registry::instance().add(type);
}

void write_exception(byte_writer& w, const std::exception_ptr& e, place_id here) {
  if (!e) throw std::invalid_argument("apgas: write_exception of a null exception_ptr");
  write_node(w, e, here, 0);
}

std::exception_ptr read_exception(byte_reader& r, place_id places) {
  return read_node(r, places, 0);
}

std::vector<std::byte> encode_exception(const std::exception_ptr& e, place_id here) {
  byte_writer w;
  write_exception(w, e, here);
  return w.take();
}

std::exception_ptr decode_exception(std::span<const std::byte> bytes, place_id places) {
  byte_reader r(bytes);
  std::exception_ptr e = read_exception(r, places);
  r.expect_end();
  return e;
}

std::exception_ptr across_places(const std::exception_ptr& e, place_id here, place_id places) {
  return decode_exception(encode_exception(e, here), places);
}

std::string demangled_name(const std::type_info& type) {
  // GCC marks the names of types of internal linkage with a leading '*'.
  const char* name = type.name()[0] == '*' ? type.name() + 1 : type.name();
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d != nullptr ? d : name;
  std::free(d);
  return out;
}

std::string describe_current_exception() {
  try {
    throw;
  } catch (const multiple_exceptions& e) {
    std::string s = "apgas::multiple_exceptions:";
    for (const auto& inner : e.flattened()) {
      try {
        std::rethrow_exception(inner);
      } catch (...) {
        s += " [" + describe_current_exception() + "]";
      }
    }
    return s;
  } catch (const std::exception& e) {
    const remote_origin* origin = origin_of(e);
    return demangled_name(typeid(e)) + ": " + (origin != nullptr ? origin->describe() : e.what());
  } catch (...) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    return type != nullptr ? "an exception of type " + demangled_name(*type)
                           : "an exception of unknown type";
  }
}

} // namespace detail
} // namespace apgas
