// The heads a model can run on its body (tach/model.h's Head), their --head spellings, and the
// error a model gives for a per-token head it does not have.
#include <algorithm>
#include <string>

#include "tach/error.h"
#include "tach/model.h"

namespace tach {

namespace {
constexpr Head kHeads[] = {Head::none, Head::sequence_classification, Head::token_classification,
                           Head::question_answering, Head::masked_lm};
}  // namespace

const char* head_name(Head h) {
  switch (h) {
    case Head::none: return "none";
    case Head::sequence_classification: return "sequence-classification";
    case Head::token_classification: return "token-classification";
    case Head::question_answering: return "question-answering";
    case Head::masked_lm: return "masked-lm";
  }
  return "none";
}

std::optional<Head> parse_head(const std::string& name) {
  if (name == "auto") return std::nullopt;
  std::string choices = "auto";
  for (const Head h : kHeads) {
    if (name == head_name(h)) return h;
    choices += std::string("|") + head_name(h);
  }
  throw UsageError("--head '" + name + "' is not a head tach builds (" + choices + ")");
}

Tensor Model::token_logits(const TokenBatch&) const {
  const Head h = info().head;
  throw Error(info().spec + " (" + info().architecture + ") has " +
              (h == Head::none ? std::string("no head") : "a " + std::string(head_name(h)) + " head") +
              ": per-token logits come from a token-classification, question-answering or masked-lm head (--head)");
}

Tensor Model::token_logits_at(const TokenBatch& batch, const std::vector<std::vector<int64_t>>& rows) const {
  const int64_t B = batch.batch(), T = batch.seq_len();
  check(int64_t(rows.size()) == B,
        "token_logits_at: rows for " + std::to_string(rows.size()) + " sequences in a batch of " + std::to_string(B));
  int64_t R = 0;
  for (size_t b = 0; b < rows.size(); ++b)
    for (const int64_t r : rows[b]) {
      check(r >= 0 && r < T, "token_logits_at: row " + std::to_string(r) + " of sequence " + std::to_string(b) +
                                 " is outside its " + std::to_string(T) + " tokens");
      ++R;
    }
  check(R > 0, "token_logits_at: no rows asked for");
  return checked_token_logits_at(batch, rows);
}

Tensor Model::checked_token_logits_at(const TokenBatch& batch, const std::vector<std::vector<int64_t>>& rows) const {
  const Tensor all = token_logits(batch).contiguous();  // [B, T, outputs] on the host
  const int64_t T = all.size(1), K = all.size(2);
  int64_t R = 0;
  for (const auto& r : rows) R += int64_t(r.size());
  Tensor out = Tensor::empty({R, K}, DType::f32);
  float* to = out.data<float>();
  for (size_t b = 0; b < rows.size(); ++b)
    for (const int64_t r : rows[b]) to = std::copy_n(all.data<float>() + (int64_t(b) * T + r) * K, K, to);
  return out;
}

}  // namespace tach
