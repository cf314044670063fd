// The decoders' training entry points (rms_norm and its per-head form, causal attention, the
// gated MLP's backward): each gives what its CPU kernel gives for the same operands, and refuses
// mismatched shapes, devices and a device with no training kernel with an error naming the op.
// (A CUDA tensor cannot be made here: tensors borrowed under a cuda:0 label stand in for one;
// the checks run before any kernel would read them.)
#include <gtest/gtest.h>

#include <vector>

#include "ops/causal_attention.h"
#include "ops/rms_norm.h"
#include "ops/silu_gate.h"
#include "test_util.h"

namespace tach::ops {
namespace {

using test::error_of;
using test::random_normal;

std::vector<float> values(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.numel()}; }
Tensor copy_of(const Tensor& t) { return t.contiguous().to(DType::f32); }

// t's bytes under a cuda:0 label (t keeps them alive): what the op sees of a GPU tensor.
Tensor labelled_cuda(const Tensor& t) {
  return Tensor::from_borrowed(t.raw(), t.shape(), t.dtype(), t.storage(), Device::cuda(0));
}

bool mentions(const std::string& message, const std::string& what) { return message.find(what) != std::string::npos; }

TEST(TrainDecoderOps, RmsNormBackwardEqualsItsKernel) {
  const int64_t N = 70, C = 16;  // more rows than one chunk of the kernel's dweight reduction
  const Tensor inp = random_normal(N, C, 1, 1.5f), weight = random_normal(1, C, 2).reshape({C});
  const Tensor dout = random_normal(N, C, 3), rstd = Tensor::empty({N}, DType::f32);
  Tensor out = Tensor::empty({N, C}, DType::f32), h = copy_of(inp);
  rms_norm_forward(out, h, Tensor(), weight, 1e-6f, rstd);
  for (const bool frozen : {false, true}) {
    std::vector<float> want_dinp(size_t(N * C), 0.25f), want_dw(size_t(C), 0.5f);
    rms_norm_backward_cpu(want_dinp.data(), frozen ? nullptr : want_dw.data(), dout.data<float>(), inp.data<float>(),
                          weight.data<float>(), rstd.data<float>(), N, C);
    Tensor dinp = Tensor::empty({N, C}, DType::f32), dw = Tensor::empty({C}, DType::f32);
    std::fill(dinp.data<float>(), dinp.data<float>() + N * C, 0.25f);
    std::fill(dw.data<float>(), dw.data<float>() + C, 0.5f);
    rms_norm_backward(dinp, frozen ? Tensor() : dw, dout, inp, weight, rstd);
    EXPECT_EQ(values(dinp), want_dinp) << (frozen ? "frozen" : "trained");
    EXPECT_EQ(values(dw), want_dw) << (frozen ? "frozen: dweight untouched" : "trained");
  }
}

TEST(TrainDecoderOps, RmsNormBackwardNamesTheOpOnBadOperands) {
  const int64_t N = 4, C = 8;
  Tensor inp = random_normal(N, C, 1), dout = random_normal(N, C, 2), dinp = Tensor::zeros({N, C}, DType::f32);
  const Tensor weight = Tensor::zeros({C}, DType::f32), rstd = Tensor::zeros({N}, DType::f32);
  std::string e =
      error_of([&] { rms_norm_backward(dinp, Tensor(), dout, inp, weight, Tensor::zeros({N + 1}, DType::f32)); });
  EXPECT_TRUE(mentions(e, "rms_norm_backward") && mentions(e, "rstd")) << e;
  e = error_of([&] { rms_norm_backward(dinp, Tensor::zeros({C + 1}, DType::f32), dout, inp, weight, rstd); });
  EXPECT_TRUE(mentions(e, "rms_norm_backward") && mentions(e, "dweight")) << e;
  Tensor short_dout = random_normal(N - 1, C, 2);
  e = error_of([&] { rms_norm_backward(dinp, Tensor(), short_dout, inp, weight, rstd); });
  EXPECT_TRUE(mentions(e, "rms_norm_backward") && mentions(e, "does not match")) << e;
  // One operand on another device; then, without the CUDA backend, every operand on CUDA (with it,
  // the backward runs on the GPU: tests/cuda_train/norms.cc).
  e = error_of([&] { rms_norm_backward(dinp, Tensor(), labelled_cuda(dout), inp, weight, rstd); });
  EXPECT_TRUE(mentions(e, "rms_norm_backward") && mentions(e, "is not on cpu")) << e;
#if !TACH_HAS_CUDA
  Tensor cuda_dinp = labelled_cuda(dinp);
  e = error_of([&] {
    rms_norm_backward(cuda_dinp, Tensor(), labelled_cuda(dout), labelled_cuda(inp), labelled_cuda(weight),
                      labelled_cuda(rstd));
  });
  EXPECT_TRUE(mentions(e, "rms_norm_backward: no kernel for device cuda:0")) << e;
#endif
}

// Qwen3's q and k norms: the forward's saved input and rstd (views of one buffer each, as the
// decoder layer keeps them) and the one-op backward over both, against the kernels.
TEST(TrainDecoderOps, RmsNormHeadsForwardSavesAndBackwardEqualsItsKernels) {
  const int64_t N = 6, H = 4, KVH = 2, D = 8, HD = H * D, KD = KVH * D, QKV = HD + 2 * KD;
  const Tensor x0 = random_normal(N, QKV, 11), wq = random_normal(1, D, 12).reshape({D});
  const Tensor wk = random_normal(1, D, 13).reshape({D}), dout = random_normal(N, QKV, 14);
  Tensor x = copy_of(x0);
  Tensor saved = Tensor::empty({N, HD + KD}, DType::f32), rstd = Tensor::empty({N, H + KVH}, DType::f32);
  const Tensor flat_saved = saved.reshape({N * (HD + KD)}), flat_rstd = rstd.reshape({N * (H + KVH)});
  rms_norm_heads_forward(x, 0, H, D, wq, 1e-6f, flat_saved.narrow(0, 0, N * HD), flat_rstd.narrow(0, 0, N * H));
  rms_norm_heads_forward(x, HD, KVH, D, wk, 1e-6f, flat_saved.narrow(0, N * HD, N * KD),
                         flat_rstd.narrow(0, N * H, N * KVH));
  std::vector<float> want_x = values(x0), want_saved(size_t(N * (HD + KD))), want_rstd(size_t(N * (H + KVH)));
  rms_norm_heads_forward_cpu(want_x.data(), QKV, N, H, D, wq.data<float>(), 1e-6f, want_saved.data(), want_rstd.data());
  rms_norm_heads_forward_cpu(want_x.data() + HD, QKV, N, KVH, D, wk.data<float>(), 1e-6f, want_saved.data() + N * HD,
                             want_rstd.data() + N * H);
  EXPECT_EQ(values(x), want_x);
  EXPECT_EQ(values(saved), want_saved);
  EXPECT_EQ(values(rstd), want_rstd);

  for (const bool frozen : {false, true}) {
    std::vector<float> want_d = values(dout), want_dq(size_t(D), 0.f), want_dk(size_t(D), 0.f);
    rms_norm_heads_backward_cpu(want_d.data(), QKV, want_saved.data(), wq.data<float>(), want_rstd.data(),
                                frozen ? nullptr : want_dq.data(), N, H, D);
    rms_norm_heads_backward_cpu(want_d.data() + HD, QKV, want_saved.data() + N * HD, wk.data<float>(),
                                want_rstd.data() + N * H, frozen ? nullptr : want_dk.data(), N, KVH, D);
    Tensor d = copy_of(dout), dq = Tensor::zeros({D}, DType::f32), dk = Tensor::zeros({D}, DType::f32);
    rms_norm_heads_backward(d, H, KVH, D, saved, rstd, wq, wk, frozen ? Tensor() : dq, frozen ? Tensor() : dk);
    EXPECT_EQ(values(d), want_d) << "d(qkv), values' columns untouched";
    EXPECT_EQ(values(dq), want_dq);
    EXPECT_EQ(values(dk), want_dk);
  }
  Tensor d = copy_of(dout);
  std::string e =
      error_of([&] { rms_norm_heads_backward(d, H, KVH, D, saved, rstd.narrow(0, 0, N - 1), wq, wk, {}, {}); });
  EXPECT_TRUE(mentions(e, "rms_norm_heads_backward") && mentions(e, "rstd")) << e;
  e = error_of([&] { rms_norm_heads_backward(d, H, KVH, D, saved, rstd, wq, labelled_cuda(wk), {}, {}); });
  EXPECT_TRUE(mentions(e, "rms_norm_heads_backward") && mentions(e, "is not on cpu")) << e;
  e = error_of([&] {
    Tensor x_half = copy_of(x0);
    rms_norm_heads_forward(x_half, 0, H, D, wq, 1e-6f, saved, Tensor());
  });
  EXPECT_TRUE(mentions(e, "rms_norm_heads")) << e;
}

struct AttentionCase {
  int64_t B = 2, T = 5, H = 4, KVH = 2, D = 3;
  int64_t HD() const { return H * D; }
  int64_t KD() const { return KVH * D; }
  int64_t QKV() const { return HD() + 2 * KD(); }
  CausalAttentionArgs args(bool causal) const {
    CausalAttentionArgs a;
    a.B = B, a.Tq = T, a.H = H, a.KVH = KVH, a.D = D, a.scale = 0.6f, a.causal = causal;
    return a;
  }
  // The layout the kernels take for q|k|v rows of one fused buffer.
  CausalAttentionArgs kernel_args(bool causal) const {
    CausalAttentionArgs a = args(causal);
    a.ld_q = a.ld_kv = QKV(), a.batch_stride_kv = T * QKV(), a.ld_out = HD(), a.mask_stride = T;
    return a;
  }
};

// Grouped-query attention with a right-padded row, causal and bidirectional, saving the
// probabilities and not (fused): q, k and v as views of the fused buffer, as the step gives them.
TEST(TrainDecoderOps, CausalAttentionTrainEqualsItsKernels) {
  const AttentionCase s;
  const int64_t N = s.B * s.T, HD = s.HD(), KD = s.KD(), QKV = s.QKV();
  const Tensor qkv = random_normal(N, QKV, 21), dout = random_normal(N, HD, 22);
  Tensor mask = Tensor::empty({s.B, s.T}, DType::i32);
  const std::vector<int32_t> m = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  std::copy(m.begin(), m.end(), mask.data<int32_t>());
  const Tensor q = qkv.narrow(1, 0, HD), k = qkv.narrow(1, HD, KD), v = qkv.narrow(1, HD + KD, KD);
  for (const bool causal : {true, false})
    for (const bool saved : {true, false}) {
      const std::string what = std::string(causal ? "causal" : "bidirectional") + (saved ? ", saved" : ", fused");
      const CausalAttentionArgs ka = s.kernel_args(causal);
      const float* p = qkv.data<float>();
      std::vector<float> want_out(size_t(N * HD)), want_probs(size_t(s.B * s.H * s.T * s.T));
      causal_attention_forward_cpu(want_out.data(), saved ? want_probs.data() : nullptr, p, p + HD, p + HD + KD,
                                   m.data(), ka);
      Tensor out = Tensor::empty({N, HD}, DType::f32);
      Tensor probs = saved ? Tensor::empty({s.B, s.H, s.T, s.T}, DType::f32) : Tensor();
      causal_attention_forward_train(out, probs, q, k, v, mask, s.args(causal));
      EXPECT_EQ(values(out), want_out) << what;
      if (saved) { EXPECT_EQ(values(probs), want_probs) << what; }

      std::vector<float> want_d(size_t(N * QKV), 0.f);
      causal_attention_backward_cpu(want_d.data(), want_d.data() + HD, want_d.data() + HD + KD, dout.data<float>(),
                                    saved ? want_probs.data() : nullptr, p, p + HD, p + HD + KD, m.data(), ka);
      Tensor d = Tensor::zeros({N, QKV}, DType::f32);
      Tensor dq = d.narrow(1, 0, HD), dk = d.narrow(1, HD, KD), dv = d.narrow(1, HD + KD, KD);
      causal_attention_backward(dq, dk, dv, dout, probs, q, k, v, mask, s.args(causal));
      EXPECT_EQ(values(d), want_d) << what;
    }
}

TEST(TrainDecoderOps, CausalAttentionNamesTheOpOnBadOperands) {
  const AttentionCase s;
  const int64_t N = s.B * s.T, HD = s.HD(), KD = s.KD(), QKV = s.QKV();
  const Tensor qkv = random_normal(N, QKV, 21), dout = random_normal(N, HD, 22);
  const Tensor q = qkv.narrow(1, 0, HD), k = qkv.narrow(1, HD, KD), v = qkv.narrow(1, HD + KD, KD);
  const Tensor mask = Tensor::zeros({s.B, s.T}, DType::i32);
  Tensor out = Tensor::empty({N, HD}, DType::f32);
  std::string e = error_of([&] {
    causal_attention_forward_train(out, Tensor::empty({s.B, s.H, s.T, s.T + 1}, DType::f32), q, k, v, mask,
                                   s.args(true));
  });
  EXPECT_TRUE(mentions(e, "causal_attention_forward_train") && mentions(e, "probs")) << e;
  e = error_of([&] { causal_attention_forward_train(out, Tensor(), k, k, v, mask, s.args(true)); });
  EXPECT_TRUE(mentions(e, "causal_attention_forward_train") && mentions(e, "q must be")) << e;
  e = error_of([&] { causal_attention_forward_train(out, Tensor(), q, k, copy_of(v), mask, s.args(true)); });
  EXPECT_TRUE(mentions(e, "causal_attention_forward_train") && mentions(e, "one row stride")) << e;
  e = error_of([&] {
    causal_attention_forward_train(out, Tensor(), q, k, v, Tensor::zeros({s.B, s.T}, DType::f32), s.args(true));
  });
  EXPECT_TRUE(mentions(e, "causal_attention_forward_train") && mentions(e, "key_mask")) << e;
  e = error_of([&] { causal_attention_forward_train(out, Tensor(), q, k, v, labelled_cuda(mask), s.args(true)); });
  EXPECT_TRUE(mentions(e, "causal_attention_forward_train") && mentions(e, "is not on cpu")) << e;
  // dq must have q's row stride: a contiguous [N, H D] does not.
  Tensor d = Tensor::zeros({N, QKV}, DType::f32);
  Tensor dq = Tensor::zeros({N, HD}, DType::f32), dk = d.narrow(1, HD, KD), dv = d.narrow(1, HD + KD, KD);
  e = error_of([&] { causal_attention_backward(dq, dk, dv, dout, Tensor(), q, k, v, mask, s.args(true)); });
  EXPECT_TRUE(mentions(e, "causal_attention_backward") && mentions(e, "row strides")) << e;
  CausalAttentionArgs three_heads = s.args(true);
  three_heads.H = 3;
  e = error_of([&] { causal_attention_backward(dq, dk, dv, dout, Tensor(), q, k, v, mask, three_heads); });
  EXPECT_TRUE(mentions(e, "causal_attention")) << e;
}

TEST(TrainDecoderOps, GateBackwardRefusesAnotherDevice) {
  const int64_t N = 3, I = 4;
  const Tensor gate_up = random_normal(N, 2 * I, 31), dout = random_normal(N, I, 32);
  Tensor d = Tensor::empty({N, 2 * I}, DType::f32);
  std::string e = error_of([&] { silu_gate_backward(d, gate_up, labelled_cuda(dout)); });
  EXPECT_TRUE(mentions(e, "silu_gate_backward") && mentions(e, "is not on cpu")) << e;
  // All on CUDA: the gate's CUDA kernel runs (tests/cuda_train/elementwise.cc compares it with this one).
}

}  // namespace
}  // namespace tach::ops
