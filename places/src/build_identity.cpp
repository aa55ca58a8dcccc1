// The build identity of the program (see build_identity.hpp).
#include "build_identity.hpp"

#include "apgas/detail/message_format.hpp"

#include <elf.h>
#include <fmt/format.h>
#include <link.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <fstream>
#include <map>
#include <vector>

namespace apgas::detail {

namespace {

/// FNV-1a, 64 bits: enough to tell builds apart, and needs no library.
struct fnv1a {
  std::uint64_t h = 0xcbf29ce484222325ull;
  void add(const unsigned char* p, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  }
};

struct found_binary {
  std::string path;
  bool has_build_id = false;
  std::uint64_t build_id_hash = 0;
};

/// The GNU build-id note among the notes of one PT_NOTE segment, hashed.
bool hash_build_id(const unsigned char* notes, std::size_t size, std::size_t align,
                   std::uint64_t& out) noexcept {
  const auto pad = [align](std::size_t n) { return (n + align - 1) / align * align; };
  std::size_t at = 0;
  while (at + sizeof(ElfW(Nhdr)) <= size) {
    ElfW(Nhdr) note;
    std::memcpy(&note, notes + at, sizeof note);
    const std::size_t name_at = at + sizeof note;
    const std::size_t desc_at = name_at + pad(note.n_namesz);
    const std::size_t next = desc_at + pad(note.n_descsz);
    if (next > size) return false;
    if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 &&
        std::memcmp(notes + name_at, "GNU", 4) == 0) {
      fnv1a h;
      h.add(notes + desc_at, note.n_descsz);
      out = h.h;
      return true;
    }
    at = next;
  }
  return false;
}

int visit_object(dl_phdr_info* info, std::size_t, void* data) {
  auto& found = *static_cast<found_binary*>(data);
  const auto anchor = reinterpret_cast<ElfW(Addr)>(reinterpret_cast<const void*>(&code_anchor));
  bool holds_anchor = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const ElfW(Addr) start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && anchor >= start && anchor < start + ph.p_memsz) holds_anchor = true;
  }
  if (!holds_anchor) return 0; // go on with the next object
  // The program itself has no name here; a shared library has its path.
  found.path = info->dlpi_name != nullptr && *info->dlpi_name != '\0' ? info->dlpi_name : "";
  for (int i = 0; i < info->dlpi_phnum && !found.has_build_id; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* notes = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    found.has_build_id =
        hash_build_id(notes, ph.p_memsz, ph.p_align == 8 ? 8 : 4, found.build_id_hash);
  }
  return 1; // found: stop
}

std::string program_path() {
  std::array<char, 4096> buffer{};
  const ssize_t n = ::readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  return n > 0 ? std::string(buffer.data(), static_cast<std::size_t>(n)) : std::string();
}

/// A hash of the file's bytes; 0 if it cannot be read (every place then agrees on nothing).
std::uint64_t hash_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return 0;
  fnv1a h;
  std::vector<char> chunk(1 << 16);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    h.add(reinterpret_cast<const unsigned char*>(chunk.data()),
          static_cast<std::size_t>(in.gcount()));
  }
  return h.h;
}

struct identity {
  std::string path;
  std::uint64_t hash = 0;
};

const identity& this_build() {
  static const identity id = [] {
    found_binary found;
    dl_iterate_phdr(&visit_object, &found);
    identity out;
    out.path = found.path.empty() ? program_path() : found.path;
    out.hash = found.has_build_id ? found.build_id_hash : hash_file(out.path);
    return out;
  }();
  return id;
}

/// "0", "0-3", "0, 2-3, 7": the places in `ids` (ascending).
std::string place_list(const std::vector<place_id>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ", ";
    s += j == i ? fmt::format("{}", ids[i]) : fmt::format("{}-{}", ids[i], ids[j]);
    i = j + 1;
  }
  return s;
}

} // namespace

std::uint64_t build_identity() { return this_build().hash; }

const std::string& build_path() { return this_build().path; }

std::string describe_build_mismatch(std::span<const std::uint64_t> identities) {
  std::map<std::uint64_t, std::vector<place_id>> places_of;
  std::vector<std::uint64_t> order; // builds in the order of their first place
  for (place_id p = 0; p < identities.size(); ++p) {
    auto& list = places_of[identities[p]];
    if (list.empty()) order.push_back(identities[p]);
    list.push_back(p);
  }
  if (order.size() <= 1) return {};
  std::string s = "apgas: the places run different builds of the program, but every place must "
                  "run the same binary (functions travel between places as offsets in it):";
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& list = places_of[order[i]];
    s += fmt::format("{}place{} {} run{} build {:016x}", i == 0 ? " " : "; ",
                     list.size() == 1 ? "" : "s", place_list(list), list.size() == 1 ? "s" : "",
                     order[i]);
  }
  return s;
}

} // namespace apgas::detail
