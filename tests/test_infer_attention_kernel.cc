// Which kernels inference attention runs on CUDA (ops/infer_attention_kernel.h): every branch of the
// choice, the padding a mask has, TACH_INFER_ATTENTION, the run's record of what ran, and the
// fallback to tach's kernels where cuDNN refuses a shape at run time. Pure functions: no GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/infer_attention_kernel.h"
#include "tach/bench.h"
#include "tach/error.h"

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
  c = cudnn_case(), c.score_bias = true;
  EXPECT_TRUE(says(why_tach(c), "relative positions"));
  c = cudnn_case(), c.window = 64;
  EXPECT_TRUE(says(why_tach(c), "sliding window of 64 keys over 128"));
  c = cudnn_case(), c.padding = KeyPadding::left;
  EXPECT_TRUE(says(why_tach(c), "left padding"));
  c = cudnn_case(), c.padding = KeyPadding::unknown;
  EXPECT_TRUE(says(why_tach(c), "not known to be right-padded"));
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
  InferAttentionShape other = shape;
  other.dtype = DType::f16;
  EXPECT_TRUE(run_cudnn_infer_attention(other, [&] { ++asked; }));
  EXPECT_EQ(asked, 2);
  other.B = 4;
  EXPECT_THROW(run_cudnn_infer_attention(other, [] { throw Stopped("stopped"); }), Stopped);
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
