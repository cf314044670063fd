// Loading any decoder family's model behind tach/model.h (every decoder row of the family table
// points here).
#pragma once

#include <memory>

#include "model/checkpoint.h"
#include "model/decoder_config.h"
#include "model/family.h"
#include "tach/model.h"

namespace tach::model {

std::unique_ptr<Model> load_decoder(const ModelFamily& family, const ModelLocation& location, const LoadOptions& options);
ArchitectureSummary summarize_decoder(const ModelFamily& family, const ModelLocation& location);
ArchitectureSummary summarize_decoder_config(const DecoderConfig& config);
// A decoder's config: a preset's, or the checkpoint's config.json.
DecoderConfig decoder_config_of(const ModelLocation& location);

}  // namespace tach::model
