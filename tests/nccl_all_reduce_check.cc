// NCCL's all-reduce between the ranks of an MPI job, one GPU each: run under
// `mpirun -np 2 nccl_all_reduce_check` (ctest gpu.nccl_all_reduce). Each rank fills 25 MB with
// rank + 1 on its GPU; after the sum every element must be N(N+1)/2 on every rank. Exits 77 (skip)
// where the ranks do not have a GPU each.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "dist/communicator.h"
#include "dist/nccl_all_reduce.h"
#include "tach/error.h"

int main() {
  using tach::dist::Communicator;
  Communicator& world = Communicator::world();
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
  // Every rank must decide the same: skip unless each rank has a GPU of its own.
  double have[2] = {double(gpus >= world.local_size() ? 1 : 0), 1.0};
  world.sum(have, 2, "all_reduce of the GPU check");
  if (!world.distributed() || have[0] < have[1]) {
    if (world.rank() == 0)
      std::printf("SKIP: needs 2 or more ranks with a GPU each (%d rank(s); this machine has %d GPU(s) for %d)\n",
                  world.size(), gpus, world.local_size());
    return 77;
  }
  try {
    tach::dist::NcclAllReduce nccl(world);
    const size_t n = size_t(25e6 / sizeof(float));
    std::vector<float> host(n, float(world.rank() + 1));
    float* dev = nullptr;
    if (cudaMalloc(&dev, n * sizeof(float)) != cudaSuccess) throw tach::Error("cudaMalloc failed");
    cudaMemcpy(dev, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    nccl.sum(dev, int64_t(n), nullptr);
    nccl.wait(nullptr, "ncclAllReduce of 25 MB");
    cudaMemcpy(host.data(), dev, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(dev);
    const int sum_of_ranks = world.size() * (world.size() + 1) / 2;  // 1 + 2 + ... + N, exact
    const float want = float(sum_of_ranks);
    for (size_t i = 0; i < n; ++i)
      if (host[i] != want) {
        std::printf("rank %d: element %zu is %g, not %g\n", world.rank(), i, double(host[i]), double(want));
        return 1;
      }
    std::printf("rank %d on GPU %d: NCCL %d summed 25 MB over %d ranks\n", world.rank(), nccl.device(),
                tach::dist::NcclAllReduce::version(), world.size());
  } catch (const tach::Error& e) { world.abort_job(e.what()); }
  return 0;
}
