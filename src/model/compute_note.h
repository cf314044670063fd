// The note every family's loader adds to ModelInfo::notes when the compute dtype needs saying:
// bf16 emulated on a CPU without it, int8's quantization scheme, or f32 GEMMs on TF32 tensor cores.
#pragma once

#include <string>

#include "tach/device.h"
#include "tach/dtype.h"

namespace tach::model {

// "" when there is nothing to say: f32 on oneDNN or a GPU (without TF32), bf16 on a CPU with native
// bf16 or on a GPU. decoding: the model was loaded to generate token by token (LoadOptions::decoding).
// tf32: LoadOptions::allow_tf32 (said only where it applies: f32 compute on a GPU).
std::string compute_note(DType compute, Device device, bool decoding = false, bool tf32 = false);

// What --allow-tf32 changes, in words: the compute note of a model whose f32 GEMMs run on TF32.
extern const char* const kTf32Note;

}  // namespace tach::model
