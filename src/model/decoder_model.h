// Loading any decoder family's model behind tach/model.h (every decoder row of the family table
// points here).
#pragma once

#include <memory>

#include "model/checkpoint.h"
#include "model/decoder_config.h"
#include "model/family.h"
#include "tach/model.h"

namespace tach::model {

std::unique_ptr<Model> load_decoder(const ModelFamily& family, const ModelLocation& location,
                                    const LoadOptions& options);
ArchitectureSummary summarize_decoder(const ModelFamily& family, const ModelLocation& location);
ArchitectureSummary summarize_decoder_config(const DecoderConfig& config);
// A decoder family's row: what every decoder row shares (the task models' "model." prefix, the
// `score` head, `lm_head`, every linear as a LoRA target, this loader and summary) around its
// name, model_type, architectures and DecoderFamily.
ModelFamily decoder_family_row(const char* name, const char* model_type, const std::string& bare_architecture,
                               const std::string& classifier_architecture, const DecoderFamily* decoder,
                               const char* tokenizer_hint);
// A causal family's per-token heads as transformers' GenericForTokenClassification (`score`, with a
// bias, on every token's final hidden state) and GenericForQuestionAnswering (`qa_outputs` [2, C]:
// start and end) build them: "<stem>ForTokenClassification", "<stem>ForQuestionAnswering", the
// latter's body under qa_body_prefix ("transformer." where transformers kept that name).
ModelFamily with_per_token_heads(ModelFamily family, const std::string& stem, const std::string& qa_body_prefix);
// A decoder's config: a preset's, or the checkpoint's config.json.
DecoderConfig decoder_config_of(const ModelLocation& location);

}  // namespace tach::model
