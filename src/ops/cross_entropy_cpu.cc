#include <algorithm>
#include <cmath>
#include <string>

#include "ops/cross_entropy.h"
#include "tach/error.h"

namespace tach::ops {

namespace {

// kUnit: elements contiguous (every head but question answering's columns), the loop the
// compiler vectorises over a masked LM's 30k-wide rows.
template <bool kUnit>
double forward_rows(float* probs, const float* logits, int64_t row_stride, int64_t stride, const int32_t* labels,
                    int64_t R, int64_t L) {
  const int64_t s = kUnit ? 1 : stride;
  double total = 0;
  int64_t counted = 0;
  for (int64_t b = 0; b < R; ++b) {
    const float* x = logits + b * row_stride;
    float* p = probs + b * L;
    // Each exp once, in f32 (a masked LM's rows are vocabulary-wide: 30k exps a row), summed in
    // double: the loss is compared with PyTorch's to 1e-6.
    float mx;
    if constexpr (kUnit) {
      mx = *std::max_element(x, x + L);
    } else {
      mx = x[0];  // std::max_element's pick: the first largest
      for (int64_t i = 1; i < L; ++i)
        if (mx < x[i * s]) mx = x[i * s];
    }
    double sum = 0;
    for (int64_t i = 0; i < L; ++i) {
      p[i] = std::exp(x[i * s] - mx);
      sum += double(p[i]);
    }
    const float inv = float(1.0 / sum);
    for (int64_t i = 0; i < L; ++i) p[i] *= inv;
    const int32_t y = labels[b];
    if (y == kIgnoreIndex) continue;
    check(y >= 0 && y < L, "cross-entropy: label " + std::to_string(y) + " of row " + std::to_string(b) +
                               " is outside the head's " + std::to_string(L) + " labels");
    total += -(double(x[y * s] - mx) - std::log(sum));
    ++counted;
  }
  return counted ? total / double(counted) : 0.0;
}

template <bool kUnit>
void backward_rows(float* dlogits, int64_t row_stride, int64_t stride, const float* probs, const int32_t* labels,
                   int64_t R, int64_t L, float scale) {
  const int64_t s = kUnit ? 1 : stride;
  int64_t counted = 0;
  for (int64_t b = 0; b < R; ++b) counted += labels[b] != kIgnoreIndex;
  if (counted == 0) return;
  const float k = scale / float(counted);
  for (int64_t b = 0; b < R; ++b) {
    const int32_t y = labels[b];
    if (y == kIgnoreIndex) continue;
    float* d = dlogits + b * row_stride;
    const float* p = probs + b * L;
    for (int64_t i = 0; i < L; ++i) d[i * s] += k * (p[i] - (i == y ? 1.0f : 0.0f));
  }
}

}  // namespace

double cross_entropy_forward_cpu(float* probs, const float* logits, int64_t row_stride, int64_t stride,
                                 const int32_t* labels, int64_t R, int64_t L) {
  return stride == 1 ? forward_rows<true>(probs, logits, row_stride, 1, labels, R, L)
                     : forward_rows<false>(probs, logits, row_stride, stride, labels, R, L);
}

void cross_entropy_backward_cpu(float* dlogits, int64_t row_stride, int64_t stride, const float* probs,
                                const int32_t* labels, int64_t R, int64_t L, float scale) {
  if (stride == 1) backward_rows<true>(dlogits, row_stride, 1, probs, labels, R, L, scale);
  else backward_rows<false>(dlogits, row_stride, stride, probs, labels, R, L, scale);
}

}  // namespace tach::ops
