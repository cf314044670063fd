#include <cmath>

#include "ops/argmax.h"

namespace tach::ops {

void argmax_rows_cpu(int32_t* out, const float* logits, int64_t B, int64_t V, double softcap) {
  for (int64_t b = 0; b < B; ++b) {
    const float* row = logits + b * V;
    auto value = [&](int64_t j) { return softcap > 0 ? float(softcap * std::tanh(double(row[j]) / softcap)) : row[j]; };
    int64_t best = 0;
    float best_value = value(0);
    for (int64_t j = 1; j < V; ++j) {
      const float v = value(j);
      if (v > best_value) best = j, best_value = v;  // strictly greater: the first maximum stays
    }
    out[b] = int32_t(best);
  }
}

}  // namespace tach::ops
