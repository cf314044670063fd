// One training step, the piece that tach train's loop, tach profile --train (TrainStepper) and
// tach bench --train all run: the micro-batches' data, forward with the loss, and backward
// (gradients accumulated), then the gradient norm, clipping and the AdamW update. Each phase
// runs inside a profiler scope named as the phase and is timed on the steady clock.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "cpu/train_gemm.h"
#include "train/classifier_loss.h"
#include "train/data_parallel.h"
#include "train/distill.h"
#include "train/optimizer.h"
#include "train/trainable_model.h"

namespace tach::train {

// How the step runs: the execution, the optimizer and the loss.
struct StepSettings {
  bool fused = false;                   // --exec fused
  bool gradient_checkpointing = false;  // keep layer inputs only; recompute each layer in the backward
  DropoutRates dropout;                 // rates and seed; micro_batch is set per micro-batch
  int64_t grad_accumulation = 1;        // micro-batches in a full step: with the step, keys the masks
  AdamWConfig adam;
  DecayScope decay_scope = DecayScope::trainer;
  double max_grad_norm = 1.0;  // 0: no clipping
  std::string problem_type = "single_label_classification";
  // The GEMMs' inputs: f32, or bf16 (mixed precision, as torch.autocast runs linear and matmul:
  // f32 master weights, accumulation, norms, softmax, losses and AdamW).
  DType precision = DType::f32;
  // Under mpirun with several ranks: the rank's share of each batch, gradients summed over the
  // ranks (train/data_parallel.h). Null: one process.
  DataParallel* data_parallel = nullptr;
  // --distill-from: the teacher whose soft targets join the loss (train/distill.h). Null: none.
  const DistillTeacher* teacher = nullptr;
};

// Seconds per phase of one step. total is the step's wall time, so it also holds what no phase
// claims (zeroing the gradients, the loop itself).
struct StepSeconds {
  double data = 0, forward = 0, backward = 0, optimizer = 0, total = 0;
  double teacher = 0;  // distillation: the teacher's inference on the micro-batches (0 without one)
  // Data-parallel: the gradient all-reduces' time on the communication thread (most of it beside
  // the backward), and the part the step waited for after its backward (exposed).
  double communication = 0, communication_exposed = 0;
};

struct StepOutcome {
  double loss = 0;  // mean over the micro-batches
  // Distillation's two terms, each a mean over the micro-batches (loss = alpha · distill_loss +
  // (1 - alpha) · task_loss); without a teacher task_loss is the loss and distill_loss 0.
  double task_loss = 0, distill_loss = 0;
  double grad_norm = 0;  // before clipping; the loss when the loss is not finite
  StepSeconds seconds;
  int64_t tokens = 0, samples = 0;            // real (unpadded) tokens, rows: over every rank
  int64_t rank_tokens = 0, rank_samples = 0;  // this rank's share (the same in one process)
  bool updated = false;                       // false: the loss or the norm was not finite, the weights are untouched
};

// Fills micro-batch `index` (0-based within the step). Runs inside the step's data phase.
// The batch comes where the collator builds it (host memory); the step moves it.
using MicroBatchSource = std::function<void(int64_t index, TokenBatch* batch, Targets* targets)>;

class TrainingStep {
 public:
  TrainingStep(TrainableModel& model, const StepSettings& settings);
  // One optimizer step over `micro_batches` micro-batches; `step` (0-based, counted over the
  // run) and the micro-batch's index key the dropout masks, so a resumed run draws the masks of
  // an uninterrupted one.
  StepOutcome run(int64_t step, int64_t micro_batches, const MicroBatchSource& next, double lr);
  AdamWOptimizer& optimizer() { return optimizer_; }
  const StepSettings& settings() const { return settings_; }
  // Which kernels the attention ran in the last step, in words (ForwardState::attention_kernels;
  // empty before the first step), then each shape that ran tach's kernels since this step was made
  // because cuDNN refused it at run time, with cuDNN's reason (ops/train_attention_kernel.h).
  std::string attention_kernels() const;

 private:
  TrainableModel& model_;
  StepSettings settings_;
  AdamWOptimizer optimizer_;
  std::unique_ptr<ForwardState> state_;
  uint64_t attention_fallback_mark_ = 0;  // the cuDNN refusals before this step was made are another run's
};

struct PhaseSeconds {
  double forward = 0, backward = 0;
};

// Forward, loss (its gradient scaled by loss_scale: 1 / micro-batches per step) and backward;
// gradients accumulate. Returns the micro-batch's mean loss. batch and labels are on the model's
// device (the data phase put them there, and the masked LM's state.predicted_rows with them).
double forward_backward(TrainableModel& model, ForwardState& state, const TokenBatch& batch, const LossTargets& labels,
                        const std::string& problem_type, const DropoutRates& dropout, float loss_scale,
                        PhaseSeconds* seconds);

// The global L2 norm of the optimizer's gradients (before clipping). When it is finite, clips to
// max_grad_norm (0: no clipping) and updates at lr; when not, changes nothing.
double clip_and_update(AdamWOptimizer& optimizer, double lr, double max_grad_norm);

// What a bf16 run says about its GEMMs on `device`: a bf16 matmul here, or emulated (same numbers,
// no speed-up).
std::string bf16_training_note(Device device = Device::cpu());
// config.json's precision.gemm: how the GEMMs of a run at `precision` multiply on `device`.
std::string training_gemm_description(DType precision, Device device = Device::cpu());

// The GEMMs of a step (or an evaluation) at `precision` while it lives; the one place the train
// room sets it, until the linear op takes it as an argument.
class GemmPrecisionScope {
 public:
  explicit GemmPrecisionScope(DType precision);

 private:
  cpu::TrainPrecisionScope scope_;  // process-wide, restored when the scope ends
};

}  // namespace tach::train
