// byte_buffer: a growable byte array without zero-filling, for network buffers (the coalescer)
// and for the bytes a place keeps of arrived messages (batches of plain remote asyncs).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <utility>

namespace apgas::detail {

/// @brief A growable byte array that never zero-fills: received bytes and appended frames
/// overwrite it anyway, and std::vector's value-initialisation would cost a memset per message.
/// Thread-safety: none (owned by one party at a time).
class byte_buffer {
public:
  byte_buffer() = default;
  /// @brief An empty buffer with room for `capacity` bytes.
  explicit byte_buffer(std::size_t capacity) { reserve(capacity); }
  byte_buffer(byte_buffer&& other) noexcept
      : m_data(std::move(other.m_data)), m_size(std::exchange(other.m_size, 0)),
        m_capacity(std::exchange(other.m_capacity, 0)) {}
  byte_buffer& operator=(byte_buffer&& other) noexcept {
    m_data = std::move(other.m_data);
    m_size = std::exchange(other.m_size, 0);
    m_capacity = std::exchange(other.m_capacity, 0);
    return *this;
  }
  byte_buffer(const byte_buffer&) = delete;
  byte_buffer& operator=(const byte_buffer&) = delete;

  /// @brief First byte (null when the buffer never had capacity).
  std::byte* data() noexcept { return m_data.get(); }
  /// @brief First byte (null when the buffer never had capacity).
  const std::byte* data() const noexcept { return m_data.get(); }
  /// @brief Bytes in use.
  std::size_t size() const noexcept { return m_size; }
  /// @brief Bytes allocated.
  std::size_t capacity() const noexcept { return m_capacity; }
  /// @brief True if no byte is in use.
  bool empty() const noexcept { return m_size == 0; }
  /// @brief The bytes in use.
  std::span<const std::byte> bytes() const noexcept { return {m_data.get(), m_size}; }
  /// @brief Forgets the contents, keeps the capacity.
  void clear() noexcept { m_size = 0; }
  /// @brief Makes room for `n` bytes in total (contents kept).
  void reserve(std::size_t n) {
    if (n > m_capacity) grow(n);
  }
  /// @brief Sets the size to `n`; bytes beyond the old size are indeterminate (to be written).
  void resize_for_overwrite(std::size_t n) {
    reserve(n);
    m_size = n;
  }
  /// @brief Grows the size by `n` and returns where those `n` bytes (to be written) start.
  std::byte* extend(std::size_t n) {
    if (m_size + n > m_capacity) grow(std::max(m_size + n, 2 * m_capacity));
    std::byte* at = m_data.get() + m_size;
    m_size += n;
    return at;
  }
  /// @brief Appends `n` bytes from `p`.
  void append(const void* p, std::size_t n) {
    if (m_size + n > m_capacity) grow(std::max(m_size + n, 2 * m_capacity));
    if (n != 0) std::memcpy(m_data.get() + m_size, p, n);
    m_size += n;
  }

private:
  void grow(std::size_t n) {
    auto bigger = std::make_unique_for_overwrite<std::byte[]>(n);
    if (m_size != 0) std::memcpy(bigger.get(), m_data.get(), m_size);
    m_data = std::move(bigger);
    m_capacity = n;
  }

  std::unique_ptr<std::byte[]> m_data;
  std::size_t m_size = 0;
  std::size_t m_capacity = 0;
};

} // namespace apgas::detail
