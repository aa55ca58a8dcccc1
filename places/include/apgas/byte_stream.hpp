/// @file The byte streams of serialization: byte_writer appends to a buffer, byte_reader reads
/// from one with every read bounds-checked, and the archives a user type's member
/// `template <class A> void serialize(A& a)` gets. What travels and how is in
/// <apgas/serialization.hpp>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace apgas {

static_assert(sizeof(std::size_t) <= sizeof(std::uint64_t), "apgas: counts are sent as 64-bit");

/// @brief Truncated or corrupt serialized input, or a value that cannot be serialized.
class serialization_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// @brief Appends serialized bytes to a buffer: its own, or a std::vector<std::byte> it is given.
class byte_writer {
  /// Writes up to this many bytes (numbers, headers) go through resize + memcpy (see
  /// write_bytes).
  static constexpr std::size_t k_small_write = 64;

public:
  /// @brief A writer with a buffer of its own (see take()).
  byte_writer() noexcept : m_out(&m_owned) {}
  /// @brief A writer that appends to `out`, which must outlive it.
  explicit byte_writer(std::vector<std::byte>& out) noexcept : m_out(&out) {}
  byte_writer(const byte_writer&) = delete;
  byte_writer& operator=(const byte_writer&) = delete;
  /// @brief Moves the buffer (if owned) or the reference to the caller's buffer.
  byte_writer(byte_writer&& other) noexcept
      : m_owned(std::move(other.m_owned)), m_out(other.owns() ? &m_owned : other.m_out) {}
  /// @brief Moves the buffer (if owned) or the reference to the caller's buffer.
  byte_writer& operator=(byte_writer&& other) noexcept {
    if (this != &other) {
      const bool owned = other.owns();
      m_owned = std::move(other.m_owned);
      m_out = owned ? &m_owned : other.m_out;
    }
    return *this;
  }

  /// @brief Appends n raw bytes.
  void write_bytes(const void* data, std::size_t n) {
    if (n == 0) return;
    if (n > k_small_write) {
      // Bulk (a vector's or a string's contents): insert copies once, where resize would
      // zero-fill first, a second pass over what may be megabytes.
      const auto* p = static_cast<const std::byte*>(data);
      m_out->insert(m_out->end(), p, p + n);
      return;
    }
    // resize + memcpy rather than insert: GCC 12 at -O2 warns (-Wstringop-overflow, a false
    // positive) wherever an insert of a few constant bytes is inlined.
    const std::size_t at = m_out->size();
    m_out->resize(at + n);
    std::memcpy(m_out->data() + at, data, n);
  }
  /// @brief Appends raw bytes.
  void write_bytes(std::span<const std::byte> bytes) { write_bytes(bytes.data(), bytes.size()); }
  /// @brief Appends a count as a 64-bit integer (what byte_reader::read_length reads).
  void write_length(std::size_t n) {
    const auto wire = static_cast<std::uint64_t>(n);
    write_bytes(&wire, sizeof wire);
  }
  /// @brief write_length(count), then write_bytes(data, n): a vector's or a string's length and
  /// contents. A small one takes one resize, not two (each is a call that zero-fills).
  void write_length_and_bytes(std::size_t count, const void* data, std::size_t n) {
    const auto wire = static_cast<std::uint64_t>(count);
    if (n > k_small_write) {
      write_bytes(&wire, sizeof wire);
      write_bytes(data, n);
      return;
    }
    const std::size_t at = m_out->size();
    m_out->resize(at + sizeof wire + n);
    std::memcpy(m_out->data() + at, &wire, sizeof wire);
    if (n != 0) std::memcpy(m_out->data() + at + sizeof wire, data, n);
  }
  /// @brief Makes room for n more bytes without reallocating.
  void reserve(std::size_t n) { m_out->reserve(m_out->size() + n); }

  /// @brief Bytes in the buffer (including any the given vector held before).
  std::size_t size() const noexcept { return m_out->size(); }
  /// @brief The buffer's bytes.
  std::span<const std::byte> bytes() const noexcept { return *m_out; }
  /// @brief The buffer written to.
  std::vector<std::byte>& buffer() noexcept { return *m_out; }
  /// @brief Moves the buffer's bytes out, leaving it empty.
  std::vector<std::byte> take() noexcept { return std::exchange(*m_out, {}); }

private:
  bool owns() const noexcept { return m_out == &m_owned; }

  std::vector<std::byte> m_owned;
  std::vector<std::byte>* m_out;
};

/// @brief Reads serialized bytes from a span; every read is bounds-checked and throws
/// serialization_error rather than read past the end.
class byte_reader {
public:
  /// @brief Reads `data`, which must outlive the reader.
  explicit byte_reader(std::span<const std::byte> data) noexcept : m_data(data) {}

  /// @brief Copies the next n bytes to `out`. @throws serialization_error if fewer are left.
  void read_bytes(void* out, std::size_t n) {
    const std::span<const std::byte> bytes = read_span(n);
    if (n != 0) std::memcpy(out, bytes.data(), n);
  }
  /// @brief The next n bytes, in place. @throws serialization_error if fewer are left.
  std::span<const std::byte> read_span(std::size_t n) {
    if (n > remaining()) throw_truncated(n);
    const std::span<const std::byte> bytes = m_data.subspan(m_pos, n);
    m_pos += n;
    return bytes;
  }
  /// @brief Reads a count written by byte_writer::write_length, for elements that each take at
  /// least `min_element_bytes` (taken as 1 if 0). @throws serialization_error if the rest of
  /// the input cannot hold that many elements.
  /// Inlined, with the message's text built out of line: the element size is then a constant
  /// and the check a multiply, not a call and a division on every vector read.
  [[gnu::always_inline]] std::size_t read_length(std::size_t min_element_bytes = 1) {
    std::uint64_t count = 0;
    read_bytes(&count, sizeof count);
    const std::size_t per = min_element_bytes == 0 ? 1 : min_element_bytes;
    if (count > remaining() / per) [[unlikely]]
      throw_too_many(count, per);
    return static_cast<std::size_t>(count);
  }

  /// @brief Bytes not read yet.
  std::size_t remaining() const noexcept { return m_data.size() - m_pos; }
  /// @brief Bytes read so far.
  std::size_t position() const noexcept { return m_pos; }
  /// @brief True if every byte has been read.
  bool at_end() const noexcept { return m_pos == m_data.size(); }
  /// @brief @throws serialization_error if bytes are left (the reader expected other types).
  void expect_end() const {
    if (!at_end()) fail(std::to_string(remaining()) + " unexpected bytes at the end");
  }
  /// @brief Throws serialization_error "corrupt message at offset <position>: <what>"; for
  /// apgas_deserialize functions that find their input invalid.
  [[noreturn]] void fail(std::string_view what) const {
    throw serialization_error("apgas: corrupt message at offset " + std::to_string(m_pos) + ": " +
                              std::string(what));
  }

private:
  [[noreturn, gnu::cold, gnu::noinline]] void throw_too_many(std::uint64_t count,
                                                             std::size_t per) const {
    fail("a count of " + std::to_string(count) + " elements of at least " + std::to_string(per) +
         " bytes, but only " + std::to_string(remaining()) + " bytes are left");
  }
  [[noreturn, gnu::cold, gnu::noinline]] void throw_truncated(std::size_t n) const {
    throw serialization_error("apgas: truncated message: reading " + std::to_string(n) +
                              " bytes at offset " + std::to_string(m_pos) + ", but only " +
                              std::to_string(remaining()) + " are left");
  }

  std::span<const std::byte> m_data;
  std::size_t m_pos = 0;
};

/// @brief The Archive a member `template <class A> void serialize(A& a)` gets when its object
/// is sent: `a & m_x` writes m_x.
class output_archive {
public:
  /// @brief True: this archive writes.
  static constexpr bool is_saving = true;
  /// @brief False: this archive does not read.
  static constexpr bool is_loading = false;

  /// @brief An archive writing to `w`.
  explicit output_archive(byte_writer& w) noexcept : m_writer(&w) {}
  /// @brief Writes `value` (which must be serializable).
  template <class T>
  output_archive& operator&(const T& value);
  /// @brief The underlying writer.
  byte_writer& writer() const noexcept { return *m_writer; }

private:
  byte_writer* m_writer;
};

/// @brief The Archive a member `template <class A> void serialize(A& a)` gets when its object
/// is received: `a & m_x` reads m_x.
class input_archive {
public:
  /// @brief False: this archive does not write.
  static constexpr bool is_saving = false;
  /// @brief True: this archive reads.
  static constexpr bool is_loading = true;

  /// @brief An archive reading from `r`.
  explicit input_archive(byte_reader& r) noexcept : m_reader(&r) {}
  /// @brief Reads into `value` (which must be serializable and not const).
  template <class T>
  input_archive& operator&(T& value);
  /// @brief The underlying reader.
  byte_reader& reader() const noexcept { return *m_reader; }

private:
  byte_reader* m_reader;
};

} // namespace apgas
