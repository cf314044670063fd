// Which kernels inference attention runs on CUDA (ops/infer_attention_kernel.h): every branch of the
// choice, the padding a mask has, TACH_INFER_ATTENTION, the run's record of what ran, and the
// fallback to tach's kernels where cuDNN refuses a shape at run time. Pure functions: no GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ops/attention.h"
#include "ops/causal_attention.h"
#include "ops/infer_attention_kernel.h"
#include "tach/bench.h"
#include "tach/error.h"
#include "tach/tensor.h"

namespace tach::ops {
namespace {

// A bf16 model's encoder layer on a GPU where cuDNN 9.10 loads: cuDNN's case.
InferAttentionCase cudnn_case() {
  InferAttentionCase c;
  c.cuda = true, c.compute = DType::bf16, c.cudnn_loads = true, c.cudnn_version = 91002;
  c.heads = c.kv_heads = 12, c.head_size = 64, c.queries = c.keys = 128;
  c.padding = KeyPadding::right;
  return c;
}

// The reason tach's kernels run, with the kernel checked.
std::string why_tach(const InferAttentionCase& c) {
  const InferAttentionChoice choice = choose_infer_attention(c);
  EXPECT_FALSE(choice.cudnn());
  return choice.why;
}

bool says(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(InferAttentionKernel, CudnnRunsBf16AndF16ModelsWithTheirDtype) {
  InferAttentionCase c = cudnn_case();
  InferAttentionChoice choice = choose_infer_attention(c);
  EXPECT_TRUE(choice.cudnn());
  EXPECT_EQ(choice.why, "");
  EXPECT_EQ(choice.dtype, DType::bf16);
  c.compute = DType::f16;
  choice = choose_infer_attention(c);
  EXPECT_TRUE(choice.cudnn());
  EXPECT_EQ(choice.dtype, DType::f16);
  // A causal grouped-query prefill without padding (Qwen2.5-0.5B: 14 query heads on 2).
  c.heads = 14, c.kv_heads = 2, c.causal = true, c.padding = KeyPadding::none;
  EXPECT_TRUE(choose_infer_attention(c).cudnn());
  // A window as long as the keys hides none of them (Gemma 3's local layers on short prompts).
  c.window = 128;
  EXPECT_TRUE(choose_infer_attention(c).cudnn());
}

TEST(InferAttentionKernel, TachKernelsRunEverythingElseWithTheReason) {
  InferAttentionCase c = cudnn_case();
  c.cuda = false;
  EXPECT_TRUE(says(why_tach(c), "CUDA devices only"));
  c = cudnn_case(), c.compute = DType::f32;
  EXPECT_TRUE(says(why_tach(c), "the model computes in f32"));
  c = cudnn_case(), c.forced_tach = true;
  EXPECT_EQ(why_tach(c), "TACH_INFER_ATTENTION=tach");
  c = cudnn_case(), c.cudnn_loads = false, c.cudnn_missing = "libcudnn.so.9: not found";
  EXPECT_EQ(why_tach(c), "libcudnn.so.9: not found");
  c.cudnn_missing.clear();
  EXPECT_TRUE(says(why_tach(c), "does not load"));
  c = cudnn_case(), c.queries = 1, c.keys = 300;
  EXPECT_TRUE(says(why_tach(c), "decoding"));
  c = cudnn_case(), c.queries = c.keys = 1;  // a one-token prompt: one row too
  EXPECT_TRUE(says(why_tach(c), "decoding"));
  c = cudnn_case(), c.queries = 16, c.keys = 144;
  EXPECT_TRUE(says(why_tach(c), "cache of 128 keys"));
  c = cudnn_case(), c.head_size = 36;
  EXPECT_TRUE(says(why_tach(c), "head size 36"));
  c = cudnn_case(), c.head_size = 264;
  EXPECT_TRUE(says(why_tach(c), "up to 256"));
  c = cudnn_case(), c.kv_heads = 5;
  EXPECT_TRUE(says(why_tach(c), "5 key/value heads do not divide 12"));
  c = cudnn_case(), c.padding = KeyPadding::left;  // bidirectional: the padded rows' mean is tach's
  EXPECT_TRUE(says(why_tach(c), "left padding without a causal mask"));
  c = cudnn_case(), c.padding = KeyPadding::unknown;
  EXPECT_TRUE(says(why_tach(c), "not known to be right- or left-padded"));
}

// MPNet's bias, sliding windows and left-padded prompts run in cuDNN's graph where its version
// (and, for left padding's ragged offsets, the GPU) takes them; tach's kernels below, saying which.
TEST(InferAttentionKernel, WindowsBiasAndLeftPaddingFollowCudnnsSupport) {
  InferAttentionCase c = cudnn_case();  // cuDNN 9.10.2, bidirectional
  c.score_bias = true;
  EXPECT_TRUE(choose_infer_attention(c).cudnn());
  c = cudnn_case(), c.window = 64;  // right-padded: a padded row may see no real key
  EXPECT_TRUE(says(why_tach(c), "over right-padded rows")) << why_tach(c);
  c.padding = KeyPadding::none;  // ModernBERT's local layers: both sides, from 9.10.2
  EXPECT_TRUE(choose_infer_attention(c).cudnn());
  c.cudnn_version = 90800;
  EXPECT_TRUE(says(why_tach(c), "bidirectional sliding window of 64 keys over 128")) << why_tach(c);
  EXPECT_TRUE(says(why_tach(c), "9.10.2")) << why_tach(c);
  c.causal = true;  // Mistral's: a causal band from 9.2
  EXPECT_TRUE(choose_infer_attention(c).cudnn());
  c.score_bias = true;
  EXPECT_TRUE(says(why_tach(c), "with a score bias")) << why_tach(c);
  c.score_bias = false, c.cudnn_version = 90100;
  EXPECT_TRUE(says(why_tach(c), "causal windows from 9.2")) << why_tach(c);
  c.window = 128;  // as long as the keys: no window at all
  EXPECT_TRUE(choose_infer_attention(c).cudnn());

  c = cudnn_case(), c.causal = true, c.padding = KeyPadding::left, c.sm_major = 9;
  EXPECT_TRUE(choose_infer_attention(c).cudnn());
  c.sm_major = 8;  // ragged offsets before Hopper: from 9.18.1
  EXPECT_TRUE(says(why_tach(c), "sm_90")) << why_tach(c);
  c.cudnn_version = 91801;
  EXPECT_TRUE(choose_infer_attention(c).cudnn());
}

// Head sizes above 128 run from cuDNN 9.10 on (its attention support matrix); before, up to 128.
TEST(InferAttentionKernel, HeadSizesAbove128NeedCudnn910) {
  InferAttentionCase c = cudnn_case();
  c.head_size = 256;
  EXPECT_TRUE(choose_infer_attention(c).cudnn());
  c.cudnn_version = 90800;
  EXPECT_TRUE(says(why_tach(c), "up to 128"));
  c.head_size = 128;
  EXPECT_TRUE(choose_infer_attention(c).cudnn());
}

TEST(InferAttentionKernel, MaskPaddingIsReadOnTheHost) {
  const auto padding = [](const std::vector<int32_t>& mask, int64_t B, int64_t T) {
    return key_padding_of(mask.data(), B, T, T);
  };
  EXPECT_EQ(key_padding_of(nullptr, 2, 4, 4), KeyPadding::none);
  EXPECT_EQ(padding({1, 1, 1, 1, 1, 1}, 2, 3), KeyPadding::none);
  EXPECT_EQ(padding({1, 1, 1, 1, 0, 0}, 2, 3), KeyPadding::right);
  EXPECT_EQ(padding({1, 1, 1, 0, 0, 0}, 2, 3), KeyPadding::right);  // a row of padding only
  EXPECT_EQ(padding({1, 1, 1, 0, 1, 1}, 2, 3), KeyPadding::left);
  EXPECT_EQ(padding({0, 0, 1, 1, 1, 1}, 2, 3), KeyPadding::left);
  EXPECT_EQ(padding({1, 0, 1}, 1, 3), KeyPadding::unknown);        // a hole
  EXPECT_EQ(padding({0, 1, 0}, 1, 3), KeyPadding::unknown);        // padding both sides
  EXPECT_EQ(padding({1, 1, 0, 0, 1, 1}, 2, 3), KeyPadding::left);  // one row on each side: left keeps tach's
  // Rows of a wider cache mask, `stride` apart: only the first T columns count.
  const std::vector<int32_t> cache = {1, 1, 0, 0, 1, 1, 0, 0};
  EXPECT_EQ(key_padding_of(cache.data(), 2, 2, 4), KeyPadding::none);
  EXPECT_STREQ(key_padding_name(KeyPadding::right), "right");
  EXPECT_STREQ(key_padding_name(KeyPadding::left), "left");
}

TEST(InferAttentionKernel, EnvironmentForcesTachOrRefusesByName) {
  EXPECT_FALSE(infer_attention_forced_to_tach(nullptr));
  EXPECT_FALSE(infer_attention_forced_to_tach(""));
  EXPECT_FALSE(infer_attention_forced_to_tach("auto"));
  EXPECT_TRUE(infer_attention_forced_to_tach("tach"));
  try {
    infer_attention_forced_to_tach("cudnn");
    ADD_FAILURE() << "TACH_INFER_ATTENTION=cudnn was accepted";
  } catch (const UsageError& e) {
    EXPECT_TRUE(says(e.what(), "TACH_INFER_ATTENTION=cudnn")) << e.what();
    EXPECT_TRUE(says(e.what(), "'tach'")) << e.what();
  }
}

TEST(InferAttentionKernel, TheCpuCaseNeverAsksForCudnn) {
  const InferAttentionCase c = infer_attention_case(Device::cpu(), DType::bf16);
  EXPECT_FALSE(c.cuda);
  EXPECT_FALSE(choose_infer_attention(c).cudnn());
}

TEST(InferAttentionKernel, OpTableWordsNameTheKernel) {
  EXPECT_EQ(cudnn_attention_words(DType::bf16), "cudnn fused (bf16)");
  EXPECT_EQ(cudnn_attention_words(DType::f16), "cudnn fused (f16)");
  EXPECT_EQ(tach_attention_words(TachAttentionKernel::tiles), "tach tiles f32");
  EXPECT_EQ(tach_attention_words(TachAttentionKernel::rows), "tach rows f32");
  EXPECT_EQ(tach_attention_words(TachAttentionKernel::tiles, DType::bf16), "tach tiles bf16");
  EXPECT_EQ(tach_attention_words(TachAttentionKernel::rows, DType::f16), "tach rows f16");
}

// bf16/f16 activations go to cuDNN in place only where it can read them: 16-byte pointers, row
// strides of multiples of 8 elements; otherwise tach's kernels, saying so.
TEST(InferAttentionKernel, InPlaceOperandsMustSuitCudnnsVectors) {
  alignas(16) static char buffer[64];
  EXPECT_TRUE(cudnn_can_read({buffer, buffer + 32, nullptr}, {2304, 1536}));
  EXPECT_FALSE(cudnn_can_read({buffer + 2}, {2304}));
  EXPECT_FALSE(cudnn_can_read({buffer}, {2304, 36}));
  InferAttentionCase c = cudnn_case();
  c.activations = DType::bf16, c.aligned = false;
  EXPECT_TRUE(says(why_tach(c), "16-byte")) << why_tach(c);
  EXPECT_TRUE(says(why_tach(c), "bf16")) << why_tach(c);
}

// The activation contract's rules the ops check on any machine: the CPU runs f32 only, one
// dtype for every operand, the raw-pointer op's dtype said, and costs in the real element size.
TEST(InferAttentionKernel, AttentionDtypesAreCheckedByName) {
  const auto refused = [](const std::function<void()>& call, const std::string& part) {
    try {
      call();
      ADD_FAILURE() << "accepted; expected an error saying " << part;
    } catch (const Error& e) { EXPECT_TRUE(says(e.what(), part)) << e.what(); }
  };
  const Tensor q = Tensor::zeros({1, 4, 8}, DType::bf16), k16 = Tensor::zeros({1, 4, 8}, DType::f16);
  Tensor out = Tensor::zeros({1, 4, 8}, DType::bf16);
  refused([&] { attention_forward(out, q, q, q, Tensor(), 2, 0.5f); }, "no kernel for device cpu with dtype bf16");
  refused([&] { attention_forward(out, q, k16, q, Tensor(), 2, 0.5f); }, "one activation dtype");
  const Tensor i = Tensor::zeros({1, 4, 8}, DType::i32);
  Tensor iout = Tensor::zeros({1, 4, 8}, DType::i32);
  refused([&] { attention_forward(iout, i, i, i, Tensor(), 2, 0.5f); }, "f32, bf16 or f16");

  CausalAttentionArgs a;
  a.B = 1, a.Tq = 4, a.H = a.KVH = 2, a.D = 4, a.ld_q = a.ld_kv = a.ld_out = 8, a.batch_stride_kv = 32;
  a.mask_stride = 4, a.dtype = DType::bf16;
  std::vector<uint16_t> half(32);
  std::vector<float> f(32);
  refused([&] { causal_attention_forward(half.data(), half.data(), half.data(), half.data(), nullptr, a); },
          "no kernel for device cpu with dtype bf16");
  refused([&] { causal_attention_forward(f.data(), f.data(), f.data(), f.data(), nullptr, a); },
          "f32 pointers were given for bf16 operands");
  a.dtype = DType::f32;
  EXPECT_NO_THROW(causal_attention_forward(f.data(), f.data(), f.data(), f.data(), nullptr, a));

  // q, k, v and out move at their element size; the i32 mask at 4 bytes.
  const OpCost f32 = attention_cost(2, 64, 4, 32), bf16 = attention_cost(2, 64, 4, 32, -1, false, DType::bf16);
  EXPECT_DOUBLE_EQ(f32.flops, bf16.flops);
  EXPECT_DOUBLE_EQ(bf16.bytes_written * 2, f32.bytes_written);
  EXPECT_DOUBLE_EQ((bf16.bytes_read - 2 * 64 * 4) * 2, f32.bytes_read - 2 * 64 * 4);
  a.dtype = DType::f16;
  const OpCost causal16 = causal_attention_cost(a);
  a.dtype = DType::f32;
  EXPECT_DOUBLE_EQ(causal16.bytes_written * 2, causal_attention_cost(a).bytes_written);
}

TEST(InferAttentionKernel, TheRunRecordsWhatRanSinceAMark) {
  note_infer_attention("tach rows f32 (before the mark)");
  const uint64_t mark = infer_attention_mark();
  EXPECT_EQ(infer_attention_kernels_since(mark), "");
  note_infer_attention("cudnn fused (bf16)");
  note_infer_attention("tach rows f32 (one query row per sequence (decoding): tach's split-key kernel)");
  note_infer_attention("cudnn fused (bf16)");
  EXPECT_EQ(infer_attention_kernels_since(mark),
            "cudnn fused (bf16); tach rows f32 (one query row per sequence (decoding): tach's split-key kernel)");
  const uint64_t later = infer_attention_mark();
  note_infer_attention("tach rows f32 (before the mark)");  // seen before, and again since `later`
  EXPECT_EQ(infer_attention_kernels_since(later), "tach rows f32 (before the mark)");
}

// A refusal holds for its shape from then on (cuDNN is not asked again), is said once and recorded
// with cuDNN's reason; other shapes and dtypes are still asked; Ctrl-C passes through.
TEST(InferAttentionKernel, ARefusedShapeFallsBackToTachFromThenOn) {
  InferAttentionShape shape;
  shape.device = 7, shape.B = 3, shape.T = 17, shape.H = 4, shape.KVH = 2, shape.D = 8, shape.causal = true;
  const uint64_t mark = infer_attention_mark();
  int asked = 0;
  EXPECT_FALSE(run_cudnn_infer_attention(shape, [&] {
    ++asked;
    throw Error("no cuDNN engine can run it here");
  }));
  EXPECT_FALSE(run_cudnn_infer_attention(shape, [&] { ++asked; }));
  EXPECT_EQ(asked, 1);
  const std::string record = infer_attention_kernels_since(mark);
  EXPECT_TRUE(says(record, "[3, 17] x 4/2 heads of 8, causal, bf16")) << record;
  EXPECT_TRUE(says(record, "no cuDNN engine can run it here")) << record;
  EXPECT_TRUE(says(record, "tach kernels, f32 for")) << record;
  InferAttentionShape other = shape;
  other.dtype = DType::f16;
  EXPECT_TRUE(run_cudnn_infer_attention(other, [&] { ++asked; }));
  EXPECT_EQ(asked, 2);
  other.B = 4;
  EXPECT_THROW(run_cudnn_infer_attention(other, [] { throw Stopped("stopped"); }), Stopped);
  // A window, a bias and left padding are other graphs: a refusal of one leaves the others asked.
  InferAttentionShape windowed = shape;
  windowed.window = 64, windowed.left_padded = true, windowed.activations = DType::bf16;
  EXPECT_EQ(windowed.describe(), "[3, 17] x 4/2 heads of 8, causal, bf16, window 64, left-padded");
  EXPECT_TRUE(run_cudnn_infer_attention(windowed, [&] { ++asked; }));
  EXPECT_EQ(asked, 3);
}

// results.jsonl keeps a point's record of its attention's kernels; a line written before it was
// recorded reads as none.
TEST(InferAttentionKernel, ABenchPointKeepsItsAttentionRecord) {
  PointResult p;
  p.key.device = "cuda:0", p.key.dtype = "bf16";
  p.attention = "cudnn fused (bf16)";
  const std::string line = point_to_json(p);
  EXPECT_EQ(point_from_json(line, "test").attention, "cudnn fused (bf16)");
  std::string older = line;
  const std::string field = "\"attention\":\"cudnn fused (bf16)\",";
  ASSERT_NE(older.find(field), std::string::npos) << line;
  older.erase(older.find(field), field.size());
  EXPECT_EQ(point_from_json(older, "test").attention, "");
}

}  // namespace
}  // namespace tach::ops
