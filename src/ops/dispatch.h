// The dispatch seam: each op's .cc checks arguments, then picks a kernel by device and dtype.
// An unsupported combination is an error naming the op, the device and the dtype; never a
// silent fallback to another device or dtype.
#pragma once

#include "core/trace.h"

#include <string>

#include "tach/device.h"
#include "tach/dtype.h"
#include "tach/error.h"

namespace tach::ops {

[[noreturn]] inline void unsupported(const char* op, Device device, DType dtype) {
  std::string why = device.kind == DeviceKind::cuda ? " (the CUDA kernels for this op are not built yet)" : "";
  throw Error(std::string(op) + ": no kernel for device " + device.str() + " with dtype " +
              std::string(dtype_name(dtype)) + why);
}

}  // namespace tach::ops
