# The CUDA backend (src/cuda/). Only configured when TACH_CUDA is ON.
# The architectures are chosen before enable_language(CUDA), which would otherwise fill in the
# compiler's own default (sm_75 for CUDA 13): Ampere (A100) and Hopper (H100/H200), bf16 and
# cuBLASLt's fast paths on both. -DCMAKE_CUDA_ARCHITECTURES=90 builds one and halves nvcc's time.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
  set(CMAKE_CUDA_ARCHITECTURES 80 90)
endif()
# One CUDA runtime in the process: the shared libcudart that tach and cuBLASLt use. CMake's
# default would also link the static runtime into every executable with CUDA objects, and two
# runtimes keep two sets of state (streams, pools) that must never meet.
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
# Host code in .cu files is C++20 like the rest (tach's headers use defaulted comparisons).
# CMake 3.25 knows nvcc's C++20 flag only for the versions it had seen (up to CUDA 12), so for a
# newer nvcc it is named here; the flag has not changed.
if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
set(CMAKE_CUDA_STANDARD 20)
