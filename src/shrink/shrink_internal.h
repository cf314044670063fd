// What tach shrink's files share inside the room.
#pragma once

#include <string>

#include "tach/shrink.h"

namespace tach::shrink {

// A variant's sweep: the base run's settings at the variant's model and dtype, with the accuracy
// pass, as its own run in RUN_DIR/variants/<dir_name>/ (run_dir empty: the settings alone).
BenchConfig variant_config(const ShrinkOptions& options, const ShrinkVariant& variant, const std::string& run_dir);

}  // namespace tach::shrink
