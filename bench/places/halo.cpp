// bench_halo: the halo exchange of a 2D heat grid (dist_array_2d::exchange_halo) against an
// MPI Isend/Irecv/Waitall halo exchange of the same grid and decomposition, in the same job.
//
//   launch/apgasrun -n P bench_halo [--sizes N,N,...] [--iters K] [--rounds R]
//
// An N x N grid of doubles in blocks over the grid of places closest to square
// (distribution_2d::square_grid: 2 x 1 at 2 places, 2 x 2 at 4), one ghost cell around each
// part; an exchange fills the ghost rows above and below and the ghost columns left and right
// (no corners) from the up to four neighbours. The MPI peer is what an MPI heat code does: one
// Irecv and one Isend per neighbour, rows straight from the grid, columns through an
// MPI_Type_vector, then MPI_Waitall. One activity per place exchanges K times (after a
// warm-up); the peer runs before each round's runtime exists (see common.hpp), and rounds take
// turns (the machine's speed drifts). Time per exchange: the slowest place's; medians over
// rounds. After each run every ghost cell is checked against its neighbour's value. Target:
// at most 1.2x MPI.
#include <apgas/dist_array.hpp>

#include "common.hpp"

#include <array>
#include <span>

namespace {

using namespace apgas_bench;
using apgas::task;

/// The value of global cell (i, j) in round `round`: each round's exchanges carry new bytes.
double value_of(std::size_t i, std::size_t j, int round) {
  return static_cast<double>(i) * 65536.0 + static_cast<double>(j) + round * 0.5;
}

apgas::distribution_2d decomposition(std::size_t n, int places) {
  const auto [rows, cols] = apgas::distribution_2d::square_grid(static_cast<std::uint32_t>(places));
  return apgas::distribution_2d::block(n, n, rows, cols);
}

/// Checks the ghosts of a part (local rows x cols, row stride `stride`, ghosts at -1 and
/// rows/cols) whose local (0, 0) is global (i0, j0): every ghost inside the grid holds its
/// owner's value. `at(i, j)` reads local (i, j).
template <class At>
bool ghosts_hold_neighbours(std::size_t n, std::size_t i0, std::size_t j0, std::size_t rows,
                            std::size_t cols, int round, At at) {
  const auto li = [&](std::ptrdiff_t i) { return static_cast<std::ptrdiff_t>(i0) + i; };
  const auto lj = [&](std::ptrdiff_t j) { return static_cast<std::ptrdiff_t>(j0) + j; };
  const auto r = static_cast<std::ptrdiff_t>(rows);
  const auto c = static_cast<std::ptrdiff_t>(cols);
  const auto inside = [&](std::ptrdiff_t g) {
    return g >= 0 && g < static_cast<std::ptrdiff_t>(n);
  };
  const auto ok = [&](std::ptrdiff_t i, std::ptrdiff_t j) {
    return at(i, j) ==
           value_of(static_cast<std::size_t>(li(i)), static_cast<std::size_t>(lj(j)), round);
  };
  for (std::ptrdiff_t j = 0; j < c; ++j) {
    if (inside(li(-1)) && !ok(-1, j)) return false;
    if (inside(li(r)) && !ok(r, j)) return false;
  }
  for (std::ptrdiff_t i = 0; i < r; ++i) {
    if (inside(lj(-1)) && !ok(i, -1)) return false;
    if (inside(lj(c)) && !ok(i, c)) return false;
  }
  return true;
}

double mpi_seconds(std::size_t n, int iters, int round) {
  const int size = world_size();
  const auto me = static_cast<std::uint32_t>(world_rank());
  const apgas::distribution_2d d = decomposition(n, size);
  const std::size_t rows = d.local_rows(me), cols = d.local_cols(me), stride = cols + 2;
  const std::size_t i0 = d.rows.first(d.grid_row(me)), j0 = d.cols.first(d.grid_col(me));
  std::vector<double> grid((rows + 2) * stride, 0.0);
  const auto cell = [&](std::ptrdiff_t i, std::ptrdiff_t j) -> double& {
    return grid[static_cast<std::size_t>((i + 1) * static_cast<std::ptrdiff_t>(stride) + j + 1)];
  };
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      cell(static_cast<std::ptrdiff_t>(i), static_cast<std::ptrdiff_t>(j)) =
          value_of(i0 + i, j0 + j, round);
  MPI_Datatype column = MPI_DATATYPE_NULL;
  MPI_Type_vector(static_cast<int>(rows), 1, static_cast<int>(stride), MPI_DOUBLE, &column);
  MPI_Type_commit(&column);
  const std::uint32_t gr = d.grid_row(me), gc = d.grid_col(me);
  const std::uint32_t grid_rows = d.rows.parts(), grid_cols = d.cols.parts();
  const auto r = static_cast<std::ptrdiff_t>(rows), c = static_cast<std::ptrdiff_t>(cols);
  const int row_count = static_cast<int>(cols);
  struct side {
    bool exists;
    int peer;
    double* send;
    double* receive;
    int count;
    MPI_Datatype type;
  };
  const std::array<side, 4> sides{{
      {gr > 0, static_cast<int>(me - grid_cols), &cell(0, 0), &cell(-1, 0), row_count, MPI_DOUBLE},
      {gr + 1 < grid_rows, static_cast<int>(me + grid_cols), &cell(r - 1, 0), &cell(r, 0),
       row_count, MPI_DOUBLE},
      {gc > 0, static_cast<int>(me - 1), &cell(0, 0), &cell(0, -1), 1, column},
      {gc + 1 < grid_cols, static_cast<int>(me + 1), &cell(0, c - 1), &cell(0, c), 1, column},
  }};
  const auto exchange = [&] {
    std::array<MPI_Request, 8> requests{};
    int k = 0;
    // Tag: the side at the receiver (above 0, below 1, left 2, right 3), as a pair of sides
    // between two ranks could otherwise match the wrong message on a 1-wide grid dimension.
    constexpr std::array<int, 4> k_their_side{1, 0, 3, 2};
    for (std::size_t s = 0; s < sides.size(); ++s) {
      if (!sides[s].exists) continue;
      MPI_Irecv(sides[s].receive, sides[s].count, sides[s].type, sides[s].peer, static_cast<int>(s),
                MPI_COMM_WORLD, &requests[static_cast<std::size_t>(k++)]);
      MPI_Isend(sides[s].send, sides[s].count, sides[s].type, sides[s].peer, k_their_side[s],
                MPI_COMM_WORLD, &requests[static_cast<std::size_t>(k++)]);
    }
    MPI_Waitall(k, requests.data(), MPI_STATUSES_IGNORE);
  };
  for (int i = 0; i < iters / 10 + 2; ++i) exchange();
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = clock::now();
  for (int i = 0; i < iters; ++i) exchange();
  double dt = seconds_since(t0) / iters;
  MPI_Type_free(&column);
  if (!ghosts_hold_neighbours(n, i0, j0, rows, cols, round,
                              [&](std::ptrdiff_t i, std::ptrdiff_t j) { return cell(i, j); }))
    fail("the MPI halo exchange left a wrong ghost");
  MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return dt;
}

struct apgas_halo {
  task<double> operator()(std::size_t n, int iters, int round) const {
    const apgas::team all = apgas::team::world();
    auto g = co_await apgas::dist_array_2d<double>::make(all, decomposition(n, all.size()), 1);
    g.for_each_local(
        [round](std::size_t i, std::size_t j, double& x) { x = value_of(i, j, round); });
    for (int i = 0; i < iters / 10 + 2; ++i) co_await g.exchange_halo();
    co_await all.barrier();
    const auto t0 = clock::now();
    for (int i = 0; i < iters; ++i) co_await g.exchange_halo();
    const double dt = seconds_since(t0) / iters;
    if (!ghosts_hold_neighbours(n, g.first_row(), g.first_col(), g.local_rows(), g.local_cols(),
                                round, [&](std::ptrdiff_t i, std::ptrdiff_t j) { return g(i, j); }))
      throw std::runtime_error("exchange_halo left a wrong ghost");
    co_await all.barrier(); // nobody's exchange still reads this part when it goes
    co_return dt;
  }
};

/// Seconds per exchange of the slowest place.
double apgas_seconds(apgas::runtime& rt, std::size_t n, int iters, int round) {
  return rt.run([n, iters, round]() -> task<double> {
    const std::vector<double> each = co_await apgas::at_each_place(apgas_halo{}, n, iters, round);
    co_return *std::max_element(each.begin(), each.end());
  });
}

std::vector<std::size_t> parse_sizes(const std::string& text) {
  std::vector<std::size_t> sizes;
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    std::size_t v = 0;
    const auto [p, ec] = std::from_chars(text.data() + at, text.data() + comma, v);
    if (ec != std::errc{} || p != text.data() + comma || v == 0) {
      std::fprintf(stderr, "--sizes: expected positive numbers separated by commas, got '%s'\n",
                   text.c_str());
      std::exit(2);
    }
    sizes.push_back(v);
    at = comma + 1;
  }
  return sizes;
}

} // namespace

int main(int argc, char** argv) {
  const apgas::options opts = runtime_options(argc, argv);
  flags f(argc, argv);
  const std::vector<std::size_t> sizes = parse_sizes(f.get("--sizes", std::string("256,4096")));
  const int iters = f.get("--iters", 2000);
  const int rounds = f.get("--rounds", 5);
  const double watchdog_s = f.get("--watchdog-s", 300.0);
  f.done();
  if (iters < 1 || rounds < 1) {
    std::fprintf(stderr, "--iters and --rounds must be at least 1\n");
    return 2;
  }
  const int level = init_mpi(argc, argv);
  for (std::size_t n : sizes)
    if (n < 2 * static_cast<std::size_t>(world_size())) {
      if (world_rank() == 0) std::fprintf(stderr, "--sizes: %zu is too small a grid\n", n);
      return 2;
    }
  std::vector<std::vector<double>> mpi(sizes.size()), mine(sizes.size());
  std::string description;
  apgas::place_id here = 0;
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t s = 0; s < sizes.size(); ++s)
      mpi[s].push_back(mpi_seconds(sizes[s], iters, round));
    apgas::runtime rt(opts);
    watchdog dog(rt, watchdog_s);
    here = rt.here();
    description = describe(rt, level);
    for (std::size_t s = 0; s < sizes.size(); ++s) {
      watchdog::phase() = "exchange_halo";
      mine[s].push_back(apgas_seconds(rt, sizes[s], iters, round));
    }
  }
  if (here != 0) return 0;
  const auto [grid_rows, grid_cols] =
      apgas::distribution_2d::square_grid(static_cast<std::uint32_t>(world_size()));
  fmt::print("bench_halo: one activity per place calls dist_array_2d::exchange_halo, against "
             "MPI Isend/Irecv/Waitall\n  {}\n  grid of {} x {} parts, one ghost cell around "
             "each; {} exchanges in each of {} rounds (median over rounds)\n\n",
             description, grid_rows, grid_cols, iters, rounds);
  fmt::print("| grid | messages per part | MPI us | apgas us | ratio | target |\n"
             "|---|---|---:|---:|---:|---|\n");
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    const double m = summarize(mpi[s]).median * 1e6;
    const double a = summarize(mine[s]).median * 1e6;
    const double ratio = a / m;
    const std::size_t n = sizes[s];
    std::string messages = fmt::format("rows of {} B", n / grid_cols * sizeof(double));
    if (grid_cols > 1) messages += fmt::format(", columns of {} B", n / grid_rows * sizeof(double));
    fmt::print("| {} x {} | {} | {:.2f} | {:.2f} | {:.2f} | {} (<= 1.2) |\n", n, n, messages, m, a,
               ratio, ratio <= 1.2 ? "pass" : "MISS");
  }
  return 0;
}
