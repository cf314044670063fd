#include "ops/train_attention_kernel.h"

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

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

TrainAttentionSetting train_attention_setting(const char* value) {
  const std::string v = value ? value : "";
  if (v.empty() || v == "auto") return TrainAttentionSetting::choose;
  if (v == "tach") return TrainAttentionSetting::tach;
  if (v == "cudnn-refuses") return TrainAttentionSetting::cudnn_refuses;
  throw UsageError("TACH_TRAIN_ATTENTION=" + v +
                   ": the training attention's kernels are chosen by 'auto' (cuDNN's fused attention in bf16 runs "
                   "on CUDA where it loads, tach's kernels otherwise), forced to 'tach', or chosen with every cuDNN "
                   "graph refused when it runs, to see the fallback to tach's kernels ('cudnn-refuses')");
}

bool train_attention_forced_to_tach(const char* value) {
  return train_attention_setting(value) == TrainAttentionSetting::tach;
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

std::string CudnnAttentionShape::describe() const {
  return "[" + std::to_string(B) + ", " + std::to_string(T) + ", " + std::to_string(H) + "/" + std::to_string(KVH) +
         " heads x " + std::to_string(D) + "]" + (causal ? " causal" : "");
}

namespace {

// A shape cuDNN refused: in which direction first, why, and when it last fell back (the count of
// fallbacks then, which the marks compare with).
struct Refusal {
  std::string direction, reason;
  uint64_t used = 0;
};

using ShapeKey = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;

struct Refusals {
  std::mutex mutex;
  std::map<ShapeKey, Refusal> by_shape;
  uint64_t fallbacks = 0;
  std::atomic<bool> any{false};  // read without the lock by every call until a first refusal
};

// Never destroyed: an op may run while static objects are destroyed at exit.
Refusals& refusals() {
  static Refusals* r = new Refusals;
  return *r;
}

ShapeKey key_of(const CudnnAttentionShape& s) { return {s.device, s.B, s.T, s.H, s.KVH, s.D, s.causal}; }

}  // namespace

bool run_cudnn_attention(const CudnnAttentionShape& shape, const char* direction, const std::function<void()>& cudnn) {
  Refusals& r = refusals();
  const ShapeKey key = key_of(shape);
  if (r.any.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.by_shape.find(key);
    if (it != r.by_shape.end()) {
      it->second.used = ++r.fallbacks;
      return false;
    }
  }
  std::string reason;
  if (train_attention_setting(std::getenv("TACH_TRAIN_ATTENTION")) == TrainAttentionSetting::cudnn_refuses) {
    reason = "TACH_TRAIN_ATTENTION=cudnn-refuses";
  } else {
    try {
      cudnn();
      return true;
    } catch (const Stopped&) {
      throw;  // Ctrl-C during the call: the run stops, cuDNN refused nothing
    } catch (const Error& e) {
      reason = e.what();  // cuDNN's words: what it refused, and why
    }
  }
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    Refusal& refusal = r.by_shape.emplace(key, Refusal{direction, reason, 0}).first->second;
    refusal.used = ++r.fallbacks;
    r.any.store(true, std::memory_order_release);
  }
  // stderr, where every command's warnings go.
  std::cerr << "warning: cuDNN's fused attention refused the " << direction << " of " << shape.describe()
            << " at run time (" << reason << "); tach's own attention kernels (f32) run that shape from now on\n";
  return false;
}

uint64_t cudnn_attention_fallback_mark() {
  Refusals& r = refusals();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.fallbacks;
}

std::string cudnn_attention_fallbacks_since(uint64_t mark) {
  Refusals& r = refusals();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::string words;
  for (const auto& [key, refusal] : r.by_shape) {
    if (refusal.used <= mark) continue;
    CudnnAttentionShape s;
    std::tie(s.device, s.B, s.T, s.H, s.KVH, s.D, s.causal) = key;
    if (!words.empty()) words += "; ";
    words += "tach kernels, f32 for " + s.describe() + " (cuDNN refused its " + refusal.direction +
             " at run time: " + refusal.reason + ")";
  }
  return words;
}

std::string with_cudnn_attention_fallbacks(const std::string& choice, uint64_t mark) {
  const std::string fallbacks = cudnn_attention_fallbacks_since(mark);
  if (fallbacks.empty()) return choice;
  return choice.empty() ? fallbacks : choice + "; " + fallbacks;
}

}  // namespace tach::ops
