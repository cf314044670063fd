// Logits and hidden states against Hugging Face transformers, on models transformers itself
// wrote with save_pretrained (scripts/golden/make_encoder_fixtures.py).
#include "golden_check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "tach/model.h"
#include "test_util.h"

namespace tach {
namespace {

using json = nlohmann::json;

TokenBatch batch_of(const json& e) {
  std::vector<std::vector<int32_t>> rows = e["input_rows"].get<std::vector<std::vector<int32_t>>>(), types;
  if (!e["token_type_rows"].is_null()) types = e["token_type_rows"].get<std::vector<std::vector<int32_t>>>();
  return TokenBatch::from_rows(rows, e["pad_id"].get<int32_t>(), types);
}

// Relative error is meaningless at zero, so the denominator has a floor of 1e-3 (logits here
// are O(0.1..1)).
constexpr double kFloor = 1e-3;

}  // namespace

namespace test {

void check_encoder_against_transformers(const std::string& dir, const LoadOptions& options, double tolerance) {
  SCOPED_TRACE(dir + " on " + options.device.str() + " in " + std::string(dtype_name(options.compute)));
  const json e = expected_json(dir);
  auto model = load_model(dir, options);
  EXPECT_EQ(model->info().architecture, e["architecture"].get<std::string>());
  EXPECT_EQ(model->info().weights_dtype, e["weights_dtype"].get<std::string>());
  TokenBatch batch = batch_of(e);
  if (e.contains("logits")) {
    Tensor logits = model->classify(batch);
    const auto want = e["logits"].get<std::vector<std::vector<float>>>();
    ASSERT_EQ(logits.size(0), int64_t(want.size()));
    for (size_t r = 0; r < want.size(); ++r) {
      ASSERT_EQ(logits.size(1), int64_t(want[r].size()));
      const double err =
          test::max_relative_error(logits.data<float>() + r * want[r].size(), want[r].data(), want[r].size(), kFloor);
      EXPECT_LT(err, tolerance) << "row " << r;
    }
  } else {
    Tensor h = model->hidden_states(batch);
    const auto want = e["last_hidden_state"].get<std::vector<std::vector<std::vector<float>>>>();
    const int64_t T = h.size(1), C = h.size(2);
    for (size_t r = 0; r < want.size(); ++r)
      for (size_t t = 0; t < want[r].size(); ++t) {
        // Hidden states are LayerNorm outputs of magnitude ~1 and f32 rounding leaves ~1e-6 of
        // absolute noise, which is 1e-4 relative only for elements below 1e-2: floor at 1e-2.
        const double err = test::max_relative_error(h.data<float>() + (int64_t(r) * T + int64_t(t)) * C,
                                                    want[r][t].data(), size_t(C), 1e-2);
        ASSERT_LT(err, tolerance) << "row " << r << " token " << t;
      }
  }
}

json expected_json(const std::string& dir) {
  std::ifstream f(dir + "/expected.json");
  return json::parse(f);
}

double scaled_error(const float* got, const std::vector<float>& want) {
  double err = 0, scale = 1e-3;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(want[i]));
    err = std::isnan(d) ? INFINITY : std::max(err, d);
    scale = std::max(scale, double(std::fabs(want[i])));
  }
  return err / scale;
}

void check_decoder_classifier_against_transformers(const Model& model, const std::string& dir) {
  SCOPED_TRACE(dir + " on " + model.info().device.str());
  const json e = expected_json(dir);
  const auto rows = e["input_rows"].get<std::vector<std::vector<int32_t>>>();
  const int32_t pad = e["pad_id"].get<int32_t>();
  for (bool left : {false, true}) {
    const Tensor logits = model.classify(padded_batch(rows, pad, left));
    ASSERT_EQ(logits.device(), Device::cpu()) << "results come back to the host";
    const auto want = e[left ? "logits_left" : "logits_right"].get<std::vector<std::vector<float>>>();
    ASSERT_EQ(logits.size(0), int64_t(want.size()));
    for (size_t r = 0; r < want.size(); ++r) {
      ASSERT_EQ(logits.size(1), int64_t(want[r].size()));
      // Element-wise 1e-4 relative (floor 1e-3), as the encoder goldens.
      EXPECT_LT(max_relative_error(logits.data<float>() + r * want[r].size(), want[r].data(), want[r].size(), kFloor),
                1e-4)
          << (left ? "left" : "right") << "-padded row " << r;
    }
  }
}

Generation check_decoder_lm_against_transformers(const Model& model, const std::string& dir) {
  SCOPED_TRACE(dir + " on " + model.info().device.str());
  const json e = expected_json(dir);
  const auto rows = e["input_rows"].get<std::vector<std::vector<int32_t>>>();
  const int32_t pad = e["pad_id"].get<int32_t>();
  const Tensor logits = model.lm_logits(padded_batch(rows, pad, false));
  const int64_t T = logits.size(1), V = logits.size(2);
  const auto want = e["lm_logits_right"].get<std::vector<std::vector<std::vector<float>>>>();
  // Vocabulary logits are O(1) and some of the 256 land near zero by cancellation, where f32
  // rounding (~1e-6 absolute) is more than 1e-4 of the element: the error is measured against
  // the row's scale (its largest |logit|), which is what 1e-4 relative means for a vector.
  double worst = 0;
  for (size_t r = 0; r < want.size(); ++r)
    for (size_t t = 0; t < want[r].size(); ++t)
      worst = std::max(worst, scaled_error(logits.data<float>() + (int64_t(r) * T + int64_t(t)) * V, want[r][t]));
  EXPECT_LT(worst, 1e-4);
  GenerateOptions go;
  go.max_new_tokens = e["new_tokens"].get<int64_t>();
  go.stop_at_eos = false;
  Generation g = model.generate(padded_batch(rows, pad, true), go);
  EXPECT_EQ(g.tokens, (e["generated"].get<std::vector<std::vector<int32_t>>>()));
  return g;
}

void check_hidden_states_against_transformers(const Model& model, const std::string& dir) {
  const nlohmann::json e = expected_json(dir);
  const auto rows = e["input_rows"].get<std::vector<std::vector<int32_t>>>();
  for (const bool left : {false, true}) {
    const Tensor h = model.hidden_states(padded_batch(rows, e["pad_id"].get<int32_t>(), left));
    const auto want = e[left ? "hidden_left" : "hidden_right"].get<std::vector<std::vector<std::vector<float>>>>();
    const int64_t T = h.size(1), C = h.size(2);
    for (size_t r = 0; r < rows.size(); ++r) {
      const int64_t first = left ? T - int64_t(rows[r].size()) : 0;
      for (size_t t = 0; t < rows[r].size(); ++t)
        EXPECT_LT(scaled_error(h.data<float>() + (int64_t(r) * T + first + int64_t(t)) * C, want[r][t]), 1e-4)
            << (left ? "left" : "right") << " row " << r << " token " << t;
    }
  }
}

namespace {

using Rows = std::vector<std::vector<int32_t>>;

std::string reduced_precision_dir() { return fixtures_dir() + "/reduced_precision"; }

// The reference's rows padded on `side` ("right", "left"), token types too (0 at padding).
TokenBatch reference_batch(const Rows& rows, const Rows& types, int32_t pad, const std::string& side) {
  if (side == "right") return TokenBatch::from_rows(rows, pad, types);
  TokenBatch b = TokenBatch::left_padded(rows, pad);
  if (types.empty()) return b;
  const int64_t B = b.batch(), T = b.seq_len();
  b.token_type_ids = Tensor::zeros({B, T}, DType::i32);
  for (int64_t r = 0; r < B; ++r) {
    const auto& t = types[size_t(r)];
    std::copy(t.begin(), t.end(), b.token_type_ids.data<int32_t>() + r * T + (T - int64_t(t.size())));
  }
  return b;
}

// One row of `rows` (and its types) as a batch of its own: no padding at all.
TokenBatch row_alone(const Rows& rows, const Rows& types, int32_t pad, size_t r) {
  return TokenBatch::from_rows({rows[r]}, pad, types.empty() ? Rows{} : Rows{types[r]});
}

// What the model gives for one batch, as the reference stores it: a classifier's logits [B][labels],
// vocabulary logits at each row's last real token [B][V] (`prefill`: through prefill_logits, else
// through lm_logits), or a bare model's hidden states at real tokens flattened per row [B][t * C].
std::vector<std::vector<float>> head_outputs(const Model& model, const std::string& kind, const TokenBatch& batch,
                                             const Rows& rows, bool left, bool prefill) {
  std::vector<std::vector<float>> out(rows.size());
  const int64_t T = batch.seq_len();
  auto first_of = [&](size_t r) { return left ? T - int64_t(rows[r].size()) : int64_t(0); };
  if (kind == "classifier" || (kind == "causal_lm" && prefill)) {
    const Tensor x = kind == "classifier" ? model.classify(batch) : model.prefill_logits(batch);
    const int64_t N = x.size(1);
    for (size_t r = 0; r < rows.size(); ++r)
      out[r].assign(x.data<float>() + int64_t(r) * N, x.data<float>() + (int64_t(r) + 1) * N);
  } else if (kind == "causal_lm") {
    const Tensor x = model.lm_logits(batch);  // [B, T, V]
    const int64_t V = x.size(2);
    for (size_t r = 0; r < rows.size(); ++r) {
      const float* last = x.data<float>() + (int64_t(r) * T + first_of(r) + int64_t(rows[r].size()) - 1) * V;
      out[r].assign(last, last + V);
    }
  } else {
    const Tensor h = model.hidden_states(batch);  // [B, T, C]
    const int64_t C = h.size(2);
    for (size_t r = 0; r < rows.size(); ++r) {
      const float* first = h.data<float>() + (int64_t(r) * T + first_of(r)) * C;
      out[r].assign(first, first + int64_t(rows[r].size()) * C);
    }
  }
  return out;
}

// The largest scaled error over the vectors the reference measures: a classifier's whole batch of
// logits as one vector (a head of one or two outputs can land near zero on a row by cancellation,
// where that row's own scale would make any absolute error huge), each row of vocabulary logits,
// each token's hidden state (`width` C: got and want hold a row's tokens one after another).
double reference_error(const std::vector<std::vector<float>>& got, const nlohmann::json& want, const std::string& kind,
                       int64_t width) {
  std::vector<std::vector<float>> w;
  for (const auto& row : want) {
    if (kind != "bare") {
      w.push_back(row.get<std::vector<float>>());
      continue;
    }
    w.emplace_back();
    for (const auto& token : row)
      for (const auto& v : token) w.back().push_back(v.get<float>());
  }
  if (got.size() != w.size()) return INFINITY;
  if (kind == "classifier") {
    std::vector<float> g, all;
    for (size_t r = 0; r < w.size(); ++r) {
      if (got[r].size() != w[r].size()) return INFINITY;
      g.insert(g.end(), got[r].begin(), got[r].end());
      all.insert(all.end(), w[r].begin(), w[r].end());
    }
    return scaled_error(g.data(), all);
  }
  double worst = 0;
  for (size_t r = 0; r < w.size(); ++r) {
    if (got[r].size() != w[r].size()) return INFINITY;
    const size_t step = kind == "bare" ? size_t(width) : w[r].size();
    for (size_t at = 0; at + step <= w[r].size(); at += step)
      worst = std::max(worst, scaled_error(got[r].data() + at, std::vector<float>(w[r].begin() + long(at),
                                                                                  w[r].begin() + long(at + step))));
  }
  return worst;
}

// Greedy tokens against the reference's, with the near-tie rule (golden_check.h). Returns the
// number of tokens compared.
size_t check_greedy_tokens(const Model& model, const ReducedPrecisionReference& ref, double tolerance) {
  const nlohmann::json& j = ref.j;
  const auto rows = j["input_rows"].get<Rows>();
  const auto want = j["generated"].get<Rows>();
  const auto margin = j["greedy_margin"].get<std::vector<std::vector<double>>>();
  const auto scale = j["greedy_scale"].get<std::vector<std::vector<double>>>();
  GenerateOptions go;
  go.max_new_tokens = j["new_tokens"].get<int64_t>();
  go.stop_at_eos = false;
  const Generation g = model.generate(TokenBatch::left_padded(rows, j["pad_id"].get<int32_t>()), go);
  EXPECT_EQ(g.tokens.size(), want.size()) << ref.name << ": rows generated";
  size_t compared = 0;
  for (size_t r = 0; r < std::min(g.tokens.size(), want.size()); ++r) {
    EXPECT_EQ(g.tokens[r].size(), want[r].size()) << ref.name << " row " << r << ": tokens generated";
    for (size_t s = 0; s < std::min(g.tokens[r].size(), want[r].size()); ++s, ++compared) {
      if (g.tokens[r][s] == want[r][s]) continue;
      const double near = 2 * tolerance * scale[r][s];
      if (margin[r][s] > near) {
        ADD_FAILURE() << ref.name << " row " << r << " step " << s << ": token " << g.tokens[r][s] << ", transformers "
                      << want[r][s] << ", whose margin over its second choice (" << margin[r][s]
                      << ") is more than 2 x tolerance x the step's largest |logit| (" << near << "): not a near tie";
      } else {
        std::cout << "[ near tie ] " << ref.name << " row " << r << " step " << s << ": token " << g.tokens[r][s]
                  << ", transformers " << want[r][s] << " with a margin of " << margin[r][s]
                  << " over its second choice, within 2 x tolerance x the step's largest |logit| (" << near
                  << "): the row's later tokens follow another prefix and are not compared\n";
      }
      break;
    }
  }
  return compared;
}

}  // namespace

std::vector<ReducedPrecisionReference> reduced_precision_references() {
  std::vector<ReducedPrecisionReference> out;
  for (const std::string& name : reduced_precision_reference_names()) out.push_back(reduced_precision_reference(name));
  return out;
}

std::vector<std::string> reduced_precision_reference_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(reduced_precision_dir(), ec))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

ReducedPrecisionReference reduced_precision_reference(const std::string& name) {
  ReducedPrecisionReference ref;
  ref.name = name;
  std::ifstream f(reduced_precision_dir() + "/" + name + ".json");
  ref.j = nlohmann::json::parse(f);
  ref.checkpoint = fixtures_dir() + "/" + ref.j.at("checkpoint").get<std::string>();
  ref.dtype = ref.j.at("dtype").get<std::string>() == "f16" ? DType::f16 : DType::bf16;
  return ref;
}

// Why this tolerance. Two implementations of a model in bf16 (transformers' and tach's) each round
// the weights, the residual stream, every GEMM's output and the attention to bf16 (8 significant
// bits, a relative step of 2^-8) at different places and in different orders, and the differences
// accumulate over the layers. Neither is closer to the exact answer than the other, so the distance
// between them is bounded by the sum of their distances from the f32 forward; the generator measures
// transformers' (f32_scaled_error, each padding side: 0.4% to 6% of the outputs' scale on these
// fixtures, most near 1.5%), and tach's is of the same kind and size (tach's CPU bf16, whose GEMM
// inputs alone are rounded, lands at 0.3x to 0.8x of this tolerance: test_golden_reduced_precision). 3x the largest of them leaves
// room for tach's own rounding to land 2x further from f32 than transformers' does, while a wrong
// mask, position or norm moves the outputs by their whole scale. Where the measured distance is
// small, 4 units of the dtype's rounding is the floor: the outputs themselves are rounded to the
// dtype on both sides. f16 (10 bits) gives the same rule with 2^-10.
double reduced_precision_tolerance(const ReducedPrecisionReference& ref) {
  const double unit = ref.dtype == DType::f16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -8);
  double measured = 0;
  if (ref.j.contains("f32_scaled_error"))
    for (const auto& [side, err] : ref.j["f32_scaled_error"].items()) measured = std::max(measured, err.get<double>());
  return std::max(3 * measured, 4 * unit);
}

void check_against_reduced_precision_reference(const Model& model, const ReducedPrecisionReference& ref,
                                               double tolerance) {
  const nlohmann::json& j = ref.j;
  SCOPED_TRACE(ref.name + " on " + model.info().device.str());
  EXPECT_EQ(model.info().architecture, j["architecture"].get<std::string>());
  const std::string kind = j["kind"].get<std::string>();
  const auto rows = j["input_rows"].get<Rows>();
  const Rows types = j["token_type_rows"].is_null() ? Rows{} : j["token_type_rows"].get<Rows>();
  const int32_t pad = j["pad_id"].get<int32_t>();
  const int64_t width = kind == "bare" ? model.info().hidden_size : 0;
  double worst = 0;
  if (j.contains("outputs")) {
    for (const bool prefill : kind == "causal_lm" ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
      const std::string via = kind != "causal_lm" ? "" : prefill ? " (prefill_logits)" : " (lm_logits)";
      for (const std::string side : {"right", "left"}) {
        const auto got =
            head_outputs(model, kind, reference_batch(rows, types, pad, side), rows, side == "left", prefill);
        const double err = reference_error(got, j["outputs"][side], kind, width);
        worst = std::max(worst, err);
        EXPECT_LE(err, tolerance) << side << "-padded" << via << "; transformers' f32 forward is "
                                  << j["f32_scaled_error"][side] << " from this reference";
      }
      std::vector<std::vector<float>> alone;
      for (size_t r = 0; r < rows.size(); ++r)
        alone.push_back(head_outputs(model, kind, row_alone(rows, types, pad, r), {rows[r]}, false, prefill)[0]);
      const double err = reference_error(alone, j["outputs"]["unpadded"], kind, width);
      worst = std::max(worst, err);
      EXPECT_LE(err, tolerance) << "each row alone" << via << "; transformers' f32 forward is "
                                << j["f32_scaled_error"]["unpadded"] << " from this reference";
    }
  }
  std::string greedy;
  if (kind == "causal_lm") {
    const size_t compared = check_greedy_tokens(model, ref, tolerance);
    greedy = ", greedy tokens compared " + std::to_string(compared) + "/" +
             std::to_string(rows.size() * j["new_tokens"].get<size_t>());
  }
  std::cout << "[ reference ] " << ref.name << " on " << model.info().device.str() << ": "
            << (j.contains("outputs") ? "largest scaled error " + std::to_string(worst)
                                      : std::string("no outputs stored (a vocabulary too large to keep)"))
            << " (tolerance " << tolerance << ")" << greedy << "\n";
}

}  // namespace test

}  // namespace tach
