// The elementwise training ops on CUDA against their CPU kernels, same inputs: GELU and the fused
// bias-GELU, ReLU and tanh, the gated-MLP activations, RoPE, the strided-row add, the row
// copies, fill_zero and the embedding's forward and deterministic backward. Gradients start
// non-zero where the op accumulates (+=), GPU outputs start as NaN where the op overwrites, and
// sizes are odd (N = 1, 37, 300; C not a multiple of 32). Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_compare.h"
#include "ops/activation.h"
#include "ops/add.h"
#include "ops/copy_rows.h"
#include "ops/embedding.h"
#include "ops/fill.h"
#include "ops/gelu.h"
#include "ops/rope.h"
#include "ops/silu_gate.h"
#include "tach/error.h"

namespace tach::test {
namespace {

class CudaTrainElementwise : public CudaTest {};

// Bitwise equality, for results whose additions happen in the CPU's order on both sides.
bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

Tensor gpu_nan(const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::f32, kGpu);
  poison(t);
  return t;
}

Tensor ids_tensor(const std::vector<int32_t>& v) {
  Tensor t = Tensor::empty({int64_t(v.size())}, DType::i32);
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

// 0, 1, ..., N - 1: each position once.
Tensor positions_of(int64_t N) {
  Tensor t = Tensor::empty({N}, DType::i32);
  for (int64_t n = 0; n < N; ++n) t.data<int32_t>()[n] = int32_t(n);
  return t;
}

// Ids in [0, V) with repeats (a small vocabulary over many tokens), some equal to `padding`.
Tensor repeating_ids(int64_t N, int32_t V, unsigned seed) {
  std::vector<int32_t> v(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) v[size_t(n)] = int32_t((n * 7 + seed * 13 + (n * n) % 5) % V);
  return ids_tensor(v);
}

// Elementwise ops: each output element is one formula of one or two inputs, so CPU and GPU
// differ only by the last bits of erf/exp/tanh (cpu/vec_math's fast forms, < 5e-7 absolute,
// against CUDA's): kElementwiseTol of the values' scale.

TEST_F(CudaTrainElementwise, GeluForwardAndAccumulatingBackwardMatchCpu) {
  for (int64_t n : {1, 37, 300 * 97}) {
    const Tensor x = random_tensor({n}, 1, 3.0f), dout = random_tensor({n}, 2), dx0 = random_tensor({n}, 3);
    Tensor want = Tensor::empty({n}, DType::f32), got = gpu_nan({n});
    ops::gelu_forward(want, x);
    ops::gelu_forward(got, on_gpu(x));
    EXPECT_LT(scaled_error(on_cpu(got), want), kElementwiseTol) << "gelu, n " << n;

    Tensor dx_want = dx0.to(DType::f32), dx_got = on_gpu(dx0);  // non-zero: the backward adds
    ops::gelu_backward(dx_want, x, dout);
    ops::gelu_backward(dx_got, on_gpu(x), on_gpu(dout));
    EXPECT_LT(scaled_error(on_cpu(dx_got), dx_want), kElementwiseTol) << "gelu_backward, n " << n;
  }
}

TEST_F(CudaTrainElementwise, BiasGeluForwardAndBackwardMatchCpu) {
  for (int64_t M : {1, 37, 300}) {
    const int64_t N = 97;
    const Tensor pre0 = random_tensor({M, N}, 10, 2.0f), b = random_tensor({N}, 11), dact = random_tensor({M, N}, 12);
    const Tensor db0 = random_tensor({N}, 13);
    Tensor pre_want = pre0.to(DType::f32), act_want = Tensor::empty({M, N}, DType::f32);
    Tensor pre_got = on_gpu(pre0), act_got = gpu_nan({M, N});
    ops::bias_gelu_forward(pre_want, act_want, b);
    ops::bias_gelu_forward(pre_got, act_got, on_gpu(b));
    EXPECT_LT(scaled_error(on_cpu(pre_got), pre_want), kElementwiseTol) << "pre + b, M " << M;
    EXPECT_LT(scaled_error(on_cpu(act_got), act_want), kElementwiseTol) << "act, M " << M;

    Tensor dpre_want = Tensor::empty({M, N}, DType::f32), db_want = db0.to(DType::f32);
    Tensor dpre_got = gpu_nan({M, N}), db_got = on_gpu(db0);  // db non-zero: it accumulates
    ops::bias_gelu_backward(dpre_want, db_want, pre_want, dact);
    ops::bias_gelu_backward(dpre_got, db_got, pre_got, on_gpu(dact));
    EXPECT_LT(scaled_error(on_cpu(dpre_got), dpre_want), kElementwiseTol) << "dpre, M " << M;
    // db sums M rows: the GPU adds per-lane partials, the CPU row by row (another order).
    EXPECT_LT(scaled_error(on_cpu(db_got), db_want), kReductionTol) << "db, M " << M;

    // A frozen bias: dpre alone, written over the NaNs.
    Tensor dpre_frozen = gpu_nan({M, N});
    ops::bias_gelu_backward(dpre_frozen, Tensor(), pre_got, on_gpu(dact));
    EXPECT_LT(scaled_error(on_cpu(dpre_frozen), dpre_want), kElementwiseTol) << "frozen b, M " << M;
  }
}

TEST_F(CudaTrainElementwise, BiasGradientIsBitwiseRepeatable) {
  const int64_t M = 300, N = 3072 + 5;
  const Tensor pre = on_gpu(random_tensor({M, N}, 20)), dact = on_gpu(random_tensor({M, N}, 21));
  const Tensor db0 = random_tensor({N}, 22);
  Tensor db_a = on_gpu(db0), db_b = on_gpu(db0), dpre = gpu_nan({M, N});
  ops::bias_gelu_backward(dpre, db_a, pre, dact);
  ops::bias_gelu_backward(dpre, db_b, pre, dact);
  EXPECT_TRUE(bitwise_equal(on_cpu(db_a), on_cpu(db_b))) << "db must not depend on scheduling";
}

TEST_F(CudaTrainElementwise, ReluAndTanhForwardAndBackwardMatchCpu) {
  using Forward = void (*)(const Tensor&, const Tensor&);
  using Backward = void (*)(const Tensor&, const Tensor&, const Tensor&);
  struct Case {
    const char* name;
    Forward forward;
    Backward backward;
  };
  for (const Case& c :
       {Case{"relu", ops::relu_forward, ops::relu_backward}, Case{"tanh", ops::tanh_forward, ops::tanh_backward}}) {
    for (int64_t n : {1, 37, 300 * 97}) {
      const Tensor x = random_tensor({n}, 30, 2.0f), dy = random_tensor({n}, 31), dx0 = random_tensor({n}, 32);
      Tensor y_want = Tensor::empty({n}, DType::f32), y_got = gpu_nan({n});
      c.forward(y_want, x);
      c.forward(y_got, on_gpu(x));
      EXPECT_LT(scaled_error(on_cpu(y_got), y_want), kElementwiseTol) << c.name << ", n " << n;

      Tensor dx_want = dx0.to(DType::f32), dx_got = on_gpu(dx0);
      c.backward(dx_want, y_want, dy);
      c.backward(dx_got, y_got, on_gpu(dy));
      EXPECT_LT(scaled_error(on_cpu(dx_got), dx_want), kElementwiseTol) << c.name << "_backward, n " << n;
    }
    // In place (y is x), as a forward with no backward after it may run.
    Tensor x = random_tensor({37}, 33), want = Tensor::empty({37}, DType::f32), inplace = on_gpu(x);
    c.forward(want, x);
    c.forward(inplace, inplace);
    EXPECT_LT(scaled_error(on_cpu(inplace), want), kElementwiseTol) << c.name << " in place";
  }
}

TEST_F(CudaTrainElementwise, GateBackwardMatchesCpuForEveryActivation) {
  for (ops::GateActivation act :
       {ops::GateActivation::silu, ops::GateActivation::gelu_tanh, ops::GateActivation::gelu}) {
    for (int64_t N : {1, 37, 300}) {
      const int64_t I = 97;
      const Tensor gate_up = random_tensor({N, 2 * I}, 40, 3.0f), dout = random_tensor({N, I}, 41);
      Tensor want = Tensor::empty({N, 2 * I}, DType::f32), got = gpu_nan({N, 2 * I});
      ops::silu_gate_backward(want, gate_up, dout, act);
      ops::silu_gate_backward(got, on_gpu(gate_up), on_gpu(dout), act);
      EXPECT_LT(scaled_error(on_cpu(got), want), kElementwiseTol) << ops::gate_op_name(act, true) << ", N " << N;
    }
  }
}

// The training step's fused q|k|v buffer: q and k rotated in place (forward on the activations,
// backward on their gradient), v's columns untouched.
TEST_F(CudaTrainElementwise, RopeForwardAndBackwardOnTheFusedBufferMatchCpu) {
  const int64_t H = 4, KVH = 2, D = 64;
  for (int64_t N : {1, 37, 300}) {
    const int64_t ld = (H + 2 * KVH) * D;
    Tensor positions = Tensor::empty({N}, DType::i32);
    for (int64_t n = 0; n < N; ++n) positions.data<int32_t>()[n] = int32_t(n % 128);
    ops::RopeSettings s;
    s.head_dim = D;
    const ops::RopeTable table = ops::rope_table(positions, s, 128);
    const ops::RopeTable table_gpu{on_gpu(table.cos), on_gpu(table.sin)};
    const Tensor qkv = random_tensor({N, ld}, 50), d_qkv = random_tensor({N, ld}, 51);
    Tensor want = qkv.to(DType::f32), got = on_gpu(qkv);
    ops::rope_forward(want, H, KVH, D, table);
    ops::rope_forward(got, H, KVH, D, table_gpu);
    EXPECT_LT(scaled_error(on_cpu(got), want), kElementwiseTol) << "rope, N " << N;
    Tensor dwant = d_qkv.to(DType::f32), dgot = on_gpu(d_qkv);
    ops::rope_backward(dwant, H, KVH, D, table);
    ops::rope_backward(dgot, H, KVH, D, table_gpu);
    const Tensor dgot_cpu = on_cpu(dgot);
    EXPECT_LT(scaled_error(dgot_cpu, dwant), kElementwiseTol) << "rope_backward, N " << N;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = (H + KVH) * D; c < ld; ++c)
        ASSERT_EQ(dgot_cpu.data<float>()[n * ld + c], d_qkv.data<float>()[n * ld + c]) << "v changed at " << n;
  }
}

// A table built for other rows would be read past its end by the kernel: an error instead.
TEST_F(CudaTrainElementwise, RopeRefusesATableOfOtherRows) {
  const int64_t D = 64;
  Tensor positions = Tensor::empty({5}, DType::i32);
  for (int64_t n = 0; n < 5; ++n) positions.data<int32_t>()[n] = int32_t(n);
  ops::RopeSettings s;
  s.head_dim = D;
  const ops::RopeTable small = ops::rope_table(positions, s, 5);
  const ops::RopeTable small_gpu{on_gpu(small.cos), on_gpu(small.sin)};
  Tensor qkv = on_gpu(random_tensor({37, 3 * D}, 52));
  try {
    ops::rope_forward(qkv, 1, 1, D, small_gpu);
    FAIL() << "a table of 5 rows was taken for 37";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("cos/sin table"), std::string::npos) << e.what(); }
}

// A classifier adds at the first token of each sequence: rows T·C apart.
TEST_F(CudaTrainElementwise, AddOverStridedRowsMatchesCpu) {
  for (int64_t B : {1, 37}) {
    const int64_t T = 5, C = 97;
    const Tensor y0 = random_tensor({B * T, C}, 60), x0 = random_tensor({B * T, C}, 61);
    const Tensor y_want = y0.to(DType::f32), y_got = on_gpu(y0), x_gpu = on_gpu(x0);
    auto first_rows = [&](const Tensor& t) { return t.reshape({B, T * C}).narrow(1, 0, C); };
    ops::add_inplace(first_rows(y_want), first_rows(x0));
    ops::add_inplace(first_rows(y_got), first_rows(x_gpu));
    // Each element is one addition on both sides: equal, and the other rows left as they were.
    EXPECT_TRUE(bitwise_equal(on_cpu(y_got), y_want)) << "B " << B;
  }
}

TEST_F(CudaTrainElementwise, GatherAndScatterRowsMatchCpu) {
  const int64_t N = 300, C = 97;
  // Repeats (scatter's last copy wins on the CPU), the first and the last row.
  const Tensor rows = ids_tensor({5, 0, 299, 17, 5, 123, 17, 42, 5, 1, 298, 7, 0});
  const int64_t M = rows.numel();
  const Tensor src = random_tensor({N, C}, 70), small = random_tensor({M, C}, 71), dst0 = random_tensor({N, C}, 72);

  Tensor gathered_want = Tensor::empty({M, C}, DType::f32), gathered_got = gpu_nan({M, C});
  ops::gather_rows(gathered_want, src, rows);
  ops::gather_rows(gathered_got, on_gpu(src), on_gpu(rows));
  EXPECT_TRUE(bitwise_equal(on_cpu(gathered_got), gathered_want)) << "copies are exact";

  Tensor scattered_want = dst0.to(DType::f32), scattered_got = on_gpu(dst0);
  ops::scatter_rows(scattered_want, rows, small);
  ops::scatter_rows(scattered_got, on_gpu(rows), on_gpu(small));
  EXPECT_TRUE(bitwise_equal(on_cpu(scattered_got), scattered_want)) << "the last of repeated rows wins, others kept";
}

TEST_F(CudaTrainElementwise, FillZeroClearsEveryByte) {
  for (int64_t n : {1, 37, 300 * 97}) {
    Tensor t = on_gpu(random_tensor({n}, 80));
    ops::fill_zero(t);
    const Tensor back = on_cpu(t);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(back.data<float>()[i], 0.0f) << "at " << i << " of " << n;
  }
}

TEST_F(CudaTrainElementwise, EmbeddingSumOfLookupsMatchesCpu) {
  for (int64_t N : {1, 37, 300}) {
    const int64_t C = 97;
    const Tensor word = random_tensor({50, C}, 90), position = random_tensor({300, C}, 91);
    const Tensor type = random_tensor({2, C}, 92);
    const Tensor word_ids = repeating_ids(N, 50, 1), type_ids = repeating_ids(N, 2, 2);
    const Tensor position_ids = positions_of(N);
    Tensor want = Tensor::empty({N, C}, DType::f32), got = gpu_nan({N, C});
    ops::embedding_forward_train(want, {{word_ids, word}, {position_ids, position}, {type_ids, type}});
    const Tensor word_g = on_gpu(word), position_g = on_gpu(position), type_g = on_gpu(type);
    const Tensor word_ids_g = on_gpu(word_ids), position_ids_g = on_gpu(position_ids), type_ids_g = on_gpu(type_ids);
    ops::embedding_forward_train(got, {{word_ids_g, word_g}, {position_ids_g, position_g}, {type_ids_g, type_g}});
    // The same sums in the same order (word, then position, then type) on both sides.
    EXPECT_TRUE(bitwise_equal(on_cpu(got), want)) << "N " << N;
  }
}

// The scatter-add into the table's gradient adds each id's rows in token order, as the CPU does,
// so the two agree bitwise (and two GPU runs agree with each other): no atomics.
TEST_F(CudaTrainElementwise, EmbeddingBackwardIsTheCpusScatterAddBitwise) {
  for (int64_t N : {1, 37, 300, 4099}) {
    const int64_t C = 300, V = 50;
    const int32_t padding = 3;
    const Tensor ids = repeating_ids(N, int32_t(V), 3), dout = random_tensor({N, C}, 100);
    const Tensor dword0 = random_tensor({V, C}, 101), dpos0 = random_tensor({N, C}, 102);
    const Tensor position_ids = positions_of(N);

    Tensor dword_want = dword0.to(DType::f32), dpos_want = dpos0.to(DType::f32);  // non-zero: +=
    ops::embedding_backward(dout, {{dword_want, ids, padding}, {dpos_want, position_ids, -1}, {Tensor(), ids, -1}});
    const Tensor ids_g = on_gpu(ids), position_ids_g = on_gpu(position_ids), dout_g = on_gpu(dout);
    Tensor dword_got = on_gpu(dword0), dpos_got = on_gpu(dpos0);
    ops::embedding_backward(dout_g,
                            {{dword_got, ids_g, padding}, {dpos_got, position_ids_g, -1}, {Tensor(), ids_g, -1}});
    const Tensor dword_cpu = on_cpu(dword_got);
    EXPECT_TRUE(bitwise_equal(dword_cpu, dword_want))
        << "word table, N " << N << ", error " << scaled_error(dword_cpu, dword_want);
    EXPECT_TRUE(bitwise_equal(on_cpu(dpos_got), dpos_want)) << "position table, N " << N;
    if (N > 1) {  // the padding row kept its old gradient
      for (int64_t c = 0; c < C; ++c)
        ASSERT_EQ(dword_cpu.data<float>()[padding * C + c], dword0.data<float>()[padding * C + c]);
    }
  }
}

}  // namespace
}  // namespace tach::test
