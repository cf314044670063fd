#include "cpu/gemm.h"

#include <cblas.h>
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "cpu/onednn_engine.h"
#include "tach/error.h"

namespace tach::cpu {

std::string_view gemm_backend_name(GemmBackend backend) {
  return backend == GemmBackend::onednn ? "onednn" : "openblas";
}

GemmBackend default_gemm_backend() {
  static const GemmBackend chosen = [] {
    const char* env = std::getenv("TACH_GEMM");
    if (env == nullptr || std::string_view(env) == "onednn") return GemmBackend::onednn;
    if (std::string_view(env) == "openblas") return GemmBackend::openblas;
    throw Error("TACH_GEMM='" + std::string(env) + "': expected onednn or openblas");
  }();
  return chosen;
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

void sgemm(GemmBackend backend, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
           const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (backend == GemmBackend::openblas) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                static_cast<blasint>(M), static_cast<blasint>(N), static_cast<blasint>(K), alpha, A,
                static_cast<blasint>(lda), B, static_cast<blasint>(ldb), beta, C, static_cast<blasint>(ldc));
    return;
  }
  const dnnl_status_t st =
      dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  check(st == dnnl_success, "oneDNN sgemm failed (status " + std::to_string(static_cast<int>(st)) +
                                ") for M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K));
}

namespace {

// oneDNN's bf16 GEMM is the matmul primitive; primitives are cached by shape and layout so that
// a forward pass pays creation once per distinct shape.
struct MatmulKey {
  bool ta, tb;
  int64_t M, N, K, lda, ldb, ldc;
  float alpha;
  bool beta_one;
  bool operator==(const MatmulKey&) const = default;
};
struct MatmulKeyHash {
  size_t operator()(const MatmulKey& k) const {
    size_t h = std::hash<int64_t>()(k.M);
    for (int64_t v : {k.N, k.K, k.lda, k.ldb, k.ldc}) h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h ^ (k.ta ? 7u : 0u) ^ (k.tb ? 13u : 0u) ^ (k.beta_one ? 31u : 0u) ^ std::hash<float>()(k.alpha);
  }
};
// One primitive per shape, shared by every thread: attention runs these GEMMs from the workers
// of its parallel loop, so the scratchpad is the caller's (user mode, a thread_local buffer), not
// the primitive's own, which concurrent executions would share.
struct CachedMatmul {
  dnnl::matmul prim;
  dnnl::memory::desc a, b, c, scratchpad;
};

const CachedMatmul& bf16_matmul(const MatmulKey& key) {
  static std::mutex mu;
  static std::unordered_map<MatmulKey, CachedMatmul, MatmulKeyHash> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  using dt = dnnl::memory::data_type;
  using dims = dnnl::memory::dims;
  // A logical [M, K]; stored [M, K] with stride lda, or [K, M] (transposed) with stride lda.
  dnnl::memory::desc a({key.M, key.K}, dt::bf16, key.ta ? dims{1, key.lda} : dims{key.lda, 1});
  dnnl::memory::desc b({key.K, key.N}, dt::bf16, key.tb ? dims{1, key.ldb} : dims{key.ldb, 1});
  dnnl::memory::desc c({key.M, key.N}, dt::f32, dims{key.ldc, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (key.alpha != 1.0f) attr.set_output_scales(0, {key.alpha});
  if (key.beta_one) {
    dnnl::post_ops po;
    po.append_sum(1.0f);
    attr.set_post_ops(po);
  }
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, onednn_engine());
  CachedMatmul m{dnnl::matmul(pd), a, b, c, pd.scratchpad_desc()};
  return cache.emplace(key, std::move(m)).first->second;
}

}  // namespace

SbgemmFn openblas_sbgemm() {
  // Looked up at run time: OpenBLAS has it only when built with BUILD_BFLOAT16.
  static const SbgemmFn fn = reinterpret_cast<SbgemmFn>(dlsym(RTLD_DEFAULT, "cblas_sbgemm"));
  return fn;
}

bool onednn_bf16_supported() {
  static const bool ok = [] {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    try {
      dnnl::memory::desc a({16, 16}, dt::bf16, tag::ab), b({16, 16}, dt::bf16, tag::ab), c({16, 16}, dt::f32, tag::ab);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), onednn_engine());
      return true;
    } catch (const dnnl::error&) { return false; }
  }();
  return ok;
}

void require_bf16_compute(const std::string& what) {
  check(onednn_bf16_supported(), what + ": bf16 compute needs a bf16 GEMM, and oneDNN " + onednn_version() +
                                     " has none for this CPU (it needs AVX-512; tach info lists the ISA); use f32");
}

void gemm_bf16(GemmBackend backend, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
               const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (backend == GemmBackend::openblas) {
    auto sbgemm = openblas_sbgemm();
    check(sbgemm != nullptr,
          "gemm_bf16: this OpenBLAS was built without bfloat16 (no cblas_sbgemm; Debian's 0.3.21 is such a build); "
          "use the oneDNN backend");
    sbgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
           static_cast<blasint>(M), static_cast<blasint>(N), static_cast<blasint>(K), alpha, A,
           static_cast<blasint>(lda), B, static_cast<blasint>(ldb), beta, C, static_cast<blasint>(ldc));
    return;
  }
  check(beta == 0.0f || beta == 1.0f, "gemm_bf16 (oneDNN): beta must be 0 or 1");
  require_bf16_compute("gemm_bf16");
  const MatmulKey key{trans_a, trans_b, M, N, K, lda, ldb, ldc, alpha, beta == 1.0f};
  const CachedMatmul& mm = bf16_matmul(key);
  dnnl::stream stream(onednn_engine());
  dnnl::memory a(mm.a, onednn_engine(), const_cast<uint16_t*>(A));
  dnnl::memory b(mm.b, onednn_engine(), const_cast<uint16_t*>(B));
  dnnl::memory c(mm.c, onednn_engine(), C);
  thread_local std::vector<uint8_t> scratch;
  if (scratch.size() < mm.scratchpad.get_size()) scratch.resize(mm.scratchpad.get_size());
  dnnl::memory pad(mm.scratchpad, onednn_engine(), scratch.data());
  mm.prim.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}, {DNNL_ARG_SCRATCHPAD, pad}});
  stream.wait();
}

}  // namespace tach::cpu
