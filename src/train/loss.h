// The classification and regression losses, picked from config.json's problem_type as
// transformers' *ForSequenceClassification heads pick them:
//   single_label_classification  cross-entropy over the labels (mean over rows; label -100 ignored)
//   regression                   mean squared error (num_labels 1: logits squeezed to [B])
//   multi_label_classification   binary cross-entropy with logits (mean over every element)
// Each forward returns the mean loss and saves what its backward needs; each backward
// accumulates into dlogits (+=), scaled by `scale` (1/accumulation steps, say).
#pragma once

#include <cstdint>

namespace tach::train {

inline constexpr int32_t kIgnoreIndex = -100;  // torch.nn.CrossEntropyLoss's default ignore_index

// logits: [B, L]  labels: [B] in [0, L) or kIgnoreIndex  probs (saved): [B, L]
// Returns the mean over the rows not ignored (0 when every row is ignored, as no gradient flows).
double cross_entropy_forward(float* probs, const float* logits, const int32_t* labels, int64_t B, int64_t L);
// dlogits: [B, L] += scale * (probs - onehot(labels)) / rows counted
void cross_entropy_backward(float* dlogits, const float* probs, const int32_t* labels, int64_t B, int64_t L,
                            float scale = 1.0f);

// pred, target, dpred: [N] (N = B * num_labels)
double mse_forward(const float* pred, const float* target, int64_t N);
// dpred += scale * 2 (pred - target) / N
void mse_backward(float* dpred, const float* pred, const float* target, int64_t N, float scale = 1.0f);

// logits, target (0/1 or soft), dlogits: [N]; the stable form max(x,0) - x*y + log1p(exp(-|x|)).
double bce_with_logits_forward(const float* logits, const float* target, int64_t N);
// dlogits += scale * (sigmoid(x) - y) / N
void bce_with_logits_backward(float* dlogits, const float* logits, const float* target, int64_t N, float scale = 1.0f);

}  // namespace tach::train
