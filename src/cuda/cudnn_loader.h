// cuDNN 9 loaded at first use with dlopen("libcudnn.so.9"), never linked: tach builds and runs where
// cuDNN is absent, and says so (naming the library and where it is looked for) only when something
// asks for it. Only the backend (graph) API's entry points are resolved: fused attention is built
// from backend descriptors (cuda/cudnn_sdpa.*).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

// cudnn_graph.h ships with cuDNN's developer files; a toolkit without them builds tach with cuDNN
// reported missing at run time.
#if __has_include(<cudnn_graph.h>)
#include <cudnn_graph.h>
#define TACH_HAS_CUDNN_HEADERS 1
#else
#define TACH_HAS_CUDNN_HEADERS 0
#endif

namespace tach::cuda {

// The library's name as the dynamic loader is asked for it.
inline constexpr const char* kCudnnLibrary = "libcudnn.so.9";

#if TACH_HAS_CUDNN_HEADERS
// The entry points tach calls, resolved from the loaded library.
struct CudnnApi {
  size_t (*get_version)() = nullptr;
  const char* (*get_error_string)(cudnnStatus_t) = nullptr;
  void (*get_last_error_string)(char*, size_t) = nullptr;  // null before cuDNN 9.0's
  cudnnStatus_t (*create)(cudnnHandle_t*) = nullptr;
  cudnnStatus_t (*set_stream)(cudnnHandle_t, cudaStream_t) = nullptr;
  cudnnStatus_t (*backend_create)(cudnnBackendDescriptorType_t, cudnnBackendDescriptor_t*) = nullptr;
  cudnnStatus_t (*backend_destroy)(cudnnBackendDescriptor_t) = nullptr;
  cudnnStatus_t (*backend_finalize)(cudnnBackendDescriptor_t) = nullptr;
  cudnnStatus_t (*backend_set)(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t,
                               int64_t, const void*) = nullptr;
  cudnnStatus_t (*backend_get)(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t,
                               int64_t, int64_t*, void*) = nullptr;
  cudnnStatus_t (*backend_execute)(cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t) = nullptr;
};

// The loaded API; throws tach::Error saying what is missing (the library, or a symbol of it).
const CudnnApi& cudnn_api();

// Throws "cuDNN <what>: <status name> (<cuDNN's last error message>)" unless st is success.
void check_cudnn(cudnnStatus_t st, const std::string& what);
#endif

// Whether libcudnn.so.9 loads and has what tach needs; when not, *why (if given) says why and
// where the library is looked for.
bool cudnn_loadable(std::string* why = nullptr);

// cudnnGetVersion() of the loaded library (e.g. 91002 for 9.10.2); 0 when it does not load.
int64_t cudnn_version();

}  // namespace tach::cuda
