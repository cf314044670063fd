#include "prune/importance.h"

#include <algorithm>
#include <cmath>

#include "tach/error.h"
#include "tach/model.h"
#include "tach/tokenizer.h"
#include "train/classifier_loss.h"
#include "train/train_data.h"
#include "train/trainable_encoder.h"
#include "train/training_model.h"

namespace tach::prune {

namespace {

// Rows of this many examples per forward and backward; the scores do not depend on it (up to
// rounding), only the memory does.
constexpr int64_t kBatch = 8;

// The calibration examples with their labels. A file without the label column is a usage error
// naming the columns there are; any other problem is the reader's own error.
Dataset read_labelled(const DatasetOptions& d) {
  try {
    return read_dataset(d);
  } catch (const UsageError&) { throw; } catch (const Error&) {
    DatasetOptions texts = d;
    texts.label_column.clear();
    const Dataset unlabelled = read_dataset(texts);  // throws itself where the texts are the problem
    const auto& cols = unlabelled.columns;
    if (std::find(cols.begin(), cols.end(), d.label_column) != cols.end()) throw;
    std::string names;
    for (const auto& c : cols) names += (names.empty() ? "" : ", ") + c;
    throw UsageError("--by importance needs labelled calibration data: " + d.path + " has no label column '" +
                     d.label_column + "' (its columns: " + names + "); name it with --label-column");
  }
}

// The rows of the batch being scored: which tokens are real.
struct BatchRows {
  const int32_t* mask = nullptr;  // [B, T], 1 = a real token
  int64_t B = 0, T = 0;
};

// sums[u] += |sum over example b's real rows r and unit u's columns c of (x[r, c] - base[r, c]) * dx[r, c]|
// for every example b. x, base, dx: [rows, cols], rows = B * T (every token) or B (each
// sequence's first token); a unit is `width` adjacent columns. base undefined: zero.
void add_gate_gradients(const BatchRows& rows, const Tensor& x, const Tensor& base, const Tensor& dx, int64_t width,
                        std::vector<double>& sums) {
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
    for (size_t u = 0; u < dot.size(); ++u) sums[u] += std::fabs(dot[u]);
  }
}

// How a checkpoint was published: config.json's architecture, else its head.
std::string published_as(const train::TrainingModelSource& s) {
  const nlohmann::json& a = s.config_json.contains("architectures") ? s.config_json["architectures"] : nlohmann::json();
  if (a.is_array() && !a.empty() && a[0].is_string()) return "config.json's architecture: " + a[0].get<std::string>();
  return s.checkpoint_head == Head::none ? "a bare model" : std::string("a ") + head_name(s.checkpoint_head) + " model";
}

}  // namespace

void check_ranking_options(const PruneOptions& o, const model::ModelFamily& family) {
  usage_check(o.by == "magnitude" || o.by == "importance", "--by " + o.by + ": not one of magnitude, importance");
  if (o.by == "magnitude") {
    usage_check(o.data.path.empty(),
                "-d " + o.data.path + ": calibration data is for --by importance; --by magnitude reads none");
    return;
  }
  usage_check(!o.data.path.empty(),
              "--by importance needs labelled calibration data: -d DATASET (a sequence classifier's rows of text "
              "and label, as tach train reads them)");
  usage_check(o.calibration_samples > 0,
              "--calibration-samples " + std::to_string(o.calibration_samples) + ": must be 1 or more (an integer)");
  usage_check(o.max_length > 0, "--max-length " + std::to_string(o.max_length) + ": must be 1 or more (an integer)");
  usage_check(family.encoder != nullptr,
              "--by importance ranks the units of BERT, DistilBERT, RoBERTa, XLM-RoBERTa "
              "and MPNet encoders; " +
                  std::string(family.name) + " rank --by magnitude");
}

nlohmann::json calibration_json(const Calibration& c) {
  nlohmann::json j = {{"dataset", c.dataset},
                      {"samples", c.samples},
                      {"tokens", c.tokens},
                      {"loss", c.problem_type},
                      {"score", "mean over the examples of |dL/dgate|, not normalised per layer"}};
  if (!c.split.empty()) j["split"] = c.split;
  return j;
}

UnitScores importance_scores(const PruneOptions& o, const std::string& model_dir, Calibration* calibration) {
  train::TrainingModelSource src = train::open_training_model(model_dir, 0);
  check_ranking_options(o, *src.family);
  check(!src.is_decoder(), "--by importance ranks encoder units; " + o.model + " is a decoder");
  check(src.has_head(Head::sequence_classification),
        "--by importance ranks units by the loss of the model's own sequence classifier; " + o.model + " has none (" +
            published_as(src) + "): rank it --by magnitude, or train a classifier on it first (tach train)");
  for (int64_t l = 0; l < src.config.num_layers; ++l)
    check(src.config.heads_in_layer(l) == src.config.num_heads,
          "--by importance: " + o.model +
              " already has pruned_heads (config.json), which tach's backward does not build; rank it --by magnitude");

  // The first N labelled examples in file order (a JSON split file's "train" split, as tach train reads it).
  DatasetOptions d = o.data;
  if (d.split.empty()) d.split = "train";
  Dataset dataset = read_labelled(d);
  if (int64_t(dataset.examples.size()) > o.calibration_samples) dataset.examples.resize(size_t(o.calibration_samples));

  // transformers' rule where config.json names none: one output is a regression, more a single label.
  const std::string problem_type = !src.problem_type().empty()  ? src.problem_type()
                                   : src.id2label().size() == 1 ? "regression"
                                                                : "single_label_classification";
  std::vector<std::string> notes;
  std::unique_ptr<train::TrainableModel> model = train::build_trainable_model(
      src, src.id2label(), problem_type, 0, &notes, Head::sequence_classification, Device::cpu());
  auto& encoder = dynamic_cast<train::TrainableEncoder&>(*model);
  // Only activations' gradients are wanted: every weight frozen, so the backward computes none.
  for (train::Parameter& p : model->params.entries()) {
    p.trainable = false;
    p.grad = Tensor();
  }
  model->release_frozen_grads();

  const std::string tokenizer_path = o.tokenizer.empty() ? src.location.dir : o.tokenizer;
  check(!tokenizer_path.empty(), missing_tokenizer_message(o.model, src.family ? src.family->tokenizer_hint : ""));
  const std::unique_ptr<Tokenizer> tokenizer = Tokenizer::load(tokenizer_path);
  const int64_t max_length = std::min(o.max_length, model->max_tokens());
  const int32_t pad_id = int32_t(std::max<int64_t>(0, src.pad_token_id()));
  const train::TrainData data = train::prepare_train_data(dataset, *tokenizer, src.id2label(), problem_type, max_length,
                                                          false, pad_id, model->uses_token_types());
  // Without a pad token, padded rows could not be told apart: one example at a time.
  const int64_t batch_rows = src.pad_token_id() >= 0 ? kBatch : 1;

  const model::EncoderShape& shape = encoder.shape;
  const int64_t L = shape.layers, H = shape.heads, C = shape.hidden, I = shape.intermediate;
  using Sums = std::vector<std::vector<double>>;  // [layer][unit]
  Sums heads(static_cast<size_t>(L), std::vector<double>(static_cast<size_t>(H)));
  Sums neurons(static_cast<size_t>(L), std::vector<double>(static_cast<size_t>(I)));
  Sums layers(static_cast<size_t>(L), std::vector<double>(1));
  BatchRows rows;
  std::unique_ptr<train::ForwardState> state = model->new_state(false);
  const Tensor none;
  state->unit_gradients.attention = [&](int l, const Tensor& x, const Tensor& dx) {
    add_gate_gradients(rows, x, none, dx, C / H, heads[size_t(l)]);
  };
  state->unit_gradients.ffn = [&](int l, const Tensor& x, const Tensor& dx) {
    add_gate_gradients(rows, x, none, dx, 1, neurons[size_t(l)]);
  };
  state->unit_gradients.layer = [&](int l, const Tensor& in, const Tensor& out, const Tensor& dout) {
    add_gate_gradients(rows, out, in, dout, C, layers[size_t(l)]);
  };

  const train::DropoutRates no_dropout;
  int64_t tokens = 0;
  for (int64_t first = 0; first < data.size(); first += batch_rows) {
    std::vector<int64_t> idx;
    for (int64_t i = first; i < std::min(data.size(), first + batch_rows); ++i) idx.push_back(i);
    TokenBatch batch;
    train::Targets targets;
    train::make_batch(data, idx, &batch, &targets);
    rows = {batch.attention_mask.data<int32_t>(), batch.batch(), batch.seq_len()};
    tokens += batch.real_tokens();
    model->forward(*state, batch, no_dropout);
    const train::LossTargets loss =
        train::loss_targets(targets, Head::sequence_classification, batch.seq_len(), Device::cpu());
    const Tensor d_logits = Tensor::zeros(state->logits.shape(), DType::f32, Device::cpu(), MemoryCategory::workspace);
    // The losses average over the batch's rows; scaled by B, d_logits is each example's own loss's.
    train::classifier_loss(problem_type, state->logits, loss, d_logits, float(batch.batch()));
    model->backward(*state, batch, d_logits.data<float>(), no_dropout);
  }

  const double n = double(data.size());
  UnitScores s;
  for (int64_t l = 0; l < L; ++l) {
    for (double& x : heads[size_t(l)]) x /= n;
    for (double& x : neurons[size_t(l)]) x /= n;
    s.layers.push_back(layers[size_t(l)][0] / n);
  }
  s.heads = std::move(heads);
  s.neurons = std::move(neurons);
  if (calibration) {
    calibration->dataset = o.data.path;
    calibration->split = dataset.split;
    calibration->samples = data.size();
    calibration->tokens = tokens;
    calibration->problem_type = problem_type;
  }
  return s;
}

}  // namespace tach::prune
