#include "prune/importance.h"

#include <algorithm>
#include <cmath>

#include "tach/error.h"
#include "tach/model.h"
#include "tach/plain_number.h"
#include "tach/tokenizer.h"
#include "prune/calibration.h"
#include "train/head_loss.h"
#include "train/train_data.h"
#include "train/trainable_decoder.h"
#include "train/trainable_encoder.h"
#include "train/training_model.h"

namespace tach::prune {

namespace {

// Rows of this many examples per forward and backward; the scores do not depend on it (up to
// rounding), only the memory does.
constexpr int64_t kBatch = 8;

// The rows of the batch being scored: which tokens are real.
struct BatchRows {
  const int32_t* mask = nullptr;  // [B, T], 1 = a real token
  int64_t B = 0, T = 0;
};

// sums[index[u]] += |sum over example b's real rows r and unit u's columns c of (x[r, c] - base[r, c]) *
// dx[r, c]| for every example b. x, base, dx: [rows, cols], rows = B * T (every token) or B (each
// sequence's first token); a unit is `width` adjacent columns. base undefined: zero. index: the
// unit's place in sums (a head-pruned layer's kept heads at their original indices); null: u.
void add_gate_gradients(const BatchRows& rows, const Tensor& x, const Tensor& base, const Tensor& dx, int64_t width,
                        std::vector<double>& sums, const std::vector<int64_t>* index = nullptr) {
  const Tensor xc = x.contiguous(), dc = dx.contiguous(), bc = base.defined() ? base.contiguous() : Tensor();
  const int64_t R = xc.size(0), cols = xc.size(1), per_example = R / rows.B;
  const float* xp = xc.data<float>();
  const float* dp = dc.data<float>();
  const float* bp = bc.defined() ? bc.data<float>() : nullptr;
  std::vector<double> dot(size_t(cols / width));
  for (int64_t b = 0; b < rows.B; ++b) {
    std::fill(dot.begin(), dot.end(), 0.0);
    for (int64_t t = 0; t < per_example; ++t) {
      if (rows.mask[b * rows.T + t] == 0) continue;  // padding: no unit's contribution there counts
      const int64_t r = (b * per_example + t) * cols;
      for (int64_t c = 0; c < cols; ++c)
        dot[size_t(c / width)] += (double(xp[r + c]) - (bp ? bp[r + c] : 0.0)) * dp[r + c];
    }
    for (size_t u = 0; u < dot.size(); ++u) sums[index ? size_t((*index)[u]) : u] += std::fabs(dot[u]);
  }
}

// What the hooks' columns hold: the attention output projection's input is head_units units of
// head_width columns (an encoder's heads; a decoder's key/value groups, each the G = H / KVH query
// heads sharing a key/value head: transformers' repeat_kv gives query head h key/value head h / G,
// so a group's heads are adjacent); the FFN activation one column a neuron.
struct UnitLayout {
  int64_t layers = 0, hidden = 0, intermediate = 0, head_units = 0, head_width = 0;
};
UnitLayout unit_layout(const train::TrainableModel& model) {
  UnitLayout u;
  if (const auto* e = dynamic_cast<const train::TrainableEncoder*>(&model)) {
    const model::EncoderShape& s = e->shape;
    u = {s.layers, s.hidden, s.intermediate, s.heads, s.hidden / s.heads};
  } else {
    const model::DecoderConfig& c = dynamic_cast<const train::TrainableDecoder&>(model).config;
    u = {c.num_layers, c.hidden_size, c.intermediate_size, c.num_kv_heads, c.num_heads / c.num_kv_heads * c.head_dim};
  }
  return u;
}

// prune_scores.json's "loss": the loss the head trains with.
std::string loss_name(Head head, const std::string& problem_type) {
  switch (head) {
    case Head::token_classification: return "cross-entropy over the labelled tokens";
    case Head::question_answering: return "(cross-entropy of the start + of the end position) / 2";
    case Head::masked_lm: return "cross-entropy over the vocabulary at the masked tokens";
    default: return problem_type;
  }
}

}  // namespace

void check_ranking_options(const PruneOptions& o, const model::ModelFamily& /*family: every family ranks both ways*/) {
  usage_check(o.by == "magnitude" || o.by == "importance", "--by " + o.by + ": not one of magnitude, importance");
  if (o.by == "magnitude") {
    usage_check(o.data.path.empty(),
                "-d " + o.data.path + ": calibration data is for --by importance; --by magnitude reads none");
    return;
  }
  usage_check(!o.data.path.empty(),
              "--by importance needs labelled calibration data: -d DATASET (what tach train reads for the model's "
              "head: rows of text and label, tagged words, SQuAD questions, or texts for a masked LM)");
  usage_check(o.calibration_samples > 0,
              "--calibration-samples " + std::to_string(o.calibration_samples) + ": must be 1 or more (an integer)");
  usage_check(o.max_length > 0, "--max-length " + std::to_string(o.max_length) + ": must be 1 or more (an integer)");
  usage_check(o.doc_stride >= 0, "--doc-stride " + std::to_string(o.doc_stride) + ": must be 1 or more (an integer)");
}

nlohmann::json calibration_json(const Calibration& c) {
  nlohmann::json j = {
      {"dataset", c.dataset},     {"samples", c.samples},
      {"rows", c.rows},           {"tokens", c.tokens},
      {"head", c.head},           {"loss", c.loss},
      {"mean_loss", c.mean_loss}, {"score", "mean over the scored rows of |dL/dgate|, not normalised per layer"}};
  if (!c.split.empty()) j["split"] = c.split;
  if (c.doc_stride > 0) j["max_length"] = c.max_length, j["doc_stride"] = c.doc_stride;
  if (!c.masking.empty()) j["masking"] = c.masking;
  return j;
}

std::string calibration_text(const Calibration& c) {
  // A sequence classifier's loss is named by its problem_type; the others' are words already.
  const std::string loss = c.loss == "single_label_classification"  ? "cross-entropy"
                           : c.loss == "multi_label_classification" ? "binary cross-entropy with logits"
                           : c.loss == "regression"                 ? "mean squared error"
                                                                    : c.loss;
  return "scored on " + std::to_string(c.samples) + (c.samples == 1 ? " example" : " examples") + " of " + c.dataset +
         (c.split.empty() ? "" : " (split " + c.split + ")") + ": " + std::to_string(c.rows) +
         (c.rows == 1 ? " row" : " rows") + ", " + std::to_string(c.tokens) + " tokens\n" + "the " + c.head +
         " head's loss, " + loss + ": " + plain_number(c.mean_loss, 4) + " (mean over the rows scored)";
}

UnitScores importance_scores(const PruneOptions& o, const std::string& model_dir, Calibration* calibration) {
  train::TrainingModelSource src = train::open_training_model(model_dir, 0);
  check_ranking_options(o, *src.family);
  const CalibrationSet set = calibration_set(o, std::move(src));
  const Head head = set.head;
  train::TrainableModel& model = *set.model;
  const train::TrainData& data = set.data;
  // A per-token head's loss is a mean over the batch's labelled tokens (or windows), not of each
  // example's mean: its rows go one at a time, so that each row's gradient is its own loss's.
  const int64_t batch_rows = head == Head::sequence_classification ? kBatch : 1;

  const UnitLayout u = unit_layout(model);
  const int64_t L = u.layers, C = u.hidden, I = u.intermediate;
  using Sums = std::vector<std::vector<double>>;  // [layer][unit]
  Sums heads(static_cast<size_t>(L), std::vector<double>(static_cast<size_t>(u.head_units)));
  Sums neurons(static_cast<size_t>(L), std::vector<double>(static_cast<size_t>(I)));
  Sums layers(static_cast<size_t>(L), std::vector<double>(1));
  // A head-pruned encoder (config.json's pruned_heads, tach prune's output): layer l's context holds
  // the heads it kept, in order, each scored at its original index; the heads pruned before are NaN,
  // as --by magnitude leaves them, and the plan removes only heads that are left.
  std::vector<std::vector<int64_t>> kept_heads(static_cast<size_t>(L));
  const auto* encoder = dynamic_cast<const train::TrainableEncoder*>(&model);
  if (encoder && !encoder->config.pruned_heads.empty())
    for (int64_t l = 0; l < L; ++l) kept_heads[size_t(l)] = current_heads(encoder->config, l);
  BatchRows rows;
  std::unique_ptr<train::ForwardState> state = model.new_state(false);
  const Tensor none;
  state->unit_gradients.attention = [&](int l, const Tensor& x, const Tensor& dx) {
    const std::vector<int64_t>& kept = kept_heads[size_t(l)];
    add_gate_gradients(rows, x, none, dx, u.head_width, heads[size_t(l)], kept.empty() ? nullptr : &kept);
  };
  state->unit_gradients.ffn = [&](int l, const Tensor& x, const Tensor& dx) {
    add_gate_gradients(rows, x, none, dx, 1, neurons[size_t(l)]);
  };
  state->unit_gradients.layer = [&](int l, const Tensor& in, const Tensor& out, const Tensor& dout) {
    add_gate_gradients(rows, out, in, dout, C, layers[size_t(l)]);
  };

  const train::DropoutRates no_dropout;
  int64_t tokens = 0, scored = 0;
  double loss_sum = 0;  // each batch's mean loss times its rows
  for (int64_t first = 0; first < data.size(); first += batch_rows) {
    std::vector<int64_t> idx;
    for (int64_t i = first; i < std::min(data.size(), first + batch_rows); ++i) idx.push_back(i);
    TokenBatch batch;
    train::Targets targets;
    train::make_batch(data, idx, &batch, &targets, /*epoch=*/0);  // the masked LM: the first epoch's masks
    // A masked-LM text with no token chosen, or a sentence whose every labelled word was cut by
    // -s, has no loss (transformers' would be NaN): it is not scored.
    const bool per_token_labels = head == Head::masked_lm || head == Head::token_classification;
    if (per_token_labels && train::labelled_rows(targets).empty()) continue;
    if (head == Head::masked_lm) state->predicted_rows = train::labelled_rows(targets);
    rows = {batch.attention_mask.data<int32_t>(), batch.batch(), batch.seq_len()};
    tokens += batch.real_tokens();
    scored += batch.batch();
    model.forward(*state, batch, no_dropout);
    const train::LossTargets loss =
        train::loss_targets(targets, head, batch.seq_len(), Device::cpu(), &state->predicted_rows);
    const Tensor d_logits = Tensor::zeros(state->logits.shape(), DType::f32, Device::cpu(), MemoryCategory::workspace);
    // The losses average over the batch's rows; scaled by B, d_logits is each row's own loss's.
    loss_sum += double(batch.batch()) *
                train::head_loss(head, set.problem_type, state->logits, loss, d_logits, float(batch.batch()));
    model.backward(*state, batch, d_logits.data<float>(), no_dropout);
  }
  check(scored > 0, "--by importance: no row of -d " + o.data.path + " has a " +
                        (head == Head::masked_lm ? "masked token" : "labelled token") + " within -s " +
                        std::to_string(set.max_length) + " tokens, so there is no loss to score by");

  const double n = double(scored);
  UnitScores s;
  for (int64_t l = 0; l < L; ++l) {
    for (double& x : heads[size_t(l)]) x /= n;
    const std::vector<int64_t>& kept = kept_heads[size_t(l)];
    if (!kept.empty())
      for (int64_t h = 0; h < u.head_units; ++h)
        if (std::find(kept.begin(), kept.end(), h) == kept.end()) heads[size_t(l)][size_t(h)] = std::nan("");
    for (double& x : neurons[size_t(l)]) x /= n;
    s.layers.push_back(layers[size_t(l)][0] / n);
  }
  s.heads = std::move(heads);
  s.neurons = std::move(neurons);
  if (calibration) {
    calibration->dataset = o.data.path;
    calibration->split = set.split;
    calibration->samples = set.examples;
    calibration->rows = scored;
    calibration->tokens = tokens;
    calibration->head = set.head_label.empty() ? head_name(head) : set.head_label;
    calibration->loss =
        set.head_label == "causal-lm" ? "cross-entropy of each next token" : loss_name(head, set.problem_type);
    calibration->max_length = set.max_length;
    calibration->doc_stride = set.doc_stride;
    calibration->mean_loss = loss_sum / n;
    if (head == Head::masked_lm)
      calibration->masking = {{"seed", kMaskSeed},
                              {"epoch", 0},
                              {"probability", data.masking.probability},
                              {"rule", "tach train's first-epoch masks at its default --seed"}};
  }
  return s;
}

}  // namespace tach::prune
