// The pieces of one training step, shared by tach train's loop and TrainStepper (tach profile
// --train): a micro-batch's forward, loss and backward; then the gradient norm, clipping and
// the optimizer update. Each phase runs inside a profiler scope named as the phase.
#pragma once

#include <string>

#include "train/classifier_loss.h"
#include "train/optimizer.h"
#include "train/trainable_model.h"

namespace tach::train {

struct PhaseSeconds {
  double forward = 0, backward = 0;
};

// Forward, loss (its gradient scaled by loss_scale: 1 / micro-batches per step) and backward;
// gradients accumulate. Returns the micro-batch's mean loss.
double forward_backward(TrainableModel& model, ForwardState& state, const TokenBatch& batch,
                        const Targets& targets, const std::string& problem_type, const DropoutRates& dropout,
                        float loss_scale, PhaseSeconds* seconds);

// The global L2 norm of the trainable gradients (before clipping). When it is finite, clips to
// max_grad_norm (0: no clipping) and updates at lr; when not, changes nothing.
// What a bf16 run says about its GEMMs: a bf16 matmul here, or emulated (same numbers, no speed-up).
std::string bf16_training_note();

double clip_and_update(ParameterTable& params, AdamWOptimizer& optimizer, double lr, double max_grad_norm);

}  // namespace tach::train
