// Loading a BERT or DistilBERT behind tach/model.h (the family table in model/family.cc points here).
#pragma once

#include <memory>

#include "model/checkpoint.h"
#include "model/family.h"
#include "tach/model.h"

namespace tach::model {

std::unique_ptr<Model> load_encoder(const ModelFamily& family, const ModelLocation& location,
                                    const LoadOptions& options);
ArchitectureSummary summarize_encoder(const ModelFamily& family, const ModelLocation& location);

}  // namespace tach::model
