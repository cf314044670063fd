// The gradient all-reduce between GPUs: NCCL, bootstrapped through MPI (rank 0 makes NCCL's
// unique id, MPI broadcasts it, every rank joins on its GPU). Built where the CUDA toolkit has
// NCCL and Open MPI is found (TACH_HAS_NCCL). The MPI ranks stay the job's ranks: NCCL only moves
// the GPU bytes, on the caller's stream, so a bucket's sum queues behind the backward's kernels.
#pragma once

#include <cstdint>

#include "dist/communicator.h"

namespace tach::dist {

class NcclAllReduce {
 public:
  // A collective over every rank of mpi: each joins on GPU (its rank on this machine) modulo the
  // GPUs it sees, and makes that GPU current. Errors name the rank and NCCL's own words.
  explicit NcclAllReduce(Communicator& mpi);
  ~NcclAllReduce();
  NcclAllReduce(const NcclAllReduce&) = delete;
  NcclAllReduce& operator=(const NcclAllReduce&) = delete;

  int device() const { return device_; }
  // In place: count floats at device_data become their sum over the ranks. Queued on stream
  // (a cudaStream_t; nullptr: the default stream); returns at once.
  void sum(float* device_data, int64_t count, void* stream);
  // Waits for stream at most the communicator's timeout; past it, ends the job naming the ranks.
  void wait(void* stream, const char* what);
  static int version();  // NCCL_VERSION_CODE of the library loaded

 private:
  Communicator& mpi_;
  void* comm_ = nullptr;  // ncclComm_t
  int device_ = 0;
};

}  // namespace tach::dist
