#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "cpu/train_gemm.h"
#include "cpu/vec_math.h"
#include "ops/attention.h"
#include "ops/dropout.h"

namespace tach::ops {

namespace {

// Keys that take part for one sequence: when the mask is ones then zeros (right padding, the
// usual case) only the first L keys are used. That is exact, not an approximation: Hugging
// Face adds finfo.min to a padded key's score, and exp(min - max) is 0 in f32. Returns -1
// for any other pattern, and for a row that is all padding (then the additive mask is
// applied as is, so such a row behaves exactly as in transformers).
int64_t prefix_length(const int32_t* mask, int64_t T) {
  int64_t L = 0;
  while (L < T && mask[L] != 0) ++L;
  for (int64_t j = L; j < T; ++j)
    if (mask[j] != 0) return -1;
  return L == 0 ? -1 : L;
}

// Keys used per sequence (see prefix_length); -1 where the additive mask applies.
std::vector<int64_t> keys_per_sequence(const int32_t* mask, int64_t B, int64_t T) {
  std::vector<int64_t> keys(static_cast<size_t>(B), T);
  if (mask)
    for (int64_t b = 0; b < B; ++b) keys[size_t(b)] = prefix_length(mask + b * T, T);
  return keys;
}

// P [Tq, L..] (row stride ldP >= L) = softmax(scale q kᵀ + bias + mask) for head h of one
// sequence over its first L keys (of T); when ldP > L the columns L..ldP-1 are zeroed (the
// training layout [T, T]).
void attention_probs(float* P, int64_t ldP, const float* qb, const float* kb, const int32_t* mb, int64_t Tq, int64_t T,
                     int64_t L, int64_t D, int64_t ld_in, float scale, const ScoreBias& bias, int64_t h, int64_t H) {
  const float mask_value = std::numeric_limits<float>::lowest();
  // P: [Tq, L] = scale * q_bh : [Tq, D] · k_bh[:L]ᵀ : [D, L]
  cpu::train_gemm(false, true, Tq, L, D, scale, qb, ld_in, kb, ld_in, 0.f, P, ldP);
  for (int64_t i = 0; i < Tq; ++i) {
    float* row = P + i * ldP;
    if (bias.table) {
      const int32_t* bucket = bias.bucket + i * T;
      for (int64_t j = 0; j < L; ++j) row[j] += bias.table[bucket[j] * H + h];
    }
    if (mb)
      for (int64_t j = 0; j < L; ++j) row[j] += mb[j] == 0 ? mask_value : 0.0f;
    cpu::softmax_inplace(row, L);
    for (int64_t j = L; j < ldP; ++j) row[j] = 0.0f;
  }
}

}  // namespace

std::vector<int32_t> relative_position_buckets(int64_t T, int64_t buckets, int64_t max_distance) {
  const int64_t half = buckets / 2, exact = half / 2;
  // f32 as transformers: log(n / exact) / log(max_distance / exact) * (half - exact), truncated.
  const float log_range = float(std::log(double(max_distance) / double(exact)));
  std::vector<int32_t> out(size_t(T * T));
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j) {
      const int64_t n = i - j;  // -(key - query): keys after the query take the upper half
      const int64_t a = n < 0 ? -n : n;
      int64_t b = n < 0 ? half : 0;
      if (a < exact) {
        b += a;
      } else {
        const float scaled = std::log(float(a) / float(exact)) / log_range * float(half - exact);
        b += std::min(exact + int64_t(scaled), half - 1);
      }
      out[size_t(i * T + j)] = int32_t(b);
    }
  return out;
}

void attention_forward_cpu(float* out, const float* q, const float* k, const float* v, const int32_t* mask, int64_t B,
                           int64_t T, int64_t H, int64_t D, int64_t ld_in, int64_t ld_out, float scale,
                           const ScoreBias& bias, int64_t Tq) {
  if (Tq < 0) Tq = T;
  const std::vector<int64_t> keys = keys_per_sequence(mask, B, T);  // keys used per sequence; -1: additive mask
  // One (batch, head) pair per work item; the small GEMMs inside run single-threaded (oneDNN
  // sees it is inside a parallel region). B*H >= 12 for every model here.
  core::parallel_for(B * H, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<size_t>(T * T));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      const bool additive = keys[size_t(b)] < 0;
      const int64_t L = additive ? T : keys[size_t(b)];
      const float* qb = q + b * T * ld_in + h * D;
      const float* kb = k + b * T * ld_in + h * D;
      const float* vb = v + b * T * ld_in + h * D;
      attention_probs(scores.data(), L, qb, kb, additive ? mask + b * T : nullptr, Tq, T, L, D, ld_in, scale, bias, h,
                      H);
      // out_bh: [Tq, D] = probs : [Tq, L] · v_bh[:L] : [L, D]
      cpu::train_gemm(false, false, Tq, D, L, 1.f, scores.data(), L, vb, ld_in, 0.f, out + b * Tq * ld_out + h * D,
                      ld_out);
    }
  });
}

namespace {

// dst [T, L] = P [T, L] (row stride T) with dropout applied (or P itself when p = 0).
const float* dropped_probs(std::vector<float>& dst, const float* P, int64_t T, int64_t rows, int64_t L, int64_t bh,
                           float p, uint64_t key, int64_t* ld) {
  if (p <= 0.f) {
    *ld = T;
    return P;
  }
  // The element's index in probs [B, H, T, T] names its mask bit.
  for (int64_t i = 0; i < rows; ++i) dropout_apply(dst.data() + i * L, P + i * T, L, p, key, (bh * T + i) * T);
  *ld = L;
  return dst.data();
}

}  // namespace

void attention_forward_train_cpu(float* out, float* probs, const float* q, const float* k, const float* v,
                                 const int32_t* mask, int64_t B, int64_t T, int64_t H, int64_t D, int64_t ld_in,
                                 int64_t ld_out, float scale, float dropout_p, uint64_t dropout_key, int64_t Tq,
                                 const ScoreBias& bias) {
  if (Tq < 0) Tq = T;
  const std::vector<int64_t> keys = keys_per_sequence(mask, B, T);
  core::parallel_for(B * H, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> dropped(static_cast<size_t>(dropout_p > 0.f ? T * T : 0));
    std::vector<float> scratch(static_cast<size_t>(probs ? 0 : T * T));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      const bool additive = keys[size_t(b)] < 0;
      const int64_t L = additive ? T : keys[size_t(b)];
      const float* qb = q + b * T * ld_in + h * D;
      const float* kb = k + b * T * ld_in + h * D;
      const float* vb = v + b * T * ld_in + h * D;
      // Saved for the backward, or (probs null: the fused path) in a scratch the backward recomputes.
      float* P = probs ? probs + bh * T * T : scratch.data();
      attention_probs(P, T, qb, kb, additive ? mask + b * T : nullptr, Tq, T, L, D, ld_in, scale, bias, h, H);
      int64_t ldp = T;
      const float* Pd = dropped_probs(dropped, P, T, Tq, L, bh, dropout_p, dropout_key, &ldp);
      cpu::train_gemm(false, false, Tq, D, L, 1.f, Pd, ldp, vb, ld_in, 0.f, out + b * T * ld_out + h * D, ld_out);
    }
  });
}

void attention_backward_cpu(float* dq, float* dk, float* dv, const float* dout, const float* probs, const float* q,
                            const float* k, const float* v, const int32_t* mask, int64_t B, int64_t T, int64_t H,
                            int64_t D, int64_t ld_in, int64_t ld_out, float scale, float dropout_p,
                            uint64_t dropout_key, int64_t Tq, const ScoreBias& bias, float* d_bias) {
  if (Tq < 0) Tq = T;
  const std::vector<int64_t> keys = keys_per_sequence(mask, B, T);
  core::parallel_for(B * H, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> dropped(static_cast<size_t>(dropout_p > 0.f ? T * T : 0));
    std::vector<float> dP(static_cast<size_t>(T * T));
    std::vector<float> recomputed(static_cast<size_t>(probs ? 0 : T * T));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      const bool additive = keys[size_t(b)] < 0;
      const int64_t L = additive ? T : keys[size_t(b)];
      const int64_t in_off = b * T * ld_in + h * D;
      const float* dO = dout + b * T * ld_out + h * D;  // [T, D]
      if (!probs)
        attention_probs(recomputed.data(), T, q + in_off, k + in_off, additive ? mask + b * T : nullptr, Tq, T, L, D,
                        ld_in, scale, bias, h, H);
      const float* P = probs ? probs + bh * T * T : recomputed.data();
      int64_t ldp = T;
      const float* Pd = dropped_probs(dropped, P, T, Tq, L, bh, dropout_p, dropout_key, &ldp);
      // dV[:L] [L, D] = Pdᵀ [L, Tq] · dO [Tq, D]; keys past the prefix were never read.
      cpu::train_gemm(true, false, L, D, Tq, 1.f, Pd, ldp, dO, ld_out, 0.f, dv + in_off, ld_in);
      // dPd [Tq, L] = dO [Tq, D] · V[:L]ᵀ [D, L]
      cpu::train_gemm(false, true, Tq, L, D, 1.f, dO, ld_out, v + in_off, ld_in, 0.f, dP.data(), L);
      // Through the dropout, then the softmax: dS = P ⊙ (dP - Σ_j P dP), per row.
      for (int64_t i = 0; i < Tq; ++i) {
        float* d = dP.data() + i * L;
        const float* p = P + i * T;
        if (dropout_p > 0.f) dropout_apply(d, d, L, dropout_p, dropout_key, (bh * T + i) * T);
        float dot = 0.f;
        for (int64_t j = 0; j < L; ++j) dot += p[j] * d[j];
        for (int64_t j = 0; j < L; ++j) d[j] = p[j] * (d[j] - dot);
      }
      if (d_bias) {
        // The bias enters the scores unscaled: its gradient is dS, summed per bucket.
        float* db = d_bias + bh * bias.buckets;
        std::fill(db, db + bias.buckets, 0.0f);
        for (int64_t i = 0; i < Tq; ++i) {
          const int32_t* bucket = bias.bucket + i * T;
          const float* d = dP.data() + i * L;
          for (int64_t j = 0; j < L; ++j) db[bucket[j]] += d[j];
        }
      }
      // scores = scale · q kᵀ:  dQ [T, D] = scale · dS [T, L] · K[:L] [L, D];  dK[:L] = scale · dSᵀ · Q
      cpu::train_gemm(false, false, Tq, D, L, scale, dP.data(), L, k + in_off, ld_in, 0.f, dq + in_off, ld_in);
      cpu::train_gemm(true, false, L, D, Tq, scale, dP.data(), L, q + in_off, ld_in, 0.f, dk + in_off, ld_in);
      for (int64_t j = L; j < T; ++j)
        for (int64_t d = 0; d < D; ++d) dk[in_off + j * ld_in + d] = dv[in_off + j * ld_in + d] = 0.0f;
    }
  });
}

}  // namespace tach::ops
