#include "cuda/cuda_error.h"

#include <string>

#include "tach/error.h"

namespace tach::cuda {

void check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  cudaGetLastError();
  throw Error(std::string(what) + ": " + cudaGetErrorString(err));
}

void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

}  // namespace tach::cuda
