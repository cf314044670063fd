// What tach classify shows of a per-token head (token classification, question answering, masked
// LM): its raw outputs for each row's real tokens, as JSON and as one line for the terminal.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "tach/model.h"

namespace tach::cli {

// logits: [B, T, N] f32 from Model::token_logits; a row's real tokens are those its attention mask
// keeps, in order (padding on either side is left out). Fields of row `row`: token classification
// and masked LM {"logits": [tokens][N]}; question answering {"start_logits": [tokens],
// "end_logits": [tokens]}.
nlohmann::json per_token_outputs_json(Head head, const Tensor& logits, const TokenBatch& batch, int64_t row);

// The row's best per token: each token's label (token classification), the best start and end
// token (question answering), each token's most likely vocabulary id (masked LM); long rows cut
// with "...".
std::string per_token_outputs_line(const ModelInfo& info, const Tensor& logits, const TokenBatch& batch, int64_t row);

}  // namespace tach::cli
