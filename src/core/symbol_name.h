// Kernel names as a reader wants them in a trace and an op table: CUPTI reports each kernel by
// its mangled C++ symbol (_ZN4tach3ops...embedding_kernelIfEEvPfPKi...), which says little.
#pragma once

#include <string>

namespace tach::core {

// The demangled name without its parameter list and without "(anonymous namespace)::", template
// arguments kept: "tach::ops::embedding_kernel<float>". A name that is not a mangled C++ symbol
// (cuBLAS's "sm90_xmma_gemm_...", a C kernel) comes back unchanged.
std::string readable_kernel_name(const std::string& symbol);

}  // namespace tach::core
