// What the pruning tests share: a JSON file read whole, and pruning scores (nested lists) compared
// with a reference's within 1e-5 relative (the scores are norms summed in another order).
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

namespace tach::test {

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

inline void expect_scores_near(const nlohmann::json& got, const nlohmann::json& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i].is_array()) {
      expect_scores_near(got[i], want[i], what + "[" + std::to_string(i) + "]");
      continue;
    }
    const double w = want[i].get<double>(), g = got[i].get<double>();
    EXPECT_NEAR(g, w, 1e-5 * std::max(1.0, std::fabs(w))) << what << "[" << i << "]";
  }
}

}  // namespace tach::test
