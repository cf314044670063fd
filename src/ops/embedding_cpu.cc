#include <cstring>

#include "core/parallel.h"
#include "ops/embedding.h"

namespace tach::ops {

namespace {
template <typename Load>
void gather_rows(float* out, const int32_t* ids, int64_t N, int64_t C, bool accumulate, Load load) {
  core::parallel_for(N, 16, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      float* o = out + n * C;
      const int64_t row = ids[n];
      if (accumulate)
        for (int64_t c = 0; c < C; ++c) o[c] += load(row * C + c);
      else
        for (int64_t c = 0; c < C; ++c) o[c] = load(row * C + c);
    }
  });
}
}  // namespace

void embedding_forward_cpu(float* out, const int32_t* ids, const void* table, DType table_dtype, int64_t N, int64_t C,
                           bool accumulate) {
  if (table_dtype == DType::f32) {
    const auto* t = static_cast<const float*>(table);
    gather_rows(out, ids, N, C, accumulate, [t](int64_t i) { return t[i]; });
  } else if (table_dtype == DType::bf16) {
    const auto* t = static_cast<const uint16_t*>(table);
    gather_rows(out, ids, N, C, accumulate, [t](int64_t i) { return bf16_to_f32(t[i]); });
  } else {
    const auto* t = static_cast<const uint16_t*>(table);
    gather_rows(out, ids, N, C, accumulate, [t](int64_t i) { return f16_to_f32(t[i]); });
  }
}

}  // namespace tach::ops

namespace tach::ops {

void embedding_backward_cpu(float* dtable, const int32_t* ids, const float* dout, int64_t N, int64_t C,
                            int32_t padding_idx) {
  if (!dtable) return;  // a frozen table (LoRA)
  // Threads split the columns, not the rows: two rows may share an id, and a column block is
  // written by one thread only. Rows are visited in order, so sums are deterministic.
  core::parallel_for(C, 64, [&](int64_t c0, int64_t c1) {
    for (int64_t n = 0; n < N; ++n) {
      if (ids[n] == padding_idx) continue;
      float* d = dtable + int64_t(ids[n]) * C;
      const float* g = dout + n * C;
      for (int64_t c = c0; c < c1; ++c) d[c] += g[c];
    }
  });
}

}  // namespace tach::ops
