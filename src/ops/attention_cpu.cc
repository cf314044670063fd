#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "cpu/gemm.h"
#include "ops/attention.h"

namespace tach::ops {

void attention_forward_cpu(float* out, const float* q, const float* k, const float* v, const int32_t* mask, int64_t B,
                           int64_t T, int64_t H, int64_t D, int64_t ld_in, int64_t ld_out, float scale) {
  const auto backend = cpu::default_gemm_backend();
  const float mask_value = std::numeric_limits<float>::lowest();
  // One (batch, head) pair per work item; the GEMMs inside run single-threaded because the
  // parallelism is across pairs (B*H >= 12 for every model here, enough for 64 cores at B >= 6).
  core::parallel_for(B * H, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<size_t>(T * T));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      const float* qb = q + b * T * ld_in + h * D;
      const float* kb = k + b * T * ld_in + h * D;
      const float* vb = v + b * T * ld_in + h * D;
      float* ob = out + b * T * ld_out + h * D;
      // scores: [T, T] = scale * q_bh · k_bhᵀ
      cpu::sgemm(backend, false, true, T, T, D, scale, qb, ld_in, kb, ld_in, 0.f, scores.data(), T);
      const int32_t* mb = mask ? mask + b * T : nullptr;
      for (int64_t i = 0; i < T; ++i) {
        float* row = scores.data() + i * T;
        if (mb)
          for (int64_t j = 0; j < T; ++j)
            if (mb[j] == 0) row[j] += mask_value;
        float mx = row[0];
        for (int64_t j = 1; j < T; ++j) mx = std::max(mx, row[j]);
        float sum = 0.f;
        for (int64_t j = 0; j < T; ++j) {
          row[j] = std::exp(row[j] - mx);
          sum += row[j];
        }
        const float inv = 1.0f / sum;
        for (int64_t j = 0; j < T; ++j) row[j] *= inv;
      }
      // out_bh: [T, D] = probs · v_bh
      cpu::sgemm(backend, false, false, T, D, T, 1.f, scores.data(), T, vb, ld_in, 0.f, ob, ld_out);
    }
  });
}

}  // namespace tach::ops
