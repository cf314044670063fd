#include "cuda/cublaslt.h"

#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "core/allocator.h"
#include "cuda/cuda_error.h"
#include "cuda/stream.h"
#include "tach/error.h"

namespace tach::cuda {
namespace {

constexpr int kMaxDevices = 16;
constexpr size_t kWorkspaceBytes = size_t(32) << 20;  // cuBLAS's recommendation for Hopper

void check_lt(cublasStatus_t st, const char* what) {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  throw Error(std::string("cuBLASLt ") + what + ": " + cublasLtGetStatusString(st));
}

struct DeviceState {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
};

DeviceState& device_state(int device) {
  static std::once_flag once[kMaxDevices];
  static DeviceState states[kMaxDevices];
  tach::check(device >= 0 && device < kMaxDevices, "CUDA device index out of range");
  std::call_once(once[device], [&] {
    DeviceGuard guard(device);
    check_lt(cublasLtCreate(&states[device].handle), "create");
    states[device].workspace = core::allocate_bytes(Device::cuda(device), kWorkspaceBytes, MemoryCategory::workspace);
  });
  return states[device];
}

// Everything that decides the descriptors and the algorithm (the alignments too: cuBLASLt
// assumes 256-byte aligned matrices unless told otherwise, and an algorithm picked for that would
// fault on a view that starts mid-row).
using PlanKey = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int, bool, int, bool, bool, uint32_t,
                           uint32_t, uint32_t>;

// The largest power of two (at most 256) that divides the address.
uint32_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && a % align != 0) align /= 2;
  return align;
}

struct Alignments {
  uint32_t x = 256, w = 256, y = 256;
};

// Descriptors and the chosen algorithm for one shape; built once, reused by every call.
struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

cudaDataType_t input_type(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::bf16: return CUDA_R_16BF;
    case GemmPrecision::f16: return CUDA_R_16F;
    default: return CUDA_R_32F;
  }
}

Plan make_plan(int device, const LinearArgs& args, bool has_bias, const Alignments& align) {
  DeviceState& st = device_state(device);
  Plan plan;
  const cublasComputeType_t compute =
      args.precision == GemmPrecision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  check_lt(cublasLtMatmulDescCreate(&plan.op, compute, CUDA_R_32F), "matmul descriptor");
  // Row-major y[M, N] = x[M, K] · W[N, K]ᵀ is column-major yᵀ[N, M] = W · xᵀ: A = W read
  // transposed (W row-major is a K×N column-major matrix), B = x as stored (K×M, ld = ld_x).
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)), "transa");
  check_lt(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)), "transb");
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (args.epilogue == Epilogue::bias) epi = CUBLASLT_EPILOGUE_BIAS;
  if (args.epilogue == Epilogue::bias_relu) epi = has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  if (args.epilogue == Epilogue::bias && !has_bias) epi = CUBLASLT_EPILOGUE_DEFAULT;
  check_lt(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)), "epilogue");
  if (has_bias) {
    const cudaDataType_t bias_type = CUDA_R_32F;
    check_lt(
        cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)),
        "bias type");
  }
  const cudaDataType_t in = input_type(args.precision);
  const cudaDataType_t out = args.y_in_input_type ? in : CUDA_R_32F;
  check_lt(cublasLtMatrixLayoutCreate(&plan.a, in, args.K, args.N, args.K), "layout W");
  check_lt(cublasLtMatrixLayoutCreate(&plan.b, in, args.K, args.M, args.ld_x), "layout x");
  check_lt(cublasLtMatrixLayoutCreate(&plan.c, out, args.N, args.M, args.ld_y), "layout y");

  cublasLtMatmulPreference_t pref = nullptr;
  check_lt(cublasLtMatmulPreferenceCreate(&pref), "preference");
  const size_t ws = kWorkspaceBytes;
  check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
           "workspace preference");
  // A is W, B is x, C and D are y.
  check_lt(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align.w, sizeof(align.w)),
      "alignment of W");
  check_lt(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align.x, sizeof(align.x)),
      "alignment of x");
  check_lt(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align.y, sizeof(align.y)),
      "alignment of y");
  check_lt(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align.y, sizeof(align.y)),
      "alignment of y");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t hs =
      cublasLtMatmulAlgoGetHeuristic(st.handle, plan.op, plan.a, plan.b, plan.c, plan.c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (hs != CUBLAS_STATUS_SUCCESS || found == 0)
    throw Error("cuBLASLt has no algorithm for a " + std::string(gemm_precision_name(args.precision)) + " GEMM of [" +
                std::to_string(args.M) + ", " + std::to_string(args.K) + "] x [" + std::to_string(args.N) + ", " +
                std::to_string(args.K) + "]ᵀ on cuda:" + std::to_string(device) +
                (hs != CUBLAS_STATUS_SUCCESS ? std::string(" (") + cublasLtGetStatusString(hs) + ")" : std::string()));
  plan.algo = result.algo;
  return plan;
}

}  // namespace

const char* gemm_precision_name(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::f32: return "f32";
    case GemmPrecision::tf32: return "tf32";
    case GemmPrecision::bf16: return "bf16";
    case GemmPrecision::f16: return "f16";
  }
  return "?";
}

void linear(int device, void* y, const void* x, const void* W, const float* bias, const LinearArgs& a) {
  tach::check(
      a.M > 0 && a.N > 0 && a.K > 0 && a.ld_x >= a.K && a.ld_y >= a.N,
      "cuda linear: bad shape M=" + std::to_string(a.M) + " N=" + std::to_string(a.N) + " K=" + std::to_string(a.K));
  tach::check(!a.y_in_input_type || a.precision == GemmPrecision::bf16 || a.precision == GemmPrecision::f16,
              "cuda linear: a reduced-precision output needs bf16 or f16 precision");
  const bool has_bias = bias != nullptr && a.epilogue != Epilogue::none;
  const Alignments align{alignment_of(x), alignment_of(W), alignment_of(y)};
  const PlanKey key{device,
                    a.M,
                    a.N,
                    a.K,
                    a.ld_x,
                    a.ld_y,
                    int(a.precision),
                    a.y_in_input_type,
                    int(a.epilogue),
                    has_bias,
                    a.beta != 0.0f,
                    align.x,
                    align.w,
                    align.y};
  static std::mutex mu;
  static std::map<PlanKey, Plan> plans;
  // Held through the enqueue: the bias pointer is set on the shared descriptor.
  std::lock_guard<std::mutex> lock(mu);
  auto it = plans.find(key);
  if (it == plans.end()) it = plans.emplace(key, make_plan(device, a, has_bias, align)).first;
  const Plan& plan = it->second;
  DeviceState& st = device_state(device);
  if (has_bias)
    check_lt(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
             "bias pointer");
  const float alpha = 1.0f, beta = a.beta;
  check_lt(cublasLtMatmul(st.handle, plan.op, &alpha, W, plan.a, x, plan.b, &beta, y, plan.c, y, plan.c, &plan.algo,
                          st.workspace, kWorkspaceBytes, stream(device)),
           "matmul");
}

}  // namespace tach::cuda
