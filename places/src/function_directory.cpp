// Which addresses are functions that other places can find (see function_handle.hpp): the
// starts of the functions in the symbol table of the object that holds the runtime, read once
// from its ELF file. Offsets within that object are the same at every place; in another shared
// library they are not (each process may load it elsewhere).
#include "apgas/detail/function_handle.hpp"
#include "apgas/detail/transport.hpp"

#include <elf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef __ELF__
#error "apgas: function pointers across places need an ELF platform (Linux)"
#endif

namespace apgas::detail {

namespace {

/// The loaded object (executable or shared library) that holds a given address.
struct loaded_object {
  std::uintptr_t address = 0; ///< what was looked for
  std::uintptr_t bias = 0;    ///< added to the file's addresses once loaded
  std::uintptr_t lo = 0;      ///< the object's loaded segments span [lo, hi)
  std::uintptr_t hi = 0;
  std::string path;
  bool found = false;
};

int match_object(dl_phdr_info* info, std::size_t, void* data) {
  auto& o = *static_cast<loaded_object*>(data);
  std::uintptr_t lo = UINTPTR_MAX;
  std::uintptr_t hi = 0;
  bool holds = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const std::uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    const std::uintptr_t end = begin + ph.p_memsz;
    lo = std::min(lo, begin);
    hi = std::max(hi, end);
    holds = holds || (o.address >= begin && o.address < end);
  }
  if (!holds) return 0;
  o.bias = info->dlpi_addr;
  o.lo = lo;
  o.hi = hi;
  // The executable's name is empty here; its file is /proc/self/exe.
  o.path = (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') ? info->dlpi_name
                                                                      : "/proc/self/exe";
  o.found = true;
  return 1;
}

loaded_object object_holding(const void* address) {
  loaded_object o;
  o.address = reinterpret_cast<std::uintptr_t>(address);
  dl_iterate_phdr(&match_object, &o);
  return o;
}

/// Appends bias + value of every defined function symbol of an ELF64 image (.symtab and
/// .dynsym); every offset read is checked against the image's size first.
void read_function_starts(const std::byte* image, std::size_t size, std::uintptr_t bias,
                          std::vector<std::uintptr_t>& out) {
  if (size < sizeof(Elf64_Ehdr)) return;
  Elf64_Ehdr eh;
  std::memcpy(&eh, image, sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size ||
      (size - eh.e_shoff) / sizeof(Elf64_Shdr) < eh.e_shnum)
    return;
  for (std::size_t s = 0; s < eh.e_shnum; ++s) {
    Elf64_Shdr sh;
    std::memcpy(&sh, image + eh.e_shoff + s * sizeof sh, sizeof sh);
    if ((sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
        sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_offset > size ||
        sh.sh_size > size - sh.sh_offset)
      continue;
    for (std::size_t at = 0; at + sizeof(Elf64_Sym) <= sh.sh_size; at += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, image + sh.sh_offset + at, sizeof sym);
      if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_shndx != SHN_UNDEF && sym.st_value != 0)
        out.push_back(bias + sym.st_value);
    }
  }
}

/// The function starts of the object that holds the runtime, sorted. Empty if its file cannot
/// be read or has no symbols (then no function pointer can be sent, with a message that says
/// why).
struct directory {
  loaded_object home;
  std::vector<std::uintptr_t> starts;

  directory() : home(object_holding(reinterpret_cast<const void*>(&code_anchor))) {
    if (!home.found) return;
    const int fd = ::open(home.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      const auto size = static_cast<std::size_t>(st.st_size);
      void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (map != MAP_FAILED) {
        read_function_starts(static_cast<const std::byte*>(map), size, home.bias, starts);
        ::munmap(map, size);
      }
    }
    ::close(fd);
    std::sort(starts.begin(), starts.end());
    starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  }

  bool holds(std::uintptr_t a) const {
    return a >= home.lo && a < home.hi && std::binary_search(starts.begin(), starts.end(), a);
  }
};

const directory& the_directory() {
  static const directory d; // read once, by whichever thread asks first (a magic static)
  return d;
}

/// The last address this thread found in the directory: a stream of asyncs of one function
/// checks it without a search.
thread_local const void* t_last_named = nullptr;

} // namespace

bool named_function(const void* fn) noexcept {
  if (fn == t_last_named && fn != nullptr) return true;
  if (!the_directory().holds(reinterpret_cast<std::uintptr_t>(fn))) return false;
  t_last_named = fn;
  return true;
}

void throw_unnamed_function(const void* fn) {
  const directory& d = the_directory();
  const loaded_object o = object_holding(fn);
  if (o.found && o.path != d.home.path)
    throw std::invalid_argument(fmt::format(
        "apgas: the function pointer given to async_at/at is in {}, a shared library that may be "
        "loaded at another address at each place, so other places cannot find it from this "
        "one; send a lambda that calls it instead ([](int x) {{ return f(x); }})",
        o.path));
  if (d.starts.empty())
    throw std::invalid_argument(fmt::format(
        "apgas: the function pointer given to async_at/at cannot be named at other places: {} "
        "has no symbol table (was it stripped?); keep the symbols, or send a lambda that calls "
        "the function instead",
        d.home.path));
  throw std::invalid_argument(
      "apgas: the pointer given to async_at/at as a function is not where a function of this "
      "program begins, so other places cannot find it (a pointer into other memory, or a "
      "function without a symbol); send a lambda that calls the function instead");
}

void throw_no_function_at(std::int64_t offset) {
  // No place in the text: the failure, sent back, names the place where it was thrown.
  throw transport_error(fmt::format("apgas: a message names no function of this program at code "
                                    "offset {} (a damaged message, or a different build at the "
                                    "sending place?)",
                                    offset));
}

} // namespace apgas::detail
