#include "ops/infer_attention_kernel.h"

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <vector>

#include "core/trace.h"
#include "tach/error.h"

#if TACH_HAS_CUDA
#include <cuda_runtime.h>

#include "cuda/cudnn_loader.h"
#include "cuda/cudnn_sdpa.h"
#endif

namespace tach::ops {

const char* key_padding_name(KeyPadding p) {
  switch (p) {
    case KeyPadding::none: return "none";
    case KeyPadding::right: return "right";
    case KeyPadding::left: return "left";
    case KeyPadding::unknown: break;
  }
  return "unknown";
}

KeyPadding key_padding_of(const int32_t* mask, int64_t B, int64_t T, int64_t stride) {
  if (mask == nullptr) return KeyPadding::none;
  bool padded = false, left = false;
  for (int64_t b = 0; b < B; ++b) {
    const int32_t* row = mask + b * stride;
    int64_t lead = 0;  // real keys first, then padding only: right padding
    while (lead < T && row[lead] != 0) ++lead;
    int64_t rest = lead;
    while (rest < T && row[rest] == 0) ++rest;
    if (rest == T) {
      padded = padded || lead < T;
      continue;
    }
    // Real keys after padding: left padding when the row is padding, then real keys to its end.
    if (lead != 0) return KeyPadding::unknown;
    while (rest < T && row[rest] != 0) ++rest;
    if (rest != T) return KeyPadding::unknown;
    left = true;
  }
  if (left) return KeyPadding::left;
  return padded ? KeyPadding::right : KeyPadding::none;
}

InferAttentionChoice choose_infer_attention(const InferAttentionCase& c) {
  const auto tach = [](std::string why) {
    return InferAttentionChoice{InferAttentionKernel::tach, std::move(why), DType::f32};
  };
  if (!c.cuda) return tach("cuDNN's fused attention runs on CUDA devices only");
  if (c.compute != DType::bf16 && c.compute != DType::f16)
    return tach("the model computes in " + std::string(dtype_name(c.compute)) +
                "; cuDNN's fused attention is for bf16 and f16 models");
  if (c.forced_tach) return tach("TACH_INFER_ATTENTION=tach");
  if (!c.cudnn_loads) return tach(c.cudnn_missing.empty() ? "cuDNN 9 does not load here" : c.cudnn_missing);
  if (c.queries == 1) return tach("one query row per sequence (decoding): tach's split-key kernel");
  if (c.queries != c.keys)
    return tach(std::to_string(c.queries) + " queries after a key/value cache of " +
                std::to_string(c.keys - c.queries) + " keys: the graph tach gives cuDNN has a query per key");
  // cuDNN 9 runs a prefill's forward for head sizes up to 256 from 9.10 on every architecture it
  // supports, up to 128 before (cuDNN's attention support matrix; cudnn-frontend 1.12 notes).
  const int64_t v = c.cudnn_version;  // 91002: 9.10.2
  const std::string cudnn = "cuDNN " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
                            std::to_string(v % 100) + "'s fused attention";
  const int64_t most = v >= 91000 ? 256 : 128;
  if (c.head_size % 8 != 0 || c.head_size > most)
    return tach("head size " + std::to_string(c.head_size) + ": " + cudnn + " takes multiples of 8 up to " +
                std::to_string(most));
  if (!c.aligned)
    return tach("the " + std::string(dtype_name(c.activations)) +
                " operands are not on 16-byte boundaries with row strides of multiples of 8 (cuDNN reads them in "
                "place in 16-byte vectors)");
  if (c.kv_heads <= 0 || c.heads % c.kv_heads != 0)
    return tach(std::to_string(c.kv_heads) + " key/value heads do not divide " + std::to_string(c.heads) +
                " query heads");
  if (c.padding == KeyPadding::unknown) return tach("a key mask not known to be right- or left-padded");
  // The version and architecture limits of cudnn-frontend's support surface for the composite
  // graph tach builds (node/sdpa_support_surface.h): a sliding window from 9.2 as a causal band,
  // either side of the diagonal and beside a score bias from 9.10.2; ragged offsets on Hopper and
  // later, or any GPU from 9.18.1.
  // A window as long as the keys hides none of them: the attention is exactly the full one.
  const bool window = c.window > 0 && c.window < c.keys;
  const std::string band = "a sliding window of " + std::to_string(c.window) + " keys over " + std::to_string(c.keys);
  if (window && c.causal && v < 90200) return tach(band + ": " + cudnn + " has causal windows from 9.2");
  if (window && !c.causal && v < 91002)
    return tach("a bidirectional " + band.substr(2) + ": " + cudnn + " has windows on both sides from 9.10.2");
  if (window && c.score_bias && v < 91002)
    return tach(band + " with a score bias: " + cudnn + " has them together from 9.10.2");
  // A right-padded row far enough past its real tokens sees none of them through the window:
  // transformers gives it the mean of every value (bidirectional) or tach's causal kernels zeros,
  // where cuDNN's fully masked row is its own. Left padding's rows of padding are zeroed instead.
  if (window && c.padding == KeyPadding::right)
    return tach(band +
                " over right-padded rows: a padded row past the window sees no real key, which tach's "
                "kernels answer as transformers does");
  if (c.padding == KeyPadding::left) {
    // Ragged rows leave the padded query rows out; a bidirectional padded row takes the mean of
    // every value in transformers (a first-token pooling may read it), so those keep tach's.
    if (!c.causal) return tach("left padding without a causal mask: the padded rows' mean of every value is tach's");
    if (c.sm_major < 9 && v < 91801)
      return tach("left padding: " + cudnn +
                  " takes the ragged offsets that start each row at its first real token "
                  "on Hopper GPUs (sm_90) and later, or from 9.18.1");
  }
  return {InferAttentionKernel::cudnn, "", c.compute};
}

bool cudnn_can_read(std::initializer_list<const void*> pointers, std::initializer_list<int64_t> row_strides) {
  for (const void* p : pointers)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  for (int64_t ld : row_strides)
    if (ld % 8 != 0) return false;
  return true;
}

bool infer_attention_forced_to_tach(const char* value) {
  const std::string v = value ? value : "";
  if (v.empty() || v == "auto") return false;
  if (v == "tach") return true;
  throw UsageError("TACH_INFER_ATTENTION=" + v +
                   ": inference attention's kernels are chosen by 'auto' (cuDNN's fused attention for bf16 and f16 "
                   "models on CUDA where it loads, tach's kernels otherwise) or forced to 'tach'");
}

#if TACH_HAS_CUDA
namespace {
// The compute capability's major of a device (0 where it cannot be read), asked once per device:
// every attention call of every layer makes the choice.
int sm_major_of(int device) {
  static std::mutex mutex;
  static std::map<int, int> majors;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = majors.find(device);
  if (it != majors.end()) return it->second;
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) major = 0;
  return majors[device] = major;
}
}  // namespace
#endif

InferAttentionCase infer_attention_case(Device device, DType compute) {
  InferAttentionCase c;
  c.cuda = device.kind == DeviceKind::cuda;
  c.compute = compute;
  c.forced_tach = infer_attention_forced_to_tach(std::getenv("TACH_INFER_ATTENTION"));
#if TACH_HAS_CUDA
  if (c.cuda && (compute == DType::bf16 || compute == DType::f16) && !c.forced_tach) {
    c.cudnn_loads = cuda::cudnn_sdpa_available(&c.cudnn_missing);
    c.cudnn_version = cuda::cudnn_version();
    c.sm_major = sm_major_of(device.index);
  }
#else
  c.cudnn_missing = "this tach was built without CUDA";
#endif
  return c;
}

std::string cudnn_attention_words(DType dtype) { return "cudnn fused (" + std::string(dtype_name(dtype)) + ")"; }

std::string tach_attention_words(TachAttentionKernel kernel, DType activations) {
  return std::string(kernel == TachAttentionKernel::tiles ? "tach tiles " : "tach rows ") +
         std::string(dtype_name(activations));
}

// concat, not operator+ chains: GCC 12's -Wrestrict false positive (bug 105329).
std::string InferAttentionShape::describe() const {
  return core::concat("[", B, ", ", T, "] x ", H, "/", KVH, " heads of ", D, causal ? ", causal, " : ", ",
                      dtype_name(dtype), window > 0 ? core::concat(", window ", window) : std::string(),
                      score_bias ? ", score bias" : "", left_padded ? ", left-padded" : "");
}

namespace {

// The words noted for the run, each with the count of notes when it was last noted (a mark
// compares with it), and the order each was first seen.
struct Notes {
  std::mutex mutex;
  std::map<std::string, uint64_t> used;
  std::vector<std::string> order;
  uint64_t count = 0;
};

// Never destroyed: an op may run while static objects are destroyed at exit.
Notes& notes() {
  static Notes* n = new Notes;
  return *n;
}

using ShapeKey = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, bool, int, int, int64_t, bool, bool>;

struct Refusals {
  std::mutex mutex;
  std::set<ShapeKey> shapes;
};

Refusals& refusals() {
  static Refusals* r = new Refusals;
  return *r;
}

}  // namespace

void note_infer_attention(const std::string& words) {
  Notes& n = notes();
  std::lock_guard<std::mutex> lock(n.mutex);
  auto [it, added] = n.used.emplace(words, 0);
  if (added) n.order.push_back(words);
  it->second = ++n.count;
}

uint64_t infer_attention_mark() {
  Notes& n = notes();
  std::lock_guard<std::mutex> lock(n.mutex);
  return n.count;
}

std::string infer_attention_kernels_since(uint64_t mark) {
  Notes& n = notes();
  std::lock_guard<std::mutex> lock(n.mutex);
  std::string words;
  for (const std::string& w : n.order) {
    if (n.used.at(w) <= mark) continue;
    if (!words.empty()) words += "; ";
    words += w;
  }
  return words;
}

bool run_cudnn_infer_attention(const InferAttentionShape& shape, const std::function<void()>& cudnn) {
  Refusals& r = refusals();
  const ShapeKey key{shape.device, shape.B,          shape.T,
                     shape.H,      shape.KVH,        shape.D,
                     shape.causal, int(shape.dtype), int(shape.activations),
                     shape.window, shape.score_bias, shape.left_padded};
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.shapes.count(key)) return false;
  }
  std::string reason;
  try {
    cudnn();
    return true;
  } catch (const Stopped&) { throw; } catch (const Error& e) {
    reason = e.what();
  }
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.shapes.insert(key);
  }
  const std::string in(dtype_name(shape.activations));
  note_infer_attention("tach kernels, " + in + " for " + shape.describe() +
                       " (cuDNN refused it at run time: " + reason + ")");
  // stderr, where every command's warnings go.
  std::cerr << "warning: cuDNN's fused attention refused the inference forward of " << shape.describe()
            << " at run time (" << reason << "); tach's own attention kernels (" << in
            << ") run that shape from now on\n";
  return false;
}

}  // namespace tach::ops
