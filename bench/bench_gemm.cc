// GEMM library comparison on the shapes DistilBERT-base and Qwen2.5-0.5B use (docs/perf.md).
// Each case is C[M, N] = A[M, K] · W[N, K]^T, the nn.Linear layout, with M = batch * seq tokens.
// Counters: GFLOP/s = 2*M*N*K / time. Run: build/bench/tach_bench_gemm --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/packed_linear.h"
#include "cpu/panel_linear.h"
#include "tach/tensor.h"

namespace {

using tach::cpu::GemmBackend;

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

void BM_sgemm(benchmark::State& state, GemmBackend backend) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  auto A = random_floats(size_t(M * K), 1), W = random_floats(size_t(N * K), 2);
  std::vector<float> C(size_t(M * N));
  for (auto _ : state) {
    tach::cpu::sgemm(backend, false, true, M, N, K, 1.f, A.data(), K, W.data(), K, 0.f, C.data(), N);
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2e-9 * double(M) * double(N) * double(K), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_bf16gemm(benchmark::State& state, GemmBackend backend) {
  if (backend == GemmBackend::openblas && tach::cpu::openblas_sbgemm() == nullptr) {
    state.SkipWithError("this OpenBLAS has no bfloat16 GEMM (cblas_sbgemm)");
    return;
  }
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  auto Af = random_floats(size_t(M * K), 1), Wf = random_floats(size_t(N * K), 2);
  std::vector<uint16_t> A(Af.size()), W(Wf.size());
  tach::convert_from_f32(tach::DType::bf16, Af.data(), A.data(), A.size());
  tach::convert_from_f32(tach::DType::bf16, Wf.data(), W.data(), W.size());
  std::vector<float> C(size_t(M * N));
  for (auto _ : state) {
    tach::cpu::gemm_bf16(backend, false, true, M, N, K, 1.f, A.data(), K, W.data(), K, 0.f, C.data(), N);
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2e-9 * double(M) * double(N) * double(K), benchmark::Counter::kIsIterationInvariantRate);
}

// Times lin.forward over x [M, K]; GFLOP/s, and the weights' f32 bytes read per second.
template <typename Layer>
void time_forward(benchmark::State& state, const Layer& lin, const std::vector<float>& A, int64_t M, int64_t N,
                  int64_t K) {
  std::vector<float> C(size_t(M * N));
  for (auto _ : state) {
    lin.forward(A.data(), M, K, C.data(), N);
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2e-9 * double(M) * double(N) * double(K), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight GB/s"] =
      benchmark::Counter(4e-9 * double(N) * double(K), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_packed_linear(benchmark::State& state, tach::DType compute, bool with_bias, tach::cpu::FusedActivation act) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  auto A = random_floats(size_t(M * K), 1), Wf = random_floats(size_t(N * K), 2), bf = random_floats(size_t(N), 3);
  tach::Tensor W = tach::Tensor::from_borrowed(Wf.data(), {N, K}, tach::DType::f32, nullptr);
  tach::Tensor b = with_bias ? tach::Tensor::from_borrowed(bf.data(), {N}, tach::DType::f32, nullptr) : tach::Tensor();
  tach::cpu::PackedLinear lin(W, b, compute, act, state.range(3));
  time_forward(state, lin, A, M, N, K);
}

// tach's own panel kernels (the f32 path where oneDNN's matmul is gemm:jit), beside oneDNN's.
void BM_panel_linear(benchmark::State& state) {
  if (!tach::cpu::PanelLinear::available()) {
    state.SkipWithError("built without AVX2/FMA");
    return;
  }
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  auto A = random_floats(size_t(M * K), 1), Wf = random_floats(size_t(N * K), 2);
  tach::Tensor W = tach::Tensor::from_borrowed(Wf.data(), {N, K}, tach::DType::f32, nullptr);
  tach::cpu::PanelLinear lin(W, tach::Tensor(), tach::cpu::FusedActivation::none);
  time_forward(state, lin, A, M, N, K);
}

// Qwen2.5-0.5B's decoding GEMVs (M = 1 and 4): q/o, k/v, gate/up, down, the tied LM head.
void decode(benchmark::internal::Benchmark* b) {
  for (int64_t M : {1, 4})
    b->Args({M, 896, 896, 128})
        ->Args({M, 128, 896, 128})
        ->Args({M, 4864, 896, 128})
        ->Args({M, 896, 4864, 128})
        ->Args({M, 151936, 896, 128});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

// {M, N, K}: DistilBERT-base at batch 32 x seq 128 (qkv/out, ffn up, ffn down), then
// Qwen2.5-0.5B at 512 tokens (q/o, k/v with 2 KV heads, gate/up, down).
void packing(benchmark::internal::Benchmark* b) {
  for (int64_t rows : {32, 128, 512, 4096})
    b->Args({4096, 768, 768, rows})->Args({4096, 3072, 768, rows})->Args({4096, 768, 3072, rows});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

// DistilBERT-base at batch 1 and 8 (M = 128 and 1024 tokens).
void small_batch(benchmark::internal::Benchmark* b) {
  for (int64_t M : {128, 1024})
    b->Args({M, 2304, 768, 128})->Args({M, 768, 768, 128})->Args({M, 3072, 768, 128})->Args({M, 768, 3072, 128});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

// The same layer GEMMs at M = 1024 and 4096 tokens: does a smaller M run faster per FLOP?
void rows_sweep(benchmark::internal::Benchmark* b) {
  for (int64_t M : {512, 1024, 2048, 4096})
    b->Args({M, 2304, 768, 128})->Args({M, 3072, 768, 128})->Args({M, 768, 3072, 128});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

void shapes(benchmark::internal::Benchmark* b) {
  // The 4th argument is the row count weights are packed for (PackedLinear only).
  b->Args({4096, 768, 768, 128})->Args({4096, 3072, 768, 128})->Args({4096, 768, 3072, 128});
  b->Args({512, 896, 896, 128})->Args({512, 128, 896, 128})->Args({512, 4864, 896, 128})->Args({512, 896, 4864, 128});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

BENCHMARK_CAPTURE(BM_sgemm, openblas, GemmBackend::openblas)->Apply(shapes);
BENCHMARK_CAPTURE(BM_sgemm, onednn, GemmBackend::onednn)->Apply(shapes);
using tach::cpu::FusedActivation;
BENCHMARK_CAPTURE(BM_packed_linear, onednn_packed_f32, tach::DType::f32, false, FusedActivation::none)->Apply(shapes);
BENCHMARK(BM_panel_linear)->Apply(shapes);
BENCHMARK(BM_panel_linear)->Apply(small_batch);
BENCHMARK(BM_panel_linear)->Apply(decode);
BENCHMARK_CAPTURE(BM_sgemm, onednn_decode, GemmBackend::onednn)->Apply(decode);
BENCHMARK_CAPTURE(BM_sgemm, openblas_small, GemmBackend::openblas)->Apply(small_batch);
BENCHMARK_CAPTURE(BM_sgemm, onednn_small, GemmBackend::onednn)->Apply(small_batch);
BENCHMARK_CAPTURE(BM_packed_linear, packed_small, tach::DType::f32, false, FusedActivation::none)->Apply(small_batch);
BENCHMARK_CAPTURE(BM_packed_linear, rows_sweep, tach::DType::f32, false, FusedActivation::none)->Apply(rows_sweep);
BENCHMARK_CAPTURE(BM_packed_linear, packing_rows, tach::DType::f32, false, FusedActivation::none)->Apply(packing);
BENCHMARK_CAPTURE(BM_packed_linear, onednn_packed_f32_bias, tach::DType::f32, true, FusedActivation::none)
    ->Apply(shapes);
BENCHMARK_CAPTURE(BM_packed_linear, onednn_packed_f32_bias_gelu, tach::DType::f32, true, FusedActivation::gelu_erf)
    ->Apply(shapes);
BENCHMARK_CAPTURE(BM_bf16gemm, openblas, GemmBackend::openblas)->Apply(shapes);
BENCHMARK_CAPTURE(BM_bf16gemm, onednn, GemmBackend::onednn)->Apply(shapes);
BENCHMARK_CAPTURE(BM_packed_linear, onednn_packed_bf16, tach::DType::bf16, false, FusedActivation::none)->Apply(shapes);

BENCHMARK_MAIN();
