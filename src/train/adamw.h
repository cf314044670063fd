// AdamW as torch.optim.AdamW (decoupled weight decay, bias correction), one parameter tensor at a
// time; the training loop walks the parameter table and passes each its decay flag (the Trainer
// does not decay biases and LayerNorm weights).
#pragma once

#include <cstdint>

namespace tach::train {

struct AdamWConfig {
  float lr = 1e-3f;  // the schedule's value for this step
  float beta1 = 0.9f, beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 1e-2f;  // torch's default; applied only where decay is true
};

// param, grad, m, v: [n]. step: 1 for the first update (bias correction uses it).
//   param -= lr * weight_decay * param             (decoupled, before the moment update)
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//   param -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n, int64_t step, const AdamWConfig& c,
                  bool decay);

}  // namespace tach::train
