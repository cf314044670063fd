#include "train/loss.h"

#include <algorithm>
#include <cmath>

#include "tach/error.h"

namespace tach::train {

double cross_entropy_forward(float* probs, const float* logits, const int32_t* labels, int64_t B, int64_t L) {
  double total = 0;
  int64_t counted = 0;
  for (int64_t b = 0; b < B; ++b) {
    const float* x = logits + b * L;
    float* p = probs + b * L;
    // Each exp once, in f32 (a masked LM's rows are vocabulary-wide: 30k exps a row), summed in
    // double: the loss is compared with PyTorch's to 1e-6.
    const float mx = *std::max_element(x, x + L);
    double sum = 0;
    for (int64_t i = 0; i < L; ++i) {
      p[i] = std::exp(x[i] - mx);
      sum += double(p[i]);
    }
    const float inv = float(1.0 / sum);
    for (int64_t i = 0; i < L; ++i) p[i] *= inv;
    const int32_t y = labels[b];
    if (y == kIgnoreIndex) continue;
    check(y >= 0 && y < L, "cross-entropy: label " + std::to_string(y) + " of row " + std::to_string(b) +
                               " is outside the head's " + std::to_string(L) + " labels");
    total += -(double(x[y] - mx) - std::log(sum));
    ++counted;
  }
  return counted ? total / double(counted) : 0.0;
}

void cross_entropy_backward(float* dlogits, const float* probs, const int32_t* labels, int64_t B, int64_t L,
                            float scale) {
  int64_t counted = 0;
  for (int64_t b = 0; b < B; ++b) counted += labels[b] != kIgnoreIndex;
  if (counted == 0) return;
  const float k = scale / float(counted);
  for (int64_t b = 0; b < B; ++b) {
    const int32_t y = labels[b];
    if (y == kIgnoreIndex) continue;
    for (int64_t i = 0; i < L; ++i) dlogits[b * L + i] += k * (probs[b * L + i] - (i == y ? 1.0f : 0.0f));
  }
}

double mse_forward(const float* pred, const float* target, int64_t N) {
  double total = 0;
  for (int64_t i = 0; i < N; ++i) total += double(pred[i] - target[i]) * double(pred[i] - target[i]);
  return N ? total / double(N) : 0.0;
}

void mse_backward(float* dpred, const float* pred, const float* target, int64_t N, float scale) {
  const float k = 2.0f * scale / float(N);
  for (int64_t i = 0; i < N; ++i) dpred[i] += k * (pred[i] - target[i]);
}

double bce_with_logits_forward(const float* logits, const float* target, int64_t N) {
  double total = 0;
  for (int64_t i = 0; i < N; ++i) {
    const double x = logits[i], y = target[i];
    total += std::max(x, 0.0) - x * y + std::log1p(std::exp(-std::abs(x)));
  }
  return N ? total / double(N) : 0.0;
}

void bce_with_logits_backward(float* dlogits, const float* logits, const float* target, int64_t N, float scale) {
  const float k = scale / float(N);
  for (int64_t i = 0; i < N; ++i) {
    const float s = 1.0f / (1.0f + std::exp(-logits[i]));
    dlogits[i] += k * (s - target[i]);
  }
}

}  // namespace tach::train
