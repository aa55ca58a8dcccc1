// The checkpoint directory (see apgas/detail/checkpoint_store.hpp): parts, manifest, commit by
// rename, and the checks of a resume.
#include "apgas/detail/checkpoint_store.hpp"

#include "apgas/remote_exceptions.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>

// A refusal found at any place reaches place 0, and from there every place, as what it is.
APGAS_REGISTER_EXCEPTION(apgas::checkpoint_error);

namespace apgas::detail::checkpoint {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_manifest_head = "apgas checkpoint 1";
constexpr std::string_view k_prefix = "ckpt-";
constexpr std::string_view k_partial = ".partial";

std::string numbered(std::uint64_t seq) { return fmt::format("{}{:06}", k_prefix, seq); }
std::string partial_path(const std::string& dir, std::uint64_t seq) {
  return (fs::path(dir) / (numbered(seq) + std::string(k_partial))).string();
}
std::string final_path(const std::string& dir, std::uint64_t seq) {
  return (fs::path(dir) / numbered(seq)).string();
}

[[noreturn]] void fail(const std::string& what) { throw checkpoint_error(what); }
[[noreturn]] void fail_errno(const std::string& what) {
  fail(fmt::format("{}: {}", what, std::strerror(errno)));
}

/// Writes `bytes` to `path` (created or truncated) and flushes them to storage.
void write_file(const std::string& path, std::span<const std::byte> bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail_errno(fmt::format("checkpoint: cannot create {}", path));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      errno = err;
      fail_errno(fmt::format("checkpoint: cannot write {}", path));
    }
    done += static_cast<std::size_t>(n);
  }
  // The rename that commits the checkpoint must not reach storage before the data it names.
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    fail_errno(fmt::format("checkpoint: cannot flush {}", path));
}

/// Flushes a directory's entries (a new file's name, a rename) to storage.
void sync_dir(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return; // a file system without directory fsync: the rename is what it is
  (void)::fsync(fd);
  ::close(fd);
}

std::optional<std::vector<std::byte>> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::vector<std::byte> out;
  std::byte buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      fail_errno(fmt::format("checkpoint: cannot read {}", path));
    }
    if (n == 0) break;
    out.insert(out.end(), buf, buf + n);
  }
  ::close(fd);
  return out;
}

/// The checkpoint number of a directory entry named ckpt-<digits>[.partial], if it is one.
std::optional<std::uint64_t> number_of(std::string_view name, bool partial) {
  if (!name.starts_with(k_prefix)) return std::nullopt;
  name.remove_prefix(k_prefix.size());
  if (partial != name.ends_with(k_partial)) return std::nullopt;
  if (partial) name.remove_suffix(k_partial.size());
  std::uint64_t seq = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), seq);
  if (ec != std::errc{} || end != name.data() + name.size() || name.empty()) return std::nullopt;
  return seq;
}

/// The manifest's text without its checksum line.
std::string manifest_body(const manifest& m) {
  std::string s = fmt::format("{}\nkind {}\nfingerprint {}\ndescribes {}\nordinal {}\n"
                              "sequence {}\nplaces {}\n",
                              k_manifest_head, m.kind, m.fingerprint, m.describes, m.ordinal,
                              m.sequence, m.places);
  for (std::size_t p = 0; p < m.parts.size(); ++p)
    s += fmt::format("part {} {} {}\n", p, m.parts[p].bytes, m.parts[p].sha256);
  return s;
}

std::span<const std::byte> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

/// Parses a manifest's text; `where` names it in a refusal.
manifest parse_manifest(std::string_view text, const std::string& where) {
  const auto damaged = [&](std::string_view why) -> manifest {
    fail(fmt::format("checkpoint {}: the manifest is damaged ({})", where, why));
  };
  const std::size_t sum_at = text.rfind("checksum ");
  if (!text.starts_with(k_manifest_head) || sum_at == std::string_view::npos)
    fail(
        fmt::format("checkpoint {}: not an apgas checkpoint (no manifest of this version)", where));
  const std::string_view body = text.substr(0, sum_at);
  std::string_view sum = text.substr(sum_at + 9);
  if (sum.ends_with('\n')) sum.remove_suffix(1);
  if (sha256_hex(as_bytes(body)) != sum) return damaged("its checksum does not match");
  manifest m;
  std::istringstream in{std::string(body)};
  std::string line;
  std::getline(in, line); // the head, checked above
  bool have_places = false;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string key;
    words >> key;
    if (key == "kind") words >> m.kind;
    else if (key == "fingerprint") words >> m.fingerprint;
    else if (key == "describes") {
      std::getline(words >> std::ws, m.describes);
    } else if (key == "ordinal") words >> m.ordinal;
    else if (key == "sequence") words >> m.sequence;
    else if (key == "places") {
      words >> m.places;
      have_places = true;
    } else if (key == "part") {
      std::size_t index = 0;
      part_record r;
      words >> index >> r.bytes >> r.sha256;
      if (index != m.parts.size()) return damaged("its parts are out of order");
      m.parts.push_back(std::move(r));
    } else {
      return damaged(fmt::format("an unknown line '{}'", line));
    }
    if (words.fail()) return damaged(fmt::format("a malformed line '{}'", line));
  }
  if (!have_places || m.places == 0 || m.parts.size() != m.places || m.kind.empty())
    return damaged("it does not list a part for each place");
  return m;
}

} // namespace

std::string sha256_hex(std::span<const std::byte> bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr) != 1)
    fail("checkpoint: SHA-256 failed (libcrypto)");
  std::string hex;
  hex.reserve(2 * len);
  for (unsigned i = 0; i < len; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

std::string part_path(const std::string& checkpoint_path, std::uint32_t place) {
  return (fs::path(checkpoint_path) / fmt::format("place-{:06}", place)).string();
}

void prepare(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(fmt::format("checkpoint: cannot create {}: {}", dir, ec.message()));
}

std::uint64_t next_sequence(const std::string& dir) {
  std::uint64_t highest = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    for (const bool partial : {false, true})
      if (const std::optional<std::uint64_t> seq = number_of(name, partial))
        highest = std::max(highest, *seq);
  }
  return highest + 1; // a directory that does not exist yet: 1
}

part_record write_part(const std::string& dir, std::uint64_t seq, std::uint32_t place,
                       std::span<const std::byte> bytes) {
  std::error_code ec;
  fs::create_directories(partial_path(dir, seq), ec); // every place may be first
  if (ec)
    fail(fmt::format("checkpoint: cannot create {}: {}", partial_path(dir, seq), ec.message()));
  write_file(part_path(partial_path(dir, seq), place), bytes);
  return part_record{bytes.size(), sha256_hex(bytes)};
}

void write_extra(const std::string& dir, std::uint64_t seq, const std::string& name,
                 std::span<const std::byte> bytes) {
  std::error_code ec;
  fs::create_directories(partial_path(dir, seq), ec);
  if (ec)
    fail(fmt::format("checkpoint: cannot create {}: {}", partial_path(dir, seq), ec.message()));
  write_file((fs::path(partial_path(dir, seq)) / name).string(), bytes);
}

void commit(const std::string& dir, const manifest& m) {
  const std::string partial = partial_path(dir, m.sequence);
  std::string text = manifest_body(m);
  text += fmt::format("checksum {}\n", sha256_hex(as_bytes(text)));
  write_file((fs::path(partial) / "manifest").string(), as_bytes(text));
  sync_dir(partial);
  const std::string done = final_path(dir, m.sequence);
  std::error_code ec;
  fs::remove_all(done, ec); // a checkpoint of the same number from an earlier job
  if (::rename(partial.c_str(), done.c_str()) != 0)
    fail_errno(fmt::format("checkpoint: cannot rename {} to {}", partial, done));
  sync_dir(dir);
  // Only now is an older checkpoint not needed any more (a newer one may be being written).
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const std::optional<std::uint64_t> old = number_of(name, false);
    const std::optional<std::uint64_t> stale = number_of(name, true);
    if ((old && *old < m.sequence) || (stale && *stale < m.sequence)) {
      std::error_code ignored;
      fs::remove_all(e.path(), ignored);
    }
  }
}

found find_newest(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail(fmt::format("--resume {}: no such directory", dir));
  std::optional<std::uint64_t> newest;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::optional<std::uint64_t> seq = number_of(e.path().filename().string(), false);
    if (seq && (!newest || *seq > *newest)) newest = seq;
  }
  if (ec) fail(fmt::format("--resume {}: cannot list it: {}", dir, ec.message()));
  if (!newest)
    fail(fmt::format("--resume {}: no complete checkpoint in it (none was written, or the job "
                     "died while writing the first)",
                     dir));
  found f;
  f.path = final_path(dir, *newest);
  const std::optional<std::vector<std::byte>> text = read_file(f.path + "/manifest");
  if (!text) fail(fmt::format("checkpoint {}: its manifest is missing", f.path));
  f.what = parse_manifest(
      std::string_view(reinterpret_cast<const char*>(text->data()), text->size()), f.path);
  if (f.what.sequence != *newest)
    fail(fmt::format("checkpoint {}: the manifest is damaged (it says checkpoint {})", f.path,
                     f.what.sequence));
  return f;
}

std::vector<std::byte> read_part(const found& c, std::uint32_t place) {
  const std::string path = part_path(c.path, place);
  if (place >= c.what.parts.size())
    fail(fmt::format("checkpoint {}: it has no part {}", c.path, place));
  const part_record& want = c.what.parts[place];
  std::optional<std::vector<std::byte>> bytes = read_file(path);
  if (!bytes) fail(fmt::format("checkpoint {}: {} is missing", c.path, path));
  if (bytes->size() != want.bytes)
    fail(fmt::format("checkpoint {}: {} is truncated or damaged ({} bytes, the manifest says {})",
                     c.path, path, bytes->size(), want.bytes));
  if (sha256_hex(*bytes) != want.sha256)
    fail(fmt::format("checkpoint {}: {} is corrupted (its SHA-256 differs from the manifest's)",
                     c.path, path));
  return std::move(*bytes);
}

} // namespace apgas::detail::checkpoint
