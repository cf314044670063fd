// The encoder's non-GEMM ops at DistilBERT-base shapes (batch 32, seq 128): attention,
// LayerNorm, embedding. Run: build/bench/tach_bench_ops --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>

#include "ops/attention.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "cpu/vec_math.h"

namespace {

tach::Tensor random_tensor(const tach::Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  tach::Tensor t = tach::Tensor::empty(shape, tach::DType::f32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = n(rng);
  return t;
}

void BM_attention(benchmark::State& state) {
  const int64_t B = state.range(0), T = state.range(1), H = 12, D = 64, C = H * D;
  tach::Tensor qkv = random_tensor({B, T, 3 * C}, 1);
  tach::Tensor mask = tach::Tensor::empty({B, T}, tach::DType::i32);
  for (int64_t i = 0; i < B * T; ++i) mask.data<int32_t>()[i] = 1;
  tach::Tensor out = tach::Tensor::empty({B, T, C}, tach::DType::f32);
  for (auto _ : state)
    tach::ops::attention_forward(out, qkv.narrow(2, 0, C), qkv.narrow(2, C, C), qkv.narrow(2, 2 * C, C), mask, int(H),
                                 0.125f);
  const auto cost = tach::ops::attention_cost(B, T, H, D);
  state.counters["GFLOP/s"] = benchmark::Counter(cost.flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_layer_norm(benchmark::State& state) {
  const int64_t N = state.range(0), C = 768;
  tach::Tensor x = random_tensor({N, C}, 1), r = random_tensor({N, C}, 2), g = random_tensor({C}, 3),
               b = random_tensor({C}, 4), out = tach::Tensor::empty({N, C}, tach::DType::f32);
  for (auto _ : state) tach::ops::layer_norm_forward(out, x, r, g, b, 1e-12f);
  const auto cost = tach::ops::layer_norm_cost(N, C, true);
  state.counters["GB/s"] = benchmark::Counter(cost.bytes() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_attention)->Args({32, 128})->Args({8, 128})->Args({1, 128})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_layer_norm)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();

namespace {
void BM_softmax_rows(benchmark::State& state) {
  const int64_t rows = 4096, n = state.range(0);
  tach::Tensor x = random_tensor({rows, n}, 1);
  for (auto _ : state)
    for (int64_t r = 0; r < rows; ++r) tach::cpu::softmax_inplace(x.data<float>() + r * n, n);
  state.counters["ns/elem"] =
      benchmark::Counter(double(rows * n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["ns/elem"] =
      benchmark::Counter(state.counters["ns/elem"].value * 1e9, state.counters["ns/elem"].flags);
}
}  // namespace
BENCHMARK(BM_softmax_rows)->Arg(128)->Arg(512)->UseRealTime();
