// A sentence-embedding model: any tach Model with pooling (and normalisation) after its last
// hidden states, as sentence-transformers runs Transformer → Pooling → Normalize.
#pragma once

#include <memory>

#include "model/sentence_config.h"
#include "tach/model.h"

namespace tach::model {

// Wraps inner: info() gains the embedding fields, embed() pools, everything else is inner's.
// An embedding dimension that does not match the model's hidden size is an error.
std::unique_ptr<Model> with_sentence_embedding(std::unique_ptr<Model> inner, const SentenceEmbeddingConfig& config);

}  // namespace tach::model
