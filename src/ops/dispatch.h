// The dispatch seam: each op's .cc checks arguments, then picks a kernel by device and dtype.
// An unsupported combination is an error naming the op, the device and the dtype; never a
// silent fallback to another device or dtype.
#pragma once

#include "core/trace.h"

#include <initializer_list>
#include <string>

#include "tach/device.h"
#include "tach/dtype.h"
#include "tach/error.h"
#include "tach/tensor.h"

namespace tach::ops {

[[noreturn]] inline void unsupported(const char* op, Device device, DType dtype) {
  std::string why =
      device.kind == DeviceKind::cuda ? " (this op has no CUDA kernel for it, or this build has no CUDA backend)" : "";
  throw Error(std::string(op) + ": no kernel for device " + device.str() + " with dtype " +
              std::string(dtype_name(dtype)) + why);
}

// Every defined tensor an op is given must be on `device`: a kernel cannot read another
// device's memory, and copying behind the caller's back would hide a cost the profile must show.
inline void check_device(const char* op, Device device, std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors)
    if (t->defined() && !(t->device() == device))
      throw Error(std::string(op) + ": " + t->describe() + " is not on " + device.str() +
                  " like the op's other tensors; copy it with Tensor::to_device first");
}

// True when a CUDA kernel should run; false for the CPU; an error for a CUDA tensor in a build
// without the backend (which cannot allocate one, so this only guards borrowed memory).
inline bool on_cuda([[maybe_unused]] const char* op, Device device, [[maybe_unused]] DType dtype) {
  if (device.kind == DeviceKind::cpu) return false;
#if TACH_HAS_CUDA
  return true;
#else
  unsupported(op, device, dtype);
#endif
}

}  // namespace tach::ops
