// A CUDA library opened with dlopen at first use, never linked: cuBLASLt's 540 MB (whose static
// initialisers and .bss alone made 200 MiB of every tach process's memory, GPU or not) and CUPTI
// cost nothing until a GPU GEMM or a GPU profile asks for them, and a machine without them says
// which library is missing and where it was looked for when it matters.
#pragma once

#include <string>

namespace tach::cuda {

// A library as the dynamic loader is asked for it.
struct LibraryName {
  const char* soname;        // e.g. "libcublasLt.so.13": LD_LIBRARY_PATH, tach's RUNPATH, ld.so cache
  const char* toolkit_path;  // the file of the toolkit tach was built with, tried second ("" for none)
  const char* what_for;      // what needs it, for the error ("GEMMs on the GPU")
};

struct OpenedLibrary {
  void* handle = nullptr;  // null when neither name loaded
  std::string error;       // empty when loaded; else names the library, what needs it and where it was looked for
};

// Opens the library (RTLD_NOW | RTLD_LOCAL), kept open for the process's lifetime (handles made from
// it live in statics).
OpenedLibrary open_library(const LibraryName& name);

// Resolves `symbol` into fn; a symbol the library lacks is appended to *missing ("a, b").
void* library_symbol(void* handle, const char* symbol, std::string* missing);

template <typename Fn>
void resolve(void* handle, Fn& fn, const char* symbol, std::string* missing) {
  fn = reinterpret_cast<Fn>(library_symbol(handle, symbol, missing));
}

}  // namespace tach::cuda
