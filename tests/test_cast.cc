// ops::cast on the CPU against core's conversions (tach/dtype.h), bit for bit; and the
// activation dtype rules of the element-wise, norm and data-movement ops that hold without a GPU:
// the CPU refuses bf16/f16 activations by name, one call's operands share one dtype, and costs
// count the real element size. (Their CUDA kernels in bf16/f16: test_cuda_ops_bf16.)
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/trace.h"
#include "ops/activation.h"
#include "ops/add.h"
#include "ops/cast.h"
#include "ops/copy_rows.h"
#include "ops/embedding.h"
#include "ops/gelu.h"
#include "ops/kv_append.h"
#include "ops/layer_norm.h"
#include "ops/masked_mean.h"
#include "ops/pooling.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "ops/silu_gate.h"
#include "tach/error.h"
#include "test_util.h"

namespace tach::ops {
namespace {

using test::error_of;

// Values that exercise every rounding case: ties to even both ways, subnormals of both half
// types, the largest finite values and past them, zeros, infinities, and random normals.
std::vector<float> edge_values() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          std::bit_cast<float>(0x3f808000u),  // 1 + 2^-8: a bf16 tie, rounds down to even
                          std::bit_cast<float>(0x3f818000u),  // a bf16 tie that rounds up to even
                          std::bit_cast<float>(0x3f801000u),  // 1 + 2^-11: an f16 tie
                          std::bit_cast<float>(0x3f803000u),  // an f16 tie that rounds up
                          1e-40f,                             // an f32 subnormal
                          6e-8f,                              // near f16's smallest subnormal
                          3e-5f,                              // an f16 subnormal
                          65504.0f,                           // f16's largest
                          65520.0f,                           // rounds past f16's range: inf
                          1e38f,
                          std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()};
  const std::vector<float> r = test::randn(1000, 7, 3.0f);
  v.insert(v.end(), r.begin(), r.end());
  return v;
}

Tensor f32_tensor(const std::vector<float>& v) {
  Tensor t = Tensor::empty({int64_t(v.size())}, DType::f32);
  std::memcpy(t.raw(), v.data(), v.size() * sizeof(float));
  return t;
}

TEST(Cast, F32ToHalfTypesIsCoresRoundingBitForBit) {
  const std::vector<float> v = edge_values();
  const Tensor in = f32_tensor(v);
  for (DType to : {DType::bf16, DType::f16}) {
    Tensor out = Tensor::empty(in.shape(), to);
    cast(out, in);
    const auto* got = out.data<uint16_t>();
    for (size_t i = 0; i < v.size(); ++i) {
      const uint16_t want = to == DType::bf16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
      ASSERT_EQ(got[i], want) << dtype_name(to) << " of " << v[i] << " at " << i;
    }
  }
}

TEST(Cast, HalfTypesWidenExactlyAndConvertToEachOtherWithOneRounding) {
  const std::vector<float> v = edge_values();
  const Tensor in = f32_tensor(v);
  for (DType half : {DType::bf16, DType::f16}) {
    Tensor h = Tensor::empty(in.shape(), half);
    cast(h, in);
    Tensor back = Tensor::empty(in.shape(), DType::f32);
    cast(back, h);
    for (size_t i = 0; i < v.size(); ++i) {
      const uint16_t bits = h.data<uint16_t>()[i];
      const float want = half == DType::bf16 ? bf16_to_f32(bits) : f16_to_f32(bits);
      ASSERT_EQ(std::bit_cast<uint32_t>(back.data<float>()[i]), std::bit_cast<uint32_t>(want)) << i;
    }
    // To the other half type: the widened value rounded once.
    const DType other = half == DType::bf16 ? DType::f16 : DType::bf16;
    Tensor o = Tensor::empty(in.shape(), other);
    cast(o, h);
    for (size_t i = 0; i < v.size(); ++i) {
      const float wide = back.data<float>()[i];
      ASSERT_EQ(o.data<uint16_t>()[i], other == DType::bf16 ? f32_to_bf16(wide) : f32_to_f16(wide)) << i;
    }
    // The same dtype: a copy.
    Tensor same = Tensor::empty(in.shape(), half);
    cast(same, h);
    EXPECT_EQ(0, std::memcmp(same.raw(), h.raw(), h.nbytes()));
  }
}

TEST(Cast, NanStaysNanAndLongTensorsConvertEveryBlock) {
  // More elements than one block of the CPU kernel (4096), with a tail.
  std::vector<float> v = test::randn(3 * 4096 + 17, 3, 10.0f);
  v[5000] = std::numeric_limits<float>::quiet_NaN();
  const Tensor in = f32_tensor(v);
  Tensor out = Tensor::empty(in.shape(), DType::bf16);
  cast(out, in);
  for (size_t i = 0; i < v.size(); ++i) {
    const float got = bf16_to_f32(out.data<uint16_t>()[i]);
    if (i == 5000) EXPECT_TRUE(std::isnan(got));
    else ASSERT_EQ(out.data<uint16_t>()[i], f32_to_bf16(v[i])) << i;
  }
}

TEST(Cast, BadArgumentsAreErrorsNamingWhatIsWrong) {
  const Tensor in = f32_tensor({1, 2, 3, 4});
  Tensor small = Tensor::empty({3}, DType::bf16);
  EXPECT_NE(error_of([&] { cast(small, in); }).find("4 elements"), std::string::npos)
      << error_of([&] { cast(small, in); });
  Tensor ints = Tensor::empty({4}, DType::i32);
  const std::string e = error_of([&] { cast(ints, in); });
  EXPECT_NE(e.find("cast: out"), std::string::npos) << e;
  EXPECT_NE(e.find("f32, bf16 or f16"), std::string::npos) << e;
  const Tensor strided = f32_tensor({1, 2, 3, 4, 5, 6}).reshape({3, 2}).narrow(1, 0, 1);
  Tensor three = Tensor::empty({3, 1}, DType::bf16);
  EXPECT_NE(error_of([&] { cast(three, strided); }).find("contiguous"), std::string::npos);
}

TEST(Cast, CostCountsEachSidesElementSize) {
  const OpCost c = cast_cost(1000, DType::f32, DType::bf16);
  EXPECT_EQ(c.bytes_read, 4000);
  EXPECT_EQ(c.bytes_written, 2000);
  EXPECT_EQ(c.flops, 0);
}

// A span sink that keeps the last op's detail and bytes.
struct LastSpan : core::TraceSink {
  core::SpanRecord last;
  void record(core::SpanRecord&& span) override { last = std::move(span); }
};

TEST(Cast, SpanNamesBothDtypes) {
  LastSpan sink;
  core::set_trace_sink(&sink);
  const Tensor in = f32_tensor({1, 2, 3, 4});
  Tensor out = Tensor::empty({4}, DType::f16);
  cast(out, in);
  core::set_trace_sink(nullptr);
  EXPECT_EQ(sink.last.name, "cast");
  EXPECT_EQ(sink.last.detail, "[4] f32 -> f16");
  EXPECT_EQ(sink.last.bytes, 16 + 8);
}

// Every op of the contract on the CPU with bf16 (or f16) activations: refused with the op's
// unsupported() error, which names the op, the device and the dtype.
void expect_refused_on_cpu(const char* op, DType dtype, const std::function<void()>& fn) {
  const std::string e = error_of(fn);
  EXPECT_NE(e.find(std::string(op) + ": no kernel for device cpu with dtype " + std::string(dtype_name(dtype))),
            std::string::npos)
      << op << ": " << e;
}

TEST(ActivationDtype, TheCpuRefusesHalfActivationsByName) {
  for (DType A : {DType::bf16, DType::f16}) {
    const int64_t N = 4, C = 8;
    Tensor x = Tensor::zeros({N, C}, A), out = Tensor::zeros({N, C}, A);
    const Tensor gamma = Tensor::zeros({C}, DType::f32), beta = Tensor::zeros({C}, DType::f32);
    expect_refused_on_cpu("layer_norm", A, [&] { layer_norm_forward(out, x, Tensor(), gamma, beta, 1e-5f); });
    expect_refused_on_cpu("layer_norm", A, [&] { pre_layer_norm_forward(out, x, Tensor(), gamma, beta, 1e-5f); });
    expect_refused_on_cpu("rms_norm", A, [&] { rms_norm_forward(out, x, Tensor(), gamma, 1e-6f); });
    const Tensor head_w = Tensor::zeros({4}, DType::f32);
    expect_refused_on_cpu("rms_norm_heads", A, [&] { rms_norm_heads_forward(x, 0, 2, 4, head_w, 1e-6f); });
    expect_refused_on_cpu("add", A, [&] { add_inplace(out, x); });
    expect_refused_on_cpu("scale", A, [&] { scale_inplace(x, 2.0f); });
    expect_refused_on_cpu("gelu", A, [&] { gelu_forward(out, x); });
    expect_refused_on_cpu("tanh", A, [&] { tanh_forward(out, x); });
    expect_refused_on_cpu("relu", A, [&] { relu_forward(out, x); });
    Tensor half_out = Tensor::zeros({N, C / 2}, A);
    expect_refused_on_cpu("silu_gate", A, [&] { silu_gate_forward(half_out, x); });
    const Tensor ids = Tensor::zeros({N}, DType::i32), table = Tensor::zeros({10, C}, DType::f32);
    expect_refused_on_cpu("embedding", A, [&] { embedding_forward(out, ids, table, false); });
    const Tensor positions = Tensor::zeros({N}, DType::i32);
    const RopeTable rope_t = rope_table(positions, std::vector<float>{1.0f, 0.5f});
    expect_refused_on_cpu("rope", A, [&] { rope_forward(x, 1, 1, 4, rope_t); });
    expect_refused_on_cpu("copy_rows", A, [&] { copy_rows(out, x); });
    const Tensor rows = Tensor::zeros({2}, DType::i32);
    Tensor two = Tensor::zeros({2, C}, A);
    expect_refused_on_cpu("gather_rows", A, [&] { gather_rows(two, x, rows); });
    KvAppendArgs a;
    a.B = 1, a.T = 1, a.capacity = 4, a.width = 2, a.ld_qkv = C, a.k_col = 4, a.v_col = 6, a.dtype = A;
    expect_refused_on_cpu("kv_append", A, [&] { kv_append(out.raw(), x.raw(), x.raw(), a); });
    const Tensor hidden = Tensor::zeros({1, N, C}, A), mask = Tensor::zeros({1, N}, DType::i32);
    Tensor pooled = Tensor::zeros({1, C}, DType::f32);
    expect_refused_on_cpu("pooling", A, [&] { pooling_forward(pooled, hidden, mask, {PoolingMode::mean}); });
    expect_refused_on_cpu("masked_mean", A, [&] { masked_mean_forward(pooled, hidden, mask); });
  }
}

// One call's activation operands share one dtype: a mix is an error naming the op, the operand
// and both dtypes, before any device is considered.
TEST(ActivationDtype, MixedActivationDtypesAreErrorsNamingBoth) {
  const int64_t N = 2, C = 8;
  Tensor x = Tensor::zeros({N, C}, DType::f32), out = Tensor::zeros({N, C}, DType::f32);
  const Tensor half = Tensor::zeros({N, C}, DType::bf16);
  const Tensor gamma = Tensor::zeros({C}, DType::f32), beta = Tensor::zeros({C}, DType::f32);
  std::string e = error_of([&] { layer_norm_forward(out, x, half, gamma, beta, 1e-5f); });
  EXPECT_NE(e.find("layer_norm: residual is bf16 but the call's activations are f32"), std::string::npos) << e;
  Tensor half_out = Tensor::zeros({N, C}, DType::f16);
  e = error_of([&] { rms_norm_forward(half_out, x, Tensor(), gamma, 1e-6f); });
  EXPECT_NE(e.find("rms_norm: out is f16 but the call's activations are f32"), std::string::npos) << e;
  e = error_of([&] { add_inplace(out, half); });
  EXPECT_NE(e.find("add: x is bf16 but the call's activations are f32"), std::string::npos) << e;
  e = error_of([&] { gelu_forward(half_out, x); });
  EXPECT_NE(e.find("gelu: out is f16 but the call's activations are f32"), std::string::npos) << e;
  e = error_of([&] { copy_rows(half_out, x); });
  EXPECT_NE(e.find("copy_rows: dst is f16 but the call's activations are f32"), std::string::npos) << e;
  // Parameters stay f32: a bf16 gamma is refused as a parameter, not taken as an activation.
  const Tensor half_gamma = Tensor::zeros({C}, DType::bf16);
  e = error_of([&] { layer_norm_forward(out, x, Tensor(), half_gamma, beta, 1e-5f); });
  EXPECT_NE(e.find("gamma and beta must be f32"), std::string::npos) << e;
  // Training's saved statistics go with f32 activations only.
  Tensor h = Tensor::zeros({N, C}, DType::bf16), o = Tensor::zeros({N, C}, DType::bf16);
  const Tensor rstd = Tensor::zeros({N}, DType::f32);
  e = error_of([&] { rms_norm_forward(o, h, Tensor(), gamma, 1e-6f, rstd); });
  EXPECT_NE(e.find("rstd (training's, with f32 activations)"), std::string::npos) << e;
  // The f32 pointer form of kv_append is for an f32 cache.
  KvAppendArgs a;
  a.dtype = DType::bf16;
  float dummy = 0;
  e = error_of([&] { kv_append(&dummy, &dummy, &dummy, a); });
  EXPECT_NE(e.find("float pointers for a bf16 cache"), std::string::npos) << e;
}

TEST(ActivationDtype, F32OnTheCpuStillComputes) {
  // The f32 path is unchanged by the dtype checks: LayerNorm of a row is zero mean, unit variance.
  const int64_t C = 4;
  Tensor x = f32_tensor({1, 2, 3, 4}).reshape({1, C}), out = Tensor::zeros({1, C}, DType::f32);
  Tensor gamma = f32_tensor({1, 1, 1, 1}), beta = Tensor::zeros({C}, DType::f32);
  layer_norm_forward(out, x, Tensor(), gamma, beta, 0.0f);
  double sum = 0, squares = 0;
  for (int64_t c = 0; c < C; ++c)
    sum += out.data<float>()[c], squares += double(out.data<float>()[c]) * out.data<float>()[c];
  EXPECT_NEAR(sum, 0.0, 1e-6);
  EXPECT_NEAR(squares / C, 1.0, 1e-5);
  Tensor y = f32_tensor({1, 2}), z = f32_tensor({10, 20});
  add_inplace(y, z);
  EXPECT_EQ(y.data<float>()[1], 22.0f);
}

TEST(ActivationDtype, CostsCountTheRealElementSize) {
  const int64_t N = 8, C = 16;
  for (DType A : {DType::bf16, DType::f16}) {
    EXPECT_EQ(layer_norm_cost(N, C, true, A).bytes_written, double(N * C * 2));
    EXPECT_EQ(layer_norm_cost(N, C, true, A).bytes_read, double(N * C * 2 * 2 + C * 8));
    EXPECT_EQ(rms_norm_cost(N, C, false, A).bytes_written, double(N * C * 2));
    EXPECT_EQ(add_cost(N * C, A).bytes(), double(N * C * 2 * 3));
    EXPECT_EQ(scale_cost(N * C, A).bytes(), double(N * C * 2 * 2));
    EXPECT_EQ(gelu_cost(N * C, A).bytes(), double(N * C * 2 * 2));
    EXPECT_EQ(activation_cost(N * C, A).bytes(), double(N * C * 2 * 2));
    EXPECT_EQ(silu_gate_cost(N, C, A).bytes(), double(N * C * 2 * 3));
    EXPECT_EQ(rope_cost(N, 2, C, A).bytes_written, double(N * 2 * C * 2));
    EXPECT_EQ(copy_rows_cost(N, C, A).bytes(), double(N * C * 2 * 2));
    EXPECT_EQ(embedding_cost(N, C, DType::f32, A).bytes_written, double(N * C * 2));
    EXPECT_EQ(pooling_cost(1, N, C, 1, A).bytes_read, double(N * C * 2 + N * 4));
    EXPECT_EQ(masked_mean_cost(1, N, C, A).bytes_read, double(N * C * 2 + N * 4));
    KvAppendArgs a;
    a.B = 2, a.T = 3, a.width = 4, a.dtype = A;
    EXPECT_EQ(kv_append_cost(a).bytes_read, double(2 * 2 * 3 * 4 * 2));
  }
  // f32 by default: the callers that pass no dtype keep their figures.
  EXPECT_EQ(layer_norm_cost(N, C, false).bytes_written, double(N * C * 4));
}

}  // namespace
}  // namespace tach::ops
