// Which kernels a training step's attention runs: cuDNN's fused flash attention (bf16, CUDA) or
// tach's own (f32, every device), and why. The choice is a pure function of the case, so that a
// unit test covers every branch on any machine; the steps make it when they size what a layer
// saves for its backward (cuDNN saves each query row's log-sum-exp, tach's kernels the
// probabilities), and the run records it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tach/device.h"
#include "tach/tensor.h"

namespace tach::ops {

enum class TrainAttentionKernel { tach, cudnn };

// What decides it. Sizes are the layer's; the environment's facts are read by
// train_attention_case below.
struct TrainAttentionCase {
  bool cuda = false;          // the step runs on a CUDA device
  bool bf16 = false;          // mixed precision: the GEMMs take bf16 inputs
  bool cudnn_loads = false;   // cuDNN 9 loads here
  std::string cudnn_missing;  // why it does not, when it does not
  bool forced_tach = false;   // TACH_TRAIN_ATTENTION=tach
  int64_t heads = 0, kv_heads = 0, head_size = 0, tokens = 0;
  bool first_queries_only = false;  // a sequence classifier's last layer: only the first token's row
  int64_t window = 0;               // a sliding window of keys (0: none)
  bool score_bias = false;          // a bias added to the scores (MPNet's relative positions)
};

struct TrainAttentionChoice {
  TrainAttentionKernel kernel = TrainAttentionKernel::tach;
  std::string why;  // tach's kernels: why cuDNN's did not run (empty: cuDNN runs)
  bool cudnn() const { return kernel == TrainAttentionKernel::cudnn; }
  // "cudnn fused attention, bf16" or "tach kernels, f32 (why)".
  std::string describe() const;
};

TrainAttentionChoice choose_train_attention(const TrainAttentionCase& c);

// TACH_TRAIN_ATTENTION's value: unset, empty or "auto" (choose), "tach" (tach's kernels
// everywhere, for A/B against cuDNN), "cudnn-refuses" (choose, then take every cuDNN attention
// graph as refused when it runs: the fallback below, on demand). Anything else is an error naming
// the choices.
enum class TrainAttentionSetting { choose, tach, cudnn_refuses };
TrainAttentionSetting train_attention_setting(const char* value);
// Whether the value forces tach's kernels ("tach").
bool train_attention_forced_to_tach(const char* value);

// The case on `device` in this process: the GEMMs' training precision (cpu::train_precision), whether
// cuDNN loads, and TACH_TRAIN_ATTENTION. The sizes are left for the caller.
TrainAttentionCase train_attention_case(Device device);
// The same for a step at the given precision (tach estimate, before any step runs).
TrainAttentionCase train_attention_case(Device device, bool bf16);

// A model's choices in words: its layers' one, and the last layer's where it differs (an
// encoder classifier's last layer answers its first token only).
std::string describe_train_attention(const TrainAttentionChoice& layers, const TrainAttentionChoice& last);

// What a layer keeps for its attention's backward with this choice: cuDNN's log-sum-exp per query
// row [B, H, T] f32; tach's probabilities [B, H, T, T] f32, or nothing under --exec fused (the
// backward recomputes them). An empty shape: nothing.
Shape train_attention_saved_shape(const TrainAttentionChoice& choice, bool fused, int64_t B, int64_t H, int64_t T);

// cuDNN can refuse at run time a shape the choice accepted: no engine finalizes the graph (cuDNN's
// heuristics and engines depend on the GPU, the driver and NVRTC), the workspace it asks for
// cannot be had, the execution fails, a cuDNN version whose backward is known to be wrong. Then
// the attention ops fall back to tach's own kernels for that shape, once and for the rest of the
// process, in both directions: the forward saves nothing for them (the layer's buffer holds
// cuDNN's log-sum-exp, not probabilities), so the backward recomputes the probabilities, as under
// --exec fused. Each refusal is said on stderr once and recorded for the run (summary.json
// attention): the kernels that ran never change silently.

// What a cuDNN attention graph is built for (ops/attention_cudnn.h): a refusal holds for the shape.
struct CudnnAttentionShape {
  int device = 0;
  int64_t B = 0, T = 0, H = 0, KVH = 0, D = 0;
  bool causal = false;
  // "[4, 128] x 14/2 heads of 64, causal"
  std::string describe() const;
};

// Runs `cudnn` (the op's call into cuDNN's fused attention; direction: "forward" or "backward")
// unless cuDNN refused this shape before. Returns true when it ran; false when the shape is
// refused, now (a tach::Error from `cudnn`, or TACH_TRAIN_ATTENTION=cudnn-refuses: recorded with
// its reason, and a warning on stderr) or before: the caller then runs tach's kernels.
// tach::Stopped (Ctrl-C) passes through.
bool run_cudnn_attention(const CudnnAttentionShape& shape, const char* direction, const std::function<void()>& cudnn);

// The run's record of the fallbacks: a mark taken before (a training step's construction), then
// the shapes that fell back to tach's kernels since, each with cuDNN's reason, in words (empty when
// none): "tach kernels, f32 for [4, 128] x 14/2 heads of 64, causal (cuDNN refused its forward at
// run time: ...)", one per shape, "; " between.
uint64_t cudnn_attention_fallback_mark();
std::string cudnn_attention_fallbacks_since(uint64_t mark);
// A choice's words with the fallbacks since `mark` after them ("; " between).
std::string with_cudnn_attention_fallbacks(const std::string& choice, uint64_t mark);

}  // namespace tach::ops
