# The CUDA backend (src/cuda/). Only configured when TACH_CUDA is ON.
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  # Hopper first (the lent machines are H100/H200); Ampere for the common cards.
  set(CMAKE_CUDA_ARCHITECTURES 80 90)
endif()
set(CMAKE_CUDA_STANDARD 20)
