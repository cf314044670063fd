#include "cuda/library_loader.h"

#include <dlfcn.h>

namespace tach::cuda {

OpenedLibrary open_library(const LibraryName& name) {
  OpenedLibrary out;
  out.handle = dlopen(name.soname, RTLD_NOW | RTLD_LOCAL);
  if (out.handle) return out;
  const char* err = dlerror();
  const std::string first_reason = err ? err : "no reason given";
  const std::string toolkit = name.toolkit_path ? name.toolkit_path : "";
  if (!toolkit.empty()) {
    out.handle = dlopen(toolkit.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (out.handle) return out;
  }
  out.error = std::string(name.soname) + " (needed for " + name.what_for + ") did not load: " + first_reason +
              ". It is looked for in LD_LIBRARY_PATH, the ld.so cache and the default library directories" +
              (toolkit.empty() ? std::string() : ", then as " + toolkit + " (the CUDA toolkit tach was built with)") +
              "; install the CUDA toolkit's library or put the directory holding it on LD_LIBRARY_PATH";
  return out;
}

void* library_symbol(void* handle, const char* symbol, std::string* missing) {
  void* fn = dlsym(handle, symbol);
  if (!fn && missing) *missing += std::string(missing->empty() ? "" : ", ") + symbol;
  return fn;
}

}  // namespace tach::cuda
