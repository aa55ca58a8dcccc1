// The HDF5 files of a phased program's checkpoint (see phase_checkpoint_files.hpp).
#include "apgas/detail/phase_checkpoint_files.hpp"

#include "apgas/checkpoint.hpp"

#include <fmt/format.h>
#include <hdf5.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <utility>

namespace apgas::detail::checkpoint {

namespace {

/// HDF5 may be built without thread safety; a place's members may save from several workers
/// of different teams at once. One lock for every call into it from here.
std::mutex g_hdf5;

/// An HDF5 handle, closed with its kind's close function.
class handle {
public:
  handle() = default;
  handle(hid_t id, herr_t (*close)(hid_t), const char* what) : m_id(id), m_close(close) {
    if (id < 0) throw std::runtime_error(fmt::format("HDF5: {} failed", what));
  }
  handle(handle&& o) noexcept : m_id(std::exchange(o.m_id, H5I_INVALID_HID)), m_close(o.m_close) {}
  handle& operator=(handle&& o) noexcept {
    std::swap(m_id, o.m_id);
    std::swap(m_close, o.m_close);
    return *this;
  }
  ~handle() {
    if (m_id >= 0) m_close(m_id);
  }
  hid_t id() const noexcept { return m_id; }

private:
  hid_t m_id = H5I_INVALID_HID;
  herr_t (*m_close)(hid_t) = nullptr;
};

void check(herr_t rc, const char* what) {
  if (rc < 0) throw std::runtime_error(fmt::format("HDF5: {} failed", what));
}

/// HDF5 prints its error stack on every failed call unless told not to; ours become
/// exceptions instead. Silenced while the lock is held, the user's own setting kept.
class quiet_hdf5 {
public:
  quiet_hdf5() : m_lock(g_hdf5) {
    H5Eget_auto2(H5E_DEFAULT, &m_func, &m_data);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~quiet_hdf5() { H5Eset_auto2(H5E_DEFAULT, m_func, m_data); }

private:
  std::lock_guard<std::mutex> m_lock;
  H5E_auto2_t m_func = nullptr;
  void* m_data = nullptr;
};

hid_t native(element_type t) {
  switch (t) {
  case element_type::i8:
    return H5T_NATIVE_INT8;
  case element_type::u8:
    return H5T_NATIVE_UINT8;
  case element_type::i16:
    return H5T_NATIVE_INT16;
  case element_type::u16:
    return H5T_NATIVE_UINT16;
  case element_type::i32:
    return H5T_NATIVE_INT32;
  case element_type::u32:
    return H5T_NATIVE_UINT32;
  case element_type::i64:
    return H5T_NATIVE_INT64;
  case element_type::u64:
    return H5T_NATIVE_UINT64;
  case element_type::f32:
    return H5T_NATIVE_FLOAT;
  case element_type::f64:
    return H5T_NATIVE_DOUBLE;
  }
  return H5T_NATIVE_DOUBLE;
}
std::size_t size_of(element_type t) { return H5Tget_size(native(t)); }
const char* name_of(element_type t) {
  constexpr const char* names[] = {"int8",   "uint8", "int16",  "uint16", "int32",
                                   "uint32", "int64", "uint64", "float",  "double"};
  return names[static_cast<int>(t)];
}

/// In-memory files need names that no other open file has.
std::string memory_name(const char* what) {
  static std::atomic<std::uint64_t> next{0};
  // relaxed: only uniqueness matters.
  return fmt::format("apgas-{}-{}", what, next.fetch_add(1, std::memory_order_relaxed));
}

/// A file access list for a file in memory (HDF5's core driver, nothing written to disk).
handle memory_access() {
  handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate");
  check(H5Pset_fapl_core(fapl.id(), 1 << 20, 0), "H5Pset_fapl_core");
  return fapl;
}

std::vector<std::byte> image_of(hid_t file) {
  check(H5Fflush(file, H5F_SCOPE_GLOBAL), "H5Fflush");
  const ssize_t n = H5Fget_file_image(file, nullptr, 0);
  if (n < 0) throw std::runtime_error("HDF5: H5Fget_file_image failed");
  std::vector<std::byte> bytes(static_cast<std::size_t>(n));
  if (H5Fget_file_image(file, bytes.data(), bytes.size()) != n)
    throw std::runtime_error("HDF5: H5Fget_file_image failed");
  return bytes;
}

void put_attribute(hid_t on, const char* name, hid_t type, std::span<const std::uint64_t> values) {
  const hsize_t n = values.size();
  handle space(H5Screate_simple(1, &n, nullptr), H5Sclose, "H5Screate_simple");
  handle a(H5Acreate2(on, name, type, space.id(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
           "H5Acreate2");
  check(H5Awrite(a.id(), H5T_NATIVE_UINT64, values.data()), "H5Awrite");
}
void put_string(hid_t on, const char* name, const std::string& value) {
  handle type(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
  check(H5Tset_size(type.id(), std::max<std::size_t>(value.size(), 1)), "H5Tset_size");
  handle space(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate");
  handle a(H5Acreate2(on, name, type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
           "H5Acreate2");
  std::string padded = value.empty() ? std::string(1, '\0') : value;
  check(H5Awrite(a.id(), type.id(), padded.data()), "H5Awrite");
}
std::vector<std::uint64_t> get_attribute(hid_t on, const char* name) {
  handle a(H5Aopen(on, name, H5P_DEFAULT), H5Aclose, name);
  handle space(H5Aget_space(a.id()), H5Sclose, "H5Aget_space");
  const hssize_t n = H5Sget_simple_extent_npoints(space.id());
  std::vector<std::uint64_t> values(static_cast<std::size_t>(std::max<hssize_t>(n, 0)));
  check(H5Aread(a.id(), H5T_NATIVE_UINT64, values.data()), "H5Aread");
  return values;
}

/// A distribution as numbers: kind, size, parts, block.
std::array<std::uint64_t, 4> encode(const distribution& d) {
  return {static_cast<std::uint64_t>(d.how()), d.size(), d.parts(), d.block_size()};
}
distribution decode(std::span<const std::uint64_t> v) {
  const auto parts = static_cast<std::uint32_t>(v[2]);
  switch (static_cast<distribution::kind>(v[0])) {
  case distribution::kind::block:
    return distribution::block(v[1], parts);
  case distribution::kind::cyclic:
    return distribution::cyclic(v[1], parts);
  case distribution::kind::block_cyclic:
    return distribution::block_cyclic(v[1], parts, v[3]);
  }
  throw std::runtime_error("an unknown distribution");
}

/// The global indices part `part` of `d` holds, as at most two regular runs of blocks (HDF5's
/// hyperslab: start, stride, count, block), in the order of its local indices.
struct run_of_blocks {
  hsize_t start, stride, count, block;
};
std::vector<run_of_blocks> runs_of(const distribution& d, std::uint32_t part) {
  const std::size_t n = d.local_size(part);
  if (n == 0) return {};
  if (d.how() == distribution::kind::block) return {{d.first(part), 1, 1, n}};
  const std::size_t b = d.block_size(), p = d.parts();
  const std::size_t blocks = d.size() / b; // whole ones
  const std::size_t whole = blocks / p + (part < blocks % p ? 1 : 0);
  std::vector<run_of_blocks> runs;
  if (whole > 0) runs.push_back({part * b, p * b, whole, b});
  if (d.size() % b != 0 && blocks % p == part) runs.push_back({blocks * b, 1, 1, d.size() % b});
  return runs;
}

} // namespace

// ---- a member's file ---------------------------------------------------------------------------

struct part_writer::file {
  handle fapl;
  handle f;
};

part_writer::part_writer(const phase_plan& plan, std::uint64_t phase, std::uint32_t rank,
                         std::uint32_t ranks)
    : m_phase(phase) {
  quiet_hdf5 q;
  m_file = std::make_unique<file>();
  m_file->fapl = memory_access();
  m_file->f =
      handle(H5Fcreate(memory_name("part").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, m_file->fapl.id()),
             H5Fclose, "H5Fcreate");
  const hid_t root = m_file->f.id();
  put_string(root, "apgas_program", plan.describes);
  put_string(root, "apgas_fingerprint", plan.fingerprint);
  const std::array<std::uint64_t, 3> where{phase, rank, ranks};
  put_attribute(root, "apgas_phase_rank_ranks", H5T_STD_U64LE, where);
}

part_writer::~part_writer() {
  quiet_hdf5 q;
  m_file.reset();
}

void part_writer::add_array(const std::string& name, const local_part& part) {
  for (const auto& [known, ignored] : m_arrays)
    if (known == name)
      throw std::invalid_argument(
          fmt::format("apgas::phase_checkpoint::save: two arrays named '{}'", name));
  quiet_hdf5 q;
  // A 1D array's part is a 1D dataset, a 2D array's a 2D one.
  const hsize_t dims[2] = {part.n_rows, part.n_cols};
  handle space(H5Screate_simple(part.dims, dims, nullptr), H5Sclose, "H5Screate_simple");
  handle set(H5Dcreate2(m_file->f.id(), name.c_str(), native(part.type), space.id(), H5P_DEFAULT,
                        H5P_DEFAULT, H5P_DEFAULT),
             H5Dclose, "H5Dcreate2");
  if (part.data != nullptr) {
    // The rows as they lie in memory, `stride` apart (a 2D array's ghost columns between).
    const hsize_t mem_dims[2] = {part.n_rows, part.stride};
    handle mem(H5Screate_simple(part.dims, mem_dims, nullptr), H5Sclose, "H5Screate_simple");
    const hsize_t start[2] = {0, 0};
    check(H5Sselect_hyperslab(mem.id(), H5S_SELECT_SET, start, nullptr, dims, nullptr),
          "H5Sselect_hyperslab");
    check(H5Dwrite(set.id(), native(part.type), mem.id(), H5S_ALL, H5P_DEFAULT, part.data),
          "H5Dwrite");
  }
  const std::array<std::uint64_t, 9> layout = [&] {
    const auto r = encode(part.rows), c = encode(part.cols);
    return std::array<std::uint64_t, 9>{
        static_cast<std::uint64_t>(part.dims), r[0], r[1], r[2], r[3], c[0], c[1], c[2], c[3]};
  }();
  put_attribute(set.id(), "apgas_dims_rows_cols", H5T_STD_U64LE, layout);
  const std::array<std::uint64_t, 1> type{static_cast<std::uint64_t>(part.type)};
  put_attribute(set.id(), "apgas_element_type", H5T_STD_U8LE, type);
  m_arrays.emplace_back(name, part);
}

void part_writer::add_value(const std::string& name, std::span<const std::byte> bytes) {
  quiet_hdf5 q;
  const std::string set_name = "apgas_value:" + name;
  if (H5Lexists(m_file->f.id(), set_name.c_str(), H5P_DEFAULT) > 0)
    throw std::invalid_argument(
        fmt::format("apgas::phase_checkpoint::save: two values named '{}'", name));
  const hsize_t n = bytes.size();
  handle space(n == 0 ? H5Screate(H5S_NULL) : H5Screate_simple(1, &n, nullptr), H5Sclose,
               "H5Screate");
  handle set(H5Dcreate2(m_file->f.id(), set_name.c_str(), H5T_STD_U8LE, space.id(), H5P_DEFAULT,
                        H5P_DEFAULT, H5P_DEFAULT),
             H5Dclose, "H5Dcreate2");
  if (n != 0)
    check(H5Dwrite(set.id(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()),
          "H5Dwrite");
}

std::vector<std::byte> part_writer::image() {
  quiet_hdf5 q;
  return image_of(m_file->f.id());
}

// ---- the view ----------------------------------------------------------------------------------

std::vector<std::byte> view_image(const std::vector<std::pair<std::string, local_part>>& arrays,
                                  std::uint32_t ranks, std::uint64_t phase,
                                  const std::string& describes) {
  quiet_hdf5 q;
  handle fapl = memory_access();
  // No newer file format asked for: a superblock of 1.10's format records that the file was
  // open for writing, and its image would then not open. A virtual dataset takes the newer
  // layout message it needs by itself.
  handle f(H5Fcreate(memory_name("view").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id()), H5Fclose,
           "H5Fcreate");
  put_string(f.id(), "apgas_program", describes);
  const std::array<std::uint64_t, 2> what{phase, ranks};
  put_attribute(f.id(), "apgas_phase_parts", H5T_STD_U64LE, what);
  for (const auto& [name, part] : arrays) {
    const int dims = part.dims;
    const hsize_t global[2] = {part.rows.size(), dims == 1 ? 1 : part.cols.size()};
    handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate");
    for (std::uint32_t r = 0; r < ranks; ++r) {
      // Rank r's part: rows (1D: elements) runs x column runs, its file's dataset row-major.
      const std::uint32_t grid_cols = dims == 1 ? 1 : part.cols.parts();
      const std::vector<run_of_blocks> row_runs = runs_of(part.rows, dims == 1 ? r : r / grid_cols);
      const std::vector<run_of_blocks> col_runs =
          dims == 1 ? std::vector<run_of_blocks>{{0, 1, 1, 1}} : runs_of(part.cols, r % grid_cols);
      const hsize_t local[2] = {dims == 1 ? part.rows.local_size(r)
                                          : part.rows.local_size(r / grid_cols),
                                dims == 1 ? 1 : part.cols.local_size(r % grid_cols)};
      hsize_t local_row = 0;
      for (const run_of_blocks& rr : row_runs) {
        hsize_t local_col = 0;
        for (const run_of_blocks& cr : col_runs) {
          handle v(H5Screate_simple(dims, global, nullptr), H5Sclose, "H5Screate_simple");
          const hsize_t v_start[2] = {rr.start, cr.start}, v_stride[2] = {rr.stride, cr.stride},
                        v_count[2] = {rr.count, cr.count}, v_block[2] = {rr.block, cr.block};
          check(H5Sselect_hyperslab(v.id(), H5S_SELECT_SET, v_start, v_stride, v_count, v_block),
                "H5Sselect_hyperslab");
          handle s(H5Screate_simple(dims, local, nullptr), H5Sclose, "H5Screate_simple");
          const hsize_t s_start[2] = {local_row, local_col},
                        s_count[2] = {rr.count * rr.block, cr.count * cr.block};
          check(H5Sselect_hyperslab(s.id(), H5S_SELECT_SET, s_start, nullptr, s_count, nullptr),
                "H5Sselect_hyperslab");
          // The part's name alone: HDF5 looks for it beside the view.
          const std::string source = std::filesystem::path(part_path(".", r)).filename().string();
          check(H5Pset_virtual(dcpl.id(), v.id(), source.c_str(), name.c_str(), s.id()),
                "H5Pset_virtual");
          local_col += cr.count * cr.block;
        }
        local_row += rr.count * rr.block;
      }
    }
    handle space(H5Screate_simple(dims, global, nullptr), H5Sclose, "H5Screate_simple");
    handle set(H5Dcreate2(f.id(), name.c_str(), native(part.type), space.id(), H5P_DEFAULT,
                          dcpl.id(), H5P_DEFAULT),
               H5Dclose, "H5Dcreate2 (virtual)");
  }
  return image_of(f.id());
}

// ---- reading -----------------------------------------------------------------------------------

namespace {

/// Opens a part's bytes (which must outlive the file) as an HDF5 file in memory.
std::pair<handle, handle> open_image(const std::vector<std::byte>& bytes) {
  handle fapl = memory_access();
  check(H5Pset_file_image(fapl.id(), const_cast<std::byte*>(bytes.data()), bytes.size()),
        "H5Pset_file_image");
  handle f(H5Fopen(memory_name("resume").c_str(), H5F_ACC_RDONLY, fapl.id()), H5Fclose, "H5Fopen");
  return {std::move(fapl), std::move(f)};
}

herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* names) {
  static_cast<std::vector<std::string>*>(names)->emplace_back(name);
  return 0;
}

} // namespace

resumed resumed::find(const phase_plan& plan) {
  resumed r;
  r.where = find_newest(plan.resume_from);
  const manifest& m = r.where.what;
  const std::string& path = r.where.path;
  if (m.kind != "phases")
    throw checkpoint_error(fmt::format(
        "checkpoint {} is not of a phased program's arrays (it is of a '{}' run)", path, m.kind));
  if (m.describes != plan.describes)
    throw checkpoint_error(fmt::format("checkpoint {} is of another program: it holds {}, and "
                                       "this program is {}",
                                       path, m.describes, plan.describes));
  if (m.fingerprint != plan.fingerprint)
    throw checkpoint_error(
        fmt::format("checkpoint {} is of this program with other parameters", path));
  const std::vector<std::byte> bytes = read_part(r.where, 0); // checked against the manifest
  quiet_hdf5 q;
  try {
    auto [fapl, f] = open_image(bytes);
    const std::vector<std::uint64_t> where = get_attribute(f.id(), "apgas_phase_rank_ranks");
    if (where.size() != 3) throw std::runtime_error("no phase");
    r.phase = where[0];
    std::vector<std::string> names;
    hsize_t at = 0;
    check(H5Literate(f.id(), H5_INDEX_NAME, H5_ITER_INC, &at, collect_name, &names), "H5Literate");
    constexpr std::string_view prefix = "apgas_value:";
    for (const std::string& name : names) {
      handle set(H5Dopen2(f.id(), name.c_str(), H5P_DEFAULT), H5Dclose, "H5Dopen2");
      if (name.rfind(prefix, 0) != 0) { // an array: its layout, for every member's loads
        std::vector<std::uint64_t> layout = get_attribute(set.id(), "apgas_dims_rows_cols");
        const std::vector<std::uint64_t> type = get_attribute(set.id(), "apgas_element_type");
        if (layout.size() != 9 || type.size() != 1)
          throw std::runtime_error("array " + name + " has no apgas layout");
        layout.push_back(type[0]);
        r.layouts.emplace(name, std::move(layout));
        continue;
      }
      handle space(H5Dget_space(set.id()), H5Sclose, "H5Dget_space");
      const hssize_t n = std::max<hssize_t>(H5Sget_simple_extent_npoints(space.id()), 0);
      std::vector<std::byte> value(static_cast<std::size_t>(n));
      if (n != 0)
        check(H5Dread(set.id(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, value.data()),
              "H5Dread");
      r.values.emplace(name.substr(prefix.size()), std::move(value));
    }
  } catch (const std::runtime_error& e) {
    throw checkpoint_error(fmt::format("checkpoint {}: {} is not a part apgas wrote ({})", path,
                                       part_path(path, 0), e.what()));
  }
  return r;
}

struct part_cache::opened {
  std::vector<std::byte> bytes;
  handle fapl;
  handle f;
};

part_cache::part_cache(const resumed& from) : m_from(from) {}

part_cache::~part_cache() {
  quiet_hdf5 q;
  m_open.clear();
}

const part_cache::opened& part_cache::part(std::uint32_t old_rank) {
  auto it = m_open.find(old_rank);
  if (it != m_open.end()) return *it->second;
  auto o = std::make_unique<opened>();
  o->bytes = read_part(m_from.where, old_rank); // checked against the manifest
  quiet_hdf5 q;
  try {
    std::tie(o->fapl, o->f) = open_image(o->bytes);
  } catch (const std::exception&) {
    throw checkpoint_error(fmt::format("checkpoint {}: {} is not an HDF5 file of apgas",
                                       m_from.where.path, part_path(m_from.where.path, old_rank)));
  }
  return *m_open.emplace(old_rank, std::move(o)).first->second;
}

void part_cache::verify_share(std::uint32_t rank, std::uint32_t ranks) {
  const auto parts = static_cast<std::uint32_t>(m_from.where.what.parts.size());
  for (std::uint32_t k = rank; k < parts; k += ranks)
    if (m_open.find(k) == m_open.end()) (void)read_part(m_from.where, k);
}

void part_cache::load_array(const std::string& name, const local_part& into, std::uint32_t rank) {
  const std::string& path = m_from.where.path;
  const auto refuse = [&](const std::string& why) -> checkpoint_error {
    return checkpoint_error(fmt::format("checkpoint {}: array '{}' {}", path, name, why));
  };
  // The old layout, as rank 0 read it from part 0 (no member reads part 0 for it).
  const auto found = m_from.layouts.find(name);
  if (found == m_from.layouts.end()) throw refuse("is not in it");
  const std::vector<std::uint64_t>& layout = found->second; // dims, rows, cols, element type
  if (static_cast<int>(layout[0]) != into.dims)
    throw refuse(
        fmt::format("has {} dimension(s), and the array loaded into has {}", layout[0], into.dims));
  const distribution old_rows = decode(std::span(layout).subspan(1, 4));
  const distribution old_cols = decode(std::span(layout).subspan(5, 4));
  const auto old_type = static_cast<element_type>(layout[9]);
  if (old_type != into.type)
    throw refuse(fmt::format("holds {}, and the array loaded into holds {}", name_of(old_type),
                             name_of(into.type)));
  if (old_rows.size() != into.rows.size() ||
      (into.dims == 2 && old_cols.size() != into.cols.size()))
    throw refuse(into.dims == 1 ? fmt::format("has {} elements, and the array loaded into has {}",
                                              old_rows.size(), into.rows.size())
                                : fmt::format("is {} x {}, and the array loaded into is {} x {}",
                                              old_rows.size(), old_cols.size(), into.rows.size(),
                                              into.cols.size()));
  const std::uint32_t old_grid_cols = into.dims == 1 ? 1 : old_cols.parts();
  const std::uint32_t new_grid_cols = into.dims == 1 ? 1 : into.cols.parts();
  const std::uint32_t my_row_part = rank / new_grid_cols, my_col_part = rank % new_grid_cols;
  const std::size_t elem = size_of(into.type);
  auto* out = static_cast<std::byte*>(into.data);
  // Which old parts hold this member's elements: those of its rows' owners x columns' owners.
  std::vector<std::uint32_t> row_owner(into.n_rows), col_owner(into.n_cols);
  std::vector<std::size_t> row_at(into.n_rows), col_at(into.n_cols);
  for (std::size_t i = 0; i < into.n_rows; ++i) {
    const std::size_t g = into.rows.global_index(my_row_part, i);
    row_owner[i] = old_rows.owner(g);
    row_at[i] = old_rows.local_index(g);
  }
  for (std::size_t j = 0; j < into.n_cols; ++j) {
    const std::size_t g = into.dims == 1 ? 0 : into.cols.global_index(my_col_part, j);
    col_owner[j] = into.dims == 1 ? 0 : old_cols.owner(g);
    col_at[j] = into.dims == 1 ? 0 : old_cols.local_index(g);
  }
  std::vector<std::uint32_t> row_parts(row_owner), col_parts(col_owner);
  for (auto* v : {&row_parts, &col_parts}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  std::vector<std::byte> data;
  for (const std::uint32_t rp : row_parts)
    for (const std::uint32_t cp : col_parts) {
      const std::uint32_t old = rp * old_grid_cols + cp;
      const opened& o = part(old);
      const std::size_t rows = old_rows.local_size(rp);
      const std::size_t cols = into.dims == 1 ? 1 : old_cols.local_size(cp);
      {
        quiet_hdf5 q;
        handle set(H5Dopen2(o.f.id(), name.c_str(), H5P_DEFAULT), H5Dclose, "H5Dopen2");
        handle space(H5Dget_space(set.id()), H5Sclose, "H5Dget_space");
        hsize_t dims[2] = {0, 0};
        if (H5Sget_simple_extent_ndims(space.id()) != into.dims ||
            H5Sget_simple_extent_dims(space.id(), dims, nullptr) != into.dims || dims[0] != rows ||
            (into.dims == 2 && dims[1] != cols))
          throw refuse(fmt::format("has a part of another shape in {}", part_path(path, old)));
        data.assign(rows * cols * elem, std::byte{0});
        if (!data.empty())
          check(H5Dread(set.id(), native(into.type), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()),
                "H5Dread");
      }
      for (std::size_t i = 0; i < into.n_rows; ++i) {
        if (row_owner[i] != rp) continue;
        for (std::size_t j = 0; j < into.n_cols; ++j) {
          if (col_owner[j] != cp) continue;
          std::memcpy(out + (i * into.stride + j) * elem,
                      data.data() + (row_at[i] * cols + col_at[j]) * elem, elem);
        }
      }
    }
}

} // namespace apgas::detail::checkpoint
