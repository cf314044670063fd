// The note both families' loaders add to ModelInfo::notes when bf16 compute will be emulated.
#pragma once

#include <string>

#include "tach/device.h"
#include "tach/dtype.h"

namespace tach::model {

// "" when the compute dtype is not bf16, the CPU has native bf16, or the model runs on a GPU.
std::string bf16_compute_note(DType compute, Device device);

}  // namespace tach::model
