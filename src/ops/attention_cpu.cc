#include <limits>
#include <vector>

#include "core/parallel.h"
#include "cpu/gemm.h"
#include "cpu/vec_math.h"
#include "ops/attention.h"

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

}  // namespace

void attention_forward_cpu(float* out, const float* q, const float* k, const float* v, const int32_t* mask, int64_t B,
                           int64_t T, int64_t H, int64_t D, int64_t ld_in, int64_t ld_out, float scale) {
  const auto backend = cpu::default_gemm_backend();
  const float mask_value = std::numeric_limits<float>::lowest();
  std::vector<int64_t> keys(static_cast<size_t>(B), T);  // keys used per sequence; -1: additive mask
  if (mask)
    for (int64_t b = 0; b < B; ++b) keys[size_t(b)] = prefix_length(mask + b * T, T);
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
      // scores: [T, L] = scale * q_bh : [T, D] · k_bh[:L]ᵀ : [D, L]
      cpu::sgemm(backend, false, true, T, L, D, scale, qb, ld_in, kb, ld_in, 0.f, scores.data(), L);
      const int32_t* mb = additive ? mask + b * T : nullptr;
      for (int64_t i = 0; i < T; ++i) {
        float* row = scores.data() + i * L;
        if (mb)
          for (int64_t j = 0; j < L; ++j) row[j] += mb[j] == 0 ? mask_value : 0.0f;
        cpu::softmax_inplace(row, L);
      }
      // out_bh: [T, D] = probs : [T, L] · v_bh[:L] : [L, D]
      cpu::sgemm(backend, false, false, T, D, L, 1.f, scores.data(), L, vb, ld_in, 0.f, out + b * T * ld_out + h * D,
                 ld_out);
    }
  });
}

}  // namespace tach::ops
