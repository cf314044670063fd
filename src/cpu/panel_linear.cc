#include "cpu/panel_linear.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "core/parallel.h"
#include "cpu/onednn_engine.h"
#include "tach/error.h"

namespace tach::cpu {

namespace {

constexpr int64_t kP = PanelLinear::kPanel;
// Rows of x per microkernel: 6 rows × 2 accumulators + 2 weight registers + 1 broadcast use 15 of
// AVX2's 16 registers, and 12 independent FMAs cover the FMA units' latency.
constexpr int kRows = 6;
// k per block: one panel's block (16 × 256 floats, 16 KiB) stays in L1 while every row of the
// row block passes over it.
constexpr int64_t kDepth = 256;
// Rows of x per outer block: 144 rows × 256 k = 144 KiB, held in L2 across all of a thread's panels.
constexpr int64_t kRowBlock = 144;
// Up to this many rows the product is a GEMV: the weights stream once, k unblocked, partial sums
// kept in registers across several panels so that enough FMAs are in flight.
constexpr int64_t kGemvRows = 4;

// One microkernel call: y[0..MR, 0..cols) (+)= x[0..MR, 0..kc) · panels[0..NP)[0..kc, 0..16).
struct Tile {
  const float* x;  // first row, at this block's k
  int64_t ldx;
  const float* w;        // first panel, at this block's k
  int64_t panel_stride;  // floats from one panel to the next (K · 16)
  int64_t kc;
  float* y;  // first row, first column
  int64_t ldy;
  const float* bias;  // added on the last k block (padded to whole panels); null otherwise
  bool accumulate;    // add to y (a later k block) rather than overwrite it
  int64_t cols;       // columns of y that exist (< NP · 16 only in the last panel)
};

#if defined(__AVX2__) && defined(__FMA__)
// Every loop over rows and registers is unrolled, so that acc[][] lives in registers: GCC keeps an
// array indexed by a loop variable in memory, a store per FMA.
#define TACH_UNROLL _Pragma("GCC unroll 16")

template <int MR, int NP>
void micro(const Tile& t) {
  constexpr int V = 2 * NP;  // 8-float registers per row
  const float* x = t.x;
  const float* w = t.w;
  const int64_t ldx = t.ldx, panel_stride = t.panel_stride, kc = t.kc;
  __m256 acc[MR][V];
  TACH_UNROLL for (int r = 0; r < MR; ++r) TACH_UNROLL for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
  _Pragma("GCC unroll 4") for (int64_t k = 0; k < kc; ++k, w += kP) {
    __m256 wv[V];
    TACH_UNROLL for (int p = 0; p < NP; ++p) {
      wv[2 * p] = _mm256_loadu_ps(w + p * panel_stride);
      wv[2 * p + 1] = _mm256_loadu_ps(w + p * panel_stride + 8);
    }
    TACH_UNROLL for (int r = 0; r < MR; ++r) {
      const __m256 a = _mm256_broadcast_ss(x + r * ldx + k);
      TACH_UNROLL for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(a, wv[v], acc[r][v]);
    }
  }
  if (t.bias != nullptr)
    TACH_UNROLL for (int r = 0; r < MR; ++r) TACH_UNROLL for (int v = 0; v < V; ++v) acc[r][v] =
        _mm256_add_ps(acc[r][v], _mm256_loadu_ps(t.bias + v * 8));
  if (t.cols == V * 8) {
    TACH_UNROLL for (int r = 0; r < MR; ++r) TACH_UNROLL for (int v = 0; v < V; ++v) {
      float* dst = t.y + r * t.ldy + v * 8;
      _mm256_storeu_ps(dst, t.accumulate ? _mm256_add_ps(acc[r][v], _mm256_loadu_ps(dst)) : acc[r][v]);
    }
    return;
  }
  // The last panel, past N: only the columns that exist are written.
  alignas(32) float row[MR][V * 8];
  TACH_UNROLL for (int r = 0; r < MR; ++r) TACH_UNROLL for (int v = 0; v < V; ++v)
      _mm256_store_ps(row[r] + v * 8, acc[r][v]);
  for (int r = 0; r < MR; ++r) {
    float* dst = t.y + r * t.ldy;
    for (int64_t j = 0; j < t.cols; ++j) dst[j] = t.accumulate ? dst[j] + row[r][j] : row[r][j];
  }
}
#undef TACH_UNROLL

using Micro = void (*)(const Tile&);
// micro<r, 1> for r rows: the row block's remainder, and the GEMV's last panels.
constexpr Micro kOnePanel[kRows + 1] = {nullptr,     micro<1, 1>, micro<2, 1>, micro<3, 1>,
                                        micro<4, 1>, micro<5, 1>, micro<6, 1>};
// The GEMV's widest kernel per row count: as many panels as keep 8-12 accumulators.
constexpr Micro kGemvWide[kGemvRows + 1] = {nullptr, micro<1, 4>, micro<2, 3>, micro<3, 2>, micro<4, 1>};
constexpr int kGemvPanels[kGemvRows + 1] = {0, 4, 3, 2, 1};

// Rows [0, M) of y over panels [p0, p1), every k at once: each weight is read once.
void gemv_panels(const float* panels, const float* bias, const float* x, int64_t M, int64_t ldx, int64_t N, int64_t K,
                 int64_t p0, int64_t p1, float* y, int64_t ldy) {
  const int np = kGemvPanels[M];
  int64_t p = p0;
  for (; p + np <= p1 && (p + np) * kP <= N; p += np)
    kGemvWide[M](
        {x, ldx, panels + p * K * kP, K * kP, K, y + p * kP, ldy, bias ? bias + p * kP : nullptr, false, np * kP});
  for (; p < p1; ++p)
    kOnePanel[M]({x, ldx, panels + p * K * kP, K * kP, K, y + p * kP, ldy, bias ? bias + p * kP : nullptr, false,
                  std::min(kP, N - p * kP)});
}

// Rows [m0, m1) of y over panels [p0, p1), blocked over rows and k.
void gemm_panels(const float* panels, const float* bias, const float* x, int64_t m0, int64_t m1, int64_t ldx, int64_t N,
                 int64_t K, int64_t p0, int64_t p1, float* y, int64_t ldy) {
  for (int64_t k0 = 0; k0 < K; k0 += kDepth) {
    const int64_t kc = std::min(kDepth, K - k0);
    const bool last = k0 + kc == K;
    for (int64_t p = p0; p < p1; ++p) {
      Tile t{nullptr,
             ldx,
             panels + (p * K + k0) * kP,
             K * kP,
             kc,
             nullptr,
             ldy,
             last && bias ? bias + p * kP : nullptr,
             k0 > 0,
             std::min(kP, N - p * kP)};
      int64_t m = m0;
      for (; m + kRows <= m1; m += kRows) {
        t.x = x + m * ldx + k0, t.y = y + m * ldy + p * kP;
        micro<kRows, 1>(t);
      }
      if (m < m1) {
        t.x = x + m * ldx + k0, t.y = y + m * ldy + p * kP;
        kOnePanel[m1 - m](t);
      }
    }
  }
}
#endif

// The activation over rows [m0, m1) of columns [c0, c1), one row per call: this runs inside a
// thread's share already, and a row is under apply_fused_activation's grain, so it stays serial.
void activate_rows(FusedActivation activation, float* y, int64_t ldy, int64_t m0, int64_t m1, int64_t c0, int64_t c1) {
  if (activation == FusedActivation::none) return;
  for (int64_t m = m0; m < m1; ++m) apply_fused_activation(activation, y + m * ldy + c0, 1, c1 - c0, ldy);
}

}  // namespace

bool PanelLinear::available() {
#if defined(__AVX2__) && defined(__FMA__)
  return true;
#else
  return false;
#endif
}

bool PanelLinear::chosen_for(bool decoding) {
  static const std::string forced = [] {
    const char* e = std::getenv("TACH_F32_GEMM");
    return std::string(e != nullptr ? e : "");
  }();
  // A misspelt value must not quietly measure the other path.
  check(forced.empty() || forced == "panels" || forced == "onednn",
        "TACH_F32_GEMM=" + forced + ": expected panels or onednn (or unset: tach chooses)");
  if (!available() || forced == "onednn") return false;
  if (forced == "panels") return true;
  static const bool onednn_repacks = [] {
    using dt = dnnl::memory::data_type;
    const dnnl::memory::desc src({128, 256}, dt::f32, dnnl::memory::format_tag::ab);
    const dnnl::memory::desc w({256, 256}, dt::f32, dnnl::memory::format_tag::any);
    const dnnl::memory::desc dst({128, 256}, dt::f32, dnnl::memory::format_tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, w, dst), onednn_engine());
    return std::string(pd.impl_info_str()).rfind("gemm:", 0) == 0;
  }();
  return decoding && onednn_repacks;
}

PanelLinear::PanelLinear(const Tensor& weight, const Tensor& bias, FusedActivation activation)
    : activation_(activation) {
  check(available(), "PanelLinear: this build has no AVX2/FMA kernels");
  check(weight.dim() == 2, "PanelLinear: weight must be [out, in], got " + weight.describe());
  N_ = weight.size(0), K_ = weight.size(1);
  const int64_t P = (N_ + kP - 1) / kP;
  const Tensor w = weight.to(DType::f32, MemoryCategory::workspace).contiguous();
  panels_ = Tensor::empty({P, K_, kP}, DType::f32, Device::cpu(), MemoryCategory::weights);
  const float* src = w.data<float>();
  float* dst = panels_.data<float>();
  core::parallel_for(P, 16, [&](int64_t q0, int64_t q1) {
    for (int64_t p = q0; p < q1; ++p) {
      float* panel = dst + p * K_ * kP;
      for (int64_t j = 0; j < kP; ++j) {
        const int64_t n = p * kP + j;
        for (int64_t k = 0; k < K_; ++k) panel[k * kP + j] = n < N_ ? src[n * K_ + k] : 0.f;
      }
    }
  });
  if (bias.defined()) {
    check(bias.numel() == N_, "PanelLinear: bias " + bias.describe() + " does not match " + weight.describe());
    bias_ = Tensor::zeros({P * kP}, DType::f32, Device::cpu(), MemoryCategory::weights);
    const Tensor b = bias.to(DType::f32, MemoryCategory::workspace).contiguous();
    std::memcpy(bias_.data<float>(), b.data<float>(), size_t(N_) * sizeof(float));
  }
}

void PanelLinear::forward(const float* x, int64_t M, int64_t ldx, float* y, int64_t ldy) const {
  if (M == 0) return;
  check(ldx >= K_ && ldy >= N_, "PanelLinear::forward: row strides smaller than the matrix");
#if defined(__AVX2__) && defined(__FMA__)
  const float* panels = panels_.data<float>();
  const float* bias = bias_.defined() ? bias_.data<float>() : nullptr;
  const int64_t P = (N_ + kP - 1) / kP;
  // Threads split the panels: each reads its share of the weights once per row block, and all of x.
  core::parallel_for(P, 1, [&](int64_t p0, int64_t p1) {
    const int64_t c0 = p0 * kP, c1 = std::min(N_, p1 * kP);
    if (M <= kGemvRows) {
      gemv_panels(panels, bias, x, M, ldx, N_, K_, p0, p1, y, ldy);
      activate_rows(activation_, y, ldy, 0, M, c0, c1);
      return;
    }
    for (int64_t m0 = 0; m0 < M; m0 += kRowBlock) {
      const int64_t m1 = std::min(M, m0 + kRowBlock);
      gemm_panels(panels, bias, x, m0, m1, ldx, N_, K_, p0, p1, y, ldy);
      // Applied while the block is still in L2.
      activate_rows(activation_, y, ldy, m0, m1, c0, c1);
    }
  });
#else
  (void)x, (void)y, (void)ldy;
#endif
}

}  // namespace tach::cpu
