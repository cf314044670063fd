// CUDA errors become tach::Error with the call that failed and CUDA's own words.
#pragma once

#include <cuda_runtime.h>

namespace tach::cuda {

// Throws "what: <cudaGetErrorString>" unless err is cudaSuccess; clears the sticky error first,
// so that the next, unrelated call does not report this one again.
void check(cudaError_t err, const char* what);
// After a kernel launch: a bad launch configuration is reported here, naming the kernel, rather
// than at the next synchronisation.
void check_launch(const char* kernel);

}  // namespace tach::cuda
