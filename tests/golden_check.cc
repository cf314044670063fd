// Logits and hidden states against Hugging Face transformers, on models transformers itself
// wrote with save_pretrained (scripts/golden/make_encoder_fixtures.py).
#include "golden_check.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tach/model.h"
#include "test_util.h"

namespace tach {
namespace {

using json = nlohmann::json;

json read_json(const std::string& path) {
  std::ifstream f(path);
  return json::parse(f);
}

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
  const json e = read_json(dir + "/expected.json");
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
      const double err = test::max_relative_error(logits.data<float>() + r * want[r].size(), want[r].data(),
                                                  want[r].size(), kFloor);
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

}  // namespace test

}  // namespace tach
