#include "dist/nccl_all_reduce.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "cuda/cuda_error.h"
#include "tach/error.h"

namespace tach::dist {

namespace {

void check_nccl(ncclResult_t r, const std::string& what, int rank) {
  if (r != ncclSuccess)
    throw Error("rank " + std::to_string(rank) + ": " + what + " failed: " + ncclGetErrorString(r) + " (NCCL " +
                std::to_string(NcclAllReduce::version()) + ")");
}

// The rank's place among the ranks on its machine, as the launchers say it.
int local_rank(int world_rank) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return world_rank;
}

}  // namespace

int NcclAllReduce::version() {
  int v = 0;
  ncclGetVersion(&v);
  return v;
}

NcclAllReduce::NcclAllReduce(Communicator& mpi) : mpi_(mpi) {
  int gpus = 0;
  cuda::check(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount");
  check(gpus > 0, "rank " + std::to_string(mpi.rank()) + ": NCCL all-reduces need a GPU and this rank sees none");
  device_ = local_rank(mpi.rank()) % gpus;
  cuda::check(cudaSetDevice(device_), "cudaSetDevice");
  ncclUniqueId id{};
  if (mpi.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId", 0);
  const std::string shared =
      mpi.broadcast(std::string(reinterpret_cast<const char*>(&id), sizeof id), "broadcast of NCCL's unique id");
  std::copy(shared.begin(), shared.end(), reinterpret_cast<char*>(&id));
  ncclComm_t comm = nullptr;
  check_nccl(ncclCommInitRank(&comm, mpi.size(), id, mpi.rank()), "ncclCommInitRank", mpi.rank());
  comm_ = comm;
}

NcclAllReduce::~NcclAllReduce() {
  if (comm_) ncclCommDestroy(static_cast<ncclComm_t>(comm_));
}

void NcclAllReduce::sum(float* device_data, int64_t count, void* stream) {
  check_nccl(ncclAllReduce(device_data, device_data, size_t(count), ncclFloat32, ncclSum,
                           static_cast<ncclComm_t>(comm_), static_cast<cudaStream_t>(stream)),
             "ncclAllReduce", mpi_.rank());
}

void NcclAllReduce::wait(void* stream, const char* what) {
  // Polled, not cudaStreamSynchronize: a rank that never joins would block that call forever.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(mpi_.timeout());
  auto s = static_cast<cudaStream_t>(stream);
  for (;;) {
    const cudaError_t e = cudaStreamQuery(s);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) cuda::check(e, what);
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(static_cast<ncclComm_t>(comm_), &async);
    check_nccl(async, what, mpi_.rank());
    if (std::chrono::steady_clock::now() > deadline) {
      ncclCommAbort(static_cast<ncclComm_t>(comm_));
      comm_ = nullptr;
      mpi_.abort_job(std::string(what) + " did not complete within " + std::to_string(int(mpi_.timeout())) + " s");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace tach::dist
