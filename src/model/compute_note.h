// The note every family's loader adds to ModelInfo::notes when the compute dtype needs saying:
// bf16 emulated on a CPU without it, or int8's quantization scheme.
#pragma once

#include <string>

#include "tach/device.h"
#include "tach/dtype.h"

namespace tach::model {

// "" when there is nothing to say: f32 on oneDNN, bf16 on a CPU with native bf16 or on a GPU.
// decoding: the model was loaded to generate token by token (LoadOptions::decoding).
std::string compute_note(DType compute, Device device, bool decoding = false);

}  // namespace tach::model
