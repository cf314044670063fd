#include "train/train_step.h"

#include <chrono>
#include <cmath>
#include <utility>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/train_gemm.h"
#include "ops/train_attention_kernel.h"
#include "tach/error.h"
#include "tach/profile.h"
#include "train/head_loss.h"

namespace tach::train {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A micro-batch as the step reads it: its ids, masks and the loss's labels on the model's device.
struct MicroBatch {
  TokenBatch batch;
  LossTargets labels;
  Tensor teacher_logits;         // distillation: laid out as the student's logits, on its device
  int64_t rows = 0, tokens = 0;  // this rank's rows and real tokens (0 rows: it sits this batch out)
  int64_t all_rows = 0;          // every rank's rows together
};

// The data phase: the collator's micro-batch (host memory), checked there by the model (which makes
// its position ids beside it: TrainableModel::prepare_batch) and, for the masked LM, the rows the
// head will run on; the labels copied to the model's device, once (the ids and masks follow
// after a teacher has read them where the collator made them: TokenBatch::on).
MicroBatch load_micro_batch(const MicroBatchSource& next, int64_t micro, const TrainableModel& model,
                            ForwardState& state, DataParallel* dp) {
  ProfileScope scope("data");
  MicroBatch m;
  Targets targets;
  next(micro, &m.batch, &targets);
  m.rows = m.batch.input_ids.defined() ? m.batch.batch() : 0;  // a rank may get none of a short last batch
  m.all_rows = dp ? dp->global_rows(m.rows) : m.rows;          // a collective: every rank, every micro-batch
  if (m.rows == 0) return m;
  m.tokens = m.batch.real_tokens();  // counted where the collator made the mask
  // The masked LM's head runs on the chosen tokens only: the others' logits reach no loss.
  if (model.head() == Head::masked_lm) state.predicted_rows = labelled_rows(targets);
  m.labels = loss_targets(targets, model.head(), m.batch.seq_len(), model.device, &state.predicted_rows);
  // Checked here, on the host, with what the forward needs made beside it (the encoders' positions):
  // the forward then reads no batch back from the device.
  model.prepare_batch(state, m.batch);
  return m;
}

// The teacher phase (distillation): the teacher's inference on the micro-batch as the collator
// made it (host memory), its logits left on the student's device.
void run_teacher(const DistillTeacher& teacher, MicroBatch& m, const ForwardState& state, const Device& device) {
  ProfileScope scope("teacher");
  m.teacher_logits = teacher.logits(m.batch, state.predicted_rows);
  synchronize(device);
}

// A micro-batch's loss as the step reads it once its backward has run: the task's, and with a
// teacher its distillation term, mixed as train/distill.h says.
struct MicroLoss {
  QueuedLoss task, distill;
  bool distilling = false;
};

// forward_backward with the loss left on the model's device (read once, at the step's end).
// teacher (null: none) and teacher_logits: distillation's term, mixed in.
MicroLoss queue_forward_backward(TrainableModel& model, ForwardState& state, const TokenBatch& batch,
                                 const LossTargets& labels, const std::string& problem_type,
                                 const DropoutRates& dropout, float loss_scale, PhaseSeconds* seconds,
                                 const DistillTeacher* teacher = nullptr, const Tensor& teacher_logits = Tensor()) {
  Tensor dlogits;
  auto t0 = std::chrono::steady_clock::now();
  MicroLoss loss;
  {
    ProfileScope scope("forward");
    model.forward(state, batch, dropout);
    // [B, L], or [B * T, L] for a per-token head: the loss's gradient accumulates into it (+=).
    dlogits = Tensor::zeros(state.logits.shape(), DType::f32, model.device, MemoryCategory::activations);
    const float alpha = teacher ? teacher->alpha() : 0.0f;
    loss.task = queue_head_loss(model.head(), problem_type, state.logits, labels, dlogits, (1.0f - alpha) * loss_scale);
    if (teacher) {
      loss.distilling = true;
      loss.distill = teacher->queue_loss(state.logits, teacher_logits, labels, dlogits, loss_scale);
    }
    // The phases are timed on the host clock: on a GPU each ends when its queued work does (a
    // wait, no copy; a no-op on the CPU).
    synchronize(model.device);
  }
  if (seconds) seconds->forward += seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  {
    ProfileScope scope("backward");
    model.backward(state, batch, dlogits.data<float>(), dropout);
    synchronize(model.device);
  }
  if (seconds) seconds->backward += seconds_since(t0);
  return loss;
}

}  // namespace

TrainingStep::TrainingStep(TrainableModel& model, const StepSettings& settings)
    : model_(model),
      settings_(settings),
      optimizer_(model.params, settings.adam, settings.decay_scope, settings.fused),
      state_(model.new_state(settings.fused)),
      attention_fallback_mark_(ops::cudnn_attention_fallback_mark()) {
  state_->checkpoint = settings.gradient_checkpointing;
}

std::string TrainingStep::attention_kernels() const {
  return ops::with_cudnn_attention_fallbacks(state_->attention_kernels, attention_fallback_mark_);
}

StepOutcome TrainingStep::run(int64_t step, int64_t micro_batches, const MicroBatchSource& next, double lr) {
  const auto t_step = std::chrono::steady_clock::now();
  const GemmPrecisionScope precision(settings_.precision);
  StepOutcome out;
  DataParallel* dp = settings_.data_parallel;
  model_.params.zero_grad();
  // Each micro-batch's loss with its weight, read once the backward has run (on a GPU the losses
  // stay there until then: no read-back between the forward and the backward).
  std::vector<std::pair<double, MicroLoss>> losses;
  for (int64_t micro = 0; micro < micro_batches; ++micro) {
    auto t0 = std::chrono::steady_clock::now();
    // The forward, the loss and the backward read only this: the micro-batch on the model's device.
    MicroBatch m = load_micro_batch(next, micro, model_, *state_, dp);
    out.seconds.data += seconds_since(t0);
    if (settings_.teacher && m.rows > 0) {
      t0 = std::chrono::steady_clock::now();
      run_teacher(*settings_.teacher, m, *state_, model_.device);
      out.seconds.teacher += seconds_since(t0);
    }
    t0 = std::chrono::steady_clock::now();
    m.batch = m.batch.on(model_.device);  // the data phase's last part, after the teacher read the host batch
    out.seconds.data += seconds_since(t0);
    const TokenBatch& batch = m.batch;
    const int64_t rows = m.rows, all_rows = m.all_rows;
    // This rank's share of the micro-batch's mean loss (1 in one process): see data_parallel.h.
    const double share = all_rows > 0 ? double(rows) / double(all_rows) : 0.0;
    const bool last = micro == micro_batches - 1;
    if (dp && last) {
      // The step's gradients are complete layer by layer in this backward: each bucket's
      // all-reduce starts as its last layer finishes.
      dp->reducer().begin();
      state_->layer_grads_ready = [dp](int layer) { dp->reducer().layer_done(layer); };
    }
    if (rows > 0) {
      check(batch.seq_len() <= model_.max_tokens(),
            "a row of " + std::to_string(batch.seq_len()) + " tokens is longer than the model's " +
                std::to_string(model_.max_tokens()) + " positions (max_position_embeddings)");
      DropoutRates r = settings_.dropout;
      // Each rank draws its own masks; one process (rank 0 of 1) draws those it always drew.
      r.micro_batch = (step * settings_.grad_accumulation + micro) * (dp ? dp->size() : 1) + (dp ? dp->rank() : 0);
      PhaseSeconds phase;
      losses.emplace_back(share, queue_forward_backward(model_, *state_, batch, m.labels, settings_.problem_type, r,
                                                        float(share / double(micro_batches)), &phase, settings_.teacher,
                                                        m.teacher_logits));
      out.seconds.forward += phase.forward;
      out.seconds.backward += phase.backward;
      out.rank_tokens += m.tokens;
      out.rank_samples += rows;
    }
    state_->layer_grads_ready = nullptr;
  }
  double task_sum = 0, distill_sum = 0;
  for (const auto& [share, loss] : losses) {
    task_sum += share * loss.task.read();
    if (loss.distilling) distill_sum += share * loss.distill.read();
  }
  out.tokens = out.rank_tokens, out.samples = out.rank_samples;
  if (dp) {
    const dist::ReduceTimes t = dp->reducer().finish();
    out.seconds.communication = t.communication_s;
    out.seconds.communication_exposed = t.exposed_s;
    double totals[4] = {task_sum, distill_sum, double(out.rank_tokens), double(out.rank_samples)};
    dp->comm().sum(totals, 4, "all_reduce of the step's loss and counts");
    task_sum = totals[0], distill_sum = totals[1], out.tokens = int64_t(totals[2]), out.samples = int64_t(totals[3]);
  }
  const double alpha = settings_.teacher ? settings_.teacher->alpha() : 0.0;
  out.task_loss = task_sum / double(micro_batches);
  out.distill_loss = distill_sum / double(micro_batches);
  out.loss = settings_.teacher ? alpha * out.distill_loss + (1.0 - alpha) * out.task_loss : out.task_loss;
  const auto t0 = std::chrono::steady_clock::now();
  out.grad_norm = std::isfinite(out.loss) ? clip_and_update(optimizer_, lr, settings_.max_grad_norm) : out.loss;
  synchronize(model_.device);  // the update's kernels are the optimizer phase's
  out.updated = std::isfinite(out.loss) && std::isfinite(out.grad_norm);
  out.seconds.optimizer = seconds_since(t0);
  out.seconds.total = seconds_since(t_step);
  return out;
}

double forward_backward(TrainableModel& model, ForwardState& state, const TokenBatch& batch, const LossTargets& labels,
                        const std::string& problem_type, const DropoutRates& dropout, float loss_scale,
                        PhaseSeconds* seconds) {
  return queue_forward_backward(model, state, batch, labels, problem_type, dropout, loss_scale, seconds).task.read();
}

GemmPrecisionScope::GemmPrecisionScope(DType precision)
    : scope_(precision == DType::bf16 ? cpu::TrainPrecision::bf16 : cpu::TrainPrecision::f32) {
  if (precision != DType::f32 && precision != DType::bf16)
    throw Error("training runs its GEMMs in f32 or bf16, not " + std::string(dtype_name(precision)));
}

std::string training_gemm_description(DType precision, Device device) {
  if (precision == DType::f32) return "f32";
  if (device.kind == DeviceKind::cuda) return "bf16 inputs, f32 accumulation (cuBLASLt)";
  return cpu::bf16_train_gemm_onednn() ? "bf16 inputs, f32 accumulation (oneDNN bf16 matmul)"
                                       : "bf16 emulated: inputs rounded to bf16, f32 GEMM";
}

std::string bf16_training_note(Device device) {
  if (device.kind == DeviceKind::cuda)
    return "bf16 mixed precision: f32 master weights and AdamW; every GEMM takes bf16 inputs and accumulates in f32 "
           "(cuBLASLt on " +
           device.str() + "); norms, softmax and the loss in f32";
  if (cpu::bf16_train_gemm_onednn() && !cpu::bf16_gemm_in_hardware())
    return "bf16 mixed precision: f32 master weights and AdamW; every GEMM takes bf16 inputs and accumulates in f32 "
           "on oneDNN's bf16 matmul, which this CPU runs without AVX512_BF16 or AMX (emulated in AVX-512): the "
           "numbers of bf16 training, slower than f32 here, not faster";
  if (cpu::bf16_train_gemm_onednn())
    return "bf16 mixed precision: f32 master weights and AdamW; every GEMM takes bf16 inputs and accumulates in f32 "
           "(oneDNN's bf16 matmul); norms, softmax and the loss in f32";
  return "bf16 mixed precision is emulated on this CPU: oneDNN " + cpu::onednn_version() +
         " has no bf16 matmul for it (no AVX-512), so every GEMM's inputs are rounded to bf16 and multiplied by the "
         "f32 GEMM: the numbers of bf16 training, slower than f32 here, not faster";
}

double clip_and_update(AdamWOptimizer& optimizer, double lr, double max_grad_norm) {
  ProfileScope scope("optimizer");
  return optimizer.clip_and_step(lr, max_grad_norm);  // the ops grad_norm and adamw, reading the norm in place
}

}  // namespace tach::train
