// The plain MPI benchmark tach's gradient all-reduce is compared with (docs/perf.md): in-place
// MPI_Allreduce (sum, float) of each size, from the main thread, nothing else running, as the OSU
// micro-benchmarks' osu_allreduce times it: a barrier, then `iters` calls; the median over rounds.
// Usage: mpirun -np 2 tach_bench_allreduce [MB ...]   (default 1 4 25 64 MB)
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<double> mbs;
  for (int i = 1; i < argc; ++i) mbs.push_back(std::atof(argv[i]));
  if (mbs.empty()) mbs = {1, 4, 25, 64};
  if (rank == 0)
    std::printf("ranks %d; in-place MPI_Allreduce, float sum; median of 7 rounds of 5 calls\n%10s %12s %10s\n", size,
                "MB", "ms/call", "GB/s");
  for (double mb : mbs) {
    const size_t n = size_t(mb * 1e6 / sizeof(float));
    std::vector<float> buf(n, 1.0f);
    MPI_Allreduce(MPI_IN_PLACE, buf.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);  // warm-up
    std::vector<double> per_call;
    for (int round = 0; round < 7; ++round) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (int i = 0; i < 5; ++i) MPI_Allreduce(MPI_IN_PLACE, buf.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      per_call.push_back((MPI_Wtime() - t0) / 5);
    }
    std::sort(per_call.begin(), per_call.end());
    const double s = per_call[per_call.size() / 2];
    // Bandwidth as tach reports it: the bytes each rank hands in, over the call's time.
    if (rank == 0) std::printf("%10.2f %12.3f %10.3f\n", double(n * sizeof(float)) / 1e6, s * 1e3, n * 4.0 / s / 1e9);
  }
  MPI_Finalize();
  return 0;
}
