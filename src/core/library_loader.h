// A library opened with dlopen at its first use, never linked. cuBLASLt's 540 MB (whose static
// initialisers and .bss alone made 200 MiB of every tach process's memory, GPU or not), CUPTI,
// librsvg with cairo and GLib under it (PNG figures) and libcurl with its TLS stack (downloads) cost
// nothing until a GPU GEMM, a GPU profile, a PNG or a download asks for them: a process that needs
// none of them starts without relocating them, and a machine without one (a bare GPU machine that
// was carried tach alone) runs everything else and says which library is missing, what needs it and
// where it was looked for when it matters.
#pragma once

#include <string>

namespace tach {

// A library as the dynamic loader is asked for it.
struct LibraryName {
  const char* soname;         // e.g. "libcublasLt.so.13": LD_LIBRARY_PATH, tach's RUNPATH, ld.so cache
  const char* fallback_path;  // a file tried second ("" for none), e.g. the toolkit tach was built with
  const char* fallback_what;  // what that file is, for the error ("the CUDA toolkit tach was built with")
  const char* what_for;       // what needs it, for the error ("GEMMs on the GPU")
  const char* remedy;         // how a user gets it ("install Debian's librsvg2-2")
};

// The remedy for a CUDA library (cuBLASLt, CUPTI): the toolkit's own copy matches the driver.
inline constexpr const char* kCudaLibraryRemedy =
    "install the CUDA toolkit's library or put the directory holding it on LD_LIBRARY_PATH";

struct OpenedLibrary {
  void* handle = nullptr;  // null when neither name loaded
  std::string error;       // empty when loaded; else names the library, what needs it and where it was looked for
};

// Opens the library (RTLD_NOW | RTLD_LOCAL), kept open for the process's lifetime (handles made from
// it live in statics).
OpenedLibrary open_library(const LibraryName& name);

// Resolves `symbol` (in the library or the libraries it loaded) into fn; a symbol not found is
// appended to *missing ("a, b").
void* library_symbol(void* handle, const char* symbol, std::string* missing);

template <typename Fn>
void resolve(void* handle, Fn& fn, const char* symbol, std::string* missing) {
  fn = reinterpret_cast<Fn>(library_symbol(handle, symbol, missing));
}

}  // namespace tach
