// The decoder Model of every decoder family: sequence classification pooled at the last non-pad
// token, vocabulary logits, and greedy generation with a key/value cache.
#include "model/decoder_model.h"
#include "model/peft_adapter.h"
#include "model/activation_dtype.h"
#include "model/compute_note.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>

#include "core/trace.h"
#include "model/encoder_build.h"
#include "model/presets.h"
#include "model/decoder.h"
#include "model/decoder_layer.h"
#include "model/decode_graph.h"
#include "ops/argmax.h"
#include "ops/layer_norm.h"
#include "ops/copy_rows.h"
#include "ops/linear.h"
#include "ops/pooling.h"
#include "tach/error.h"
#include "tach/memory.h"

namespace tach::model {

namespace {

using Clock = std::chrono::steady_clock;

class Decoder final : public Model {
 public:
  Decoder(ModelInfo info, DecoderConfig config, DecoderWeights weights, ops::LinearPlacement place)
      : info_(std::move(info)),
        config_(std::move(config)),
        w_(std::move(weights)),
        place_(place),
        compute_(place.compute) {}

  const ModelInfo& info() const override { return info_; }

  Tensor hidden_states(const TokenBatch& batch) const override {
    check_batch(batch);
    return to_host(
        decoder_forward(w_, config_, batch.input_ids, batch.attention_mask, arange_positions(batch), nullptr));
  }

  // What the head reads, per row: transformers' rule for decoders, the last token that is not
  // pad_token_id (right or left padding alike; the last position when the config names no pad
  // token, batch of 1 only); ModernBERT's first token or its mean over the mask. Then ModernBERT's
  // head (dense, GELU, norm) and the classifier.
  Tensor classify(const TokenBatch& batch) const override {
    check(w_.score != nullptr, info_.spec + " (" + info_.architecture + ") has no sequence-classification head (`" +
                                   (config_.head_mlp ? "classifier" : "score") +
                                   "`): use a …ForSequenceClassification checkpoint" +
                                   (config_.causal ? ", or tach generate" : ""));
    check_batch(batch);
    const int64_t B = batch.batch(), C = config_.hidden_size;
    check(config_.pooling != DecoderConfig::Pooling::last_token || config_.pad_token_id >= 0 || B == 1,
          info_.spec +
              ": config.json names no pad_token_id, so rows of a batch cannot be told from padding "
              "(transformers refuses batches > 1 too); classify one row at a time");
    Tensor pooled;
    if (config_.pooling == DecoderConfig::Pooling::mean) {
      pooled = mean_over_mask(
          decoder_forward(w_, config_, batch.input_ids, batch.attention_mask, arange_positions(batch), nullptr), batch);
    } else {
      std::vector<int64_t> rows(static_cast<size_t>(B));
      for (int64_t b = 0; b < B; ++b) rows[size_t(b)] = pooled_row(batch, b);
      pooled = final_rows(batch.input_ids, batch.attention_mask, arange_positions(batch), rows, nullptr);
    }
    if (w_.head_dense) {
      core::Span span(core::SpanKind::module, "head");
      Tensor dense = Tensor::empty({B, C}, DType::f32, pooled.device());
      ops::linear_forward(dense, pooled, *w_.head_dense);
      decoder_norm(config_, pooled, dense, Tensor(), w_.head_norm);
    }
    Tensor logits = Tensor::empty({B, config_.num_labels()}, DType::f32, pooled.device());
    core::Span head_span(core::SpanKind::module, config_.head_mlp ? "classifier" : "score");
    ops::linear_forward(logits, pooled, *w_.score);
    return to_host(logits);
  }

  // The per-token heads on every token's final hidden state: ModernBERT's head.dense (GELU) and
  // head.norm, then the classifier, QA's start/end or the masked LM's decoder; a causal family's
  // `score` or `qa_outputs` straight on the states. [B, T, outputs] on the host.
  Tensor token_logits(const TokenBatch& batch) const override {
    if (!w_.per_token) return Model::token_logits(batch);
    check_batch(batch);
    const int64_t B = batch.batch(), T = batch.seq_len(), C = config_.hidden_size, N = B * T;
    Tensor h = decoder_forward(w_, config_, batch.input_ids, batch.attention_mask, arange_positions(batch), nullptr)
                   .reshape({N, C});
    return to_host(per_token_head(h)).reshape({B, T, w_.per_token->out_features()});
  }

  // The per-token head at the rows asked for only (fill-mask's masks: ModernBERT's head and its
  // 50k-wide decoder for R rows, not B*T); the body runs every row (its last layer's window, when
  // local, is placed by each query's index). [R, outputs] on the host.
  Tensor checked_token_logits_at(const TokenBatch& batch,
                                 const std::vector<std::vector<int64_t>>& rows) const override {
    if (!w_.per_token) return Model::token_logits(batch);  // its error
    check_batch(batch);
    const int64_t T = batch.seq_len(), C = config_.hidden_size;
    const Tensor h =
        decoder_forward(w_, config_, batch.input_ids, batch.attention_mask, arange_positions(batch), nullptr);
    int64_t R = 0;
    for (const auto& r : rows) R += int64_t(r.size());
    Tensor index = Tensor::empty({R}, DType::i32);  // [R]: each row's index among the B*T tokens
    int32_t* at = index.data<int32_t>();
    for (size_t b = 0; b < rows.size(); ++b)
      for (const int64_t r : rows[b]) *at++ = int32_t(int64_t(b) * T + r);
    Tensor picked = Tensor::empty({R, C}, DType::f32, h.device());
    ops::gather_rows(picked, h.reshape({h.size(0) * T, C}), index.on(h.device()));
    return to_host(per_token_head(picked));
  }

  // The work measured_forward does: the classifier's head, or the prefill's LM head on B rows.
  ForwardCost forward_cost(int64_t B, int64_t T) const override {
    if (w_.per_token) {  // every token through the body, (ModernBERT's head.dense, head.norm) and the head
      const int64_t N = B * T, C = config_.hidden_size;
      ops::OpCost c = decoder_cost(config_, B, T, 0, false, forward_dtypes(w_, compute_));
      if (w_.head_dense) {
        c += ops::linear_cost(N, C, C, compute_, config_.head_dense_bias);
        c += ops::layer_norm_cost(N, C, false);
      }
      c += ops::linear_cost(N, w_.per_token->out_features(), C, compute_, w_.per_token->has_bias());
      return {c.flops, c.bytes()};
    }
    // The classifier's and the prefill's last layer run for the rows their heads read.
    ops::OpCost c = decoder_cost(config_, B, T, 0, heads_read_one_row() && (w_.score || info_.causal_lm),
                                 forward_dtypes(w_, compute_));
    if (w_.head_dense) {
      c += ops::linear_cost(B, config_.hidden_size, config_.hidden_size, compute_, config_.head_dense_bias);
      c += ops::layer_norm_cost(B, config_.hidden_size, false);
    }
    if (w_.score)
      c += ops::linear_cost(B, config_.num_labels(), config_.hidden_size, compute_, config_.classifier_bias);
    else if (w_.lm_head_weight.defined() && !info_.embedding)
      c += ops::linear_cost(B, config_.vocab_size, config_.hidden_size, compute_, false);
    return {c.flops, c.bytes()};
  }

  ForwardCost hidden_states_cost(int64_t B, int64_t T) const override {
    const ops::OpCost c = decoder_cost(config_, B, T, 0, false, forward_dtypes(w_, compute_));
    return {c.flops, c.bytes()};
  }

  // One token per row (an embedding model's cls or last-token pooling): the last layer for those
  // rows alone where head_rows_supported says it can run so.
  Tensor checked_hidden_rows(const TokenBatch& batch, const std::vector<int64_t>& rows) const override {
    check_batch(batch);
    return to_host(final_rows(batch.input_ids, batch.attention_mask, arange_positions(batch), rows, nullptr));
  }

  ForwardCost hidden_rows_cost(int64_t B, int64_t T, bool /*first_token*/) const override {
    const ops::OpCost c =
        decoder_cost(config_, B, T, 0, head_rows_supported(config_, place_.device), forward_dtypes(w_, compute_));
    return {c.flops, c.bytes()};
  }

  Tensor prefill_logits(const TokenBatch& batch) const override {
    const ops::Linear& head = lm_head();
    check_batch(batch);
    const int64_t B = batch.batch(), T = batch.seq_len();
    std::vector<int64_t> rows(static_cast<size_t>(B));
    const int32_t* mask = batch.attention_mask.data<int32_t>();
    for (int64_t b = 0; b < B; ++b) {
      int64_t t = T - 1;  // each row's last real token (the last column when left-padded)
      while (t > 0 && mask[b * T + t] == 0) --t;
      rows[size_t(b)] = t;
    }
    const Tensor last = final_rows(batch.input_ids, batch.attention_mask, arange_positions(batch), rows, nullptr);
    Tensor logits = Tensor::empty({B, config_.vocab_size}, DType::f32, last.device());
    {
      core::Span span(core::SpanKind::module, "lm_head");
      ops::linear_forward(logits, last, head);
    }
    Tensor out = to_host(logits);
    softcap(out);
    return out;
  }

  Tensor lm_logits(const TokenBatch& batch) const override {
    const ops::Linear& head = lm_head();
    check_batch(batch);
    const int64_t B = batch.batch(), T = batch.seq_len();
    Tensor h = decoder_forward(w_, config_, batch.input_ids, batch.attention_mask, arange_positions(batch), nullptr);
    Tensor logits = Tensor::empty({B, T, config_.vocab_size}, DType::f32, h.device());
    Tensor flat = logits.reshape({B * T, config_.vocab_size});
    ops::linear_forward(flat, h.reshape({B * T, config_.hidden_size}), head);
    Tensor out = to_host(logits);
    softcap(out);
    return out;
  }

  Generation generate(const TokenBatch& prompts, const GenerateOptions& options) const override {
    const ops::Linear& head = lm_head();
    check_batch(prompts);
    check(options.max_new_tokens > 0, "generate: max_new_tokens must be positive");
    const int64_t B = prompts.batch(), T = prompts.seq_len();
    const int32_t* mask = prompts.attention_mask.data<int32_t>();
    for (int64_t b = 0; b < B; ++b)
      check(mask[b * T + T - 1] == 1, "generate: row " + std::to_string(b) +
                                          " ends in padding; prompts must be left-padded (the last column real)");
    Generation g;
    g.tokens.assign(size_t(B), {});
    g.prompt_tokens = prompts.real_tokens();
    KvCache cache = make_kv_cache(config_, B, T + options.max_new_tokens, place_.device, w_.activations);
    std::vector<int32_t> next_position;
    const Tensor positions = generation_positions(prompts, next_position);
    std::vector<bool> done(size_t(B), false);
    const int32_t pad = config_.pad_token_id >= 0
                            ? int32_t(config_.pad_token_id)
                            : int32_t(config_.eos_token_ids.empty() ? 0 : config_.eos_token_ids[0]);
    Tensor step_ids = Tensor::empty({B, 1}, DType::i32);
    Tensor step_mask = Tensor::empty({B, 1}, DType::i32);  // every generated token is real
    std::fill(step_mask.data<int32_t>(), step_mask.data<int32_t>() + B, 1);
    Tensor step_pos = Tensor::empty({B, 1}, DType::i32);
    // On a GPU the steps after the first run as one captured graph; elsewhere (or where it
    // cannot) each step is a forward like the prompt's.
    const std::string no_graph =
        options.cuda_graphs ? DecodeGraph::unsupported_reason(config_, place_.device, cache.capacity) : "not asked for";
    std::unique_ptr<DecodeGraph> graph;
    g.decode_method = "kernel by kernel (" + (place_.device.kind == DeviceKind::cpu ? "the CPU" : no_graph) + ")";
    // Made with the cache, before the clock starts: its buffers and tables of every position.
    if (no_graph.empty() && options.max_new_tokens > 1)
      graph = std::make_unique<DecodeGraph>(w_, config_, head, config_.final_logit_softcap, cache, B);
    const auto t_start = Clock::now();
    // The first token reads the prompt's last column only (left-padded: every row's last real token).
    Tensor h = final_rows(prompts.input_ids, prompts.attention_mask, positions, std::vector<int64_t>(size_t(B), T - 1),
                          &cache);
    std::vector<int32_t> next = greedy_tokens(h, 1, head);
    for (int64_t step = 0; step < options.max_new_tokens; ++step) {
      const auto t0 = Clock::now();
      if (step > 0) {
        if (graph) {
          next = graph->step(step_ids.data<int32_t>(), step_pos.data<int32_t>());
        } else {
          h = decoder_forward(w_, config_, step_ids, step_mask, step_pos, &cache);
          next = greedy_tokens(h, 1, head);
        }
      }
      bool all_done = true;
      for (int64_t b = 0; b < B; ++b) {
        int32_t token = next[size_t(b)];
        if (done[size_t(b)]) token = pad;
        g.tokens[size_t(b)].push_back(token);
        if (options.stop_at_eos &&
            std::find(config_.eos_token_ids.begin(), config_.eos_token_ids.end(), token) != config_.eos_token_ids.end())
          done[size_t(b)] = true;
        all_done = all_done && done[size_t(b)];
        step_ids.data<int32_t>()[b] = token;
        step_pos.data<int32_t>()[b] = next_position[size_t(b)]++;
      }
      const double s = std::chrono::duration<double>(Clock::now() - (step == 0 ? t_start : t0)).count();
      if (step == 0) g.time_to_first_token_s = s;
      else g.decode_step_s.push_back(s);
      if (all_done) break;
    }
    if (graph) g.decode_method = graph->method();
    g.total_s = std::chrono::duration<double>(Clock::now() - t_start).count();
    count_decode_bytes(g, B, T, head);
    return g;
  }

 private:
  void check_batch(const TokenBatch& batch) const {
    const Tensor& ids = batch.input_ids;
    check(ids.defined() && ids.dim() == 2 && ids.dtype() == DType::i32 && ids.size(0) > 0 && ids.size(1) > 0,
          "input_ids must be a non-empty i32 [batch, seq]");
    const int64_t B = ids.size(0), T = ids.size(1);
    // Rotary positions have no table to run off: past max_position_embeddings transformers warns
    // and goes on (and dynamic RoPE scaling is made for it), so tach goes on too.
    (void)T;
    check(batch.attention_mask.defined() && batch.attention_mask.shape() == ids.shape() &&
              batch.attention_mask.dtype() == DType::i32,
          "attention_mask must be i32 " + shape_str(ids.shape()));
    check(!batch.token_type_ids.defined(), info_.architecture + " has no token types: do not pass token_type_ids");
    const int32_t* id = ids.data<int32_t>();
    const int32_t* m = batch.attention_mask.data<int32_t>();
    for (int64_t i = 0; i < B * T; ++i) {
      check(id[i] >= 0 && id[i] < config_.vocab_size,
            "input_ids[" + std::to_string(i / T) + "][" + std::to_string(i % T) + "] = " + std::to_string(id[i]) +
                " is outside the vocabulary of " + std::to_string(config_.vocab_size) + " tokens");
      check(m[i] == 0 || m[i] == 1, "attention_mask[" + std::to_string(i / T) + "][" + std::to_string(i % T) +
                                        "] = " + std::to_string(m[i]) + ": expected 0 or 1");
    }
  }

  // Positions as transformers' generate makes them: cumsum(mask) - 1, and 1 on padding. Returns
  // [B, T] i32 on the host; next[b] is the position of row b's first new token.
  static Tensor generation_positions(const TokenBatch& prompts, std::vector<int32_t>& next) {
    const int64_t B = prompts.batch(), T = prompts.seq_len();
    const int32_t* mask = prompts.attention_mask.data<int32_t>();
    Tensor positions = Tensor::empty({B, T}, DType::i32);
    next.assign(size_t(B), 0);
    for (int64_t b = 0; b < B; ++b) {
      int32_t seen = 0;
      for (int64_t t = 0; t < T; ++t) {
        seen += mask[b * T + t];
        positions.data<int32_t>()[b * T + t] = mask[b * T + t] ? seen - 1 : 1;
      }
      next[size_t(b)] = seen;
    }
    return positions;
  }

  // What g's decode steps read, for the bandwidth limit: each step the body, the LM head, one
  // embedding row per sequence, and the cache as long as it was at that step (prompt + tokens so
  // far), averaged over the steps. B, T: the prompts' batch and length.
  void count_decode_bytes(Generation& g, int64_t B, int64_t T, const ops::Linear& head) const {
    g.decode_weight_bytes = double(body_weight_bytes(w_) + head.weight_bytes()) +
                            double(B * config_.hidden_size) * double(dtype_bytes(w_.embed_tokens.dtype(), 1));
    for (size_t s = 0; s < g.decode_step_s.size(); ++s)
      g.decode_cache_bytes += double(kv_cache_bytes(config_, B, T + int64_t(s) + 1, w_.activations));
    if (!g.decode_step_s.empty()) g.decode_cache_bytes /= double(g.decode_step_s.size());
  }

  // Each row's greedy next token from the final hidden states h [B, rows, C] of a call: the LM head
  // on each row's last position, [B, C] -> [B, V], and the argmax on the model's device (Gemma's
  // softcap applied as the logits get it), so that only B ids come back to the host.
  std::vector<int32_t> greedy_tokens(const Tensor& h, int64_t rows, const ops::Linear& head) const {
    const int64_t B = h.numel() / (rows * config_.hidden_size), C = config_.hidden_size;
    Tensor last = Tensor::empty({B, C}, DType::f32, place_.device);
    ops::copy_rows(place_.device, last.data<float>(), C, h.data<float>() + (rows - 1) * C, rows * C, B, C);
    Tensor logits = Tensor::empty({B, config_.vocab_size}, DType::f32, place_.device);
    ops::linear_forward(logits, last, head);
    Tensor tokens = Tensor::empty({B}, DType::i32, place_.device);
    ops::argmax_rows(tokens, logits, config_.final_logit_softcap);
    const Tensor host = to_host(tokens);
    return std::vector<int32_t>(host.data<int32_t>(), host.data<int32_t>() + B);
  }

  // The final hidden states at one row per sequence, [B, C] on the model's device: rows[b] in
  // [0, T). The head-rows pass where it runs (its last layer for those rows alone), else the whole
  // pass and a gather. With a cache, every row's keys and values are appended either way.
  Tensor final_rows(const Tensor& ids, const Tensor& mask, const Tensor& positions, const std::vector<int64_t>& rows,
                    KvCache* cache) const {
    if (head_rows_supported(config_, place_.device))
      return decoder_forward_head_rows(w_, config_, ids, mask, positions, rows, cache);
    const int64_t B = ids.size(0), T = ids.size(1), C = config_.hidden_size;
    const Tensor h = decoder_forward(w_, config_, ids, mask, positions, cache);  // [B, T, C]
    Tensor out = Tensor::empty({B, C}, DType::f32, h.device());
    for (int64_t b = 0; b < B; ++b)  // rows come checked (hidden_rows) or computed by this class
      ops::copy_rows(h.device(), out.data<float>() + b * C, C, h.data<float>() + (b * T + rows[size_t(b)]) * C, C, 1,
                     C);
    return out;
  }

  // ModernBERT's mean pooling: (h * mask).sum(1) / mask.sum(1) over the final hidden states
  // h [B, T, C], as ModernBertForSequenceClassification (a row of padding only divides by 0);
  // [B, C] on h's device.
  Tensor mean_over_mask(const Tensor& h, const TokenBatch& batch) const {
    const int64_t B = batch.batch(), T = batch.seq_len(), C = config_.hidden_size;
    Tensor pooled = Tensor::empty({B, C}, DType::f32, h.device());
    if (h.device().kind != DeviceKind::cpu) {  // the pooling op's mean (sums in double) on the device
      ops::pooling_forward(pooled, h, batch.attention_mask.on(h.device()), {ops::PoolingMode::mean});
      return pooled;
    }
    const int32_t* mask = batch.attention_mask.data<int32_t>();
    for (int64_t b = 0; b < B; ++b) {
      float* out = pooled.data<float>() + b * C;
      std::fill(out, out + C, 0.0f);
      float n = 0;
      for (int64_t t = 0; t < T; ++t) {
        if (!mask[b * T + t]) continue;
        n += 1;
        const float* row = h.data<float>() + (b * T + t) * C;
        for (int64_t c = 0; c < C; ++c) out[c] += row[c];
      }
      for (int64_t c = 0; c < C; ++c) out[c] /= n;
    }
    return pooled;
  }

  // The token row b's classifier reads (first-token or last-token pooling): the first token; or
  // the last that is not pad_token_id, the last position when the config names no pad token.
  int64_t pooled_row(const TokenBatch& batch, int64_t b) const {
    const int64_t T = batch.seq_len();
    if (config_.pooling != DecoderConfig::Pooling::last_token) return 0;
    if (config_.pad_token_id < 0) return T - 1;
    const int32_t* ids = batch.input_ids.data<int32_t>() + b * T;
    int64_t at = 0;
    for (int64_t t = 0; t < T; ++t)
      if (ids[t] != config_.pad_token_id) at = t;
    return at;
  }

  // The per-token head on final hidden states h [N, C] (overwritten by ModernBERT's head.dense and
  // head.norm): [N, outputs] on the model's device.
  Tensor per_token_head(Tensor& h) const {
    const int64_t N = h.size(0), C = config_.hidden_size;
    core::Span span(core::SpanKind::module, per_token_module());
    if (w_.head_dense) {
      Tensor dense = Tensor::empty({N, C}, DType::f32, h.device());
      ops::linear_forward(dense, h, *w_.head_dense);
      decoder_norm(config_, h, dense, Tensor(), w_.head_norm);
    }
    Tensor logits = Tensor::empty({N, w_.per_token->out_features()}, DType::f32, h.device());
    ops::linear_forward(logits, h, *w_.per_token);
    return logits;
  }

  // Whether the head's forward runs the last layer for the rows it reads only (on the CPU, see
  // head_rows_supported): a classifier that pools at one token (not a mean), or an LM head.
  bool heads_read_one_row() const {
    return head_rows_supported(config_, place_.device) && config_.pooling != DecoderConfig::Pooling::mean;
  }

  // Gemma's final_logit_softcapping: logits = cap * tanh(logits / cap), on the host copy.
  void softcap(Tensor& logits) const {
    const double cap = config_.final_logit_softcap;
    if (cap <= 0) return;
    float* p = logits.data<float>();
    for (int64_t i = 0; i < logits.numel(); ++i) p[i] = float(cap * std::tanh(double(p[i]) / cap));
  }

  // The per-token head's module in traces, by its Hugging Face name.
  const char* per_token_module() const {
    if (config_.head_mlp) return config_.head == Head::masked_lm ? "decoder" : "classifier";
    return config_.head == Head::question_answering ? "qa_outputs" : "score";
  }

  // A result on the model's device, on the host (the copy waits for the device's work).
  static Tensor to_host(const Tensor& t) { return t.on(Device::cpu()); }

  // transformers' forward without position_ids uses 0..T-1 for every row, padded or not.
  static Tensor arange_positions(const TokenBatch& batch) {
    const int64_t B = batch.batch(), T = batch.seq_len();
    Tensor p = Tensor::empty({B, T}, DType::i32);
    for (int64_t i = 0; i < B * T; ++i) p.data<int32_t>()[i] = int32_t(i % T);
    return p;
  }

  // Packed on first use: a classifier that never generates does not pay for a second copy of
  // the (tied) vocabulary matrix.
  const ops::Linear& lm_head() const {
    check(config_.causal, info_.spec + " (" + info_.architecture +
                              ") is a bidirectional encoder: it has no language-model head and does not generate text");
    check(w_.lm_head_weight.defined(), info_.spec + " (" + info_.architecture +
                                           ") has no language-model head: its embeddings are not tied and it has "
                                           "no lm_head.weight");
    std::call_once(lm_head_once_, [&] { lm_head_ = pack_linear(w_.lm_head_weight, Tensor(), place_); });
    return *lm_head_;
  }

  ModelInfo info_;
  DecoderConfig config_;
  DecoderWeights w_;
  ops::LinearPlacement place_;
  DType compute_;
  mutable std::once_flag lm_head_once_;
  mutable std::unique_ptr<ops::Linear> lm_head_;
};

}  // namespace

ModelFamily decoder_family_row(const char* name, const char* model_type, const std::string& bare_architecture,
                               const std::string& classifier_architecture, const DecoderFamily* decoder,
                               const char* tokenizer_hint) {
  ModelFamily f;
  f.name = name;
  f.model_types = {model_type};
  f.body_prefix = "model.";
  f.probe = decoder->names.embed + ".weight";
  f.classifier_weight = "score.weight";
  f.head_modules = {"score"};
  f.lm_head = "lm_head";
  f.bare_architecture = bare_architecture;
  f.classifier_architecture = classifier_architecture;
  f.lora_targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  f.tokenizer_hint = tokenizer_hint;
  f.decoder = decoder;
  // tach prune: whole key/value groups, FFN neurons and layers; per-layer kinds as the row says.
  f.pruning = {.ffn_key = "intermediate_size", .layers_key = "num_hidden_layers", .kv_groups = true};
  f.load = load_decoder;
  f.summarize = summarize_decoder;
  return f;
}

ModelFamily with_per_token_heads(ModelFamily f, const std::string& stem, const std::string& qa_body_prefix) {
  f.token_classifier_architecture = stem + "ForTokenClassification";
  f.question_answering_architecture = stem + "ForQuestionAnswering";
  f.question_answering_body_prefix = qa_body_prefix;
  f.head_names.token_classifier = "score";
  f.head_names.qa_outputs = "qa_outputs";
  return f;
}

DecoderConfig decoder_config_of(const ModelLocation& loc) {
  return loc.kind == ModelLocation::Kind::preset
             ? decoder_preset_config(loc.preset).config
             : load_decoder_config((std::filesystem::path(loc.dir) / "config.json").string());
}

ArchitectureSummary summarize_decoder(const ModelFamily&, const ModelLocation& loc) {
  return summarize_decoder_config(decoder_config_of(loc));
}

ArchitectureSummary summarize_decoder_config(const DecoderConfig& c) {
  ArchitectureSummary a;
  a.decoder = true;
  a.name = c.architecture;
  a.tied = c.tie_word_embeddings;
  a.V = c.vocab_size, a.C = c.hidden_size, a.L = c.num_layers, a.H = c.num_heads, a.KVH = c.num_kv_heads;
  a.D = c.head_dim, a.I = c.intermediate_size, a.P = c.max_position_embeddings;
  a.labels = c.classification_head ? c.num_labels() : 0;
  // A sequence classifier's `score` [labels, C] replaces the LM head: transformers builds no
  // lm_head beside it whatever tie_word_embeddings says, so the embeddings count once.
  if (c.classification_head) a.tied = true;
  a.qkv_bias = c.qkv_bias, a.o_bias = c.o_bias, a.mlp_bias = c.mlp_bias, a.qk_norm = c.qk_norm;
  a.sandwich_norms = c.sandwich_norms;
  if (c.causal && (c.head == Head::token_classification || c.head == Head::question_answering)) {
    a.head = c.head;  // `score` or `qa_outputs`, with biases; no LM head beside it
    a.tied = true;
    a.labels = c.head == Head::token_classification ? c.num_labels() : 0;
  }
  if (!c.causal) {
    // ModernBERT: no LM head (tied counts the embeddings once), an embedding norm, no attention
    // norm in layer 0, and the pooled head (dense, norm) with the classifier's bias.
    a.tied = true;
    a.other_params = (c.embedding_norm ? c.hidden_size : 0) - (c.first_attn_norm ? 0 : c.hidden_size);
    a.prediction_head = c.head_mlp;
    a.head = c.classification_head ? Head::sequence_classification : c.head;
    a.head_dense_bias = c.head_dense_bias;
    a.decoder_bias = c.decoder_bias;
    a.labels = c.head == Head::token_classification || c.classification_head ? c.num_labels() : 0;
  }
  return a;
}

std::unique_ptr<Model> load_decoder(const ModelFamily& family, const ModelLocation& loc, const LoadOptions& options) {
  ModelInfo info;
  info.spec = loc.spec;
  info.compute = options.compute;
  info.gemm_tf32 = options.allow_tf32 && options.compute == DType::f32;
  info.device = options.device;
  DecoderConfig config;
  WeightStore store;
  std::optional<WeightBinder> binder;
  if (loc.kind == ModelLocation::Kind::preset) {
    DecoderPresetConfig preset = decoder_preset_config(loc.preset);
    config = preset.config;
    info.source = "synthetic weights (seed " + std::to_string(options.seed) + "): " + preset.description;
    binder.emplace(WeightBinder::synthetic(options.seed, config.norm_plus_one));
  } else {
    const std::string config_path = (std::filesystem::path(loc.dir) / "config.json").string();
    config = load_decoder_config(config_path);
    store = open_checkpoint_weights(loc.dir);
    info.disk_bytes = safetensors_bytes(loc.dir);
    info.source = loc.dir + (loc.revision.empty() ? "" : " (revision " + loc.revision + ")");
    // Bare models keep their tensors at the top level; the task models under the body prefix.
    std::vector<std::string> prefixes = task_body_prefixes(family);
    prefixes.push_back("");
    binder.emplace(store, prefixes, family.decoder->names.embed + ".weight", config_path);
  }
  if (!options.adapter.empty()) {
    auto adapter = PeftAdapter::open(options.adapter);
    if (adapter->head_tensor(family.classifier_weight)) {
      // A classifier adapter on a base language model: the task model peft wrapped.
      config.classification_head = true;
      config.causal_lm = false;
      config.architecture = family.classifier_architecture;
      config.id2label = labels_with_adapter(*adapter, family.classifier_weight, config.id2label);
    }
    binder->set_adapter(adapter, task_body_prefixes(family), loc.spec);
  }
  // The head: --head's, else the checkpoint's own. The bidirectional family (ModernBERT) builds
  // any of them, a head the checkpoint lacks new. A causal family builds its per-token heads
  // (token classification, question answering) new on any of its checkpoints, and --head none
  // leaves a per-token checkpoint's head out; a causal LM otherwise keeps its LM head or classifier.
  HeadSource source;
  if (options.head && *options.head != config.checkpoint_head) {
    const bool per_token = *options.head == Head::token_classification || *options.head == Head::question_answering;
    const bool has_head = !(*options.head == Head::question_answering ? family.question_answering_architecture
                                                                      : family.token_classifier_architecture)
                               .empty();
    // A per-token checkpoint's body takes a new sequence classifier too, as transformers' would.
    const bool new_classifier =
        *options.head == Head::sequence_classification &&
        (config.checkpoint_head == Head::token_classification || config.checkpoint_head == Head::question_answering);
    check(!config.causal || *options.head == Head::none || (per_token && has_head) || new_classifier,
          loc.spec + " (" + config.architecture + ") is a causal LM: tach builds no " + head_name(*options.head) +
              " head on it" + (per_token ? " (transformers has no " + std::string(family.name) + " one)" : ""));
    if (!config.causal || per_token || new_classifier) {
      source.fresh = true;
      config.head = *options.head;
      config.classification_head = config.head == Head::sequence_classification;
      config.causal_lm = false;
      config.architecture = architecture_for_head(family, config.head);
    } else if (config.checkpoint_head != Head::none && !config.classification_head) {
      config.head = Head::none;  // the bare body of a per-token checkpoint
      config.architecture = family.bare_architecture;
    }
  }
  source.std = config.initializer_range;
  source.seed = options.seed;
  source.body_prefix = family.body_prefix;
  if (source.fresh && options.new_head_labels > 0 && options.new_head_labels != config.num_labels()) {
    config.id2label.clear();
    config.label2id.clear();
    for (int64_t i = 0; i < options.new_head_labels; ++i) {
      config.id2label.push_back("LABEL_" + std::to_string(i));
      config.label2id[config.id2label.back()] = int(i);
    }
  }
  DecoderWeights weights = build_decoder(config, family.decoder->names, family.head_names, *binder,
                                         {options.device, options.compute}, source);
  // The layers are packed copies now; only the embedding table (and a tied LM head) still read
  // the file, row by row. Without this the file's pages would stay resident beside the copies.
  store.drop_resident_pages();
  release_cached_memory(Device::cpu());  // the f32 staging buffers of packing: freed, not kept cached
  info.activations = weights.activations;
  if (const std::string note = activations_note(options.compute, info.activations, options.device); !note.empty())
    info.notes.push_back(note);
  for (auto& n : binder->finish(config.architecture, loc.dir.empty() ? loc.spec : loc.dir)) info.notes.push_back(n);
  if (const std::string note = new_head_note(source, config.architecture, loc.dir.empty() ? loc.spec : loc.dir);
      !note.empty())
    info.notes.push_back(note);

  info.model_type = config.model_type;
  info.tokenizer_hint = family.tokenizer_hint;
  if (const std::string n = compute_note(options.compute, options.device, options.decoding, options.allow_tf32);
      !n.empty())
    info.notes.push_back(n);
  info.architecture = config.architecture;
  info.classifier = config.classification_head;
  info.head = config.classification_head ? Head::sequence_classification : config.head;
  info.checkpoint_head = config.checkpoint_head;
  info.causal_lm = weights.lm_head_weight.defined();
  info.bidirectional = !config.causal;
  info.labels = config.classification_head || config.head == Head::token_classification ? config.id2label
                                                                                        : std::vector<std::string>{};
  info.problem_type = config.problem_type.empty()
                          ? (config.num_labels() == 1 ? "regression" : "single_label_classification")
                          : config.problem_type;
  info.parameters = binder->parameters() + source.initialised_parameters;
  info.weights_dtype = binder->stored_dtypes();
  info.vocab_size = config.vocab_size;
  info.hidden_size = config.hidden_size;
  info.num_layers = config.num_layers;
  info.num_heads = config.num_heads;
  info.num_kv_heads = config.num_kv_heads;
  info.head_dim = config.head_dim;
  info.intermediate_size = config.intermediate_size;
  info.max_positions = config.max_position_embeddings;
  info.eos_token_ids = config.eos_token_ids;
  info.has_pad_token = config.pad_token_id >= 0;
  info.pad_token_id = int32_t(config.pad_token_id >= 0 ? config.pad_token_id : 0);
  info.positions = config.describe_positions();
  return std::make_unique<Decoder>(std::move(info), std::move(config), std::move(weights),
                                   ops::LinearPlacement{options.device, options.compute, options.decoding,
                                                        options.allow_tf32 && options.compute == DType::f32});
}

}  // namespace tach::model
