#include "cuda/cudnn_sdpa.h"

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/cuda_error.h"
#include "cuda/cudnn_loader.h"
#include "cuda/stream.h"
#include "tach/error.h"
#include "tach/tensor.h"

namespace tach::cuda {

const char* sdpa_dtype_name(SdpaDType t) { return t == SdpaDType::bf16 ? "bf16" : "f16"; }

bool cudnn_sdpa_available(std::string* why) { return cudnn_loadable(why); }

#if !TACH_HAS_CUDNN_HEADERS

void sdpa_forward(int, const SdpaArgs&, void*, float*, const void*, const void*, const void*, const int32_t*,
                  const void*, const SdpaMaskInputs&) {
  std::string why;
  cudnn_loadable(&why);
  throw Error(why);
}
void sdpa_backward(int, const SdpaArgs&, void*, void*, void*, const void*, const void*, const float*, const void*,
                   const void*, const void*, const int32_t*, const void*) {
  std::string why;
  cudnn_loadable(&why);
  throw Error(why);
}
void sdpa_check_operations(const SdpaArgs&, bool, bool, bool) {
  std::string why;
  cudnn_loadable(&why);
  throw Error(why);
}

#else

namespace {

// stats false: the inference forward (no log-sum-exp).
std::string describe(const SdpaArgs& a, bool backward, bool stats = true) {
  return std::string("cuDNN attention ") +
         (backward ? "backward"
          : stats  ? "forward"
                   : "inference forward") +
         " (" + sdpa_dtype_name(a.dtype) + ", B " + std::to_string(a.B) + ", T " + std::to_string(a.T) + ", H " +
         std::to_string(a.H) + (a.kv_heads() != a.H ? ", H_kv " + std::to_string(a.kv_heads()) : std::string()) +
         ", D " + std::to_string(a.D) + (a.causal ? ", causal" : "") +
         (a.window > 0 ? ", window " + std::to_string(a.window) : std::string()) + (a.bias ? ", score bias" : "") +
         (a.ragged ? ", left-padded" : "") +
         (a.dropout_p > 0 ? ", dropout " + std::to_string(a.dropout_p) : std::string()) + ")";
}

void check_args(const SdpaArgs& a, bool backward) {
  const std::string what = describe(a, backward);
  tach::check(a.B > 0 && a.T > 0 && a.H > 0 && a.D > 0, what + ": every size must be positive");
  tach::check(a.D % 8 == 0 && a.D <= 256,
              what + ": cuDNN's fused attention takes head sizes that are multiples of 8, up to 256");
  const int64_t H_kv = a.kv_heads(), ld_kv = a.kv_stride();
  tach::check(H_kv > 0 && a.H % H_kv == 0, what + ": " + std::to_string(H_kv) + " key/value heads must divide the " +
                                               std::to_string(a.H) +
                                               " query heads (each K/V head serves a group of query heads)");
  tach::check(a.ld_in >= a.H * a.D && a.ld_out >= a.H * a.D,
              what + ": row strides " + std::to_string(a.ld_in) + " (q) and " + std::to_string(a.ld_out) +
                  " (out) must be at least H*D = " + std::to_string(a.H * a.D));
  tach::check(ld_kv >= H_kv * a.D, what + ": the row stride of k and v, " + std::to_string(ld_kv) +
                                       ", must be at least H_kv*D = " + std::to_string(H_kv * a.D));
  // Every tensor is declared 16-byte aligned, so every row must start on 16 bytes too.
  tach::check(a.ld_in % 8 == 0 && ld_kv % 8 == 0 && a.ld_out % 8 == 0,
              what + ": row strides must be multiples of 8 elements (16 bytes), got " + std::to_string(a.ld_in) + ", " +
                  std::to_string(ld_kv) + " and " + std::to_string(a.ld_out));
  tach::check(a.kv_batch_stride == 0 || (!backward && a.kv_batch_stride >= a.T * ld_kv && a.kv_batch_stride % 8 == 0),
              what + ": k's and v's batch stride " + std::to_string(a.kv_batch_stride) +
                  " must be a multiple of 8 elements holding T rows, and is for the forward only");
  tach::check(!backward || (a.window == 0 && !a.bias && !a.ragged),
              what + ": windows, score biases and left padding are for the inference forward only");
  tach::check(a.window >= 0, what + ": the window must be 0 (none) or a count of keys");
  tach::check(a.dropout_p >= 0.0f && a.dropout_p < 1.0f,
              what + ": the dropout probability must be in [0, 1), got " + std::to_string(a.dropout_p));
}

void check_aligned(const void* p, const char* name, const SdpaArgs& a, bool backward) {
  tach::check(reinterpret_cast<uintptr_t>(p) % 16 == 0,
              describe(a, backward) + ": " + name + " must be 16-byte aligned (cuDNN reads it in 16-byte vectors)");
}

constexpr int kMaxDevices = 16;
// Declared deprecated in cuDNN 9's later headers (a device-properties descriptor can stand in
// for the handle there), but what every cuDNN 9 library reads: named by value, so that the
// build stays free of deprecation warnings.
constexpr auto kOperationGraphHandle = cudnnBackendAttributeName_t(800);  // CUDNN_ATTR_OPERATIONGRAPH_HANDLE
constexpr auto kExecutionPlanHandle = cudnnBackendAttributeName_t(400);   // CUDNN_ATTR_EXECUTION_PLAN_HANDLE

// The graph's tensors that the caller provides (or tach's workspace holds), by unique id.
// Intermediate (virtual) tensors take ids from kFirstVirtual on.
enum Uid : int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kScale,
  kSeqLenQ,
  kSeqLenKV,
  kNegInf,
  kDropoutKeep,
  kdO,
  kdQ,
  kdK,
  kdV,
  kSoftmaxSum,
  kdQAccum,
  kDropoutMask,
  kDropoutScale,
  kBias,
  kWindowLeft,
  kWindowRight,
  kRaggedQ,
  kRaggedK,
  kRaggedV,
  kRaggedO,
  kFirstVirtual = 100
};

using Dims = std::array<int64_t, 4>;
using Desc = cudnnBackendDescriptor_t;

// One backend descriptor, destroyed with its owner.
class Descriptor {
 public:
  Descriptor(cudnnBackendDescriptorType_t type, const std::string& what) {
    check_cudnn(cudnn_api().backend_create(type, &d_), "create " + what);
  }
  ~Descriptor() {
    if (d_) cudnn_api().backend_destroy(d_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  Desc get() const { return d_; }

 private:
  Desc d_ = nullptr;
};

void set(Desc d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* value,
         const std::string& what) {
  check_cudnn(cudnn_api().backend_set(d, name, type, count, value), "set " + what);
}
void set_desc(Desc d, cudnnBackendAttributeName_t name, Desc value, const std::string& what) {
  set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value, what);
}
void finalize(Desc d, const std::string& what) { check_cudnn(cudnn_api().backend_finalize(d), "finalize " + what); }

// The operations of one graph and every descriptor they refer to (kept alive with the plan).
class GraphBuilder {
 public:
  // A tensor the caller provides at execution, [4] dims with strides in elements; ragged: the
  // tensor of each sequence's element offset, which then stands in for the batch stride.
  Desc io(int64_t uid, cudnnDataType_t type, Dims dims, Dims strides, const std::string& name, Desc ragged = nullptr) {
    io_uids_.push_back(uid);
    return tensor(uid, type, dims, strides, false, false, name, ragged);
  }
  // An f32 scalar passed by value (a host pointer at execution).
  Desc scalar(int64_t uid, const std::string& name) {
    io_uids_.push_back(uid);
    return tensor(uid, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true, name);
  }
  // An intermediate that never reaches memory.
  Desc virt(cudnnDataType_t type, Dims dims, Dims strides, const std::string& name) {
    return tensor(next_virtual_++, type, dims, strides, true, false, name);
  }

  // y = mode(x[, b][, t]) computed in `math`; axis: GEN_INDEX's dimension.
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, Desc x, Desc b, Desc t, Desc y,
                 const std::string& name, int64_t axis = -1) {
    Desc pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, name + " pointwise");
    set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, name + " mode");
    set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &math, name + " math precision");
    if (axis >= 0) set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, name + " axis");
    finalize(pw, name + " pointwise");
    Desc op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, name);
    set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw, name + " descriptor");
    set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x, name + " x");
    if (b) set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b, name + " b");
    if (t) set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t, name + " t");
    set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y, name + " y");
    const float one = 1.0f;  // y = op(1·x, 1·b): cuDNN's default, said as cudnn-frontend says it
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one, name + " alpha1");
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one, name + " alpha2");
    add_operation(op, name);
  }

  // c = a · b over the last two dimensions, batched over the first two, accumulated in f32. The
  // overrides (i32 [B, 1, 1, 1], or null) are each sequence's real m, n or k; padding_zero: the
  // rows and columns past them are written as 0.
  void matmul(Desc a, Desc b, Desc c, Desc m_override, Desc n_override, Desc k_override, bool padding_zero,
              const std::string& name) {
    Desc mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR, name + " matmul");
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute, name + " compute type");
    if (padding_zero) {
      const double zero = 0.0;
      set(mm, CUDNN_ATTR_MATMUL_PADDING_VALUE, CUDNN_TYPE_DOUBLE, 1, &zero, name + " padding value");
    }
    finalize(mm, name + " matmul");
    Desc op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, name);
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a, name + " a");
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b, name + " b");
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c, name + " c");
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm, name + " descriptor");
    if (m_override) set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, m_override, name + " m override");
    if (n_override) set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, n_override, name + " n override");
    if (k_override) set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, k_override, name + " k override");
    add_operation(op, name);
  }

  // y = reduce(x) over the dimensions where y has size 1, in f32.
  void reduction(cudnnReduceTensorOp_t mode, Desc x, Desc y, const std::string& name) {
    Desc red = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, name + " reduction");
    set(red, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode, name + " operator");
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    set(red, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute, name + " compute type");
    finalize(red, name + " reduction");
    Desc op = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, name);
    set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x, name + " x");
    set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y, name + " y");
    set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, red, name + " descriptor");
    add_operation(op, name);
  }

  // y: the same elements as x seen with other dimensions and strides (a transposed view).
  void reshape(Desc x, Desc y, const std::string& name) {
    Desc op = make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, name);
    set_desc(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x, name + " x");
    set_desc(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y, name + " y");
    add_operation(op, name);
  }

  const std::vector<Desc>& operations() const { return operations_; }
  const std::vector<int64_t>& io_uids() const { return io_uids_; }
  Desc make(cudnnBackendDescriptorType_t type, const std::string& what) {
    owned_.push_back(std::make_unique<Descriptor>(type, what));
    return owned_.back()->get();
  }

 private:
  Desc tensor(int64_t uid, cudnnDataType_t type, Dims dims, Dims strides, bool is_virtual, bool by_value,
              const std::string& name, Desc ragged = nullptr) {
    const std::string what = "tensor " + name;
    Desc t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, what);
    const int64_t alignment = 16;
    set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, what + " data type");
    set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data(), what + " dimensions");
    set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data(), what + " strides");
    set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, what + " id");
    set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, what + " alignment");
    if (is_virtual) {
      const bool yes = true;
      set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes, what + " virtual");
    }
    if (by_value) {
      const bool yes = true;
      set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes, what + " by value");
    }
    if (ragged) set_desc(t, CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC, ragged, what + " ragged offsets");
    finalize(t, what);
    return t;
  }

  void add_operation(Desc op, const std::string& name) {
    finalize(op, "operation " + name);
    operations_.push_back(op);
  }

  std::vector<std::unique_ptr<Descriptor> > owned_;
  std::vector<Desc> operations_;
  std::vector<int64_t> io_uids_;
  int64_t next_virtual_ = kFirstVirtual;
};

// The shapes every graph names. Tensors are declared [B, H, rows, cols] as cuDNN's attention
// graphs are, with strides saying where tach keeps them: q, k, v, out and their gradients as
// [B, T, H*D] rows (token-major, heads side by side), the scores [B, H, T, T] contiguous.
struct Layout {
  cudnnDataType_t io;
  Dims qkv, qkv_strides;          // Q, dQ: [B, H, T, D], rows strided by ld_in
  Dims kv, kv_strides;            // K, V, dK, dV: [B, H_kv, T, D], rows strided by kv_stride()
  Dims t_dims, t_strides;         // Kᵀ, Vᵀ: [B, H_kv, D, T] over the same memory
  Dims full_heads, full_strides;  // dK, dV per query head before each group's sum: [B, H, T, D] contiguous
  Dims out_strides;               // [B, H, T, D], rows strided by ld_out
  Dims scores, scores_strides;    // [B, H, T, T]
  Dims scores_t_strides;          // the same scores read transposed, [B, H, Tk, Tq]
  Dims row, row_strides;          // [B, H, T, 1]: one f32 per query row
  Dims lengths, lengths_strides;  // [B, 1, 1, 1] i32
  Dims bias, bias_strides;        // [1, H, T, T] contiguous
  Dims offsets;                   // [B + 1, 1, 1, 1] i32 (ragged offsets; lengths_strides)

  explicit Layout(const SdpaArgs& a) {
    const int64_t B = a.B, H = a.H, T = a.T, D = a.D, H_kv = a.kv_heads(), ld_kv = a.kv_stride();
    io = a.dtype == SdpaDType::bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
    qkv = {B, H, T, D};
    qkv_strides = {T * a.ld_in, D, a.ld_in, 1};
    kv = {B, H_kv, T, D};
    kv_strides = {a.kv_batch(), D, ld_kv, 1};
    t_dims = {B, H_kv, D, T};
    t_strides = {a.kv_batch(), D, 1, ld_kv};
    full_heads = {B, H, T, D};
    full_strides = {H * T * D, T * D, D, 1};
    out_strides = {T * a.ld_out, D, a.ld_out, 1};
    scores = {B, H, T, T};
    scores_strides = {H * T * T, T * T, T, 1};
    scores_t_strides = {H * T * T, T * T, 1, T};
    row = {B, H, T, 1};
    row_strides = {H * T, T, 1, 1};
    lengths = {B, 1, 1, 1};
    lengths_strides = {1, 1, 1, 1};
    bias = {1, H, T, T};
    bias_strides = {H * T * T, T * T, T, 1};
    offsets = {B + 1, 1, 1, 1};
  }
};

// cuDNN before 9.10 wants the lowest finite float where a score is masked, later ones -inf.
bool wants_lowest_for_masked() { return cudnn_version() < 91000; }

// Scores past each sequence's length (rows past seq_len_q, keys past seq_len_kv) become -inf.
Desc padding_mask(GraphBuilder& g, const Layout& l, Desc scores, Desc seq_q, Desc seq_kv, Desc neg_inf,
                  const std::string& name) {
  Desc row = g.virt(CUDNN_DATA_INT32, l.scores, l.scores_strides, name + " row index");
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, scores, nullptr, nullptr, row, name + " row index", 2);
  Desc col = g.virt(CUDNN_DATA_INT32, l.scores, l.scores_strides, name + " column index");
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, scores, nullptr, nullptr, col, name + " column index", 3);
  Desc row_ok = g.virt(CUDNN_DATA_BOOLEAN, l.scores, l.scores_strides, name + " row < seq_len_q");
  g.pointwise(CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN, row, seq_q, nullptr, row_ok, name + " row < seq_len_q");
  Desc col_ok = g.virt(CUDNN_DATA_BOOLEAN, l.scores, l.scores_strides, name + " column < seq_len_kv");
  g.pointwise(CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN, col, seq_kv, nullptr, col_ok, name + " column < seq_len_kv");
  Desc keep = g.virt(CUDNN_DATA_BOOLEAN, l.scores, l.scores_strides, name + " keep");
  g.pointwise(CUDNN_POINTWISE_LOGICAL_AND, CUDNN_DATA_BOOLEAN, row_ok, col_ok, nullptr, keep, name + " keep");
  Desc out = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, name + " masked");
  // BINARY_SELECT: y = t ? x : b.
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, scores, neg_inf, keep, out, name + " select");
  return out;
}

// Scores of keys after the query (column > row) become -inf.
Desc causal_mask(GraphBuilder& g, const Layout& l, Desc scores, Desc neg_inf) {
  Desc row = g.virt(CUDNN_DATA_INT32, l.scores, l.scores_strides, "causal row index");
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, scores, nullptr, nullptr, row, "causal row index", 2);
  Desc col = g.virt(CUDNN_DATA_INT32, l.scores, l.scores_strides, "causal column index");
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, scores, nullptr, nullptr, col, "causal column index", 3);
  Desc keep = g.virt(CUDNN_DATA_BOOLEAN, l.scores, l.scores_strides, "causal row >= column");
  g.pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_FLOAT, row, col, nullptr, keep, "causal row >= column");
  Desc out = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "causal masked");
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, scores, neg_inf, keep, out, "causal select");
  return out;
}

// A sliding window as cudnn-frontend's diagonal band builds it from primitive operations: the
// left bound keeps keys with column + left > row, the right bound those with row + right >=
// column (left, right: f32 scalars by value). Causal: left = window (keys (i - window, i]), the
// causal mask is the right bound; bidirectional: left = window + 1 and right = window (|i - j| <=
// window, as transformers' bidirectional sliding window).
Desc window_mask(GraphBuilder& g, const Layout& l, Desc scores, Desc left, Desc right, Desc neg_inf) {
  Desc row = g.virt(CUDNN_DATA_INT32, l.scores, l.scores_strides, "window row index");
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, scores, nullptr, nullptr, row, "window row index", 2);
  Desc col = g.virt(CUDNN_DATA_INT32, l.scores, l.scores_strides, "window column index");
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, scores, nullptr, nullptr, col, "window column index", 3);
  Desc col_left = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "column + left bound");
  g.pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, col, left, nullptr, col_left, "column + left bound", 3);
  Desc keep = g.virt(CUDNN_DATA_BOOLEAN, l.scores, l.scores_strides, "column + left > row");
  g.pointwise(CUDNN_POINTWISE_CMP_GT, CUDNN_DATA_FLOAT, col_left, row, nullptr, keep, "column + left > row");
  Desc out = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "left bound masked");
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, scores, neg_inf, keep, out, "left bound select");
  if (!right) return out;
  Desc row_right = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "row + right bound");
  g.pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, row, right, nullptr, row_right, "row + right bound", 3);
  Desc keep_right = g.virt(CUDNN_DATA_BOOLEAN, l.scores, l.scores_strides, "row + right >= column");
  g.pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_FLOAT, row_right, col, nullptr, keep_right, "row + right >= column");
  Desc both = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "right bound masked");
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, out, neg_inf, keep_right, both, "right bound select");
  return both;
}

// The sequence lengths as the graph reads them: every query row is answered (seq_len_q = T; left
// padding: each sequence's real rows, the kv lengths again), keys stop at kv_lengths. Null both
// without padding.
struct Lengths {
  Desc q = nullptr, kv = nullptr;
};
Lengths length_tensors(GraphBuilder& g, const Layout& l, bool padded) {
  if (!padded) return {};
  return {g.io(kSeqLenQ, CUDNN_DATA_INT32, l.lengths, l.lengths_strides, "seq_len_q"),
          g.io(kSeqLenKV, CUDNN_DATA_INT32, l.lengths, l.lengths_strides, "seq_len_kv")};
}

// The dropout's operands: the keep mask [B, H, T, T] in the input dtype and the scale
// 1 / (1 - p) by value. Null both without dropout.
struct Dropout {
  Desc mask = nullptr, scale = nullptr;
};
Dropout dropout_tensors(GraphBuilder& g, const Layout& l, const SdpaArgs& a) {
  if (a.dropout_p <= 0.0f) return {};
  return {g.io(kDropoutMask, l.io, l.scores, l.scores_strides, "dropout mask"),
          g.scalar(kDropoutScale, "dropout scale")};
}

// stats: the log-sum-exp per query row is an output (training); false: not computed (inference,
// as cudnn-frontend's generate_stats = false builds it: the softmax without log and add).
void build_forward(GraphBuilder& g, const SdpaArgs& a, bool padded, bool stats_out = true) {
  const Layout l(a);
  // Left padding: each sequence of q, k, v and out starts at the element offset its tensor gives.
  const auto offsets = [&](int64_t uid, const char* name) {
    return a.ragged ? g.io(uid, CUDNN_DATA_INT32, l.offsets, l.lengths_strides, name) : nullptr;
  };
  Desc q = g.io(kQ, l.io, l.qkv, l.qkv_strides, "Q", offsets(kRaggedQ, "Q offsets"));
  Desc kt = g.io(kK, l.io, l.t_dims, l.t_strides, "Kᵀ", offsets(kRaggedK, "K offsets"));
  Desc v = g.io(kV, l.io, l.kv, l.kv_strides, "V", offsets(kRaggedV, "V offsets"));
  Desc o = g.io(kO, l.io, l.qkv, l.out_strides, "O", offsets(kRaggedO, "O offsets"));
  Desc stats = stats_out ? g.io(kStats, CUDNN_DATA_FLOAT, l.row, l.row_strides, "Stats") : nullptr;
  Desc scale = g.scalar(kScale, "scale");
  const Lengths len = length_tensors(g, l, padded);
  Desc neg_inf = padded || a.causal || a.window > 0 ? g.scalar(kNegInf, "masked score") : nullptr;
  const Dropout drop = dropout_tensors(g, l, a);
  Desc bias = a.bias ? g.io(kBias, l.io, l.bias, l.bias_strides, "bias") : nullptr;
  Desc left = a.window > 0 ? g.scalar(kWindowLeft, "window's left bound") : nullptr;
  Desc right = a.window > 0 && !a.causal ? g.scalar(kWindowRight, "window's right bound") : nullptr;

  Desc s = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "Q·Kᵀ");
  g.matmul(q, kt, s, len.q, len.kv, nullptr, padded, "Q·Kᵀ");
  Desc scaled = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "scaled scores");
  g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, s, scale, nullptr, scaled, "scale");
  Desc last = scaled;
  if (bias) {  // in cudnn-frontend's order: the scale, the bias, then the masks
    Desc biased = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "scores + bias");
    g.pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, last, bias, nullptr, biased, "bias");
    last = biased;
  }
  if (padded) last = padding_mask(g, l, last, len.q, len.kv, neg_inf, "padding");
  if (a.causal) last = causal_mask(g, l, last, neg_inf);
  if (left) last = window_mask(g, l, last, left, right, neg_inf);

  // Softmax over keys, saving max + log(sum exp) per row when asked.
  Desc max = g.virt(CUDNN_DATA_FLOAT, l.row, l.row_strides, "row max");
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, last, max, "row max");
  Desc centred = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "scores - max");
  g.pointwise(CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, last, max, nullptr, centred, "scores - max");
  Desc e = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "exp");
  g.pointwise(CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, centred, nullptr, nullptr, e, "exp");
  Desc sum = g.virt(CUDNN_DATA_FLOAT, l.row, l.row_strides, "row sum");
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum, "row sum");
  if (stats) {
    Desc log_sum = g.virt(CUDNN_DATA_FLOAT, l.row, l.row_strides, "log row sum");
    g.pointwise(CUDNN_POINTWISE_LOG, CUDNN_DATA_FLOAT, sum, nullptr, nullptr, log_sum, "log row sum");
    g.pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, max, log_sum, nullptr, stats, "stats");
  }
  // The probabilities enter the second GEMM in the input dtype, as cuDNN's engines require.
  Desc p = g.virt(drop.mask ? CUDNN_DATA_FLOAT : l.io, l.scores, l.scores_strides, "P");
  g.pointwise(CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, e, sum, nullptr, p, "softmax");
  if (drop.mask) {  // P ∘ M / (1 - p), in cudnn-frontend's order: the scale, then the mask
    Desc scaled_p = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "P / (1 - p)");
    g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, p, drop.scale, nullptr, scaled_p, "dropout scale");
    p = g.virt(l.io, l.scores, l.scores_strides, "dropped P");
    g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, scaled_p, drop.mask, nullptr, p, "dropout mask");
  }
  g.matmul(p, v, o, len.q, nullptr, len.kv, false, "P·V");
}

void build_backward(GraphBuilder& g, const SdpaArgs& a, bool padded) {
  const Layout l(a);
  const int64_t H = a.H, T = a.T, D = a.D;
  const bool grouped = a.kv_heads() != a.H;
  Desc q = g.io(kQ, l.io, l.qkv, l.qkv_strides, "Q");
  Desc kt = g.io(kK, l.io, l.t_dims, l.t_strides, "Kᵀ");
  Desc vt = g.io(kV, l.io, l.t_dims, l.t_strides, "Vᵀ");
  Desc o = g.io(kO, l.io, l.qkv, l.out_strides, "O");
  Desc d_o = g.io(kdO, l.io, l.qkv, l.out_strides, "dO");
  Desc stats = g.io(kStats, CUDNN_DATA_FLOAT, l.row, l.row_strides, "Stats");
  Desc dq = g.io(kdQ, l.io, l.qkv, l.qkv_strides, "dQ");
  Desc dk = g.io(kdK, l.io, l.kv, l.kv_strides, "dK");
  Desc dv = g.io(kdV, l.io, l.kv, l.kv_strides, "dV");
  Desc scale = g.scalar(kScale, "scale");
  // 1 - p: sum_i is Σ dO∘O of the dropped probabilities, scaled back to the kept ones' (1 without dropout).
  Desc keep = g.scalar(kDropoutKeep, "dropout keep");
  const Lengths len = length_tensors(g, l, padded);
  Desc neg_inf = padded || a.causal ? g.scalar(kNegInf, "masked score") : nullptr;
  const Dropout drop = dropout_tensors(g, l, a);
  // Held in tach's workspace: sum_i per query row, and dQ accumulated in f32.
  Desc softmax_sum = g.io(kSoftmaxSum, CUDNN_DATA_FLOAT, l.row, l.row_strides, "softmax sum");
  Desc dq_accum = g.io(kdQAccum, CUDNN_DATA_FLOAT, l.qkv, {H * T * D, T * D, D, 1}, "dQ accumulator");

  // sum_i = Σ_d dO ∘ O.
  Desc do_o = g.virt(CUDNN_DATA_FLOAT, l.qkv, {H * T * D, T * D, H * D, 1}, "dO∘O");
  g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, d_o, o, nullptr, do_o, "dO∘O");
  Desc row_sum = g.virt(CUDNN_DATA_FLOAT, l.row, l.row_strides, "Σ dO∘O");
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, do_o, row_sum, "Σ dO∘O");
  g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, row_sum, keep, nullptr, softmax_sum, "softmax sum");

  // P = exp(S - Stats), recomputed.
  Desc s = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "Q·Kᵀ");
  g.matmul(q, kt, s, len.q, len.kv, nullptr, false, "Q·Kᵀ");
  Desc scaled = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "scaled scores");
  g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, s, scale, nullptr, scaled, "scale");
  Desc last = scaled;
  if (padded) last = padding_mask(g, l, last, len.q, len.kv, neg_inf, "padding");
  Desc centred = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "scores - stats");
  g.pointwise(CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, last, stats, nullptr, centred, "scores - stats");
  last = centred;
  // cuDNN 9.0 to 9.9 need the padding applied again after the statistics are subtracted.
  const int64_t version = cudnn_version();
  if (padded && version >= 90000 && version < 91000)
    last = padding_mask(g, l, last, len.q, len.kv, neg_inf, "second padding");
  if (a.causal) last = causal_mask(g, l, last, neg_inf);
  Desc p = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "P");
  g.pointwise(CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, last, nullptr, nullptr, p, "P");

  // dV = (P ∘ M / (1 - p))ᵀ · dO.
  Desc p_dropped = p;
  if (drop.mask) {
    Desc masked = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "P∘M");
    g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, p, drop.mask, nullptr, masked, "P dropout mask");
    p_dropped = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "P∘M / (1 - p)");
    g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, masked, drop.scale, nullptr, p_dropped, "P dropout scale");
  }
  Desc pt = g.virt(l.io, l.scores, l.scores_t_strides, "Pᵀ");
  g.reshape(p_dropped, pt, "Pᵀ");
  // Grouped K/V: each query head's dV, then each group summed into its K/V head.
  Desc dv_heads = grouped ? g.virt(l.io, l.full_heads, l.full_strides, "dV per query head") : dv;
  g.matmul(pt, d_o, dv_heads, len.kv, nullptr, len.q, false, "Pᵀ·dO");
  if (grouped) g.reduction(CUDNN_REDUCE_TENSOR_ADD, dv_heads, dv, "dV over each group");

  // dS = P ∘ (dO · Vᵀ [∘ M] - sum_i) [/ (1 - p)] * scale.
  Desc dp = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "dO·Vᵀ");
  g.matmul(d_o, vt, dp, len.q, len.kv, nullptr, false, "dO·Vᵀ");
  if (drop.mask) {
    Desc masked = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "dP∘M");
    g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, dp, drop.mask, nullptr, masked, "dP dropout mask");
    dp = masked;
  }
  Desc dp_centred = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "dP - sum");
  g.pointwise(CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, dp, softmax_sum, nullptr, dp_centred, "dP - sum");
  Desc ds_unscaled = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "P∘(dP - sum)");
  g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, dp_centred, p, nullptr, ds_unscaled, "P∘(dP - sum)");
  if (drop.mask) {
    Desc kept = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "dS / (1 - p)");
    g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, ds_unscaled, drop.scale, nullptr, kept, "dS dropout scale");
    ds_unscaled = kept;
  }
  Desc ds = g.virt(CUDNN_DATA_FLOAT, l.scores, l.scores_strides, "dS");
  g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, ds_unscaled, scale, nullptr, ds, "dS");

  // dK = dSᵀ · Q (grouped: per query head, then each group summed).
  Desc dst = g.virt(l.io, l.scores, l.scores_t_strides, "dSᵀ");
  g.reshape(ds, dst, "dSᵀ");
  Desc dk_heads = grouped ? g.virt(l.io, l.full_heads, l.full_strides, "dK per query head") : dk;
  g.matmul(dst, q, dk_heads, len.kv, nullptr, len.q, false, "dSᵀ·Q");
  if (grouped) g.reduction(CUDNN_REDUCE_TENSOR_ADD, dk_heads, dk, "dK over each group");

  // dQ = dS · K, accumulated in f32, then written in the input dtype.
  Desc k = g.virt(l.io, l.kv, l.kv_strides, "K");
  g.reshape(kt, k, "K");
  g.matmul(ds, k, dq_accum, len.q, nullptr, len.kv, false, "dS·K");
  g.pointwise(CUDNN_POINTWISE_IDENTITY, CUDNN_DATA_FLOAT, dq_accum, nullptr, nullptr, dq, "dQ");
}

cudnnHandle_t handle(int device) {
  static std::once_flag once[kMaxDevices];
  static cudnnHandle_t handles[kMaxDevices] = {};
  tach::check(device >= 0 && device < kMaxDevices, "CUDA device index " + std::to_string(device) + " is out of range");
  std::call_once(once[device], [&] {
    DeviceGuard guard(device);
    check_cudnn(cudnn_api().create(&handles[device]), "create a handle on cuda:" + std::to_string(device));
  });
  return handles[device];
}

// One shape's graph, its engine's plan and what executing it needs.
struct Plan {
  GraphBuilder graph;
  std::unique_ptr<Descriptor> operation_graph, plan;
  std::vector<std::unique_ptr<Descriptor> > engine_configs;
  int64_t workspace_bytes = 0;
  Tensor q_lengths;  // [B] i32 = T on the device (padded graphs)
};

// device, B, T, H, H_kv, D, ld_in, ld_kv, ld_out, kv batch stride, causal, padded, dropout, dtype,
// backward, stats, window, bias, ragged.
using PlanKey = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool,
                           bool, bool, int, bool, bool, int64_t, bool, bool>;

// The plan of one engine configuration, kept in p when it finalizes (true); else false, with the
// first refusal's words in *first_refusal.
bool try_plan(Plan& p, cudnnHandle_t h, Desc config, std::string* first_refusal) {
  auto plan = std::make_unique<Descriptor>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan");
  set(plan->get(), kExecutionPlanHandle, CUDNN_TYPE_HANDLE, 1, &h, "execution plan's handle");
  set_desc(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config, "execution plan's engine");
  try {
    finalize(plan->get(), "execution plan");
  } catch (const Error& e) {  // this engine cannot run the graph here: another may
    if (first_refusal->empty()) *first_refusal = e.what();
    return false;
  }
  int64_t n = 0;
  check_cudnn(cudnn_api().backend_get(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                      &p.workspace_bytes),
              "read the execution plan's workspace size");
  p.plan = std::move(plan);
  return true;
}

// The operation graph, and the plan of the first engine configuration that finalizes: cuDNN's
// heuristics' choices first (mode A, as cudnn-frontend asks), then every engine in turn.
void make_plan(Plan& p, int device, const std::string& what) {
  cudnnHandle_t h = handle(device);
  GraphBuilder& g = p.graph;
  p.operation_graph = std::make_unique<Descriptor>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
  Desc og = p.operation_graph->get();
  const std::vector<Desc>& ops = g.operations();
  set(og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops.size()), ops.data(),
      "operation graph's operations");
  set(og, kOperationGraphHandle, CUDNN_TYPE_HANDLE, 1, &h, "operation graph's handle");
  finalize(og, "operation graph of " + what);

  std::string first_refusal;
  int64_t returned = 0;
  try {
    Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "engine heuristics");
    set_desc(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, og, "heuristics' graph");
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    set(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristics' mode");
    finalize(heuristics.get(), "engine heuristics for " + what);
    int64_t count = 0;
    check_cudnn(cudnn_api().backend_get(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                        0, &count, nullptr),
                "count the engine configurations for " + what);
    std::vector<Desc> configs;
    for (int64_t i = 0; i < count; ++i) {
      p.engine_configs.push_back(std::make_unique<Descriptor>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config"));
      configs.push_back(p.engine_configs.back()->get());
    }
    check_cudnn(cudnn_api().backend_get(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                        count, &returned, configs.data()),
                "read the engine configurations for " + what);
    for (int64_t i = 0; i < returned && i < count; ++i)
      if (try_plan(p, h, configs[size_t(i)], &first_refusal)) return;
  } catch (const Error& e) {  // the heuristics refused the graph: the engines are asked one by one
    if (first_refusal.empty()) first_refusal = e.what();
  }
  // None of the heuristics' choices finalizes: every engine cuDNN has for the graph, with its
  // default knobs, before giving up.
  int64_t engines = 0;
  check_cudnn(cudnn_api().backend_get(og, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1, &returned,
                                      &engines),
              "count the engines for " + what);
  for (int64_t i = 0; i < engines; ++i) {
    p.engine_configs.push_back(std::make_unique<Descriptor>(CUDNN_BACKEND_ENGINE_DESCRIPTOR, "engine"));
    Desc engine = p.engine_configs.back()->get();
    set_desc(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, og, "engine's graph");
    set(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &i, "engine's index");
    if (cudnn_api().backend_finalize(engine) != CUDNN_STATUS_SUCCESS) continue;  // not for this graph
    p.engine_configs.push_back(std::make_unique<Descriptor>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config"));
    Desc config = p.engine_configs.back()->get();
    set_desc(config, CUDNN_ATTR_ENGINECFG_ENGINE, engine, "engine config's engine");
    if (cudnn_api().backend_finalize(config) != CUDNN_STATUS_SUCCESS) continue;
    if (try_plan(p, h, config, &first_refusal)) return;
  }
  // cuDNN compiles its fused attention kernels at run time with NVRTC and loads them through the
  // driver: without either, every engine says a prerequisite is missing.
  const bool prerequisite = first_refusal.find("PREREQUISITE_MISSING") != std::string::npos;
  throw Error(what + ": no cuDNN engine can run it here (cuDNN " + std::to_string(cudnn_version()) +
              "); the first refusal: " + (first_refusal.empty() ? "none finalized" : first_refusal) +
              (prerequisite ? "; cuDNN's runtime-compiled engines need NVRTC (libnvrtc of cuDNN's CUDA major "
                              "version, e.g. pip's site-packages/nvidia/cuda_nvrtc/lib on LD_LIBRARY_PATH) "
                              "and the NVIDIA driver"
                            : ""));
}

Plan& plan_for(int device, const SdpaArgs& a, bool padded, bool backward, bool stats = true) {
  static std::mutex mutex;
  // Never destroyed, as the handles are not: a plan's descriptors destroyed at exit, after the
  // CUDA runtime has gone, would unload kernels that no longer exist.
  static auto& plans = *new std::map<PlanKey, std::unique_ptr<Plan> >;
  const PlanKey key{device,   a.B,          a.T,      a.H,    a.kv_heads(),    a.D,          a.ld_in,  a.kv_stride(),
                    a.ld_out, a.kv_batch(), a.causal, padded, a.dropout_p > 0, int(a.dtype), backward, stats,
                    a.window, a.bias,       a.ragged};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = plans.find(key);
  if (it != plans.end()) return *it->second;
  const std::string what = describe(a, backward, stats);
  auto p = std::make_unique<Plan>();
  if (backward) build_backward(p->graph, a, padded);
  else build_forward(p->graph, a, padded, stats);
  make_plan(*p, device, what);
  if (padded) {
    // Every query row is answered: seq_len_q = T for each sequence, written once.
    Tensor host = Tensor::empty({a.B}, DType::i32);
    for (int64_t b = 0; b < a.B; ++b) host.data<int32_t>()[b] = int32_t(a.T);
    p->q_lengths = host.to_device(Device::cuda(device), MemoryCategory::workspace);
  }
  return *plans.emplace(key, std::move(p)).first->second;
}

constexpr size_t kWorkspaceAlign = 256;
size_t aligned(size_t bytes) { return (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign; }

// Runs the plan with the given tensors (uid → device pointer, or host pointer for scalars).
void execute(int device, Plan& p, const std::map<int64_t, const void*>& pointers, void* workspace,
             const std::string& what) {
  std::vector<int64_t> uids;
  std::vector<void*> data;
  for (int64_t uid : p.graph.io_uids()) {
    auto it = pointers.find(uid);
    tach::check(it != pointers.end() && it->second, what + ": tensor " + std::to_string(uid) + " has no pointer");
    uids.push_back(uid);
    data.push_back(const_cast<void*>(it->second));
  }
  Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack");
  set(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, int64_t(uids.size()), uids.data(),
      "variant pack's ids");
  set(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, int64_t(data.size()), data.data(),
      "variant pack's pointers");
  set(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace, "variant pack's workspace");
  finalize(pack.get(), "variant pack");
  cudnnHandle_t h = handle(device);
  check_cudnn(cudnn_api().set_stream(h, stream(device)), "set the stream");
  check_cudnn(cudnn_api().backend_execute(h, p.plan->get(), pack.get()), "execute " + what);
}

// The dropout mask is there exactly when the arguments ask for dropout.
void check_dropout(const SdpaArgs& a, const void* dropout_mask, bool backward) {
  tach::check((a.dropout_p > 0) == (dropout_mask != nullptr),
              describe(a, backward) + (a.dropout_p > 0 ? ": dropout needs its keep mask"
                                                       : ": a dropout mask was given without a dropout probability"));
  if (dropout_mask) check_aligned(dropout_mask, "the dropout mask", a, backward);
}

// The inference masks' operands are there exactly when the arguments ask for them, and only there.
void check_masks(const SdpaArgs& a, const float* stats, const int32_t* kv_lengths, const void* dropout_mask,
                 const SdpaMaskInputs& m) {
  const std::string what = describe(a, false, stats != nullptr);
  const bool inference = stats == nullptr && dropout_mask == nullptr;
  tach::check(inference || (a.window == 0 && !a.bias && !a.ragged),
              what + ": windows, score biases and left padding are for the inference forward only");
  tach::check(a.bias == (m.bias != nullptr), what + (a.bias ? ": the score bias needs its [1, H, T, T] tensor"
                                                            : ": a score bias was given the arguments do not ask for"));
  if (m.bias) check_aligned(m.bias, "the score bias", a, false);
  const bool offsets = m.q_offsets && m.kv_offsets && m.out_offsets;
  tach::check(a.ragged == offsets && (offsets || (!m.q_offsets && !m.kv_offsets && !m.out_offsets)),
              what + (a.ragged ? ": left padding needs the offsets of q, k and v, and out"
                               : ": ragged offsets were given without left padding"));
  tach::check(!a.ragged || kv_lengths, what + ": left padding needs each sequence's real length");
}

float masked_score() {
  return wants_lowest_for_masked() ? std::numeric_limits<float>::lowest() : -std::numeric_limits<float>::infinity();
}

}  // namespace

void sdpa_forward(int device, const SdpaArgs& a, void* out, float* stats, const void* q, const void* k, const void* v,
                  const int32_t* kv_lengths, const void* dropout_mask, const SdpaMaskInputs& masks) {
  check_args(a, false);
  check_dropout(a, dropout_mask, false);
  check_masks(a, stats, kv_lengths, dropout_mask, masks);
  for (auto [p, name] : {std::pair<const void*, const char*>{q, "q"}, {k, "k"}, {v, "v"}, {out, "out"}})
    check_aligned(p, name, a, false);
  const std::string what = describe(a, false, stats != nullptr);
  const bool padded = kv_lengths != nullptr;
  Plan& p = plan_for(device, a, padded, false, stats != nullptr);
  const float scale = a.scale, neg_inf = masked_score(), dropout_scale = 1.0f / (1.0f - a.dropout_p);
  std::map<int64_t, const void*> ptr{{kQ, q}, {kK, k}, {kV, v}, {kO, out}, {kScale, &scale}};
  if (stats) ptr[kStats] = stats;
  // The window's bounds as the graph compares them (window_mask).
  const float left = float(a.causal ? a.window : a.window + 1), right = float(a.window);
  if (padded || a.causal || a.window > 0) ptr[kNegInf] = &neg_inf;
  if (dropout_mask) ptr[kDropoutMask] = dropout_mask, ptr[kDropoutScale] = &dropout_scale;
  if (padded) {
    // Left padding: the queries are each sequence's real rows, as many as its real keys.
    ptr[kSeqLenQ] = a.ragged ? static_cast<const void*>(kv_lengths) : p.q_lengths.raw();
    ptr[kSeqLenKV] = kv_lengths;
  }
  if (a.bias) ptr[kBias] = masks.bias;
  if (a.window > 0) ptr[kWindowLeft] = &left;
  if (a.window > 0 && !a.causal) ptr[kWindowRight] = &right;
  if (a.ragged) {
    ptr[kRaggedQ] = masks.q_offsets, ptr[kRaggedO] = masks.out_offsets;
    ptr[kRaggedK] = ptr[kRaggedV] = masks.kv_offsets;  // k and v share their rows' layout
  }
  Tensor workspace;
  if (p.workspace_bytes > 0)
    workspace = Tensor::empty({p.workspace_bytes}, DType::u8, Device::cuda(device), MemoryCategory::workspace);
  execute(device, p, ptr, workspace.defined() ? workspace.raw() : nullptr, what);
}

void sdpa_backward(int device, const SdpaArgs& a, void* dq, void* dk, void* dv, const void* dout, const void* out,
                   const float* stats, const void* q, const void* k, const void* v, const int32_t* kv_lengths,
                   const void* dropout_mask) {
  check_args(a, true);
  check_dropout(a, dropout_mask, true);
  const int64_t version = cudnn_version();
  tach::check(version != 91000 && version != 91001,
              describe(a, true) +
                  ": cuDNN 9.10.0 and 9.10.1 compute this backward wrongly (NVIDIA's known bug); "
                  "use cuDNN 9.10.2 or later");
  for (auto [p, name] : {std::pair<const void*, const char*>{q, "q"},
                         {k, "k"},
                         {v, "v"},
                         {out, "out"},
                         {dout, "dout"},
                         {dq, "dq"},
                         {dk, "dk"},
                         {dv, "dv"}})
    check_aligned(p, name, a, true);
  const std::string what = describe(a, true);
  const bool padded = kv_lengths != nullptr;
  Plan& p = plan_for(device, a, padded, true);
  // tach's part of the workspace: dQ's f32 accumulator [B, H, T, D] (zeroed: cuDNN adds into it),
  // then sum_i [B, H, T] f32, then cuDNN's own.
  const size_t accum_bytes = aligned(size_t(a.B * a.H * a.T * a.D) * sizeof(float));
  const size_t sum_bytes = aligned(size_t(a.B * a.H * a.T) * sizeof(float));
  const size_t total = accum_bytes + sum_bytes + size_t(p.workspace_bytes);
  Tensor workspace = Tensor::empty({int64_t(total)}, DType::u8, Device::cuda(device), MemoryCategory::workspace);
  char* base = static_cast<char*>(workspace.raw());
  check(cudaMemsetAsync(base, 0, accum_bytes, stream(device)), "cudaMemsetAsync (cuDNN attention's dQ accumulator)");
  const float scale = a.scale, keep = 1.0f - a.dropout_p, neg_inf = masked_score();
  const float dropout_scale = 1.0f / keep;
  std::map<int64_t, const void*> ptr{{kQ, q},
                                     {kK, k},
                                     {kV, v},
                                     {kO, out},
                                     {kdO, dout},
                                     {kStats, stats},
                                     {kdQ, dq},
                                     {kdK, dk},
                                     {kdV, dv},
                                     {kScale, &scale},
                                     {kDropoutKeep, &keep},
                                     {kdQAccum, base},
                                     {kSoftmaxSum, base + accum_bytes}};
  if (padded || a.causal) ptr[kNegInf] = &neg_inf;
  if (dropout_mask) ptr[kDropoutMask] = dropout_mask, ptr[kDropoutScale] = &dropout_scale;
  if (padded) {
    ptr[kSeqLenQ] = p.q_lengths.raw();
    ptr[kSeqLenKV] = kv_lengths;
    // The GEMMs stop at each sequence's length (their m override), so the rows of padded keys
    // may be left unwritten: they get zero gradients, as the probabilities there are zero.
    const size_t row_bytes = size_t(a.kv_heads() * a.D) * 2, pitch = size_t(a.kv_stride()) * 2;
    for (void* grad : {dk, dv})
      check(cudaMemset2DAsync(grad, pitch, 0, row_bytes, size_t(a.B * a.T), stream(device)),
            "cudaMemset2DAsync (padded keys' gradients)");
  }
  execute(device, p, ptr, p.workspace_bytes > 0 ? base + accum_bytes + sum_bytes : nullptr, what);
}

void sdpa_check_operations(const SdpaArgs& a, bool padded, bool backward, bool stats) {
  check_args(a, backward);
  tach::check(!a.ragged || padded, describe(a, backward, stats) + ": left padding needs each sequence's real length");
  GraphBuilder g;
  if (backward) build_backward(g, a, padded);
  else build_forward(g, a, padded, stats);
  // The graph as a whole (every intermediate produced once, every operation connected): cuDNN
  // 9.19 finalizes it without a handle; earlier versions need one, so a device.
  if (cudnn_version() < 91900) return;
  Descriptor og(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
  const std::vector<Desc>& ops = g.operations();
  set(og.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops.size()), ops.data(),
      "operation graph's operations");
  finalize(og.get(), "operation graph");
}

#endif  // TACH_HAS_CUDNN_HEADERS

}  // namespace tach::cuda
