#include "core/library_loader.h"

#include <dlfcn.h>

namespace tach {

OpenedLibrary open_library(const LibraryName& name) {
  OpenedLibrary out;
  out.handle = dlopen(name.soname, RTLD_NOW | RTLD_LOCAL);
  if (out.handle) return out;
  const char* err = dlerror();
  const std::string first_reason = err ? err : "no reason given";
  const std::string fallback = name.fallback_path ? name.fallback_path : "";
  if (!fallback.empty()) {
    out.handle = dlopen(fallback.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (out.handle) return out;
  }
  out.error = std::string(name.soname) + " (needed for " + name.what_for + ") did not load: " + first_reason +
              ". It is looked for in LD_LIBRARY_PATH, the ld.so cache and the default library directories" +
              (fallback.empty() ? std::string() : ", then as " + fallback + " (" + name.fallback_what + ")") + "; " +
              name.remedy;
  return out;
}

void* library_symbol(void* handle, const char* symbol, std::string* missing) {
  // dlsym on a handle searches the library and, breadth first, the libraries it loaded: cairo's and
  // GLib's functions come through librsvg's handle.
  void* fn = dlsym(handle, symbol);
  if (!fn && missing) *missing += std::string(missing->empty() ? "" : ", ") + symbol;
  return fn;
}

}  // namespace tach
