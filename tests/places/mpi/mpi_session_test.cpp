// A program that initialises MPI itself keeps its MPI session across runtimes: each runtime
// uses it and leaves it initialised at its end; the program calls MPI between two runtimes and
// finalises MPI itself. Run under mpiexec -n 1, 2 and 4.
#include <apgas/apgas.hpp>

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

namespace {

bool mpi_alive() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized != 0 && finalized == 0;
}

/// Sums here() over all places with `at`, inside a run of `rt`.
long sum_of_place_ids(apgas::runtime& rt) {
  return rt.run([]() -> apgas::task<long> {
    long sum = 0;
    for (apgas::place_id p = 0; p < apgas::places(); ++p)
      sum += co_await apgas::at(p, [] { return static_cast<long>(apgas::here()); });
    co_return sum;
  });
}

TEST(mpi_session, runtimes_come_and_go_inside_the_programs_mpi_session) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long expected = static_cast<long>(size) * (size - 1) / 2;
  for (int round = 0; round < 3; ++round) {
    {
      apgas::runtime rt;
      EXPECT_EQ(static_cast<int>(rt.places()), size);
      EXPECT_EQ(sum_of_place_ids(rt), expected) << "round " << round;
    }
    ASSERT_TRUE(mpi_alive()) << "a runtime finalised an MPI it did not initialise";
    // Between runtimes the program owns MPI again: a collective of its own.
    int one = 1;
    int total = 0;
    ASSERT_EQ(MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(total, size);
  }
}

} // namespace

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "mpi_session_test: MPI_Init_thread failed\n");
    return 2;
  }
  testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) // one report per job
    delete testing::UnitTest::GetInstance()->listeners().Release(
        testing::UnitTest::GetInstance()->listeners().default_result_printer());
  const int rc = RUN_ALL_TESTS();
  // Every rank's verdict decides the job's: a failure at any rank fails the test.
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
