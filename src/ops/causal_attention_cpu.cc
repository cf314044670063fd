#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "cpu/train_gemm.h"
#include "cpu/vec_math.h"
#include "ops/causal_attention.h"

namespace tach::ops {

namespace {

// scores [Tq, Tk] = scale · q_bh [Tq, D] · k [Tk, D]ᵀ, then the causal, masked softmax in place.
void causal_probs(float* scores, const float* qb, const float* kb, const int32_t* mb, const CausalAttentionArgs& a) {
  const int64_t Tk = a.past + a.Tq;
  cpu::train_gemm(false, true, a.Tq, Tk, a.D, a.scale, qb, a.ld_q, kb, a.ld_kv, 0.f, scores, Tk);
  for (int64_t i = 0; i < a.Tq; ++i) {
    float* row = scores + i * Tk;
    const int64_t visible = a.past + i + 1;  // keys [0, visible) are at or before the query
    const int64_t first = a.window > 0 ? std::max<int64_t>(0, visible - a.window) : 0;  // sliding window
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t j = first; j < visible; ++j)
      if (!mb || mb[j]) mx = std::max(mx, row[j]);
    if (mx == -std::numeric_limits<float>::infinity()) {  // every visible key is padding
      for (int64_t j = 0; j < Tk; ++j) row[j] = 0;
      continue;
    }
    for (int64_t j = 0; j < first; ++j) row[j] = 0;
    float sum = 0;
    for (int64_t j = first; j < visible; ++j) {
      const float e = (!mb || mb[j]) ? cpu::fast_exp(row[j] - mx) : 0.0f;
      row[j] = e;
      sum += e;
    }
    const float inv = 1.0f / sum;
    for (int64_t j = first; j < visible; ++j) row[j] *= inv;
    for (int64_t j = visible; j < Tk; ++j) row[j] = 0;
  }
}

}  // namespace

void causal_attention_forward_cpu(float* out, float* probs, const float* q, const float* k, const float* v,
                                  const int32_t* key_mask, const CausalAttentionArgs& a) {
  const int64_t Tk = a.past + a.Tq, group = a.H / a.KVH;
  core::parallel_for(a.B * a.H, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(static_cast<size_t>(probs ? 0 : a.Tq * Tk));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / a.H, h = bh % a.H, kvh = h / group;
      const float* vb = v + b * a.batch_stride_kv + kvh * a.D;
      float* P = probs ? probs + bh * a.Tq * Tk : scratch.data();
      causal_probs(P, q + b * a.Tq * a.ld_q + h * a.D, k + b * a.batch_stride_kv + kvh * a.D,
                   key_mask ? key_mask + b * a.mask_stride : nullptr, a);
      // out_bh: [Tq, D] = probs : [Tq, Tk] · v_b,kvh : [Tk, D]
      cpu::train_gemm(false, false, a.Tq, a.D, Tk, 1.f, P, Tk, vb, a.ld_kv, 0.f, out + b * a.Tq * a.ld_out + h * a.D,
                 a.ld_out);
    }
  });
}

void causal_attention_backward_cpu(float* dq, float* dk, float* dv, const float* dout, const float* probs,
                                   const float* q, const float* k, const float* v, const int32_t* key_mask,
                                   const CausalAttentionArgs& a) {
  const int64_t T = a.Tq, group = a.H / a.KVH;
  // One task per (row, key/value head): the heads of a group add into the same dK and dV, so
  // they run in order inside the task, never in parallel.
  core::parallel_for(a.B * a.KVH, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> dP(static_cast<size_t>(T * T));
    std::vector<float> recomputed(static_cast<size_t>(probs ? 0 : T * T));
    for (int64_t bk = begin; bk < end; ++bk) {
      const int64_t b = bk / a.KVH, kvh = bk % a.KVH;
      const int64_t kv_off = b * a.batch_stride_kv + kvh * a.D;
      const int32_t* mb = key_mask ? key_mask + b * a.mask_stride : nullptr;
      for (int64_t g = 0; g < group; ++g) {
        const int64_t h = kvh * group + g, bh = b * a.H + h;
        const float beta = g == 0 ? 0.f : 1.f;  // the group's first head writes dK, dV; the others add
        const int64_t q_off = b * T * a.ld_q + h * a.D;
        const float* dO = dout + b * T * a.ld_out + h * a.D;  // [T, D]
        if (!probs) causal_probs(recomputed.data(), q + q_off, k + kv_off, mb, a);
        const float* P = probs ? probs + bh * T * T : recomputed.data();
        // dV [T, D] (+)= Pᵀ [T, T] · dO [T, D]
        cpu::train_gemm(true, false, T, a.D, T, 1.f, P, T, dO, a.ld_out, beta, dv + kv_off, a.ld_kv);
        // dP [T, T] = dO [T, D] · Vᵀ [D, T]
        cpu::train_gemm(false, true, T, T, a.D, 1.f, dO, a.ld_out, v + kv_off, a.ld_kv, 0.f, dP.data(), T);
        // Through the softmax: dS = P ⊙ (dP - Σ_j P dP), per row; masked entries have P = 0.
        for (int64_t i = 0; i < T; ++i) {
          float* d = dP.data() + i * T;
          const float* p = P + i * T;
          float dot = 0.f;
          for (int64_t j = 0; j <= i; ++j) dot += p[j] * d[j];
          for (int64_t j = 0; j < T; ++j) d[j] = p[j] * (d[j] - dot);
        }
        // scores = scale · q kᵀ:  dQ [T, D] = scale · dS · K;  dK (+)= scale · dSᵀ · Q
        cpu::train_gemm(false, false, T, a.D, T, a.scale, dP.data(), T, k + kv_off, a.ld_kv, 0.f, dq + q_off,
                   a.ld_q);
        cpu::train_gemm(true, false, T, a.D, T, a.scale, dP.data(), T, q + q_off, a.ld_q, beta, dk + kv_off,
                   a.ld_kv);
      }
    }
  });
}

}  // namespace tach::ops
