// The heads a model can run on its body (tach/model.h's Head), their --head spellings, and the
// error a model gives for a per-token head it does not have.
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

}  // namespace tach
