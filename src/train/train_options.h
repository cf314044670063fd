// TrainOptions to and from JSON (a run's config.json, which --resume reads back) and from YAML
// (--config): one table of fields, so the three never disagree on a name.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "tach/train.h"

namespace tach::train {

nlohmann::json options_to_json(const TrainOptions& o);
TrainOptions options_from_json(const nlohmann::json& j, const std::string& source);
// Checks ranges and names; throws naming the option.
void validate_options(const TrainOptions& o);

}  // namespace tach::train
