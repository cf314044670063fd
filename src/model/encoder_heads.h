// The heads of the post-LN encoder families (BERT, DistilBERT, RoBERTa, XLM-RoBERTa, MPNet): the
// sequence classifier on the first token, and the per-token heads: a token classifier, question
// answering's start/end logits, and the masked LM. Their tensor names are the family row's
// (family.h: EncoderTensorNames for the classifier, HeadTensorNames for the others).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/weight_binder.h"
#include "ops/linear.h"
#include "ops/op_cost.h"
#include "tach/model.h"

namespace tach::model {

struct ModelFamily;

// The classification head on the first token: hidden = act(dense(h[:, 0])), logits = out(hidden).
// BERT: dense = pooler (tanh). DistilBERT: dense = pre_classifier (ReLU). RoBERTa: classifier.dense
// (tanh), out = classifier.out_proj.
struct ClassifierHead {
  std::unique_ptr<ops::Linear> dense;
  std::unique_ptr<ops::Linear> out;
};

// logits [N, V] = decoder(LayerNorm(act(dense(h [N, C])))); the decoder's weight is the word
// embeddings where the checkpoint ties them, its bias the head's own.
struct MaskedLmHead {
  std::unique_ptr<ops::Linear> dense;  // [C, C], the activation fused
  Tensor norm_gamma, norm_beta;        // [C] f32
  float eps = 1e-12f;
  std::unique_ptr<ops::Linear> decoder;  // [V, C] + bias [V]
};

struct EncoderHead {
  Head head = Head::none;
  ClassifierHead classifier;               // sequence classification
  std::unique_ptr<ops::Linear> per_token;  // token classification [labels, C]; question answering [2, C]
  MaskedLmHead mlm;
  int64_t outputs = 0;  // per token: labels, 2 (start, end) or the vocabulary
};

// Where a head's tensors come from. The checkpoint's own head: every tensor from it. A head it was
// not published with (`fresh`): what the checkpoint holds of it with the right shape (BERT's
// pooler), the rest made as transformers initialises a new module: weights N(0, std), biases 0,
// LayerNorms 1 and 0, seeded by `seed` and the tensor's name.
struct HeadSource {
  bool fresh = false;
  float std = 0.02f;
  uint64_t seed = 0;
  std::string body_prefix;               // the family's, to name new body tensors as transformers does
  std::vector<std::string> initialised;  // the new tensors, by transformers' names
  int64_t initialised_parameters = 0;
};

enum class HeadInit { normal, zeros, ones };
// One tensor of a head from `source`: the checkpoint's (in_body: under the body's prefix, else at
// the top level), or for a fresh head that the checkpoint lacks, a new one (f32 on the host).
Tensor take_head_tensor(WeightBinder& binder, HeadSource& source, const std::string& name, const Shape& shape,
                        bool in_body, HeadInit init);

// Binds (or makes) `head` for an encoder whose body is built: word_embeddings [V, C] is the tied
// decoder's weight. labels: the classifiers' outputs.
EncoderHead build_encoder_head(const EncoderConfig& config, const ModelFamily& family, Head head, int64_t labels,
                               WeightBinder& binder, HeadSource& source, const Tensor& word_embeddings,
                               const ops::LinearPlacement& place);

// The per-token heads on every token: h [N, C] f32 on the model's device → [N, outputs].
Tensor per_token_head_forward(const EncoderHead& head, const Tensor& h);
// Their work on N tokens of width C.
ops::OpCost per_token_head_cost(const EncoderHead& head, int64_t N, int64_t C, DType compute);

// transformers' note for a head made new: "Some weights of X were not initialized from the model
// checkpoint at Y and are newly initialized: [...]"; "" when nothing was.
std::string new_head_note(const HeadSource& source, const std::string& architecture, const std::string& checkpoint);

}  // namespace tach::model
