// The training attention ops through cuDNN's fused attention (their bf16 path, ops/attention_cudnn.h)
// against tach's own f32 CUDA kernels on the same GPU operands: the encoders' with key padding
// and dropout, the decoders' causal and grouped-query; and whole bf16 training steps (an encoder,
// BERT-tiny, and a grouped-query decoder, Qwen2-tiny) that record the cuDNN choice, with 20 steps'
// losses near the f32 path's. Skipped without a GPU or without cuDNN, saying which; the choice
// itself is unit-tested on any machine (test_train_encoder_ops, TrainAttentionKernel*).
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_compare.h"
#include "ops/attention.h"
#include "ops/causal_attention.h"
#include "ops/train_attention_kernel.h"
#include "tach/estimate.h"
#include "train/train_step.h"
#include "train/training_model.h"

#if TACH_HAS_CUDA
#include "cuda/cudnn_sdpa.h"
#endif

namespace tach::test {
namespace {

// Skips without a GPU (CudaTest) or without cuDNN 9.
class CudaTrainCudnnAttention : public CudaTest {
 protected:
  void SetUp() override {
    CudaTest::SetUp();
    if (IsSkipped()) return;
#if TACH_HAS_CUDA
    std::string why;
    if (!cuda::cudnn_sdpa_available(&why)) GTEST_SKIP() << why;
#else
    GTEST_SKIP() << "built without CUDA";
#endif
  }
};

// Tolerances as the largest error over the largest value of tach's f32 result. cuDNN's side
// rounds q, k and v to bf16 (2^-9 relative each, so scores move by about 2^-8 of their size),
// feeds the probabilities to P·V in bf16 and rounds the output to bf16: a few 2^-8 of the values'
// scale forward. The backward rounds P, dS and dout once more before three more GEMMs and
// subtracts rowsum(dO∘O) taken from the rounded O: about twice that. tests/cuda_train/cudnn_sdpa.cc
// measures cuDNN alone against f64 on rounded inputs at 2e-2 and 5e-2; the unrounded f32 reference
// here adds the inputs' rounding.
constexpr double kForwardTol = 3e-2;
constexpr double kBackwardTol = 6e-2;

// [B, T] i32, right-padded: row b has T - 9b real tokens (at least 1), the rows a collator builds.
Tensor right_padded_mask(int64_t B, int64_t T) {
  Tensor m = Tensor::empty({B, T}, DType::i32);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < T; ++j) m.data<int32_t>()[b * T + j] = j < std::max<int64_t>(1, T - 9 * b) ? 1 : 0;
  return m;
}

struct Grads {
  Tensor out, dqkv;
};

// Encoder attention (attention_forward_train, attention_backward) on one fused GPU q|k|v: with
// probs [B, H, T, T] tach's f32 kernels run, with [B, H, T] cuDNN's.
Grads encoder_attention(bool cudnn, int64_t B, int64_t T, int64_t H, int64_t D, float dropout, uint64_t key,
                        const Tensor& qkv_host, const Tensor& dout_host, const Tensor& mask_host) {
  const int64_t C = H * D;
  const Tensor qkv = on_gpu(qkv_host).reshape({B, T, 3 * C}), dout = on_gpu(dout_host).reshape({B, T, C});
  const Tensor mask = on_gpu(mask_host);
  Tensor out = Tensor::zeros({B, T, C}, DType::f32, kGpu);
  Tensor dqkv = Tensor::zeros({B, T, 3 * C}, DType::f32, kGpu);
  const Tensor saved = Tensor::empty(cudnn ? Shape{B, H, T} : Shape{B, H, T, T}, DType::f32, kGpu);
  auto block = [&](const Tensor& t, int64_t i) { return t.narrow(2, i * C, C); };
  const float scale = 1.0f / std::sqrt(float(D));
  ops::attention_forward_train(out, saved, block(qkv, 0), block(qkv, 1), block(qkv, 2), mask, int(H), scale, dropout,
                               key);
  ops::attention_backward(block(dqkv, 0), block(dqkv, 1), block(dqkv, 2), Tensor(), Tensor(), dout, saved,
                          block(qkv, 0), block(qkv, 1), block(qkv, 2), mask, int(H), scale, dropout, key, Tensor(),
                          Tensor(), out);
  return {on_cpu(out), on_cpu(dqkv)};
}

TEST_F(CudaTrainCudnnAttention, EncoderWithPaddingMatchesTachsKernels) {
  const int64_t B = 3, T = 67, H = 4, D = 64, C = H * D;
  const Tensor qkv = random_tensor({B * T, 3 * C}, 1), dout = random_tensor({B * T, C}, 2);
  const Tensor mask = right_padded_mask(B, T);
  const Grads want = encoder_attention(false, B, T, H, D, 0.0f, 0, qkv, dout, mask);
  const Grads got = encoder_attention(true, B, T, H, D, 0.0f, 0, qkv, dout, mask);
  EXPECT_LT(scaled_error(got.out, want.out), kForwardTol);
  EXPECT_LT(scaled_error(got.dqkv, want.dqkv), kBackwardTol);
}

// Dropout: cuDNN multiplies by the keep mask tach's own kernels draw (ops/dropout's over element
// ((b*H + h)*T + i)*T + j), so both paths drop the same probabilities: they agree as without
// dropout. The forward is deterministic for one key, and another key drops others.
TEST_F(CudaTrainCudnnAttention, EncoderDropoutDropsWhatTachsKernelsDrop) {
  const int64_t B = 2, T = 64, H = 2, D = 64, C = H * D;
  const Tensor qkv = random_tensor({B * T, 3 * C}, 3), dout = random_tensor({B * T, C}, 4);
  const Tensor mask = right_padded_mask(B, T);
  const float p = 0.1f;
  const Grads want = encoder_attention(false, B, T, H, D, p, 77, qkv, dout, mask);
  const Grads got = encoder_attention(true, B, T, H, D, p, 77, qkv, dout, mask);
  EXPECT_LT(scaled_error(got.out, want.out), kForwardTol);
  EXPECT_LT(scaled_error(got.dqkv, want.dqkv), kBackwardTol);
  const Grads again = encoder_attention(true, B, T, H, D, p, 77, qkv, dout, mask);
  EXPECT_EQ(scaled_error(again.out, got.out), 0.0) << "one key, one forward";
  const Grads other = encoder_attention(true, B, T, H, D, p, 78, qkv, dout, mask);
  EXPECT_GT(scaled_error(other.out, got.out), kForwardTol) << "another key drops other probabilities";
  // Without dropout the outputs differ from both by about what p drops.
  const Grads none = encoder_attention(true, B, T, H, D, 0.0f, 77, qkv, dout, mask);
  EXPECT_GT(scaled_error(none.out, got.out), kForwardTol);
}

// Decoder attention (causal_attention_forward_train, causal_attention_backward) on one fused
// [N, (H + 2 KVH) D] q|k|v, as the decoders keep it.
Grads decoder_attention(bool cudnn, ops::CausalAttentionArgs a, const Tensor& qkv_host, const Tensor& dout_host,
                        const Tensor& mask_host) {
  const int64_t T = a.Tq, N = a.B * T, HD = a.H * a.D, KD = a.KVH * a.D;
  const Tensor qkv = on_gpu(qkv_host), dout = on_gpu(dout_host), mask = on_gpu(mask_host);
  const Tensor out = Tensor::zeros({N, HD}, DType::f32, kGpu);
  const Tensor dqkv = Tensor::zeros({N, HD + 2 * KD}, DType::f32, kGpu);
  const Tensor saved = Tensor::empty(cudnn ? Shape{a.B, a.H, T} : Shape{a.B, a.H, T, T}, DType::f32, kGpu);
  auto q = [&](const Tensor& t) { return t.narrow(1, 0, HD); };
  auto k = [&](const Tensor& t) { return t.narrow(1, HD, KD); };
  auto v = [&](const Tensor& t) { return t.narrow(1, HD + KD, KD); };
  ops::causal_attention_forward_train(out, saved, q(qkv), k(qkv), v(qkv), mask, a);
  ops::causal_attention_backward(q(dqkv), k(dqkv), v(dqkv), dout, saved, q(qkv), k(qkv), v(qkv), mask, a, out);
  return {on_cpu(out), on_cpu(dqkv)};
}

// Causal, and grouped-query: 8 query heads on 2 key/value heads (Llama's and Qwen's layout), and
// on 1 (multi-query); right padding; a bidirectional layer (ModernBERT's global ones) too.
TEST_F(CudaTrainCudnnAttention, CausalGroupedQueryMatchesTachsKernels) {
  struct Case {
    int64_t H, KVH;
    bool causal;
  };
  for (const Case c : {Case{8, 2, true}, Case{8, 1, true}, Case{4, 4, true}, Case{8, 2, false}}) {
    SCOPED_TRACE(std::to_string(c.H) + "/" + std::to_string(c.KVH) + (c.causal ? " causal" : " bidirectional"));
    ops::CausalAttentionArgs a;
    a.B = 2, a.Tq = 100, a.H = c.H, a.KVH = c.KVH, a.D = 64, a.scale = 0.125f, a.causal = c.causal;
    const int64_t N = a.B * a.Tq, width = (c.H + 2 * c.KVH) * a.D;
    const Tensor qkv = random_tensor({N, width}, 5), dout = random_tensor({N, c.H * a.D}, 6);
    const Tensor mask = right_padded_mask(a.B, a.Tq);
    const Grads want = decoder_attention(false, a, qkv, dout, mask);
    const Grads got = decoder_attention(true, a, qkv, dout, mask);
    EXPECT_LT(scaled_error(got.out, want.out), kForwardTol);
    EXPECT_LT(scaled_error(got.dqkv, want.dqkv), kBackwardTol);
  }
}

// ---- Whole bf16 steps ----

// A preset's classifier on the GPU with right-padded random rows (ids below 1000, lengths T down
// to T - 3(B - 1)).
struct BfStep {
  train::TrainingModelSource source;
  std::unique_ptr<train::TrainableModel> model;
  TokenBatch batch;
  train::Targets targets;
};

BfStep open_preset(const std::string& preset, int64_t B, int64_t T) {
  BfStep s;
  s.source = train::open_training_model("preset:" + preset, 0);
  s.model = train::build_trainable_model(s.source, s.source.id2label(), s.source.problem_type(), 0, nullptr,
                                         Head::sequence_classification, kGpu);
  std::vector<std::vector<int32_t>> rows;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int32_t> row;
    for (int64_t t = 0; t < T - 3 * b; ++t) row.push_back(int32_t(5 + (b * 131 + t * 17) % 997));
    rows.push_back(row);
    s.targets.classes.push_back(int32_t(b % 2));
  }
  s.batch = TokenBatch::from_rows(rows, 0);
  return s;
}

// Losses of `steps` AdamW steps at `precision` on the same batch, and the attention the step
// recorded.
std::vector<double> losses(BfStep& s, DType precision, int64_t steps, std::string* attention) {
  train::StepSettings settings;
  settings.precision = precision;
  settings.dropout = s.source.dropout(s.model->head());  // BERT's attention dropout: through cuDNN's mask
  settings.dropout.seed = 3;
  train::TrainingStep step(*s.model, settings);
  std::vector<double> out;
  for (int64_t i = 0; i < steps; ++i) {
    const train::StepOutcome o = step.run(
        i, 1,
        [&](int64_t, TokenBatch* b, train::Targets* t) {
          *b = s.batch;
          *t = s.targets;
        },
        1e-4);
    out.push_back(o.loss);
  }
  *attention = step.attention_kernels();
  return out;
}

// One bf16 step runs cuDNN's attention (the recorded choice says so; BERT-tiny's classifier keeps
// tach's kernels in its last, first-token-only layer), and 20 steps' losses stay near the f32
// path's (tach's kernels throughout): bf16 GEMMs and attention move each loss by well under 5%
// on these small models, a wrong mask or gradient by far more within a few steps.
TEST_F(CudaTrainCudnnAttention, Bf16StepsRunCudnnAndFollowTheF32Losses) {
  for (const char* preset : {"bert-tiny", "qwen2-tiny"}) {
    SCOPED_TRACE(preset);
    BfStep f32 = open_preset(preset, 4, 48), bf16 = open_preset(preset, 4, 48);
    std::string f32_attention, bf16_attention;
    const std::vector<double> want = losses(f32, DType::f32, 20, &f32_attention);
    const std::vector<double> got = losses(bf16, DType::bf16, 20, &bf16_attention);
    EXPECT_EQ(bf16_attention.rfind("cudnn fused attention, bf16", 0), 0u) << bf16_attention;
    EXPECT_EQ(f32_attention.rfind("tach kernels, f32", 0), 0u) << f32_attention;
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_LT(std::fabs(got[i] - want[i]), 0.05 * std::fabs(want[i])) << "step " << i;
  }
}

// TACH_TRAIN_ATTENTION=tach keeps tach's kernels in a bf16 step, saying so.
TEST_F(CudaTrainCudnnAttention, TheEnvironmentForcesTachsKernels) {
  ::setenv("TACH_TRAIN_ATTENTION", "tach", 1);
  BfStep s = open_preset("bert-tiny", 2, 16);
  std::string attention;
  (void)losses(s, DType::bf16, 1, &attention);
  ::unsetenv("TACH_TRAIN_ATTENTION");
  EXPECT_EQ(attention, "tach kernels, f32 (TACH_TRAIN_ATTENTION=tach)");
}

// tach estimate counts what a bf16 step on CUDA keeps: each layer's log-sum-exp in place of its
// probabilities (the classifier's last layer keeps tach's kernels and their probabilities).
TEST_F(CudaTrainCudnnAttention, TheEstimateCountsTheLogSumExpNotTheProbabilities) {
  EstimateInput in;
  in.model = "preset:bert-tiny";
  in.mode = "train-full";
  in.batch = 8, in.seq_len = 128, in.device = "cuda";
  auto activations = [&](const std::string& dtype, std::string* how) {
    in.dtype = dtype;
    for (const auto& l : estimate_memory(in).lines)
      if (l.name == "activations kept for the backward") {
        *how = l.how;
        return l.bytes;
      }
    return int64_t(0);
  };
  std::string f32_how, bf16_how;
  const int64_t f32 = activations("f32", &f32_how), bf16 = activations("bf16", &bf16_how);
  EXPECT_NE(bf16_how.find("B H T (cuDNN's log-sum-exp)"), std::string::npos) << bf16_how;
  EXPECT_EQ(f32_how.find("cuDNN"), std::string::npos) << f32_how;
  // BERT-tiny: 2 layers, 2 heads; the first layer's B H (T^2 - T) floats fewer.
  EXPECT_EQ(f32 - bf16, int64_t(4) * 8 * 2 * (128 * 128 - 128));
}

}  // namespace
}  // namespace tach::test
