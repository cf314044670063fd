// Loading a Qwen2 model behind tach/model.h (load_model dispatches here on model_type "qwen2").
#pragma once

#include <memory>

#include "model/checkpoint.h"
#include "tach/model.h"

namespace tach::model {

std::unique_ptr<Model> load_qwen2(const ModelLocation& location, const LoadOptions& options);

// A note for ModelInfo::notes when bf16 compute will be emulated on this CPU ("" otherwise).
std::string bf16_compute_note(DType compute);

}  // namespace tach::model
