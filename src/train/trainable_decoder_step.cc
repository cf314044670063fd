// Any decoder family's classifier: the training forward and its backward, in reverse order of the
// same calls, with DecoderConfig's switches (the inference forward, model/decoder.cc, reads the same).
// Module paths follow transformers' (model.layers.3.self_attn, ...), under "backward." for the
// backward (the caller's profiler scope adds it).
#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "core/allocator.h"
#include "core/trace.h"
#include "ops/add.h"
#include "ops/causal_attention.h"
#include "ops/copy_rows.h"
#include "ops/embedding.h"
#include "ops/dropout.h"
#include "ops/fill.h"
#include "ops/gelu.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "ops/masked_mean.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "ops/silu_gate.h"
#include "ops/train_attention_kernel.h"
#include "tach/error.h"
#include "train/step_support.h"
#include "train/trainable_decoder.h"

namespace tach::train {

namespace {

using ops::fill_zero;
using step::weight;

std::string layer_module(size_t i) { return core::tracing() ? core::concat("layers.", i) : std::string(); }

// A sequence classifier's mean over each row's tokens (ModernBERT's classifier_pooling "mean").
bool mean_pooling(const TrainableDecoder& m) {
  return !m.per_token() && m.config.pooling == model::DecoderConfig::Pooling::mean;
}

void prepare(DecoderActivations& a, const TrainableDecoder& m, int64_t B, int64_t T) {
  if (a.B == B && a.T == T) return;
  const model::DecoderConfig& s = m.config;
  const int64_t N = B * T, C = s.hidden_size, I = s.intermediate_size, QKV = s.qkv_width(), D = s.head_dim;
  const int64_t HD = s.num_heads * D, KD = s.num_kv_heads * D, QK = s.num_heads + s.num_kv_heads;
  auto make = [&](const Shape& shape) {
    return Tensor::empty(shape, DType::f32, m.device, MemoryCategory::activations);
  };
  restart_activations(a);
  const bool fused = a.fused, checkpoint = a.checkpoint;
  a.B = B;
  a.T = T;
  a.layers.resize(size_t(s.num_layers));
  const Tensor branch = make({N, C});  // one scratch: each branch's output is added right away
  // cuDNN's fused attention in bf16 on CUDA where every layer can take it (checkpointing shares
  // one layer's buffers among all, so one choice for the model): a sliding window shorter than
  // the rows keeps tach's kernels in every layer.
  ops::TrainAttentionCase attention = ops::train_attention_case(m.device);
  attention.heads = s.num_heads, attention.kv_heads = s.num_kv_heads, attention.head_size = D, attention.tokens = T;
  for (const int64_t window : s.layer_window)
    if (window > 0 && window < T && (attention.window == 0 || window < attention.window)) attention.window = window;
  const ops::TrainAttentionChoice attention_choice = ops::choose_train_attention(attention);
  a.attention_kernels = attention_choice.describe();
  const Shape attention_saved = ops::train_attention_saved_shape(attention_choice, fused, B, s.num_heads, T);
  for (auto& l : a.layers) {
    l.resid = make({N, C});
    if (checkpoint && &l != &a.layers.front()) {
      // Every layer's intermediates in the first layer's buffers: only the inputs are kept.
      const Tensor input = l.resid;
      l = a.layers.front();
      l.resid = input;
      continue;
    }
    l.rstd1 = make({N});
    if (s.layer_norm) l.mean1 = make({N}), l.mean2 = make({N});
    l.x1 = make({N, C});
    if (s.qk_norm) l.qk_raw = make({N, QK * D}), l.qk_rstd = make({N, QK});
    l.qkv = make({N, QKV});
    if (!attention_saved.empty()) l.probs = make(attention_saved);
    l.context = make({N, HD});
    if (s.sandwich_norms)
      l.attn_out = make({N, C}), l.rstd_ao = make({N}), l.mlp_out = make({N, C}), l.rstd_mo = make({N});
    l.resid_mid = make({N, C});
    l.rstd2 = make({N});
    l.x2 = make({N, C});
    l.gate_up = make({N, 2 * I});
    l.act = make({N, I});
    l.branch = branch;
  }
  a.resid_out = make({N, C});
  a.qkv_views.resize(a.layers.size());
  for (size_t i = 0; i < a.layers.size(); ++i) {
    a.layers[i].resid_out = i + 1 < a.layers.size() ? a.layers[i + 1].resid : a.resid_out;
    const Tensor& qkv = a.layers[i].qkv;
    a.qkv_views[i] = {qkv.narrow(1, 0, HD), qkv.narrow(1, HD, KD), qkv.narrow(1, HD + KD, KD)};
  }
  if (s.embedding_norm) a.embedded = make({N, C}), a.embed_mean = make({N}), a.embed_rstd = make({N});
  // The head's rows: B pooled tokens, or (per-token heads) up to every token.
  const bool mean_pool = mean_pooling(m);
  const int64_t R = m.per_token() ? N : B;
  auto rows = [&](Tensor DecoderActivations::*field, int64_t width) {
    a.*field = width > 0 ? make({R, width}) : make({R});
    a.head_row_buffers.emplace_back(field, a.*field);
  };
  rows(&DecoderActivations::pooled_in, C);
  if (mean_pool) a.final_mean = make({N}), a.final_rstd = make({N}), a.final_normed = make({N, C});
  else rows(&DecoderActivations::final_mean, 0), rows(&DecoderActivations::final_rstd, 0);
  rows(&DecoderActivations::pooled, C);
  if (m.task == Head::token_classification && !s.head_mlp) rows(&DecoderActivations::pooled_dropped, C);
  if (s.head_mlp) {
    for (auto field : {&DecoderActivations::head_pre, &DecoderActivations::head_act, &DecoderActivations::head_out,
                       &DecoderActivations::d_head})
      rows(field, C);
    rows(&DecoderActivations::head_mean, 0), rows(&DecoderActivations::head_rstd, 0);
  }
  rows(&DecoderActivations::d_pooled, C);
  rows(&DecoderActivations::d_pooled_in, C);
  // A per-token head's logits are sized with its rows, on each forward.
  if (!m.per_token()) a.logits = make({B, m.num_labels()});
  a.d_resid = make({N, C});
  a.d_x = make({N, C});
  a.d_qkv = make({N, QKV});
  a.d_q = a.d_qkv.narrow(1, 0, HD), a.d_k = a.d_qkv.narrow(1, HD, KD), a.d_v = a.d_qkv.narrow(1, HD + KD, KD);
  a.d_context = make({N, HD});
  a.d_gate_up = make({N, 2 * I});
  a.d_act = make({N, I});
  if (s.sandwich_norms) a.d_branch = make({N, C});
  // transformers' forward without position_ids: positions 0..T-1 in every row (host positions,
  // as decoder_rope takes them; the tables it builds go to the model's device).
  Tensor positions = Tensor::empty({N}, DType::i32);
  for (int64_t i = 0; i < N; ++i) positions.data<int32_t>()[i] = int32_t(i % T);
  a.rope = model::decoder_rope(s, positions, T, m.device);
}

// An optional parameter (a bias or norm the family may lack) as the ops take it: its value and
// its gradient, undefined when it is absent (or, the gradient, frozen: LoRA's base), which the
// ops then skip. References, so that passing them copies nothing.
const Tensor& none() {
  static const Tensor undefined;
  return undefined;
}
const Tensor& value_of(const Parameter* p) { return p ? p->value : none(); }
const Tensor& grad_of(const Parameter* p) { return p ? step::grad(p) : none(); }

// The backward of decoder_norm: dinp += d(norm(inp)) (RMSNorm, or a LayerNorm without bias);
// dweight += (undefined: frozen). mean is the LayerNorm's saved mean (unused by RMSNorm).
// inp, dout, dinp: [rows, C]  mean, rstd: [rows]
void norm_backward(const model::DecoderConfig& c, const Tensor& dinp, const Tensor& dweight, const Tensor& dout,
                   const Tensor& inp, const Tensor& weight, const Tensor& mean, const Tensor& rstd) {
  if (c.layer_norm) return ops::layer_norm_backward(dinp, dweight, none(), dout, inp, weight, mean, rstd);
  ops::rms_norm_backward(dinp, dweight, dout, inp, weight, rstd);
}

// transformers' rule: per row, the last token that is not pad_token_id (position 0 when all
// are); the last position when the config names no pad token, for a batch of one. ModernBERT's
// cls pooling: the first token.
// ids: the batch's input_ids in host memory [B, T].
std::vector<int64_t> last_tokens(const TrainableDecoder& m, const Tensor& ids_host) {
  const int64_t B = ids_host.size(0), T = ids_host.size(1);
  if (m.config.pooling != model::DecoderConfig::Pooling::last_token) return std::vector<int64_t>(size_t(B), 0);
  const int64_t pad = m.config.pad_token_id;
  check(pad >= 0 || B == 1,
        "config.json names no pad_token_id, so rows of a batch cannot be told from padding; set "
        "pad_token_id (Qwen2.5 uses <|endoftext|>, 151643; Llama 3 models often <|finetune_right_pad_id|>) "
        "or train with batch 1");
  const int32_t* ids = ids_host.data<int32_t>();
  std::vector<int64_t> last(size_t(B), pad < 0 ? T - 1 : 0);
  if (pad >= 0)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        if (ids[b * T + t] != pad) last[size_t(b)] = t;
  return last;
}

// The batch's tensors as the step reads them (their shapes and types; nothing is read).
void check_batch_shape(const TokenBatch& batch) {
  check(batch.input_ids.defined() && batch.input_ids.dim() == 2 && batch.input_ids.dtype() == DType::i32 &&
            batch.batch() > 0 && batch.seq_len() > 0,
        "input_ids must be a non-empty i32 [batch, seq]");
  check(batch.attention_mask.defined() && batch.attention_mask.shape() == batch.input_ids.shape() &&
            batch.attention_mask.dtype() == DType::i32,
        "attention_mask must be i32 " + shape_str(batch.input_ids.shape()));
}

// Every id inside the vocabulary. ids_host: the batch's input_ids in host memory [B, T].
void check_ids(const TrainableDecoder& m, const Tensor& ids_host) {
  const int64_t T = ids_host.size(1);
  const int32_t* ids = ids_host.data<int32_t>();
  for (int64_t i = 0; i < ids_host.numel(); ++i)
    if (ids[i] < 0 || ids[i] >= m.config.vocab_size)  // the message is built only for a bad id
      throw Error("input_ids[" + std::to_string(i / T) + "][" + std::to_string(i % T) +
                  "] = " + std::to_string(ids[i]) + " is outside the vocabulary of " +
                  std::to_string(m.config.vocab_size) + " tokens");
}

// LoRA's share of a linear's backward, where the model has adapters. dx: undefined when nothing
// upstream trains.
void lora_bwd(const TrainableDecoder& m, const std::vector<int64_t>& ids, const Tensor& dx, const Tensor& dy,
              const Tensor& x, DecoderActivations& a, const DropoutRates& dr) {
  if (m.lora) m.lora->backward(ids, dx, dy, x, a.lora, dr);
}

// Training's side of the layer (model/decoder_layer.h): f32 masters or NF4 with LoRA on top, and
// attention that saves its probabilities unless fused.
class TrainingRunner final : public model::DecoderLayerRunner {
 public:
  TrainingRunner(const TrainableDecoder& m, DecoderActivations& a, const Tensor& mask, const DropoutRates& dr)
      : m_(m), a_(a), mask_(mask), dr_(dr) {}

  void linear(size_t l, model::DecoderLinear site, Tensor& out, const Tensor& in) override {
    const TrainableDecoderLayer& w = m_.layers[l];
    auto run = [&](ops::TrainLinearWeight W, const Tensor& b, const std::vector<int64_t>& lora) {
      ops::linear_forward_train(out, in, W, b);
      // LoRA's update on q|k|v lands before the q/k norms and RoPE, as on PEFT's q_proj.
      if (m_.lora) m_.lora->forward(lora, out, in, a_.lora, dr_);
    };
    switch (site) {
      case model::DecoderLinear::qkv: return run(weight(w.qkv_weight), w.qkv_bias.value, w.qkv_lora);
      case model::DecoderLinear::o: return run(weight(w.o_proj), value_of(w.o_bias), w.o_lora);
      case model::DecoderLinear::gate_up: return run(weight(w.gate_up), w.gate_up_bias.value, w.gate_up_lora);
      case model::DecoderLinear::down: return run(weight(w.down), value_of(w.down_bias), w.down_lora);
    }
  }

  // Every row's T tokens from the fused q|k|v buffer, no cache; probs saved unless fused.
  void attention(size_t l, ops::CausalAttentionArgs args, model::DecoderLayerTensors& t) override {
    const auto& qkv = a_.qkv_views[l];
    ops::causal_attention_forward_train(t.context, t.probs, qkv.q, qkv.k, qkv.v, mask_, args);
  }

  const Tensor& norm(size_t l, model::DecoderNorm which) const override {
    const TrainableDecoderLayer& w = m_.layers[l];
    switch (which) {
      case model::DecoderNorm::attn: return m_.norm_weight(w.attn_norm);
      case model::DecoderNorm::q: return m_.norm_weight(w.q_norm);
      case model::DecoderNorm::k: return m_.norm_weight(w.k_norm);
      case model::DecoderNorm::attn_out: return m_.norm_weight(w.attn_out_norm);
      case model::DecoderNorm::mlp: return m_.norm_weight(w.mlp_norm);
      case model::DecoderNorm::mlp_out: return m_.norm_weight(w.mlp_out_norm);
    }
    return m_.norm_weight(w.attn_norm);
  }

 private:
  const TrainableDecoder& m_;
  DecoderActivations& a_;
  const Tensor& mask_;  // [B, T] i32
  const DropoutRates& dr_;
};

// The rows the head reads (b * T + t), found in the host batch: each row's pooled token for a
// sequence classifier (last_tokens), the masked LM's chosen tokens `predicted` (every token when
// none are named), every token for the other per-token heads; with a copy on the model's device.
// ids_host: the batch's input_ids in host memory [B, T].
DecoderActivations::HeadRows find_head_rows(const TrainableDecoder& m, const Tensor& ids_host,
                                            const std::vector<int32_t>& predicted) {
  const int64_t B = ids_host.size(0), T = ids_host.size(1), N = B * T;
  DecoderActivations::HeadRows head;
  head.ready = true;
  head.B = B, head.T = T;
  std::vector<int32_t>& rows = head.rows;
  if (!m.per_token()) {
    const std::vector<int64_t> last = last_tokens(m, ids_host);
    for (int64_t b = 0; b < B; ++b) rows.push_back(int32_t(b * T + last[size_t(b)]));
  } else if (m.task == Head::masked_lm && !predicted.empty()) {
    for (const int32_t r : predicted)
      check(r >= 0 && r < N, "masked LM: predicted row " + std::to_string(r) + " is outside the batch's " +
                                 std::to_string(N) + " tokens");
    rows = predicted;
  } else {
    for (int64_t r = 0; r < N; ++r) rows.push_back(int32_t(r));
  }
  const int64_t R = int64_t(rows.size());
  if (R > 0) {
    Tensor host = Tensor::empty({R}, DType::i32);
    std::copy(rows.begin(), rows.end(), host.data<int32_t>());
    head.on_device = host.on(m.device);
  }
  return head;
}

// The forward's head rows (a.head_rows, a.pooled_rows) from `head`: the [R, ...] buffers become
// views of that many rows, and a per-token head's logits [R, outputs] are sized.
void use_head_rows(const TrainableDecoder& m, DecoderActivations& a, DecoderActivations::HeadRows head) {
  a.head_rows = std::move(head.rows);
  a.pooled_rows = std::move(head.on_device);
  const int64_t R = int64_t(a.head_rows.size());
  if (m.per_token()) {
    const int64_t outputs = m.task == Head::masked_lm ? m.config.vocab_size : m.num_labels();
    if (!a.logits.defined() || a.logits.shape() != Shape{R, outputs})
      a.logits = Tensor::empty({R, outputs}, DType::f32, m.device, MemoryCategory::activations);
  }
  if (R == 0) return;
  for (auto& [field, full] : a.head_row_buffers) a.*field = full.size(0) == R ? full : full.narrow(0, 0, R);
}

// The final norm and the rows the head reads: a.pooled [R, C] (the last non-pad token's or the
// first's, normed; ModernBERT's mean over the mask of every normed row; a per-token head's rows).
// mask: the batch's attention mask [B, T] i32, on the model's device.
void pool_forward(const TrainableDecoder& m, DecoderActivations& a, const Tensor& mask) {
  core::Span span(core::SpanKind::module, m.names.final_norm);
  if (mean_pooling(m)) {
    // Every row's final norm, then (h * mask).sum / mask.sum per sequence.
    model::decoder_norm(m.config, a.final_normed, a.resid_out, Tensor(), m.norm_weight(m.final_norm), a.final_mean,
                        a.final_rstd);
    ops::masked_mean_forward(a.pooled, a.final_normed, mask);
  } else {
    // The final norm is per row, so it runs on the rows the head reads only.
    ops::gather_rows(a.pooled_in, a.resid_out, a.pooled_rows);
    model::decoder_norm(m.config, a.pooled, a.pooled_in, Tensor(), m.norm_weight(m.final_norm), a.final_mean,
                        a.final_rstd);
  }
}

// A causal decoder's token classifier drops out the final hidden states before `score`
// (…ForTokenClassification's classifier_dropout); no other decoder head has a dropout of its own.
float head_dropout(const TrainableDecoder& m, const DropoutRates& dr) {
  return m.task == Head::token_classification && !m.config.head_mlp ? dr.head : 0.f;
}

// The mask's site: after every layer's (the layers draw none today; the number stays clear of them).
uint64_t head_dropout_key(const TrainableDecoder& m, const DropoutRates& dr) {
  return ops::dropout_key(dr.seed, dr.micro_batch, int64_t(m.layers.size()) * 8 + 1);
}

// The head on a.pooled: the score (or ModernBERT's head.dense, GELU, head.norm, then its
// classifier or decoder), into a.logits [R, L] ([R, V] the masked LM's).
void head_forward(const TrainableDecoder& m, DecoderActivations& a, const DropoutRates& dr) {
  const Tensor* head_in = &a.pooled;
  if (m.config.head_mlp) {
    // ModernBERT's head: norm(gelu(dense(pooled))).
    core::Span span(core::SpanKind::module, "head");
    ops::linear_forward_train(a.head_pre, a.pooled, weight(m.head_dense), value_of(m.head_dense_bias));
    if (m.lora) m.lora->forward(m.head_dense_lora, a.head_pre, a.pooled, a.lora, dr);
    ops::gelu_forward(a.head_act, a.head_pre);
    model::decoder_norm(m.config, a.head_out, a.head_act, Tensor(), m.norm_weight(m.head_norm), a.head_mean,
                        a.head_rstd);
    head_in = &a.head_out;
  }
  core::Span head_span(core::SpanKind::module, m.output_module);
  if (head_dropout(m, dr) > 0.f) {
    ops::dropout_forward(a.pooled_dropped, *head_in, dr.head, head_dropout_key(m, dr));
    head_in = &a.pooled_dropped;
  }
  ops::linear_forward_train(a.logits, *head_in, m.score->value, value_of(m.score_bias));
}

// The head's backward from d_logits [R, L]: its parameters' gradients (the tied decoder's into the
// embeddings'), and d(pooled) in a.d_pooled.
void head_backward(TrainableDecoder& m, DecoderActivations& a, const Tensor& d_logits, const DropoutRates& dr) {
  {
    core::Span head_span(core::SpanKind::module, m.output_module);
    fill_zero(a.d_pooled);
    if (m.config.head_mlp) {
      fill_zero(a.d_head);
      ops::linear_backward(a.d_head, step::grad(m.score), grad_of(m.score_bias), d_logits, a.head_out, m.score->value);
      // Through head.norm and the GELU into d(dense output), kept in d_pooled_in for the moment.
      core::Span span(core::SpanKind::module, "head");
      fill_zero(a.d_pooled_in);
      norm_backward(m.config, a.d_pooled_in, grad_of(m.head_norm), a.d_head, a.head_act, m.norm_weight(m.head_norm),
                    a.head_mean, a.head_rstd);
      fill_zero(a.d_head);
      ops::gelu_backward(a.d_head, a.head_pre, a.d_pooled_in);
      ops::linear_backward(a.d_pooled, step::grad(m.head_dense), grad_of(m.head_dense_bias), a.d_head, a.pooled,
                           weight(m.head_dense));
      lora_bwd(m, m.head_dense_lora, a.d_pooled, a.d_head, a.pooled, a, dr);
    } else {
      const float p = head_dropout(m, dr);
      ops::linear_backward(a.d_pooled, step::grad(m.score), grad_of(m.score_bias), d_logits,
                           p > 0.f ? a.pooled_dropped : a.pooled, m.score->value);
      if (p > 0.f) ops::dropout_backward(a.d_pooled, a.d_pooled, p, head_dropout_key(m, dr));
    }
  }
}

// From d(pooled) to d(the last layer's output) in a.d_resid [N, C], through the final norm; rows
// the head does not read get none.
// mask: the batch's attention mask [B, T] i32, on the model's device.
void pool_backward(TrainableDecoder& m, DecoderActivations& a, const Tensor& mask) {
  fill_zero(a.d_resid);
  core::Span span(core::SpanKind::module, m.names.final_norm);
  if (mean_pooling(m)) {
    // d(normed row) = d_pooled / n at each real token; then the final norm over every row.
    fill_zero(a.d_x);
    ops::masked_mean_backward(a.d_x, a.d_pooled, mask);
    norm_backward(m.config, a.d_resid, grad_of(m.final_norm), a.d_x, a.resid_out, m.norm_weight(m.final_norm),
                  a.final_mean, a.final_rstd);
  } else {
    fill_zero(a.d_pooled_in);
    norm_backward(m.config, a.d_pooled_in, grad_of(m.final_norm), a.d_pooled, a.pooled_in, m.norm_weight(m.final_norm),
                  a.final_mean, a.final_rstd);
    // Only each row's pooled token reaches the head.
    ops::scatter_rows(a.d_resid, a.pooled_rows, a.d_pooled_in);
  }
}

}  // namespace

// One layer's forward (model/decoder_layer.cc): from a.layers[li].resid to the next layer's (or
// a.resid_out), keeping what its backward needs. The backward calls it again under gradient
// checkpointing, which is why the layer norms its own input rather than fusing the next norm.
void TrainableDecoder::layer_forward(DecoderActivations& a, size_t li, const Tensor& mask,
                                     const DropoutRates& dr) const {
  TrainingRunner run(*this, a, mask, dr);
  model::decoder_layer_forward(config, li, a.B, a.T, a.rope, a.layers[li], run, model::DecoderLayerEnds{});
}

void TrainableDecoder::prepare_batch(ForwardState& state, const TokenBatch& host_batch) const {
  // A batch already on a GPU is left to the forward, which reads what it needs from a copy.
  if (host_batch.input_ids.defined() && !(host_batch.input_ids.device() == Device::cpu())) return;
  auto& a = dynamic_cast<DecoderActivations&>(state);
  check_batch_shape(host_batch);
  check_ids(*this, host_batch.input_ids);
  a.prepared_head_rows = find_head_rows(*this, host_batch.input_ids, a.predicted_rows);
}

void TrainableDecoder::forward(ForwardState& state, const TokenBatch& batch, const DropoutRates& dr) const {
  auto& a = dynamic_cast<DecoderActivations&>(state);
  check_batch_shape(batch);
  const int64_t B = batch.batch(), T = batch.seq_len();
  // The ids are checked, and the head's rows found, in host memory: by the data phase where the
  // collator made the batch (prepare_batch: the step then reads device tensors only), else here,
  // from a host copy of the ids (on a GPU, one copy, and the rows back).
  DecoderActivations::HeadRows head = std::exchange(a.prepared_head_rows, DecoderActivations::HeadRows{});
  if (!head.ready) {
    const Tensor ids_host = batch.input_ids.on(Device::cpu());
    check_ids(*this, ids_host);
    head = find_head_rows(*this, ids_host, a.predicted_rows);
  }
  if (head.B != B || head.T != T)
    throw Error("decoder forward: the data phase's head rows are for a [" + std::to_string(head.B) + ", " +
                std::to_string(head.T) + "] batch, not this " + batch.input_ids.describe());
  prepare(a, *this, B, T);
  refresh_applied_norms();
  use_head_rows(*this, a, std::move(head));
  const Tensor& mask = batch.attention_mask;

  std::optional<core::Span> model_span(std::in_place, core::SpanKind::module, "model");
  if (config.embedding_norm) {  // ModernBERT: the embeddings' own norm
    model::decoder_embed(a.embedded, batch.input_ids, embed->value, embed_scale);
    core::Span span(core::SpanKind::module, names.embed_norm);
    model::decoder_norm(config, a.layers[0].resid, a.embedded, Tensor(), norm_weight(embed_norm), a.embed_mean,
                        a.embed_rstd);
  } else {
    model::decoder_embed(a.layers[0].resid, batch.input_ids, embed->value, embed_scale);
  }
  for (size_t li = 0; li < layers.size(); ++li) layer_forward(a, li, mask, dr);
  if (a.head_rows.empty()) return;  // the masked LM with no token chosen: logits [0, V]
  pool_forward(*this, a, mask);
  model_span.reset();
  head_forward(*this, a, dr);
}

void TrainableDecoder::backward(ForwardState& state, const TokenBatch& batch, const float* d_logits,
                                const DropoutRates& dr) {
  auto& a = dynamic_cast<DecoderActivations&>(state);
  const model::DecoderConfig& c = config;
  const int64_t B = a.B, T = a.T, N = B * T;
  const int64_t H = c.num_heads, KVH = c.num_kv_heads, D = c.head_dim;
  const Tensor& mask = batch.attention_mask;
  // d_logits has the logits' shape, on their device (the loss's output).
  const Tensor d =
      Tensor::from_borrowed(const_cast<float*>(d_logits), a.logits.shape(), DType::f32, nullptr, a.logits.device());
  if (!a.head_rows.empty()) head_backward(*this, a, d, dr);
  core::Span model_span(core::SpanKind::module, "model");
  if (a.head_rows.empty()) fill_zero(a.d_resid);  // no token reached the loss
  else pool_backward(*this, a, mask);

  // A branch's output gradient: d_resid itself, or through the norm on the branch's output
  // (sandwich norms) into d_branch.
  auto branch_grad = [&](Parameter* out_norm, const Tensor& branch_out, const Tensor& rstd) -> const Tensor& {
    if (!out_norm) return a.d_resid;
    fill_zero(a.d_branch);
    ops::rms_norm_backward(a.d_branch, grad_of(out_norm), a.d_resid, branch_out, norm_weight(out_norm), rstd);
    return a.d_branch;
  };

  for (size_t li = layers.size(); li-- > 0;) {
    TrainableDecoderLayer& w = layers[li];
    model::DecoderLayerTensors& s = a.layers[li];
    const ops::CausalAttentionArgs args = model::decoder_attention_args(c, li, B, T, device);
    const auto& qkv = a.qkv_views[li];
    if (a.checkpoint) {
      // The layer's intermediates were overwritten by the layers after it: recompute them.
      core::Span span(core::SpanKind::module, "recompute");
      layer_forward(a, li, mask, dr);
    }
    core::Span layer_span(core::SpanKind::module, layer_module(li));
    // d_resid: d(layer output) on entry; the residual passes it on unchanged, and each branch's
    // norm backward adds its share: d(resid_mid), then d(resid) on exit.
    if (a.unit_gradients.layer)
      a.unit_gradients.layer(int(li), s.resid, li + 1 < layers.size() ? a.layers[li + 1].resid : a.resid_out,
                             a.d_resid);
    {
      core::Span span(core::SpanKind::module, "mlp");
      const Tensor& dy = branch_grad(w.mlp_out_norm, s.mlp_out, s.rstd_mo);
      fill_zero(a.d_act);
      ops::linear_backward(a.d_act, step::grad(w.down), grad_of(w.down_bias), dy, s.act, weight(w.down));
      lora_bwd(*this, w.down_lora, a.d_act, dy, s.act, a, dr);
      if (a.unit_gradients.ffn) a.unit_gradients.ffn(int(li), s.act, a.d_act);
      ops::silu_gate_backward(a.d_gate_up, s.gate_up, a.d_act, c.activation);
      fill_zero(a.d_x);
      ops::linear_backward(a.d_x, step::grad(w.gate_up), w.gate_up_bias.grad, a.d_gate_up, s.x2, weight(w.gate_up));
      lora_bwd(*this, w.gate_up_lora, a.d_x, a.d_gate_up, s.x2, a, dr);
    }
    norm_backward(c, a.d_resid, grad_of(w.mlp_norm), a.d_x, s.resid_mid, norm_weight(w.mlp_norm), s.mean2, s.rstd2);
    {
      core::Span span(core::SpanKind::module, "self_attn");
      const Tensor& dy = branch_grad(w.attn_out_norm, s.attn_out, s.rstd_ao);
      fill_zero(a.d_context);
      ops::linear_backward(a.d_context, step::grad(w.o_proj), grad_of(w.o_bias), dy, s.context, weight(w.o_proj));
      lora_bwd(*this, w.o_lora, a.d_context, dy, s.context, a, dr);
      if (a.unit_gradients.attention) a.unit_gradients.attention(int(li), s.context, a.d_context);
      ops::causal_attention_backward(a.d_q, a.d_k, a.d_v, a.d_context, s.probs, qkv.q, qkv.k, qkv.v, mask, args,
                                     s.context);
      ops::rope_backward(a.d_qkv, H, KVH, D, a.rope.of(c, li));
      if (c.qk_norm)
        ops::rms_norm_heads_backward(a.d_qkv, H, KVH, D, s.qk_raw, s.qk_rstd, norm_weight(w.q_norm),
                                     norm_weight(w.k_norm), grad_of(w.q_norm), grad_of(w.k_norm));
      fill_zero(a.d_x);
      ops::linear_backward(a.d_x, step::grad(w.qkv_weight), w.qkv_bias.grad, a.d_qkv, s.x1, weight(w.qkv_weight));
      lora_bwd(*this, w.qkv_lora, a.d_x, a.d_qkv, s.x1, a, dr);
    }
    if (w.attn_norm)
      norm_backward(c, a.d_resid, grad_of(w.attn_norm), a.d_x, s.resid, norm_weight(w.attn_norm), s.mean1, s.rstd1);
    else  // ModernBERT's layer 0: x1 = resid
      ops::add_inplace(a.d_resid, a.d_x);
    if (a.layer_grads_ready) a.layer_grads_ready(int(li));
  }
  if (c.embedding_norm) {
    core::Span span(core::SpanKind::module, names.embed_norm);
    fill_zero(a.d_x);
    norm_backward(c, a.d_x, grad_of(embed_norm), a.d_resid, a.embedded, norm_weight(embed_norm), a.embed_mean,
                  a.embed_rstd);
    core::copy_bytes(device, a.d_resid.raw(), device, a.d_x.raw(), a.d_x.nbytes());
  }
  core::Span span(core::SpanKind::module, names.embed);
  if (embed_scale != 0) ops::scale_inplace(a.d_resid, embed_scale);  // h = scale * embed[ids]
  // nn.Embedding(padding_idx=pad_token_id): the pad row gets no gradient.
  const Tensor ids = batch.input_ids.reshape({N});
  ops::embedding_backward(a.d_resid, {{step::grad(embed), ids, int32_t(config.pad_token_id)}});
}

}  // namespace tach::train
