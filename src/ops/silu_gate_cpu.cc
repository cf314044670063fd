#include <cmath>

#include "core/parallel.h"
#include "cpu/vec_math.h"
#include "ops/silu_gate.h"

namespace tach::ops {

void silu_gate_forward_cpu(float* out, const float* gate_up, int64_t N, int64_t I) {
  core::parallel_for(N, 4, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* g = gate_up + n * 2 * I;
      const float* u = g + I;
      float* y = out + n * I;
#pragma omp simd
      for (int64_t i = 0; i < I; ++i) y[i] = g[i] / (1.0f + cpu::fast_exp(-g[i])) * u[i];
    }
  });
}

void silu_gate_backward_cpu(float* d_gate_up, const float* gate_up, const float* dout, int64_t N, int64_t I) {
  core::parallel_for(N, 4, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* g = gate_up + n * 2 * I;
      const float* u = g + I;
      const float* dy = dout + n * I;
      float* dg = d_gate_up + n * 2 * I;
      float* du = dg + I;
#pragma omp simd
      for (int64_t i = 0; i < I; ++i) {
        const float s = 1.0f / (1.0f + cpu::fast_exp(-g[i]));
        du[i] = dy[i] * g[i] * s;
        dg[i] = dy[i] * u[i] * s * (1.0f + g[i] * (1.0f - s));
      }
    }
  });
}

namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f, kGeluCubic = 0.044715f;
}  // namespace

void gelu_tanh_gate_forward_cpu(float* out, const float* gate_up, int64_t N, int64_t I) {
  core::parallel_for(N, 4, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* g = gate_up + n * 2 * I;
      const float* u = g + I;
      float* y = out + n * I;
      for (int64_t i = 0; i < I; ++i) {
        const float x = g[i];
        y[i] = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x))) * u[i];
      }
    }
  });
}

void gelu_tanh_gate_backward_cpu(float* d_gate_up, const float* gate_up, const float* dout, int64_t N, int64_t I) {
  core::parallel_for(N, 4, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* g = gate_up + n * 2 * I;
      const float* u = g + I;
      const float* dy = dout + n * I;
      float* dg = d_gate_up + n * 2 * I;
      float* du = dg + I;
      for (int64_t i = 0; i < I; ++i) {
        const float x = g[i];
        const float t = std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
        const float gelu = 0.5f * x * (1.0f + t);
        // d/dx: 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
        const float d =
            0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
        du[i] = dy[i] * gelu;
        dg[i] = dy[i] * u[i] * d;
      }
    }
  });
}

void gelu_gate_forward_cpu(float* out, const float* gate_up, int64_t N, int64_t I) {
  core::parallel_for(N, 4, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* g = gate_up + n * 2 * I;
      const float* u = g + I;
      float* y = out + n * I;
#pragma omp simd
      for (int64_t i = 0; i < I; ++i) y[i] = cpu::gelu_erf(g[i]) * u[i];
    }
  });
}

void gelu_gate_backward_cpu(float* d_gate_up, const float* gate_up, const float* dout, int64_t N, int64_t I) {
  constexpr float kInvSqrt2 = 0.70710678118654752f, kInvSqrt2Pi = 0.39894228040143268f;
  core::parallel_for(N, 4, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* g = gate_up + n * 2 * I;
      const float* u = g + I;
      const float* dy = dout + n * I;
      float* dg = d_gate_up + n * 2 * I;
      float* du = dg + I;
#pragma omp simd
      for (int64_t i = 0; i < I; ++i) {
        // gelu'(x) = Phi(x) + x phi(x)
        const float x = g[i];
        const float cdf = 0.5f * (1.0f + cpu::fast_erf(x * kInvSqrt2));
        const float pdf = kInvSqrt2Pi * cpu::fast_exp(-0.5f * x * x);
        du[i] = dy[i] * x * cdf;
        dg[i] = dy[i] * u[i] * (cdf + x * pdf);
      }
    }
  });
}

}  // namespace tach::ops
