#include <algorithm>
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

// Each block of query rows (attention_row_block) computes its scores against the keys some row
// of the block sees, and nothing else: a causal prefill computes about half the square, a sliding
// layer a band whose area grows linearly with the length.

// The keys [lo, hi) rows [i0, i1) see together (the ranges only move forward with the row).
KeyRange block_keys(const CausalAttentionArgs& a, int64_t i0, int64_t i1) {
  return {key_range(a, i0).first, key_range(a, i1 - 1).end};
}

// probs [Tq, Tk] (row stride Tk) for rows [i0, i1) of one (row, head): the scores of the block's
// keys [lo, hi), then the masked softmax over each row's own visible keys. Entries of the block's
// columns a row does not see are zero; `zero_outside` zeroes the rest of each row too (the
// training layout, which the backward and tests read whole).
void block_probs(float* P, const float* qb, const float* kb, const int32_t* mb, const CausalAttentionArgs& a,
                 int64_t i0, int64_t i1, bool zero_outside) {
  const int64_t Tk = a.past + a.Tq;
  const KeyRange block = block_keys(a, i0, i1);
  const int64_t lo = block.first, hi = block.end;
  cpu::train_gemm(false, true, i1 - i0, hi - lo, a.D, a.scale, qb + i0 * a.ld_q, a.ld_q, kb + lo * a.ld_kv, a.ld_kv,
                  0.f, P + i0 * Tk + lo, Tk);
  for (int64_t i = i0; i < i1; ++i) {
    float* row = P + i * Tk;
    const KeyRange r = key_range(a, i);
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t j = r.first; j < r.end; ++j)
      if (!mb || mb[j]) mx = std::max(mx, row[j]);
    const int64_t z0 = zero_outside ? 0 : lo, z1 = zero_outside ? Tk : hi;
    if (mx == -std::numeric_limits<float>::infinity()) {  // every visible key is padding
      std::fill(row + z0, row + z1, 0.0f);
      continue;
    }
    std::fill(row + z0, row + r.first, 0.0f);
    float sum = 0;
    for (int64_t j = r.first; j < r.end; ++j) {
      const float e = (!mb || mb[j]) ? cpu::fast_exp(row[j] - mx) : 0.0f;
      row[j] = e;
      sum += e;
    }
    const float inv = 1.0f / sum;
    for (int64_t j = r.first; j < r.end; ++j) row[j] *= inv;
    std::fill(row + r.end, row + z1, 0.0f);
  }
}

// Bidirectional rows whose every visible key is padding (a left-padded row's first tokens under a
// window): transformers adds finfo.min to every score of such a row, the sums round to that one
// value, and the softmax is uniform over all Tk keys. Such a row's output is the mean of every
// value row, whatever q and k are, so its gradient reaches v alone.
std::vector<int64_t> padding_only_rows(const int32_t* mb, const CausalAttentionArgs& a) {
  std::vector<int64_t> rows;
  if (!mb || a.causal) return rows;  // causal: such rows are padding no real token reads; they get zeros
  for (int64_t i = 0; i < a.Tq; ++i) {
    const KeyRange r = key_range(a, i);
    bool any = false;
    for (int64_t j = r.first; j < r.end && !any; ++j) any = mb[j] != 0;
    if (!any) rows.push_back(i);
  }
  return rows;
}

}  // namespace

void causal_attention_forward_cpu(float* out, float* probs, const float* q, const float* k, const float* v,
                                  const int32_t* key_mask, const CausalAttentionArgs& a) {
  const int64_t Tk = a.past + a.Tq, group = a.H / a.KVH;
  core::parallel_for(a.B * a.H, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(static_cast<size_t>(probs ? 0 : a.Tq * Tk));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / a.H, h = bh % a.H, kvh = h / group;
      const float* qb = q + b * a.Tq * a.ld_q + h * a.D;
      const float* kb = k + b * a.batch_stride_kv + kvh * a.D;
      const float* vb = v + b * a.batch_stride_kv + kvh * a.D;
      const int32_t* mb = key_mask ? key_mask + b * a.mask_stride : nullptr;
      float* P = probs ? probs + bh * a.Tq * Tk : scratch.data();
      float* ob = out + b * a.Tq * a.ld_out + h * a.D;
      const int64_t block = attention_row_block(a, false);
      for (int64_t i0 = 0; i0 < a.Tq; i0 += block) {
        const int64_t i1 = std::min(a.Tq, i0 + block);
        block_probs(P, qb, kb, mb, a, i0, i1, probs != nullptr);
        const KeyRange r = block_keys(a, i0, i1);
        // out_bh[i0:i1]: [rows, D] = probs[i0:i1, lo:hi] · v[lo:hi] : [hi - lo, D]
        cpu::train_gemm(false, false, i1 - i0, a.D, r.end - r.first, 1.f, P + i0 * Tk + r.first, Tk,
                        vb + r.first * a.ld_kv, a.ld_kv, 0.f, ob + i0 * a.ld_out, a.ld_out);
      }
      for (const int64_t i : padding_only_rows(mb, a)) {
        float* o = ob + i * a.ld_out;
        std::fill(o, o + a.D, 0.0f);
        for (int64_t j = 0; j < Tk; ++j)
          for (int64_t d = 0; d < a.D; ++d) o[d] += vb[j * a.ld_kv + d];
        for (int64_t d = 0; d < a.D; ++d) o[d] /= float(Tk);
      }
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
      // dK and dV gather from every block of every head of the group: zeroed, then added to.
      for (int64_t j = 0; j < T; ++j) {
        std::memset(dk + kv_off + j * a.ld_kv, 0, sizeof(float) * size_t(a.D));
        std::memset(dv + kv_off + j * a.ld_kv, 0, sizeof(float) * size_t(a.D));
      }
      for (int64_t g = 0; g < group; ++g) {
        const int64_t h = kvh * group + g, bh = b * a.H + h;
        const int64_t q_off = b * T * a.ld_q + h * a.D;
        const float* dO = dout + b * T * a.ld_out + h * a.D;  // [T, D]
        const float* P = probs ? probs + bh * T * T : recomputed.data();
        const int64_t block = attention_row_block(a, true);
        for (int64_t i0 = 0; i0 < T; i0 += block) {
          const int64_t i1 = std::min(T, i0 + block), rows = i1 - i0;
          if (!probs) block_probs(recomputed.data(), q + q_off, k + kv_off, mb, a, i0, i1, false);
          const KeyRange r = block_keys(a, i0, i1);
          const int64_t lo = r.first, n = r.end - r.first;
          const float* Pb = P + i0 * T + lo;  // [rows, n], row stride T
          float* dPb = dP.data() + i0 * T + lo;
          // dV[lo:hi] += Pbᵀ [n, rows] · dO[i0:i1] [rows, D]
          cpu::train_gemm(true, false, n, a.D, rows, 1.f, Pb, T, dO + i0 * a.ld_out, a.ld_out, 1.f,
                          dv + kv_off + lo * a.ld_kv, a.ld_kv);
          // dPb [rows, n] = dO[i0:i1] [rows, D] · V[lo:hi]ᵀ [D, n]
          cpu::train_gemm(false, true, rows, n, a.D, 1.f, dO + i0 * a.ld_out, a.ld_out, v + kv_off + lo * a.ld_kv,
                          a.ld_kv, 0.f, dPb, T);
          // Through the softmax: dS = P ⊙ (dP - Σ_j P dP), per row; entries a row does not see have P = 0.
          for (int64_t i = 0; i < rows; ++i) {
            float* d = dPb + i * T;
            const float* p = Pb + i * T;
            float dot = 0.f;
            for (int64_t j = 0; j < n; ++j) dot += p[j] * d[j];
            for (int64_t j = 0; j < n; ++j) d[j] = p[j] * (d[j] - dot);
          }
          // scores = scale · q kᵀ:  dQ[i0:i1] = scale · dS · K[lo:hi];  dK[lo:hi] += scale · dSᵀ · Q[i0:i1]
          cpu::train_gemm(false, false, rows, a.D, n, a.scale, dPb, T, k + kv_off + lo * a.ld_kv, a.ld_kv, 0.f,
                          dq + q_off + i0 * a.ld_q, a.ld_q);
          cpu::train_gemm(true, false, n, a.D, rows, a.scale, dPb, T, q + q_off + i0 * a.ld_q, a.ld_q, 1.f,
                          dk + kv_off + lo * a.ld_kv, a.ld_kv);
        }
        // A row of padding only took the mean of every value: dV[j] += dO_i / T, and dQ_i = 0.
        for (const int64_t i : padding_only_rows(mb, a)) {
          const float* grad_row = dO + i * a.ld_out;
          for (int64_t j = 0; j < T; ++j)
            for (int64_t d = 0; d < a.D; ++d) dv[kv_off + j * a.ld_kv + d] += grad_row[d] / float(T);
          std::fill(dq + q_off + i * a.ld_q, dq + q_off + i * a.ld_q + a.D, 0.0f);
        }
      }
    }
  });
}

}  // namespace tach::ops
