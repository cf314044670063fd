#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "cpu/gemm.h"
#include "cpu/vec_math.h"
#include "ops/causal_attention.h"

namespace tach::ops {

OpCost causal_attention_cost(int64_t B, int64_t Tq, int64_t Tk, int64_t H, int64_t KVH, int64_t D) {
  OpCost c;
  // Two GEMMs of 2*Tq*Tk*D per head (the kernel computes the full rectangle and masks), and
  // ~5 flops per score for scale, mask and softmax.
  c.flops = double(B * H) * (4.0 * double(Tq) * double(Tk) * double(D) + 5.0 * double(Tq) * double(Tk));
  c.bytes_read = double(B) * (double(Tq * H * D) + 2.0 * double(Tk * KVH * D)) * 4 + double(B * Tk) * 4;
  c.bytes_written = double(B * Tq * H * D) * 4;
  return c;
}

void causal_attention_forward_cpu(float* out, const float* q, const float* k, const float* v, const int32_t* key_mask,
                                  const CausalAttentionArgs& a) {
  const auto backend = cpu::default_gemm_backend();
  const int64_t Tk = a.past + a.Tq, group = a.H / a.KVH;
  core::parallel_for(a.B * a.H, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<size_t>(a.Tq * Tk));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / a.H, h = bh % a.H, kvh = h / group;
      const float* qb = q + b * a.Tq * a.ld_q + h * a.D;
      const float* kb = k + b * a.batch_stride_kv + kvh * a.D;
      const float* vb = v + b * a.batch_stride_kv + kvh * a.D;
      const int32_t* mb = key_mask ? key_mask + b * a.mask_stride : nullptr;
      // scores: [Tq, Tk] = scale * q_bh : [Tq, D] · k_b,kvh : [Tk, D]ᵀ
      cpu::sgemm(backend, false, true, a.Tq, Tk, a.D, a.scale, qb, a.ld_q, kb, a.ld_kv, 0.f, scores.data(), Tk);
      for (int64_t i = 0; i < a.Tq; ++i) {
        float* row = scores.data() + i * Tk;
        const int64_t visible = a.past + i + 1;  // keys [0, visible) are at or before the query
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < visible; ++j)
          if (!mb || mb[j]) mx = std::max(mx, row[j]);
        if (mx == -std::numeric_limits<float>::infinity()) {  // every visible key is padding
          for (int64_t j = 0; j < Tk; ++j) row[j] = 0;
          continue;
        }
        float sum = 0;
        for (int64_t j = 0; j < visible; ++j) {
          const float e = (!mb || mb[j]) ? cpu::fast_exp(row[j] - mx) : 0.0f;
          row[j] = e;
          sum += e;
        }
        const float inv = 1.0f / sum;
        for (int64_t j = 0; j < visible; ++j) row[j] *= inv;
        for (int64_t j = visible; j < Tk; ++j) row[j] = 0;
      }
      // out_bh: [Tq, D] = probs : [Tq, Tk] · v_b,kvh : [Tk, D]
      cpu::sgemm(backend, false, false, a.Tq, a.D, Tk, 1.f, scores.data(), Tk, vb, a.ld_kv, 0.f,
                 out + b * a.Tq * a.ld_out + h * a.D, a.ld_out);
    }
  });
}

}  // namespace tach::ops
