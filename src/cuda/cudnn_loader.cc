#include "cuda/cudnn_loader.h"

#include <dlfcn.h>

#include <mutex>
#include <type_traits>

#include "tach/error.h"

namespace tach::cuda {
namespace {

// Where the dynamic loader looks, said in the error so that a user knows what to change. pip's
// nvidia-cudnn-cu12/cu13 wheels (which PyTorch installs) put the library in
// site-packages/nvidia/cudnn/lib, which is on no default path.
constexpr const char* kWhereLooked =
    "looked for by the dynamic loader in LD_LIBRARY_PATH, the ld.so cache and the default library "
    "directories; install cuDNN 9, or put the directory holding it (for a pip install: "
    "site-packages/nvidia/cudnn/lib) on LD_LIBRARY_PATH";

struct Loaded {
  std::string error;  // empty when loaded
#if TACH_HAS_CUDNN_HEADERS
  CudnnApi api;
#endif
  int64_t version = 0;
};

const Loaded& loaded() {
  static Loaded state;
  static std::once_flag once;
  std::call_once(once, [] {
#if TACH_HAS_CUDNN_HEADERS
    // Kept open for the process's lifetime: handles and plans made from it live in statics.
    void* lib = dlopen(kCudnnLibrary, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* err = dlerror();
      state.error = std::string("cuDNN is not available: ") + kCudnnLibrary + " did not load (" +
                    (err ? err : "no reason given") + "); it is " + kWhereLooked;
      return;
    }
    std::string missing;
    const auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
    };
    CudnnApi& a = state.api;
    sym(a.get_version, "cudnnGetVersion");
    sym(a.get_error_string, "cudnnGetErrorString");
    sym(a.create, "cudnnCreate");
    sym(a.set_stream, "cudnnSetStream");
    sym(a.backend_create, "cudnnBackendCreateDescriptor");
    sym(a.backend_destroy, "cudnnBackendDestroyDescriptor");
    sym(a.backend_finalize, "cudnnBackendFinalize");
    sym(a.backend_set, "cudnnBackendSetAttribute");
    sym(a.backend_get, "cudnnBackendGetAttribute");
    sym(a.backend_execute, "cudnnBackendExecute");
    if (!missing.empty()) {
      state.error = std::string("cuDNN is not usable: ") + kCudnnLibrary + " lacks " + missing;
      return;
    }
    a.get_last_error_string =
        reinterpret_cast<void (*)(char*, size_t)>(dlsym(lib, "cudnnGetLastErrorString"));  // optional
    state.version = int64_t(a.get_version());
    if (state.version < 90000)
      state.error = std::string("cuDNN ") + std::to_string(state.version) + " loaded from " + kCudnnLibrary +
                    " is older than 9.0, which fused attention needs";
#else
    state.error = std::string("cuDNN is not available: tach was built without cuDNN's headers (cudnn_graph.h), so ") +
                  kCudnnLibrary + " is not used";
#endif
  });
  return state;
}

}  // namespace

#if TACH_HAS_CUDNN_HEADERS
const CudnnApi& cudnn_api() {
  const Loaded& l = loaded();
  if (!l.error.empty()) throw Error(l.error);
  return l.api;
}

void check_cudnn(cudnnStatus_t st, const std::string& what) {
  if (st == CUDNN_STATUS_SUCCESS) return;
  const CudnnApi& a = cudnn_api();
  std::string message = std::string("cuDNN ") + what + ": " + a.get_error_string(st);
  if (a.get_last_error_string) {
    char detail[1024] = {};
    a.get_last_error_string(detail, sizeof(detail));
    if (detail[0]) message += std::string(" (") + detail + ")";
  }
  throw Error(message);
}
#endif

bool cudnn_loadable(std::string* why) {
  const Loaded& l = loaded();
  if (why) *why = l.error;
  return l.error.empty();
}

int64_t cudnn_version() { return loaded().error.empty() ? loaded().version : 0; }

}  // namespace tach::cuda
