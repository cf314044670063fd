// The encoders' training entry points (linear with its f32 and NF4 weights, the embedding sum,
// dropout, LayerNorm and its fused dropout-add form, attention with its saved probabilities and
// MPNet's bias gradient, GELU, ReLU, tanh, the residual add over strided rows, row copies and
// zeroing): each gives exactly what its CPU kernel gives for the same operands, views included,
// and refuses mismatched shapes, devices and a device with no training kernel with an error
// naming the op. (A CUDA tensor cannot be made here: tensors borrowed under a cuda:0 label stand
// in for one; the checks run before any kernel would read them.)
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "cpu/nf4_gemm.h"
#include "ops/activation.h"
#include "ops/add.h"
#include "ops/attention.h"
#include "ops/copy_rows.h"
#include "ops/dropout.h"
#include "ops/embedding.h"
#include "ops/fill.h"
#include "ops/gelu.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "ops/train_attention_kernel.h"
#include "test_util.h"

namespace tach::ops {
namespace {

using test::error_of;
using test::random_normal;

std::vector<float> values(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.numel()}; }
Tensor copy_of(const Tensor& t) { return t.contiguous().to(DType::f32); }
Tensor filled(const Shape& s, float v) {
  Tensor t = Tensor::empty(s, DType::f32);
  std::fill(t.data<float>(), t.data<float>() + t.numel(), v);
  return t;
}
Tensor ids_of(const std::vector<int32_t>& v) {
  Tensor t = Tensor::empty({int64_t(v.size())}, DType::i32);
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

// t's bytes under a cuda:0 label (t keeps them alive): what the op sees of a GPU tensor.
Tensor labelled_cuda(const Tensor& t) {
  return Tensor::from_borrowed(t.raw(), t.shape(), t.dtype(), t.storage(), Device::cuda(0));
}

bool mentions(const std::string& message, const std::string& what) { return message.find(what) != std::string::npos; }

TEST(TrainEncoderOps, LinearForwardAndBackwardEqualTheirKernels) {
  const int64_t M = 5, N = 7, K = 12;
  const Tensor x = random_normal(M, K, 1), W = random_normal(N, K, 2), b = random_normal(1, N, 3).reshape({N});
  const Tensor dy = random_normal(M, N, 4);
  Tensor y = Tensor::empty({M, N}, DType::f32);
  linear_forward_train(y, x, W, b);
  std::vector<float> want(static_cast<size_t>(M * N));
  linear_forward_cpu(want.data(), x.data<float>(), W.data<float>(), b.data<float>(), M, N, K);
  EXPECT_EQ(values(y), want);
  for (const bool frozen : {false, true}) {
    std::vector<float> want_dx(static_cast<size_t>(M * K), 0.25f), want_dW(size_t(N * K), 0.5f),
        want_db(size_t(N), 1.f);
    linear_backward_cpu(want_dx.data(), frozen ? nullptr : want_dW.data(), want_db.data(), dy.data<float>(),
                        x.data<float>(), W.data<float>(), M, N, K);
    Tensor dx = filled({M, K}, 0.25f), dW = filled({N, K}, 0.5f), db = filled({N}, 1.f);
    linear_backward(dx, frozen ? Tensor() : dW, db, dy, x, W);
    EXPECT_EQ(values(dx), want_dx);
    EXPECT_EQ(values(dW), frozen ? std::vector<float>(size_t(N * K), 0.5f) : want_dW) << "frozen: dW untouched";
    EXPECT_EQ(values(db), want_db);
  }
}

TEST(TrainEncoderOps, LinearOnAnNf4WeightEqualsItsKernels) {
  const int64_t M = 3, N = 8, K = 64;
  const Tensor w = random_normal(N, K, 5), x = random_normal(M, K, 6), dy = random_normal(M, N, 7);
  const Tensor b = random_normal(1, N, 8).reshape({N});
  const cpu::Nf4Matrix W = cpu::quantize_nf4_matrix(w.data<float>(), {N}, K);
  Tensor y = Tensor::empty({M, N}, DType::f32);
  linear_forward_train(y, x, W, b);
  std::vector<float> want(static_cast<size_t>(M * N));
  cpu::nf4_linear_forward(want.data(), x.data<float>(), W, b.data<float>(), M, N, K);
  EXPECT_EQ(values(y), want);
  Tensor dx = filled({M, K}, 0.25f), db = filled({N}, 1.f);
  linear_backward(dx, Tensor(), db, dy, x, W);
  std::vector<float> want_dx(static_cast<size_t>(M * K), 0.25f), want_db(size_t(N), 1.f);
  cpu::nf4_linear_backward_dx(want_dx.data(), dy.data<float>(), W, M, N, K);
  linear_backward_cpu(nullptr, nullptr, want_db.data(), dy.data<float>(), x.data<float>(), nullptr, M, N, K);
  EXPECT_EQ(values(dx), want_dx);
  EXPECT_EQ(values(db), want_db);
  Tensor dW = Tensor::zeros({N, K}, DType::f32);
  const std::string e = error_of([&] { linear_backward(dx, dW, db, dy, x, W); });
  EXPECT_TRUE(mentions(e, "linear_nf4_backward") && mentions(e, "frozen")) << e;
}

TEST(TrainEncoderOps, LinearNamesTheOpOnBadOperands) {
  const int64_t M = 4, N = 3, K = 8;
  const Tensor x = random_normal(M, K, 1), W = random_normal(N, K, 2), dy = random_normal(M, N, 3);
  Tensor y = Tensor::empty({M, N}, DType::f32);
  std::string e = error_of([&] { linear_forward_train(y, x, W, Tensor::zeros({N + 1}, DType::f32)); });
  EXPECT_TRUE(mentions(e, "linear: b")) << e;
  e = error_of([&] { linear_forward_train(Tensor::empty({M, N + 1}, DType::f32), x, W, Tensor()); });
  EXPECT_TRUE(mentions(e, "linear: y")) << e;
  // A strided x (a column block of a wider buffer) is not what the GEMM reads.
  const Tensor wide = random_normal(M, 2 * K, 4);
  e = error_of([&] { linear_forward_train(y, wide.narrow(1, 0, K), W, Tensor()); });
  EXPECT_TRUE(mentions(e, "linear: x") && mentions(e, "contiguous")) << e;
  e = error_of([&] { linear_backward(Tensor(), Tensor::zeros({N, K + 1}, DType::f32), Tensor(), dy, x, W); });
  EXPECT_TRUE(mentions(e, "linear_backward: dW")) << e;
  e = error_of([&] { linear_forward_train(y, labelled_cuda(x), W, Tensor()); });
  EXPECT_TRUE(mentions(e, "linear") && mentions(e, "is not on cuda:0")) << e;
#if !TACH_HAS_CUDA
  // Without the CUDA backend a CUDA tensor is refused, naming the op (with it, the backward runs
  // on the GPU: tests/cuda_train/linear.cc).
  e = error_of(
      [&] { linear_backward(Tensor(), Tensor(), Tensor(), labelled_cuda(dy), labelled_cuda(x), labelled_cuda(W)); });
  EXPECT_TRUE(mentions(e, "linear_backward: no kernel for device cuda:0")) << e;
#endif
}

TEST(TrainEncoderOps, EmbeddingSumAndItsBackwardEqualTheKernels) {
  const int64_t N = 6, C = 4, V = 5, P = 8;
  const Tensor word = random_normal(V, C, 1), pos = random_normal(P, C, 2), types = random_normal(2, C, 3);
  const Tensor ids = ids_of({1, 4, 0, 2, 2, 3}), pos_ids = ids_of({0, 1, 2, 3, 4, 5}),
               type_ids = ids_of({0, 0, 0, 1, 1, 1});
  Tensor out = Tensor::empty({N, C}, DType::f32);
  embedding_forward_train(out, {{ids, word}, {pos_ids, pos}, {type_ids, types}});
  std::vector<float> want(static_cast<size_t>(N * C));
  embedding_forward_cpu(want.data(), ids.data<int32_t>(), word.raw(), DType::f32, N, C, false);
  embedding_forward_cpu(want.data(), pos_ids.data<int32_t>(), pos.raw(), DType::f32, N, C, true);
  embedding_forward_cpu(want.data(), type_ids.data<int32_t>(), types.raw(), DType::f32, N, C, true);
  EXPECT_EQ(values(out), want);

  const Tensor dout = random_normal(N, C, 4);
  Tensor dword = filled({V, C}, 0.5f), dpos = filled({P, C}, 0.25f);
  embedding_backward(dout, {{dword, ids, 2}, {dpos, pos_ids, -1}, {Tensor(), type_ids, -1}});
  std::vector<float> want_word(static_cast<size_t>(V * C), 0.5f), want_pos(size_t(P * C), 0.25f);
  embedding_backward_cpu(want_word.data(), ids.data<int32_t>(), dout.data<float>(), N, C, 2);
  embedding_backward_cpu(want_pos.data(), pos_ids.data<int32_t>(), dout.data<float>(), N, C, -1);
  EXPECT_EQ(values(dword), want_word);
  EXPECT_EQ(values(dpos), want_pos);
  EXPECT_EQ(dword.data<float>()[2 * C], 0.5f) << "the padding row gets no gradient";

  std::string e = error_of([&] { embedding_forward_train(out, {{ids_of({0, 1, 2, 3, 4, 5}), word}}); });
  EXPECT_TRUE(mentions(e, "embedding: id 5 at position 5 is outside the table of 5 rows")) << e;
  e = error_of([&] { embedding_backward(dout, {{Tensor::zeros({V, C + 1}, DType::f32), ids, -1}}); });
  EXPECT_TRUE(mentions(e, "embedding_backward: dtable")) << e;
  e = error_of([&] { embedding_forward_train(out, {{ids, labelled_cuda(word)}}); });
  EXPECT_TRUE(mentions(e, "embedding") && mentions(e, "is not on cpu")) << e;
}

TEST(TrainEncoderOps, DropoutEqualsItsKernelsInPlaceAndOut) {
  const int64_t n = 1000;
  const Tensor x = random_normal(1, n, 1);
  const uint64_t key = dropout_key(7, 1, 3);
  std::vector<float> want(static_cast<size_t>(n)), want_back(static_cast<size_t>(n));
  dropout_forward_cpu(want.data(), x.data<float>(), n, 0.3f, key);
  dropout_backward_cpu(want_back.data(), x.data<float>(), n, 0.3f, key);
  Tensor out = Tensor::empty({1, n}, DType::f32), in_place = copy_of(x);
  dropout_forward(out, x, 0.3f, key);
  dropout_forward(in_place, in_place, 0.3f, key);
  EXPECT_EQ(values(out), want);
  EXPECT_EQ(values(in_place), want);
  Tensor dx = Tensor::empty({1, n}, DType::f32);
  dropout_backward(dx, x, 0.3f, key);
  EXPECT_EQ(values(dx), want_back);
  // p = 0: out of place a copy, in place nothing.
  dropout_forward(out, x, 0.f, key);
  EXPECT_EQ(values(out), values(x));
  std::string e = error_of([&] { dropout_forward(Tensor::empty({n + 1}, DType::f32), x, 0.1f, key); });
  EXPECT_TRUE(mentions(e, "dropout: output")) << e;
  e = error_of([&] { dropout_backward(dx, labelled_cuda(x), 0.1f, key); });
  EXPECT_TRUE(mentions(e, "dropout_backward") && mentions(e, "is not on cuda:0")) << e;
#if !TACH_HAS_CUDA
  // Without the CUDA backend a CUDA tensor is refused, naming the op (with it, dropout runs on the
  // GPU: tests/cuda_train/norms.cc).
  const Tensor cx = labelled_cuda(x);
  e = error_of([&] { dropout_forward(cx, cx, 0.1f, key); });
  EXPECT_TRUE(mentions(e, "dropout: no kernel for device cuda:0")) << e;
#endif
}

TEST(TrainEncoderOps, LayerNormForwardBackwardAndTheFusedFormEqualTheirKernels) {
  const int64_t N = 5, C = 16;
  const Tensor x = random_normal(N, C, 1, 2.f), branch = random_normal(N, C, 2), dout = random_normal(N, C, 3);
  const Tensor gamma = random_normal(1, C, 4).reshape({C}), beta = random_normal(1, C, 5).reshape({C});
  Tensor out = Tensor::empty({N, C}, DType::f32), mean = Tensor::empty({N}, DType::f32),
         rstd = Tensor::empty({N}, DType::f32);
  layer_norm_forward_train(out, x, gamma, beta, 1e-5f, mean, rstd);
  std::vector<float> want(static_cast<size_t>(N * C)), want_mean(static_cast<size_t>(N)),
      want_rstd(static_cast<size_t>(N));
  layer_norm_forward_cpu(want.data(), x.data<float>(), nullptr, gamma.data<float>(), beta.data<float>(), N, C, 1e-5f,
                         want_mean.data(), want_rstd.data());
  EXPECT_EQ(values(out), want);
  EXPECT_EQ(values(mean), want_mean);
  EXPECT_EQ(values(rstd), want_rstd);
  for (const bool frozen : {false, true}) {
    Tensor dinp = filled({N, C}, 0.25f), dgamma = filled({C}, 0.5f), dbeta = filled({C}, 1.f);
    layer_norm_backward(dinp, frozen ? Tensor() : dgamma, frozen ? Tensor() : dbeta, dout, x, gamma, mean, rstd);
    std::vector<float> want_dinp(static_cast<size_t>(N * C), 0.25f), want_dg(size_t(C), 0.5f), want_db(size_t(C), 1.f);
    layer_norm_backward_cpu(want_dinp.data(), frozen ? nullptr : want_dg.data(), frozen ? nullptr : want_db.data(),
                            dout.data<float>(), x.data<float>(), gamma.data<float>(), mean.data<float>(),
                            rstd.data<float>(), N, C);
    EXPECT_EQ(values(dinp), want_dinp);
    EXPECT_EQ(values(dgamma), want_dg);
    EXPECT_EQ(values(dbeta), want_db);
  }
  Tensor sum = Tensor::empty({N, C}, DType::f32);
  const uint64_t key = dropout_key(1, 2, 3);
  dropout_add_layer_norm_forward(sum, out, branch, x, gamma, beta, 1e-5f, 0.2f, key, mean, rstd);
  std::vector<float> want_sum(static_cast<size_t>(N * C));
  dropout_add_layer_norm_forward_cpu(want_sum.data(), want.data(), branch.data<float>(), x.data<float>(),
                                     gamma.data<float>(), beta.data<float>(), N, C, 1e-5f, 0.2f, key, want_mean.data(),
                                     want_rstd.data());
  EXPECT_EQ(values(sum), want_sum);
  EXPECT_EQ(values(out), want);
  EXPECT_EQ(values(rstd), want_rstd);

  std::string e =
      error_of([&] { layer_norm_forward_train(out, x, gamma, beta, 1e-5f, Tensor::empty({N - 1}, DType::f32), rstd); });
  EXPECT_TRUE(mentions(e, "layer_norm: mean")) << e;
  Tensor dinp = Tensor::zeros({N, C}, DType::f32);
  e = error_of([&] { layer_norm_backward(dinp, Tensor(), Tensor(), dout, x, gamma, labelled_cuda(mean), rstd); });
  EXPECT_TRUE(mentions(e, "layer_norm_backward") && mentions(e, "is not on cpu")) << e;
}

// BERT's layout: q, k, v column blocks of one [B, T, 3C] buffer; a classifier's last layer asks
// for the first query row of each sequence only; MPNet's bias gradient summed over the batch.
TEST(TrainEncoderOps, AttentionOverViewsEqualsItsKernels) {
  const int64_t B = 2, T = 5, H = 2, D = 4, C = H * D, NB = 6;
  const float scale = 0.5f, p = 0.1f;
  const uint64_t key = dropout_key(3, 0, 1);
  const Tensor qkv = random_normal(B * T, 3 * C, 1), dout_all = random_normal(B * T, C, 2);
  const Tensor table = random_normal(NB, H, 3);
  Tensor mask = Tensor::empty({B, T}, DType::i32);
  for (int64_t i = 0; i < B * T; ++i) mask.data<int32_t>()[i] = i % T < (i < T ? 5 : 3) ? 1 : 0;
  Tensor buckets = Tensor::empty({T, T}, DType::i32);
  for (int64_t i = 0; i < T * T; ++i) buckets.data<int32_t>()[i] = int32_t(i % NB);
  const ScoreBias bias{buckets.data<int32_t>(), table.data<float>(), NB};
  const Tensor q3 = qkv.reshape({B, T, 3 * C});
  const Tensor k = q3.narrow(2, C, C), v = q3.narrow(2, 2 * C, C);
  for (const int64_t Tq : {T, int64_t(1)}) {
    const Tensor q = q3.narrow(2, 0, C).narrow(1, 0, Tq);
    Tensor context = Tensor::zeros({B * T, C}, DType::f32), probs = Tensor::zeros({B, H, T, T}, DType::f32);
    attention_forward_train(context.reshape({B, T, C}).narrow(1, 0, Tq), probs, q, k, v, mask, int(H), scale, p, key,
                            table, buckets);
    std::vector<float> want(static_cast<size_t>(B * T * C), 0.f), want_probs(size_t(B * H * T * T), 0.f);
    const float* base = qkv.data<float>();
    attention_forward_train_cpu(want.data(), want_probs.data(), base, base + C, base + 2 * C, mask.data<int32_t>(), B,
                                T, H, D, 3 * C, C, scale, p, key, Tq == T ? -1 : Tq, bias);
    EXPECT_EQ(values(context), want) << "Tq " << Tq;
    EXPECT_EQ(values(probs), want_probs) << "Tq " << Tq;

    Tensor dqkv = Tensor::zeros({B * T, 3 * C}, DType::f32), parts = Tensor::empty({B, H, NB}, DType::f32);
    Tensor dtable = filled({NB, H}, 0.5f);
    const Tensor d3 = dqkv.reshape({B, T, 3 * C});
    attention_backward(d3.narrow(2, 0, C).narrow(1, 0, Tq), d3.narrow(2, C, C), d3.narrow(2, 2 * C, C), dtable, parts,
                       dout_all.reshape({B, T, C}).narrow(1, 0, Tq), probs, q, k, v, mask, int(H), scale, p, key, table,
                       buckets);
    std::vector<float> want_d(static_cast<size_t>(B * T * 3 * C), 0.f), want_parts(static_cast<size_t>(B * H * NB));
    attention_backward_cpu(want_d.data(), want_d.data() + C, want_d.data() + 2 * C, dout_all.data<float>(),
                           want_probs.data(), base, base + C, base + 2 * C, mask.data<int32_t>(), B, T, H, D, 3 * C, C,
                           scale, p, key, Tq == T ? -1 : Tq, bias, want_parts.data());
    EXPECT_EQ(values(dqkv), want_d) << "Tq " << Tq;
    std::vector<float> want_table(static_cast<size_t>(NB * H), 0.5f);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t j = 0; j < NB; ++j) want_table[size_t(j * H + h)] += want_parts[size_t((b * H + h) * NB + j)];
    EXPECT_EQ(values(dtable), want_table) << "Tq " << Tq;
  }
  Tensor out = Tensor::zeros({B, T, C}, DType::f32);
  const Tensor q = q3.narrow(2, 0, C);
  std::string e = error_of([&] { attention_forward_train(out, Tensor(), q, k, v, mask, 3, scale, 0.f, key); });
  EXPECT_TRUE(mentions(e, "attention: 8 channels do not split into 3 heads")) << e;
  e = error_of([&] { attention_forward_train(out, Tensor(), q.contiguous(), k, v, mask, 2, scale, 0.f, key); });
  EXPECT_TRUE(mentions(e, "attention: q") && mentions(e, "row stride 24")) << e;
  e = error_of([&] { attention_forward_train(out, Tensor(), q, k, v, labelled_cuda(mask), 2, scale, 0.f, key); });
  EXPECT_TRUE(mentions(e, "attention") && mentions(e, "is not on cpu")) << e;
  e = error_of([&] { attention_forward_train(out, Tensor(), q, k, v, mask, 2, scale, 0.f, key, table, Tensor()); });
  EXPECT_TRUE(mentions(e, "attention: the score bias needs both")) << e;
}

// cuDNN's log-sum-exp in place of the probabilities ([B, H, T]) asks for cuDNN's fused attention:
// refused on the CPU, with fewer query rows than keys, or beside a score bias, by name.
TEST(TrainEncoderOps, AttentionRefusesCudnnsSavedStateWhereCudnnCannotRun) {
  const int64_t B = 2, T = 4, H = 2, D = 4, C = H * D;
  const Tensor qkv = random_normal(B * T, 3 * C, 9).reshape({B, T, 3 * C});
  const Tensor q = qkv.narrow(2, 0, C), k = qkv.narrow(2, C, C), v = qkv.narrow(2, 2 * C, C);
  const Tensor mask = Tensor::zeros({B, T}, DType::i32);
  Tensor out = Tensor::zeros({B, T, C}, DType::f32);
  const Tensor stats = Tensor::zeros({B, H, T}, DType::f32);
  std::string e = error_of([&] { attention_forward_train(out, stats, q, k, v, mask, int(H), 0.5f, 0.f, 1); });
  EXPECT_TRUE(mentions(e, "attention: cuDNN's fused attention") && mentions(e, "runs on CUDA devices only")) << e;
  e = error_of([&] {
    attention_forward_train(out.narrow(1, 0, 1), stats, q.narrow(1, 0, 1), k, v, mask, int(H), 0.5f, 0.f, 1);
  });
  EXPECT_TRUE(mentions(e, "answers every query row") && mentions(e, "1 of 4 rows")) << e;
  e = error_of([&] {
    attention_forward_train(out, Tensor::zeros({B, H, T + 1}, DType::f32), q, k, v, mask, int(H), 0.5f, 0.f, 1);
  });
  EXPECT_TRUE(mentions(e, "cuDNN's log-sum-exp, a contiguous f32 [2, 2, 4]")) << e;
}

// The training attention's kernels, chosen by a pure function: cuDNN's fused attention only for a
// bf16 step on CUDA where cuDNN loads and the graph expresses the layer exactly; tach's otherwise,
// saying why. What each keeps for the backward follows.
TEST(TrainEncoderOps, TrainAttentionKernelIsCudnnOnlyWhereItComputesTheSameAttention) {
  TrainAttentionCase c;
  c.cuda = true, c.bf16 = true, c.cudnn_loads = true;
  c.heads = 8, c.kv_heads = 2, c.head_size = 64, c.tokens = 512;
  TrainAttentionChoice got = choose_train_attention(c);
  EXPECT_TRUE(got.cudnn()) << got.describe();
  EXPECT_EQ(got.describe(), "cudnn fused attention, bf16");
  EXPECT_EQ(train_attention_saved_shape(got, false, 4, 8, 512), (Shape{4, 8, 512}));
  EXPECT_EQ(train_attention_saved_shape(got, true, 4, 8, 512), (Shape{4, 8, 512}));  // fused or not
  // A window as long as the rows hides nothing (Mistral's 4096 at 512 tokens).
  c.window = 4096;
  EXPECT_TRUE(choose_train_attention(c).cudnn());

  struct Refusal {
    const char* what;
    std::function<void(TrainAttentionCase&)> change;
    const char* why;
  };
  const std::vector<Refusal> refusals = {
      {"CPU", [](TrainAttentionCase& x) { x.cuda = false; }, "CUDA devices only"},
      {"f32", [](TrainAttentionCase& x) { x.bf16 = false; }, "the step computes in f32"},
      {"forced", [](TrainAttentionCase& x) { x.forced_tach = true; }, "TACH_TRAIN_ATTENTION=tach"},
      {"no cuDNN",
       [](TrainAttentionCase& x) { x.cudnn_loads = false, x.cudnn_missing = "libcudnn.so.9 was not found"; },
       "libcudnn.so.9 was not found"},
      {"head size", [](TrainAttentionCase& x) { x.head_size = 12; }, "head size 12"},
      {"head size", [](TrainAttentionCase& x) { x.head_size = 512; }, "multiples of 8 up to 256"},
      {"kv heads", [](TrainAttentionCase& x) { x.kv_heads = 3; }, "3 key/value heads do not divide 8"},
      {"bias", [](TrainAttentionCase& x) { x.score_bias = true; }, "a bias on the scores"},
      {"window", [](TrainAttentionCase& x) { x.window = 128; }, "a sliding window of 128 keys over 512 tokens"},
      {"first token", [](TrainAttentionCase& x) { x.first_queries_only = true; }, "first token only"},
  };
  for (const Refusal& r : refusals) {
    TrainAttentionCase x = c;
    r.change(x);
    got = choose_train_attention(x);
    EXPECT_FALSE(got.cudnn()) << r.what;
    EXPECT_TRUE(mentions(got.describe(), "tach kernels, f32 (") && mentions(got.describe(), r.why))
        << r.what << ": " << got.describe();
    EXPECT_EQ(train_attention_saved_shape(got, false, 4, 8, 512), (Shape{4, 8, 512, 512})) << r.what;
    EXPECT_TRUE(train_attention_saved_shape(got, true, 4, 8, 512).empty()) << r.what;  // recomputed
  }
  const TrainAttentionChoice cudnn = choose_train_attention(c);
  TrainAttentionCase last = c;
  last.first_queries_only = true;
  EXPECT_EQ(describe_train_attention(cudnn, choose_train_attention(last)),
            "cudnn fused attention, bf16; the last layer: tach kernels, f32 (a classifier's last layer answers its "
            "first token only)");
  EXPECT_EQ(describe_train_attention(cudnn, cudnn), "cudnn fused attention, bf16");
}

TEST(TrainEncoderOps, TrainAttentionEnvironmentForcesTachOrRefusesByName) {
  EXPECT_FALSE(train_attention_forced_to_tach(nullptr));
  EXPECT_FALSE(train_attention_forced_to_tach(""));
  EXPECT_FALSE(train_attention_forced_to_tach("auto"));
  EXPECT_TRUE(train_attention_forced_to_tach("tach"));
  const std::string e = error_of([] { train_attention_forced_to_tach("cudnn"); });
  EXPECT_TRUE(mentions(e, "TACH_TRAIN_ATTENTION=cudnn") && mentions(e, "'auto'") && mentions(e, "'tach'")) << e;
  // On the CPU the case says tach's kernels run, whatever the precision.
  EXPECT_FALSE(choose_train_attention(train_attention_case(Device::cpu())).cudnn());
}

TEST(TrainEncoderOps, ActivationsEqualTheirKernels) {
  const int64_t M = 3, N = 10, n = M * N;
  const Tensor x = random_normal(M, N, 1, 2.f), dy = random_normal(M, N, 2), b = random_normal(1, N, 3).reshape({N});
  using Fwd = void (*)(float*, const float*, int64_t);
  using Bwd = void (*)(float*, const float*, const float*, int64_t);
  struct Case {
    const char* name;
    void (*forward)(const Tensor&, const Tensor&);
    void (*backward)(const Tensor&, const Tensor&, const Tensor&);
    Fwd kf;
    Bwd kb;
  };
  for (const Case& c : {Case{"gelu", gelu_forward, gelu_backward, gelu_forward_cpu, gelu_backward_cpu},
                        Case{"relu", relu_forward, relu_backward, relu_forward_cpu, relu_backward_cpu},
                        Case{"tanh", tanh_forward, tanh_backward, tanh_forward_cpu, tanh_backward_cpu}}) {
    Tensor y = Tensor::empty({M, N}, DType::f32), dx = filled({M, N}, 0.5f);
    c.forward(y, x);
    c.backward(dx, x, dy);
    std::vector<float> want(static_cast<size_t>(n)), want_dx(size_t(n), 0.5f);
    c.kf(want.data(), x.data<float>(), n);
    c.kb(want_dx.data(), x.data<float>(), dy.data<float>(), n);
    EXPECT_EQ(values(y), want) << c.name;
    EXPECT_EQ(values(dx), want_dx) << c.name;
    const std::string e = error_of([&] { c.backward(Tensor::empty({n + 1}, DType::f32), x, dy); });
    EXPECT_TRUE(mentions(e, std::string(c.name) + "_backward: dx")) << e;
  }
  Tensor pre = copy_of(x), act = Tensor::empty({M, N}, DType::f32);
  bias_gelu_forward(pre, act, b);
  std::vector<float> want_pre = values(x), want_act(static_cast<size_t>(n));
  bias_gelu_forward_cpu(want_pre.data(), want_act.data(), b.data<float>(), M, N);
  EXPECT_EQ(values(pre), want_pre);
  EXPECT_EQ(values(act), want_act);
  Tensor dpre = Tensor::empty({M, N}, DType::f32), db = filled({N}, 1.f);
  bias_gelu_backward(dpre, db, pre, dy);
  std::vector<float> want_dpre(static_cast<size_t>(n)), want_db(size_t(N), 1.f);
  bias_gelu_backward_cpu(want_dpre.data(), want_db.data(), want_pre.data(), dy.data<float>(), M, N);
  EXPECT_EQ(values(dpre), want_dpre);
  EXPECT_EQ(values(db), want_db);
  const std::string e = error_of([&] { bias_gelu_forward(pre, act, labelled_cuda(b)); });
  EXPECT_TRUE(mentions(e, "bias_gelu") && mentions(e, "is not on cpu")) << e;
}

// The first token of each sequence as a [B, C] view with rows T·C apart: add, copy, gather,
// scatter and zero as one op each.
TEST(TrainEncoderOps, RowOpsOverViews) {
  const int64_t B = 3, T = 4, C = 5;
  const Tensor h = random_normal(B * T, C, 1), d = random_normal(B, C, 2);
  Tensor y = copy_of(h);
  add_inplace(y.reshape({B, T * C}).narrow(1, 0, C), d);
  std::vector<float> want = values(h);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) want[size_t(b * T * C + c)] += d.data<float>()[b * C + c];
  EXPECT_EQ(values(y), want);
  Tensor first = Tensor::empty({B, C}, DType::f32);
  copy_rows(first, y.reshape({B, T * C}).narrow(1, 0, C));
  for (int64_t b = 0; b < B; ++b)
    EXPECT_EQ(std::vector<float>(first.data<float>() + b * C, first.data<float>() + (b + 1) * C),
              std::vector<float>(want.begin() + b * T * C, want.begin() + b * T * C + C));
  const Tensor rows = ids_of({7, 2, 11});
  Tensor picked = Tensor::empty({3, C}, DType::f32), back = Tensor::zeros({B * T, C}, DType::f32);
  gather_rows(picked, h, rows);
  scatter_rows(back, rows, picked);
  for (const int32_t r : {7, 2, 11})
    for (int64_t c = 0; c < C; ++c) EXPECT_EQ(back.data<float>()[r * C + c], h.data<float>()[r * C + c]);
  EXPECT_EQ(back.data<float>()[0], 0.f) << "rows not named stay as they were";
  fill_zero(y);
  EXPECT_EQ(values(y), std::vector<float>(size_t(B * T * C), 0.f));
  std::string e = error_of([&] { gather_rows(picked, h, ids_of({0, 12, 1})); });
  EXPECT_TRUE(mentions(e, "gather_rows: row 12 at 1 is outside [0, 12)")) << e;
  e = error_of([&] { add_inplace(y.reshape({B, T * C}).narrow(1, 0, C), labelled_cuda(d)); });
  EXPECT_TRUE(mentions(e, "add") && mentions(e, "is not on cpu")) << e;
  e = error_of([&] { fill_zero(y.reshape({B, T * C}).narrow(1, 0, C)); });
  EXPECT_TRUE(mentions(e, "zero: t") && mentions(e, "contiguous")) << e;
}

}  // namespace
}  // namespace tach::ops
