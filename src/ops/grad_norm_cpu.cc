#include <algorithm>
#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "ops/grad_norm.h"

namespace tach::ops {

double grad_norm_cpu(const GradSpans& grads) {
  constexpr int64_t kChunk = kGradNormChunk;
  std::vector<std::pair<const float*, int64_t>> chunks;
  for (const auto& [g, n] : grads)
    for (int64_t b = 0; b < n; b += kChunk) chunks.emplace_back(g + b, std::min(kChunk, n - b));
  std::vector<double> partial(chunks.size(), 0.0);
  core::parallel_for(int64_t(chunks.size()), 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const auto [g, n] = chunks[size_t(c)];
      // Four partial sums break the dependency chain so the loop vectorises; their order is fixed.
      double s[4] = {0, 0, 0, 0};
      int64_t i = 0;
      for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; ++k) s[k] += double(g[i + k]) * double(g[i + k]);
      for (; i < n; ++i) s[0] += double(g[i]) * double(g[i]);
      partial[size_t(c)] = (s[0] + s[1]) + (s[2] + s[3]);
    }
  });
  double sum = 0;
  for (double p : partial) sum += p;
  return std::sqrt(sum);
}

void scale_cpu(float* g, int64_t n, float coef) {
  core::parallel_for(n, 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) g[i] *= coef;
  });
}

}  // namespace tach::ops
