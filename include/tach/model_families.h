// The model families tach builds, for help texts and messages: one list, from the family table.
#pragma once

#include <string>

namespace tach {

// Every config.json model_type tach builds (and trains), in the family table's order:
// "bert, distilbert, roberta, ...".
std::string model_types_text();

}  // namespace tach
