#include "ops/train_attention_kernel.h"

#include <cstdlib>
#include <string>

#include "cpu/train_gemm.h"
#include "tach/error.h"

#if TACH_HAS_CUDA
#include "cuda/cudnn_sdpa.h"
#endif

namespace tach::ops {

std::string TrainAttentionChoice::describe() const {
  return cudnn() ? "cudnn fused attention, bf16" : "tach kernels, f32" + (why.empty() ? "" : " (" + why + ")");
}

TrainAttentionChoice choose_train_attention(const TrainAttentionCase& c) {
  const auto tach = [](std::string why) { return TrainAttentionChoice{TrainAttentionKernel::tach, std::move(why)}; };
  if (!c.cuda) return tach("cuDNN's fused attention runs on CUDA devices only");
  if (!c.bf16) return tach("the step computes in f32; cuDNN's fused attention is for bf16 runs");
  if (c.forced_tach) return tach("TACH_TRAIN_ATTENTION=tach");
  if (!c.cudnn_loads) return tach(c.cudnn_missing.empty() ? "cuDNN 9 does not load here" : c.cudnn_missing);
  if (c.head_size % 8 != 0 || c.head_size > 256)
    return tach("head size " + std::to_string(c.head_size) +
                ": cuDNN's fused attention takes multiples of 8 up to 256");
  if (c.kv_heads <= 0 || c.heads % c.kv_heads != 0)
    return tach(std::to_string(c.kv_heads) + " key/value heads do not divide " + std::to_string(c.heads) +
                " query heads");
  if (c.score_bias) return tach("a bias on the scores (relative positions) is not in the graph tach gives cuDNN");
  // A window as long as the rows hides no key: the attention is exactly the full one.
  if (c.window > 0 && c.window < c.tokens)
    return tach("a sliding window of " + std::to_string(c.window) + " keys over " + std::to_string(c.tokens) +
                " tokens is not in the graph tach gives cuDNN");
  if (c.first_queries_only) return tach("a classifier's last layer answers its first token only");
  return {TrainAttentionKernel::cudnn, ""};
}

bool train_attention_forced_to_tach(const char* value) {
  const std::string v = value ? value : "";
  if (v.empty() || v == "auto") return false;
  if (v == "tach") return true;
  throw UsageError("TACH_TRAIN_ATTENTION=" + v +
                   ": the training attention's kernels are chosen by 'auto' (cuDNN's fused attention in bf16 runs "
                   "on CUDA where it loads, tach's kernels otherwise) or forced to 'tach'");
}

TrainAttentionCase train_attention_case(Device device) {
  return train_attention_case(device, cpu::train_precision() == cpu::TrainPrecision::bf16);
}

TrainAttentionCase train_attention_case(Device device, bool bf16) {
  TrainAttentionCase c;
  c.cuda = device.kind == DeviceKind::cuda;
  c.bf16 = bf16;
  c.forced_tach = train_attention_forced_to_tach(std::getenv("TACH_TRAIN_ATTENTION"));
#if TACH_HAS_CUDA
  if (c.cuda && c.bf16 && !c.forced_tach) c.cudnn_loads = cuda::cudnn_sdpa_available(&c.cudnn_missing);
#else
  c.cudnn_missing = "this tach was built without CUDA";
#endif
  return c;
}

std::string describe_train_attention(const TrainAttentionChoice& layers, const TrainAttentionChoice& last) {
  if (layers.kernel == last.kernel) return layers.describe();
  return layers.describe() + "; the last layer: " + last.describe();
}

Shape train_attention_saved_shape(const TrainAttentionChoice& choice, bool fused, int64_t B, int64_t H, int64_t T) {
  if (choice.cudnn()) return {B, H, T};
  if (fused) return {};
  return {B, H, T, T};
}

}  // namespace tach::ops
