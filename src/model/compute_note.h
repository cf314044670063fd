// The note both families' loaders add to ModelInfo::notes when bf16 compute will be emulated.
#pragma once

#include <string>

#include "tach/dtype.h"

namespace tach::model {

// "" when the compute dtype is not bf16 or the CPU has native bf16.
std::string bf16_compute_note(DType compute);

}  // namespace tach::model
