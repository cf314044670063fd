// The label that takes no loss, as the data loaders write it (the losses are ops:
// ops/cross_entropy.h, ops/elementwise_loss.h; train/head_loss.h picks them per head).
#pragma once

#include "ops/cross_entropy.h"

namespace tach::train {

inline constexpr int32_t kIgnoreIndex = ops::kIgnoreIndex;  // torch.nn.CrossEntropyLoss's default ignore_index

}  // namespace tach::train
