#include "cuda/cublaslt.h"

#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "core/allocator.h"
#include "cuda/cuda_error.h"
#include "core/library_loader.h"
#include "cuda/stream.h"
#include "tach/error.h"

namespace tach::cuda {
namespace {

constexpr int kMaxDevices = 16;
constexpr size_t kWorkspaceBytes = size_t(32) << 20;  // cuBLAS's recommendation for Hopper

// cuBLASLt's entry points, resolved at the first GEMM (core/library_loader.h says why not linked).
struct LtApi {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtGetStatusString) status_string = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) algo_heuristic = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) preference_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) preference_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preference_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
};

// The loaded API; throws tach::Error naming the library (or the symbols it lacks) when it is not usable.
const LtApi& lt() {
  static LtApi api;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    const OpenedLibrary lib =
        open_library({TACH_CUBLASLT_SONAME, TACH_CUBLASLT_TOOLKIT_PATH, "the CUDA toolkit tach was built with",
                      "GEMMs on the GPU", kCudaLibraryRemedy});
    if (!lib.handle) {
      error = "cuBLASLt is not available: " + lib.error;
      return;
    }
    std::string missing;
    resolve(lib.handle, api.create, "cublasLtCreate", &missing);
    resolve(lib.handle, api.status_string, "cublasLtGetStatusString", &missing);
    resolve(lib.handle, api.matmul, "cublasLtMatmul", &missing);
    resolve(lib.handle, api.algo_heuristic, "cublasLtMatmulAlgoGetHeuristic", &missing);
    resolve(lib.handle, api.desc_create, "cublasLtMatmulDescCreate", &missing);
    resolve(lib.handle, api.desc_set, "cublasLtMatmulDescSetAttribute", &missing);
    resolve(lib.handle, api.preference_create, "cublasLtMatmulPreferenceCreate", &missing);
    resolve(lib.handle, api.preference_destroy, "cublasLtMatmulPreferenceDestroy", &missing);
    resolve(lib.handle, api.preference_set, "cublasLtMatmulPreferenceSetAttribute", &missing);
    resolve(lib.handle, api.layout_create, "cublasLtMatrixLayoutCreate", &missing);
    if (!missing.empty()) error = std::string("cuBLASLt is not usable: ") + TACH_CUBLASLT_SONAME + " lacks " + missing;
  });
  if (!error.empty()) throw Error(error);
  return api;
}

void check_lt(cublasStatus_t st, const char* what) {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  throw Error(std::string("cuBLASLt ") + what + ": " + lt().status_string(st));
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
    check_lt(lt().create(&states[device].handle), "create");
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

// The heuristic's first algorithm for a plan's descriptors, told the operands' alignments (in
// cuBLASLt's terms: A, B, and C = D). `what` describes the GEMM for the error.
template <typename Describe>
cublasLtMatmulAlgo_t choose_algo(DeviceState& st, const Plan& plan, uint32_t align_a, uint32_t align_b,
                                 uint32_t align_c, Describe what) {
  cublasLtMatmulPreference_t pref = nullptr;
  check_lt(lt().preference_create(&pref), "preference");
  const size_t ws = kWorkspaceBytes;
  check_lt(lt().preference_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
           "workspace preference");
  check_lt(lt().preference_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof(align_a)),
           "alignment of A");
  check_lt(lt().preference_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b)),
           "alignment of B");
  check_lt(lt().preference_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof(align_c)),
           "alignment of C");
  check_lt(lt().preference_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c, sizeof(align_c)),
           "alignment of D");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t hs =
      lt().algo_heuristic(st.handle, plan.op, plan.a, plan.b, plan.c, plan.c, pref, 1, &result, &found);
  lt().preference_destroy(pref);
  if (hs != CUBLAS_STATUS_SUCCESS || found == 0)
    throw Error("cuBLASLt has no algorithm for a " + what() +
                (hs != CUBLAS_STATUS_SUCCESS ? std::string(" (") + lt().status_string(hs) + ")" : std::string()));
  return result.algo;
}

Plan make_plan(int device, const LinearArgs& args, bool has_bias, const Alignments& align) {
  DeviceState& st = device_state(device);
  Plan plan;
  const cublasComputeType_t compute =
      args.precision == GemmPrecision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  check_lt(lt().desc_create(&plan.op, compute, CUDA_R_32F), "matmul descriptor");
  // Row-major y[M, N] = x[M, K] · W[N, K]ᵀ is column-major yᵀ[N, M] = W · xᵀ: A = W read
  // transposed (W row-major is a K×N column-major matrix), B = x as stored (K×M, ld = ld_x).
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  check_lt(lt().desc_set(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)), "transa");
  check_lt(lt().desc_set(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)), "transb");
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (args.epilogue == Epilogue::bias) epi = CUBLASLT_EPILOGUE_BIAS;
  if (args.epilogue == Epilogue::bias_relu) epi = has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  if (args.epilogue == Epilogue::bias_gelu_tanh) epi = has_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  if (args.epilogue == Epilogue::bias && !has_bias) epi = CUBLASLT_EPILOGUE_DEFAULT;
  check_lt(lt().desc_set(plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)), "epilogue");
  const cudaDataType_t in = input_type(args.precision);
  const cudaDataType_t out = args.y_in_input_type ? in : CUDA_R_32F;
  if (has_bias) {
    const cudaDataType_t bias_type = out;  // the bias is in y's dtype
    check_lt(lt().desc_set(plan.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)), "bias type");
  }
  check_lt(lt().layout_create(&plan.a, in, args.K, args.N, args.K), "layout W");
  check_lt(lt().layout_create(&plan.b, in, args.K, args.M, args.ld_x), "layout x");
  check_lt(lt().layout_create(&plan.c, out, args.N, args.M, args.ld_y), "layout y");

  // A is W, B is x, C and D are y.
  plan.algo = choose_algo(st, plan, align.w, align.x, align.y, [&] {
    return std::string(gemm_precision_name(args.precision)) + " GEMM of [" + std::to_string(args.M) + ", " +
           std::to_string(args.K) + "] x [" + std::to_string(args.N) + ", " + std::to_string(args.K) +
           "]ᵀ on cuda:" + std::to_string(device);
  });
  return plan;
}

// Keys a general GEMM's plan: the device, transposes, shape, leading dimensions, precision,
// bias, whether C is read, and the alignments of A, B, C and the bias.
using GemmKey = std::tuple<int, bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, bool, bool,
                           uint32_t, uint32_t, uint32_t, uint32_t>;

// Row-major C [M, N] is column-major Cᵀ [N, M] = op(B)ᵀ · op(A)ᵀ: cuBLASLt's A is our B and its B
// our A. A row-major matrix stored [R, C] (ld) is a column-major C × R one, so an operand read as
// stored becomes cuBLASLt's "N" operand and one read transposed its "T" operand.
Plan make_gemm_plan(int device, const GemmArgs& args, uint32_t align_a, uint32_t align_b, uint32_t align_c) {
  DeviceState& st = device_state(device);
  Plan plan;
  const cublasComputeType_t compute =
      args.precision == GemmPrecision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  check_lt(lt().desc_create(&plan.op, compute, CUDA_R_32F), "matmul descriptor");
  const cublasOperation_t trans_a = args.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t trans_b = args.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_lt(lt().desc_set(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)), "transa");
  check_lt(lt().desc_set(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)), "transb");
  const cublasLtEpilogue_t epi = args.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  check_lt(lt().desc_set(plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)), "epilogue");
  if (args.bias) {
    const cudaDataType_t bias_type = CUDA_R_32F;
    check_lt(lt().desc_set(plan.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)), "bias type");
    // The heuristic reads the bias pointer's alignment from it (a bias may be a view mid-buffer).
    check_lt(lt().desc_set(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &args.bias, sizeof(args.bias)), "bias pointer");
  }
  const cudaDataType_t in = input_type(args.precision);
  // cuBLASLt's A = our B: stored [N, K] when transposed (column-major K × N), else [K, N] (N × K).
  if (args.trans_b) check_lt(lt().layout_create(&plan.a, in, args.K, args.N, args.ldb), "layout B");
  else check_lt(lt().layout_create(&plan.a, in, args.N, args.K, args.ldb), "layout B");
  // cuBLASLt's B = our A: stored [K, M] when transposed (column-major M × K), else [M, K] (K × M).
  if (args.trans_a) check_lt(lt().layout_create(&plan.b, in, args.M, args.K, args.lda), "layout A");
  else check_lt(lt().layout_create(&plan.b, in, args.K, args.M, args.lda), "layout A");
  check_lt(lt().layout_create(&plan.c, CUDA_R_32F, args.N, args.M, args.ldc), "layout C");
  plan.algo = choose_algo(st, plan, align_b, align_a, align_c, [&] {
    return std::string(gemm_precision_name(args.precision)) + " GEMM " + (args.trans_a ? "Aᵀ" : "A") + " · " +
           (args.trans_b ? "Bᵀ" : "B") + " of [" + std::to_string(args.M) + ", " + std::to_string(args.K) + "] x [" +
           std::to_string(args.K) + ", " + std::to_string(args.N) + "] on cuda:" + std::to_string(device);
  });
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

void linear(int device, void* y, const void* x, const void* W, const void* bias, const LinearArgs& a) {
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
    check_lt(lt().desc_set(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)), "bias pointer");
  const float alpha = 1.0f, beta = a.beta;
  check_lt(lt().matmul(st.handle, plan.op, &alpha, W, plan.a, x, plan.b, &beta, y, plan.c, y, plan.c, &plan.algo,
                       st.workspace, kWorkspaceBytes, stream(device)),
           "matmul");
}

}  // namespace tach::cuda

namespace tach::cuda {

void gemm(int device, float* C, const void* A, const void* B, const GemmArgs& a) {
  tach::check(a.M > 0 && a.N > 0 && a.K > 0 && a.lda >= (a.trans_a ? a.M : a.K) && a.ldb >= (a.trans_b ? a.K : a.N) &&
                  a.ldc >= a.N,
              "cuda gemm: bad shape M=" + std::to_string(a.M) + " N=" + std::to_string(a.N) +
                  " K=" + std::to_string(a.K) + " lda=" + std::to_string(a.lda) + " ldb=" + std::to_string(a.ldb) +
                  " ldc=" + std::to_string(a.ldc));
  const GemmKey key{device,
                    a.trans_a,
                    a.trans_b,
                    a.M,
                    a.N,
                    a.K,
                    a.lda,
                    a.ldb,
                    a.ldc,
                    int(a.precision),
                    a.bias != nullptr,
                    a.beta != 0.0f,
                    alignment_of(A),
                    alignment_of(B),
                    alignment_of(C),
                    a.bias ? alignment_of(a.bias) : 0u};
  static std::mutex mu;
  static std::map<GemmKey, Plan> plans;
  // Held through the enqueue: the bias pointer is set on the shared descriptor.
  std::lock_guard<std::mutex> lock(mu);
  auto it = plans.find(key);
  if (it == plans.end())
    it = plans.emplace(key, make_gemm_plan(device, a, std::get<12>(key), std::get<13>(key), std::get<14>(key))).first;
  const Plan& plan = it->second;
  DeviceState& st = device_state(device);
  if (a.bias)
    check_lt(lt().desc_set(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &a.bias, sizeof(a.bias)), "bias pointer");
  const float alpha = a.alpha, beta = a.beta;
  check_lt(lt().matmul(st.handle, plan.op, &alpha, B, plan.a, A, plan.b, &beta, C, plan.c, C, plan.c, &plan.algo,
                       st.workspace, kWorkspaceBytes, stream(device)),
           "matmul");
}

}  // namespace tach::cuda
