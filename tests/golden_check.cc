// Logits and hidden states against Hugging Face transformers, on models transformers itself
// wrote with save_pretrained (scripts/golden/make_encoder_fixtures.py).
#include "golden_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
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

}  // namespace test

}  // namespace tach
