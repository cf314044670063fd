// The memory model behind tach estimate. Activation terms follow tach's own forward for inference
// (the buffers encoder_forward and decoder_forward allocate; docs/perf.md checks them against the
// allocator's measured peak), and the usual transformer accounting for what a backward keeps.
#include "tach/estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "model/checkpoint.h"
#include "estimate/architecture_reader.h"
#include "model/family.h"
#include "ops/train_attention_kernel.h"
#include "tach/device.h"
#include "tach/error.h"
#include "tach/system_info.h"

namespace tach {

namespace {

// The family table's numbers (model/family.h), and the heads each layer of a head-pruned encoder
// keeps (config.json's pruned_heads; empty: H in every layer), each layer's attention that many x D wide.
struct Arch : model::ArchitectureSummary {
  std::vector<int64_t> layer_heads;
  int64_t removed_heads() const {  // summed over the layers
    int64_t n = 0;
    for (int64_t h : layer_heads) n += H - h;
    return n;
  }
  int64_t widest_heads() const {  // the most any layer keeps
    int64_t w = layer_heads.empty() ? H : 0;
    for (int64_t h : layer_heads) w = std::max(w, h);
    return w;
  }
};

Arch describe(const std::string& spec) {
  Arch a{estimate::describe_model(spec), {}};
  if (!a.decoder) a.layer_heads = estimate::pruned_layer_heads(spec);
  return a;
}

// tach estimate --device cuda[:N]: the memory of a run on a GPU.
bool on_gpu(const EstimateInput& in) { return in.device.rfind("cuda", 0) == 0; }

int64_t dtype_size(const std::string& d) {
  // int8, nf4: the linears' weights are 1 B or 4 bits; everything else is f32.
  if (d == "f32" || d == "int8" || d == "nf4") return 4;
  if (d == "bf16" || d == "f16") return 2;
  throw Error("estimate: dtype '" + d + "' is not one of f32, bf16, f16, int8, nf4");
}

// The GEMM on NF4 weights dequantizes tiles of about 2^20 weights into f32 (cpu/nf4_gemm.h's
// nf4_tile_rows): the largest over the layer's weights [N, K].
double nf4_tile_bytes(const Arch& a) {
  const int64_t qkv = a.decoder ? (a.H + 2 * a.KVH) * a.D : 3 * a.C;
  const int64_t up = a.decoder ? 2 * a.I : a.I;
  double most = 0;
  for (const auto& [N, K] : {std::pair{qkv, a.C}, std::pair{a.C, a.C}, std::pair{up, a.C}, std::pair{a.C, a.I}}) {
    const int64_t rows = std::min(N, std::max<int64_t>(16, ((int64_t(1) << 20) / std::max<int64_t>(K, 1)) / 16 * 16));
    most = std::max(most, 4.0 * double(rows * K));
  }
  return most;
}

// Output rows of one layer's linears: each int8 weight row carries an f32 scale.
int64_t linear_rows_per_layer(const Arch& a) {
  if (!a.decoder) return 3 * a.C + a.C + a.I + a.C;                        // q|k|v, o, up, down
  return (a.H + 2 * a.KVH) * a.D + a.C + (a.experts ? 0 : 2 * a.I) + a.C;  // qkv, o, gate|up, down
}

// ModernBERT's fused linears (Wqkv, Wi) are LoRA targets of their own, and its heads differ from
// the other encoders'.
bool is_modernbert(const Arch& a) { return a.name.rfind("ModernBert", 0) == 0; }

// Every LoRA target name some family has: each layer's linears, and ModernBERT's fused ones.
constexpr const char* kLoraTargetNames[] = {"q", "k", "v", "o", "gate", "up", "down", "qkv", "gate_up"};
constexpr const char* kLoraTargetsText = "q, k, v, o, gate, up, down (ModernBERT: qkv, o, gate_up, down)";

// The LoRA targets: the ones asked for, or tach train's default (every family's row in
// model/family.h names every linear of a layer: attention's four, the MLP's two, or three gated).
std::vector<std::string> lora_targets_of(const Arch& a, const EstimateInput& in) {
  if (!in.lora_targets.empty()) return in.lora_targets;
  // ModernBERT stores q|k|v fused (Wqkv) and gate|up fused (Wi): its default adapts them as one
  // linear each, with one adapter of the fused width (model/modernbert.cc's lora_targets).
  if (is_modernbert(a)) return {"qkv", "o", "gate_up", "down"};
  std::vector<std::string> t = {"q", "k", "v", "o", "up", "down"};
  if (a.decoder) t.push_back("gate");
  return t;
}

// The estimate while it is composed: its lines (each with the formula in words), the total, the
// parameters that train and the phase at the peak.
// Past this a line is not counted (512 PiB: no device holds it, and a few such lines still sum
// within an int64).
constexpr double kCountableBytes = double(int64_t(1) << 59);

struct Totals {
  std::vector<EstimateLine> lines;
  int64_t total = 0, trainable = 0;
  std::string phase;
  std::string too_large;  // the first line past kCountableBytes (its value capped there), or ""
  void add(std::string name, double bytes, std::string how) {
    if (!(bytes < kCountableBytes)) {
      if (too_large.empty()) too_large = name;
      bytes = kCountableBytes;
    }
    lines.push_back({std::move(name), int64_t(bytes), std::move(how)});
  }
};

bool is_training(const EstimateInput& in) { return in.mode != "inference"; }
bool is_lora(const EstimateInput& in) { return in.mode == "train-lora" || in.mode == "train-qlora"; }

// QLoRA's frozen base: the linears in NF4, the embeddings kept in f32 (training's storage), and the
// f32 tile each GEMM dequantizes.
void add_qlora_weights(Totals& t, const Arch& a) {
  const int64_t s = 4;  // f32
  const int64_t embed = a.V * a.C * (a.tied || !a.decoder ? 1 : 2);
  const int64_t quantized = a.parameters() - embed;
  // NF4: 4 bits per weight; absmax per 64-weight block in 8 bits (double quantization) plus an
  // f32 second-level scale per 256 blocks.
  t.add("weights (NF4)", double(quantized) * (0.5 + 1.0 / 64 + 4.0 / (64 * 256)),
        "linear layers in NF4: 0.5 B/param + absmax 1 B per 64 + f32 per 256 blocks (double quantization)");
  t.add("weights (embeddings, kept in f32)", double(embed * s), "embedding (and untied LM head) matrices");
  t.add("NF4 dequantization tile", nf4_tile_bytes(a), "one f32 tile of a weight's rows at a time");
}

// Inference with quantized linears. --dtype int8 (cpu/int8_linear.h): every linear in int8 with an
// f32 scale per output row; nf4 (cpu/nf4_linear.h): 4 bits per weight, the double-quantized absmax
// and its f32 copy per 64. The embeddings stay f32, and a causal LM's head is a quantized linear
// beside them.
void add_quantized_weights(Totals& t, const Arch& a, const EstimateInput& in, int64_t batch) {
  const std::string& dtype = in.dtype;
  // An encoder's masked-LM decoder is such a linear too (over the tied embeddings or its own weight).
  // A decoder with a task head (a classifier's score, a per-token head) has no LM head, nor has
  // ModernBERT's bare body.
  const bool causal_lm = a.decoder && !is_modernbert(a) && a.labels == 0 && a.head == Head::none;
  const int64_t embed = a.V * a.C, lm_head = causal_lm || (!a.decoder && a.head == Head::masked_lm) ? a.V * a.C : 0;
  const int64_t untied = lm_head && !a.tied ? a.V * a.C : 0;
  const int64_t linear = a.parameters() - embed - untied;
  if (dtype == "nf4" && on_gpu(in))  // ops/linear_quantized.h: the codes and each block's f32 absmax
    t.add("weights (NF4 linears)", double(linear + lm_head) * (0.5 + 4.0 / 64),
          "0.5 B per linear weight + an f32 absmax per 64 (norms and biases counted alike)" +
              std::string(lm_head ? ", the LM head included" : ""));
  else if (dtype == "nf4")
    t.add("weights (NF4 linears)", double(linear + lm_head) * (0.5 + 1.0 / 64 + 4.0 / (64 * 256) + 4.0 / 64),
          "0.5 B per linear weight + per 64: the 8-bit absmax and its f32 copy the GEMV reads (norms and biases "
          "counted alike)" +
              std::string(lm_head ? ", the LM head included" : ""));
  else
    t.add("weights (int8 linears)",
          double(linear + lm_head) + 4.0 * double(a.L * linear_rows_per_layer(a) + (lm_head ? a.V : 0)),
          "1 B per linear weight (norms and biases, a fraction of a percent, counted alike) + an f32 scale per output "
          "row" +
              std::string(lm_head ? ", the LM head included" : ""));
  t.add("weights (embeddings, f32)", 4.0 * double(embed), "the token embedding matrix stays f32");
  const int64_t rows = batch * in.seq_len;  // a prompt's, in the layers
  if (on_gpu(in) && rows > 4) {
    // ops/linear_cuda.cc: more rows than a GEMV's (4) dequantize the whole weight into one reused
    // bf16 buffer and run the bf16 GEMM; the LM head too where more than 4 rows read it (a decoder's
    // prefill reads one row per sequence).
    const int64_t qkv = a.decoder ? (a.H + 2 * a.KVH) * a.D : 3 * a.C, up = a.decoder ? 2 * a.I : a.I;
    int64_t most = std::max({qkv * a.C, a.C * a.C, up * a.C, a.C * a.I});
    if (lm_head && (a.decoder ? batch : rows) > 4) most = std::max(most, a.V * a.C);
    t.add("dequantized weight (bf16)", 2.0 * double(most),
          "2 B x the largest linear weight: a GEMM over more rows than a GEMV's dequantizes it first");
  } else if (dtype == "nf4" && !on_gpu(in)) {
    t.add("NF4 dequantization tile", nf4_tile_bytes(a), "a prompt's prefill multiplies one f32 tile of rows at a time");
  }
}

// Every weight in the storage dtype. Training in 16 bits is mixed precision (cpu/train_gemm.h): the
// weights, gradients, AdamW's moments and the activations all stay f32; only each GEMM rounds its
// inputs to bf16 as it reads them. So a training point holds f32 storage whatever its dtype.
void add_dense_weights(Totals& t, const Arch& a, const EstimateInput& in) {
  const bool train = is_training(in);
  const int64_t s = train ? 4 : dtype_size(in.dtype), params = a.parameters();
  const std::string storage = train ? "f32" : in.dtype;
  t.add("weights", double(params * s),
        std::to_string(params) + " parameters x " + std::to_string(s) + " B (" + storage + ")" +
            (train && s != dtype_size(in.dtype)
                 ? ": " + in.dtype + " training keeps f32 weights and rounds each GEMM's inputs"
                 : ""));
  // The masked LM's decoder multiplies by the tied embeddings as a packed linear: a copy of them
  // in the GEMM's layout, beside the table the lookups read.
  if (!train && a.head == Head::masked_lm && a.tied)
    t.add("masked-LM decoder (packed tied embeddings)", double(a.V * a.C * s),
          "V x C x " + std::to_string(s) + " B: the word embeddings packed for the decoder's GEMM");
}

void add_weights(Totals& t, const Arch& a, const EstimateInput& in, int64_t batch) {
  if (in.mode == "train-qlora") add_qlora_weights(t, a);
  else if (in.dtype == "int8" || in.dtype == "nf4") add_quantized_weights(t, a, in, batch);
  else add_dense_weights(t, a, in);
}

// The adapters' parameters: r x (in + out) per target linear and layer.
int64_t lora_adapter_parameters(const Arch& a, const EstimateInput& in, const std::vector<std::string>& targets) {
  int64_t adapters = 0;
  for (const auto& target : targets) {
    int64_t in_f = a.C, out_f = a.C;
    if (target == "q" || target == "o") out_f = a.H * a.D;
    else if (target == "k" || target == "v") out_f = a.KVH * a.D;
    else if (target == "up" || target == "gate") out_f = a.I;
    else if (target == "down") in_f = a.I;
    else if (target == "qkv" && is_modernbert(a)) out_f = (a.H + 2 * a.KVH) * a.D;
    else if (target == "gate_up" && is_modernbert(a)) out_f = 2 * a.I;
    else
      usage_check(false, "estimate: --lora-targets '" + target + "' is one of ModernBERT's fused linears; " + a.name +
                             "'s LoRA targets are q, k, v, o, gate, up, down");
    if (target == "o") std::swap(in_f, out_f);
    adapters += a.L * in.lora_rank * (in_f + out_f);
    // A head-pruned encoder's q, k, v (out) and o (in) are as wide as each layer's kept heads.
    if (target == "q" || target == "k" || target == "v" || target == "o")
      adapters -= in.lora_rank * a.D * a.removed_heads();
  }
  // tach train's default targets name the layers' linears by their Hugging Face names, and
  // BERT's "dense" (RoBERTa's, MPNet's) also matches the pooler's dense: one more adapter.
  // ModernBERT's default "dense" is its head's dense alike.
  if (in.lora_targets.empty() && (is_modernbert(a) || (!a.decoder && a.name.rfind("DistilBert", 0) != 0)))
    adapters += in.lora_rank * 2 * a.C;
  return adapters;
}

// The head trains in full beside the adapters (modules_to_save): the classifier, and DistilBERT's
// pre_classifier. A decoder's score has no bias; ModernBERT's classifier has one.
int64_t lora_full_head_parameters(const Arch& a) {
  int64_t head = a.labels * (a.C + (a.decoder && !is_modernbert(a) ? 0 : 1));
  if (a.name.rfind("DistilBert", 0) == 0) head += a.C * (a.C + 1);
  return head;
}

// LoRA and QLoRA: the adapters and what their backward keeps; returns the trainable parameters
// (the adapters' and the head's).
int64_t add_lora(Totals& t, const Arch& a, const EstimateInput& in, int64_t tokens) {
  const std::vector<std::string> targets = lora_targets_of(a, in);
  const int64_t adapters = lora_adapter_parameters(a, in, targets);
  t.add("LoRA adapters", double(adapters * 4),
        std::to_string(adapters) + " parameters (rank " + std::to_string(in.lora_rank) + ") in f32");
  // Each adapter keeps dropout(x)·Aᵀ [tokens, r] for its backward, and one scratch buffer
  // serves the widest call: [tokens, in + r] (train/lora.h's LoraActivations).
  int64_t widest_in = a.C;
  for (const auto& target : targets)
    if (target == "down") widest_in = std::max(widest_in, a.I);
    else if (target == "o") widest_in = std::max(widest_in, a.H * a.D);
  const double N = double(tokens);
  t.add("LoRA activations",
        4.0 * N * double(in.lora_rank) * double(targets.size()) * double(a.L) +
            4.0 * N * double(widest_in + in.lora_rank),
        "4 B x tokens x r per adapter and layer, + one scratch of 4 B x tokens x (widest input + r)");
  return adapters + lora_full_head_parameters(a);
}

// Bytes per activation value of an inference forward (model/activation_dtype.h): 2 where a GPU runs a
// bf16 or f16 model's activations in its dtype (and int8's and nf4's: weight-only there, with bf16
// activations), 4 elsewhere (the CPU keeps f32 activations).
int64_t inference_activation_bytes(const EstimateInput& in) { return on_gpu(in) && in.dtype != "f32" ? 2 : 4; }

// Inference: the forward's buffers (tach's, in the activations' dtype) live at once within a
// layer, the per-token heads' outputs, and int8's quantized activations.
void add_forward_activations(Totals& t, const Arch& a, const EstimateInput& in, int64_t tokens) {
  const int64_t N = tokens;
  const int64_t e = inference_activation_bytes(in);
  const std::string bytes = std::to_string(e) + " B";
  if (a.decoder) {
    const int64_t qkv = (a.H + 2 * a.KVH) * a.D;
    t.add("activations (forward)", double(e * N) * double(3 * a.C + qkv + a.H * a.D + 3 * a.active_I() + a.D),
          bytes +
              " x tokens x (3C + (H+2KVH)D + HD + 3I + D): hidden, normed, qkv, context, delta, gate|up, act, rope" +
              std::string(a.experts ? " (I: the active experts' width, k x expert + shared)" : ""));
  } else {
    t.add("activations (forward)", double(e * N) * double(6 * a.C + a.I),
          bytes + " x tokens x (6C + I): hidden, qkv (3C), context, projection, FFN");
  }
  // The per-token heads' outputs: every token's logits (a masked LM's: the vocabulary, and its
  // dense's output before them).
  if (a.head == Head::masked_lm)
    t.add("head outputs", 4.0 * double(N) * double(a.V + a.C), "4 B x tokens x (V + C): the masked LM's logits");
  else if (a.head == Head::token_classification || a.head == Head::question_answering)
    t.add("head outputs", 4.0 * double(N) * double(a.head == Head::question_answering ? 2 : a.labels),
          "4 B x tokens x outputs: every token's logits");
  if (in.dtype == "int8" && !on_gpu(in))  // a GPU's int8 is weight-only: no activation codes
    t.add("int8 activation codes", double(N) * double(std::max(a.C, a.active_I())),
          "1 B x tokens x the widest linear input: each call's activations quantized per token");
  t.phase = "forward";
}

// The attention's saved state in each layer: tach's probabilities [B, H, T, T], or, where a bf16
// step on CUDA runs cuDNN's fused attention (ops/train_attention_kernel.h, the steps' choice), each
// query row's log-sum-exp [B, H, T]. A layer's sliding window shorter than the rows (Gemma 3,
// ModernBERT) keeps tach's kernels, which this count does not see.
struct SavedScores {
  double per_layer = 0;  // values
  std::string words;
};

SavedScores attention_saved_scores(const Arch& a, const EstimateInput& in, int64_t B) {
  const int64_t T = in.seq_len;
  ops::TrainAttentionCase attention =
      ops::train_attention_case(in.device.rfind("cuda", 0) == 0 ? Device::cuda(0) : Device::cpu(), in.dtype == "bf16");
  attention.heads = a.H, attention.kv_heads = a.decoder ? a.KVH : a.H, attention.head_size = a.D;
  attention.tokens = T, attention.score_bias = a.relative_bias > 0;
  const bool cudnn = !a.mla && ops::choose_train_attention(attention).cudnn();
  if (cudnn) return {double(B * a.H) * double(T), "B H T (cuDNN's log-sum-exp)"};
  return {double(B * a.H) * double(T * T), "B H T^2"};
}

// What a training step keeps for its backward (f32), in tach train's layout: each layer's set, the
// last layer's (an encoder's first-token layer keeps less), and what lies outside the layers.
struct BackwardLayout {
  double per_layer = 0, last_layer = 0;
  double last_shared = 0;  // under checkpointing: the last layer's part beside the shared layer's set
  double rest = 0;         // the outputs, the backward's gradient buffers, tables
  std::string words;       // the formula
};

// What tach train keeps (train/trainable_decoder.h, DecoderActivations, f32, eager): per layer the
// residual stream before and after attention, both RMSNorm outputs (4C per token), q|k|v after
// RoPE, the context, gate|up and the gated activation (3I), two row statistics, and the
// probabilities [B, H, T, T]; besides the layers, the last layer's output, the backward's
// gradient buffers (4C + (H+2KVH)D + HD + 3I) and the RoPE table (D per token).
BackwardLayout decoder_backward_layout(const Arch& a, int64_t B, int64_t T, const SavedScores& scores) {
  const int64_t N = B * T, qkv = (a.H + 2 * a.KVH) * a.D, hd = a.H * a.D;
  BackwardLayout l;
  l.per_layer = 4.0 * (double(N) * double(4 * a.C + qkv + hd + 3 * a.active_I() + 2) + scores.per_layer);
  l.last_layer = l.per_layer, l.last_shared = 4.0 * double(N * a.C);
  l.rest = 4.0 * (double(N) * double(5 * a.C + qkv + hd + 3 * a.active_I() + a.D) +
                  double(B) * double(4 * a.C + 1 + a.labels));
  l.words = "per layer 4 B x (tokens x (4C + (H+2KVH)D + HD + 3I + 2) + " + scores.words +
            "), + 4 B x tokens x (5C + (H+2KVH)D + HD + 3I + D) for the output, backward buffers and RoPE table";
  return l;
}

// What tach train keeps (train/trainable_encoder.h, EncoderActivations, f32): per layer the input,
// q|k|v, context, both residual sums and the first LayerNorm's output (8C per token), the FFN
// pre-activation and activation (2I), the probabilities [B, H, T, T] and four row statistics. The
// last layer runs past attention for the first tokens only: 5C per token and the probabilities,
// plus 4C + 2I + 4 per row. Besides the layers, the embedding sum (C) and the backward's gradient
// buffers (5C + I per token, 7C + I per row with the head's).
BackwardLayout encoder_backward_layout(const Arch& a, int64_t B, int64_t T, const SavedScores& scores) {
  const int64_t N = B * T;
  BackwardLayout l;
  l.per_layer = 4.0 * (double(N) * double(8 * a.C + 2 * a.I + 4) + scores.per_layer);
  l.last_layer =
      4.0 * (double(N) * double(5 * a.C) + double(B * a.H) * double(T * T) + double(B) * double(4 * a.C + 2 * a.I + 4));
  l.last_shared = 4.0 * (double(N) * double(a.C) + double(B) * double(4 * a.C + 2 * a.I + 4));
  l.rest = 4.0 * (double(N) * double(6 * a.C + a.I + 2) + double(B) * double(7 * a.C + a.I + a.labels));
  // The last layer's first-token attention keeps tach's kernels and their probabilities.
  l.words = "per layer 4 B x (tokens x (8C + 2I + 4) + " + scores.words +
            "), the last layer 4 B x (tokens x 5C + B H T^2 + rows x (4C + 2I + 4)), + 4 B x tokens x (6C + I + 2) "
            "for the embeddings and backward buffers";
  return l;
}

// An encoder with a per-token head: its last layer runs on every token, and no first-token buffers
// are kept (train/trainable_encoder.cc, prepare_activations): the sequence output (C per token), and
// for a masked LM its dense's input, output, activation and LayerNorm (4C + 2 per token) and the
// logits of the chosen tokens only, --mlm-probability's 15% of them x V
// (train/trainable_encoder_heads.cc); a classifier or qa_outputs its dropped-out input (C) and
// every token's logits.
BackwardLayout per_token_encoder_backward_layout(const Arch& a, int64_t B, int64_t T, const SavedScores& scores) {
  const int64_t N = B * T;
  BackwardLayout l = encoder_backward_layout(a, B, T, scores);  // the same layers; the last one and the rest differ
  l.last_layer = l.per_layer, l.last_shared = 4.0 * double(N * a.C);
  const bool mlm = a.head == Head::masked_lm;
  const double outputs = a.head == Head::question_answering ? 2 : double(a.labels);
  const double head = mlm ? double(N) * double(5 * a.C + 2) + std::ceil(0.15 * double(N)) * double(a.V)
                          : double(N) * (double(2 * a.C) + outputs);
  l.rest = 4.0 * (double(N) * double(6 * a.C + a.I + 2) + double(B) * double(4 * a.C + a.I) + head);
  l.words = "per layer 4 B x (tokens x (8C + 2I + 4) + " + scores.words +
            "), + 4 B x tokens x (6C + I + 2) for the embeddings and backward buffers, " +
            (mlm ? "+ 4 B x tokens x (5C + 2) for the masked LM's head and 4 B x 15% of tokens x V for the "
                   "chosen tokens' logits"
                 : "+ 4 B x tokens x (2C + outputs) for the head's input and logits");
  return l;
}

// A head-pruned encoder (train/trainable_encoder.cc, prepare_activations): each layer keeps q|k|v
// and the context (4D per token) and the saved scores of its kept heads only; the backward's
// d(q|k|v) (3D per token), and under checkpointing the one layer's set the others share, are the
// widest layer's. The bytes less than the layouts above count with every head.
double pruned_heads_bytes(const Arch& a, const SavedScores& scores, int64_t N, bool checkpointing) {
  if (a.layer_heads.empty()) return 0;
  const double per_head = double(N) * double(4 * a.D) + scores.per_layer / double(a.H);
  const int64_t narrower = a.H - a.widest_heads();
  const double layers = checkpointing && a.L > 1 ? double(narrower) * per_head : double(a.removed_heads()) * per_head;
  return 4.0 * (layers + double(N) * double(3 * a.D * narrower));
}

// Training: the activations kept for the backward, every layer's or (checkpointing) one layer's.
void add_backward_activations(Totals& t, const Arch& a, const EstimateInput& in, int64_t B) {
  const int64_t T = in.seq_len, N = B * T;
  const SavedScores scores = attention_saved_scores(a, in, B);
  const bool per_token_head =
      a.head == Head::masked_lm || a.head == Head::token_classification || a.head == Head::question_answering;
  const BackwardLayout l = a.decoder        ? decoder_backward_layout(a, B, T, scores)
                           : per_token_head ? per_token_encoder_backward_layout(a, B, T, scores)
                                            : encoder_backward_layout(a, B, T, scores);
  const double pruned = pruned_heads_bytes(a, scores, N, in.gradient_checkpointing);
  const std::string pruned_words =
      pruned > 0
          ? "; less the pruned heads' q|k|v, context and scores, each layer's attention as wide as its kept heads"
          : "";
  if (in.gradient_checkpointing) {
    // Checkpointing keeps every layer's input (4 B x tokens x C) and one layer's intermediates,
    // shared by all layers and recomputed in the backward (the encoders' last layer keeps its
    // first-token buffers of its own).
    const double kept = a.L > 1 ? l.per_layer + double(a.L - 2) * 4.0 * double(N * a.C) + l.last_shared : l.last_layer;
    t.add("activations kept for the backward", kept + l.rest - pruned,
          "gradient checkpointing: one layer's set and each other layer's input, 4 B x tokens x C (" + l.words +
              "; tach train's layout" + pruned_words + ")");
  } else {
    t.add("activations kept for the backward", l.per_layer * double(a.L - 1) + l.last_layer + l.rest - pruned,
          l.words + ", all layers (tach train's layout" + pruned_words + ")");
  }
  t.phase = "backward";
}

// A decoder generating: the keys and values of the prompt and the new tokens, every layer's.
void add_kv_cache(Totals& t, const Arch& a, const EstimateInput& in, int64_t B) {
  const int64_t e = inference_activation_bytes(in);  // the cache is in the activations' dtype
  const double kv =
      double(e) * double(a.L) * double(B) * double(in.seq_len + in.generate_tokens) * double(a.kv_cache_width());
  t.add("KV cache", kv,
        a.mla ? std::to_string(e) +
                    " B x layers x batch x (prompt + new tokens) x (kv_lora_rank + "
                    "qk_rope_head_dim): MLA's compressed latent and rope key"
              : "2 x " + std::to_string(e) + " B x layers x batch x (prompt + new tokens) x KVH x D");
}

// The memory of one point at `batch` rows: every line and their total at the peak phase.
Totals compute(const Arch& a, const EstimateInput& in, int64_t batch) {
  const bool train = is_training(in);
  check((in.dtype != "int8" && in.dtype != "nf4") || !train,
        "estimate: --dtype " + in.dtype +
            " quantizes inference; training runs in f32 or bf16 (QLoRA: --mode train-qlora)");
  Totals t;
  add_weights(t, a, in, batch);
  if (in.mode == "train-full") t.trainable = a.parameters();
  if (is_lora(in)) t.trainable = add_lora(t, a, in, batch * in.seq_len);
  if (train) {
    t.add("gradients", double(t.trainable * 4), "one f32 gradient per trainable parameter");
    t.add("optimizer states (AdamW)", double(t.trainable * 8), "2 f32 moments per trainable parameter");
    add_backward_activations(t, a, in, batch);
  } else {
    add_forward_activations(t, a, in, batch * in.seq_len);
  }
  if (a.decoder && in.generate_tokens > 0) add_kv_cache(t, a, in, batch);
  for (const auto& l : t.lines) t.total += l.bytes;
  return t;
}

}  // namespace

int64_t available_memory(const std::string& device, std::string* source) {
  const Device d = parse_device(device);
  if (d.kind == DeviceKind::cpu) {
    *source = "MemAvailable (/proc/meminfo)";
    return system_info().memory_available_bytes;
  }
  for (const auto& g : cuda_devices())
    if (g.index == d.index) {
      *source = "free memory of " + g.name + " (CUDA)";
      return g.free_bytes;
    }
  throw Error("estimate: device " + device + " is not here (" + cuda_unavailable_reason() + ")");
}

MemoryEstimate estimate_memory(const EstimateInput& given) {
  EstimateInput in = given;
  // The values given: out of range is a usage error (exit status 2), as the CLI's own checks.
  usage_check(in.mode == "inference" || in.mode == "train-full" || in.mode == "train-lora" || in.mode == "train-qlora",
              "estimate: mode '" + in.mode + "' is not one of inference, train-full, train-lora, train-qlora");
  usage_check(in.optimizer == "adamw", "estimate: optimizer '" + in.optimizer + "' is not supported (adamw)");
  usage_check(in.batch > 0 && in.seq_len > 0, "estimate: batch and sequence length must be positive");
  usage_check(in.lora_rank > 0, "estimate: LoRA rank " + std::to_string(in.lora_rank) + " must be a positive integer");
  usage_check(in.generate_tokens >= 0,
              "estimate: " + std::to_string(in.generate_tokens) + " new tokens: the count cannot be negative");
  usage_check(in.margin >= 0 && in.margin < 1, "estimate: the margin must be in [0, 1)");
  // A LoRA target no family has is refused before the model is read; which of the rest this
  // model has is checked once its config is (compute: ModernBERT's fused qkv and gate_up).
  for (const auto& target : in.lora_targets)
    usage_check(std::count(std::begin(kLoraTargetNames), std::end(kLoraTargetNames), target) > 0,
                "estimate: --lora-targets '" + target + "' is not a LoRA target: give some of " + kLoraTargetsText);
  Arch a = describe(in.model);
  // A causal family's per-token heads (and the bare body or a classifier on a per-token checkpoint).
  const bool causal_heads =
      a.decoder && !a.prediction_head && in.head &&
      (a.head != Head::none || *in.head == Head::token_classification || *in.head == Head::question_answering);
  if (in.head && *in.head != a.head &&
      (!a.decoder || a.prediction_head || causal_heads)) {  // a new head, as load_model builds it
    usage_check(in.new_head_labels >= 0, "estimate: a head's labels cannot be negative");
    const bool classifier = *in.head == Head::sequence_classification || *in.head == Head::token_classification;
    if (classifier && (in.new_head_labels > 0 || a.labels == 0))
      a.labels = in.new_head_labels > 0 ? in.new_head_labels : 2;
    a.head = *in.head;
    a.bare_pooler = false;
    if (causal_heads) {  // no LM head beside the new one; a causal classifier is `labels` on a bare body
      a.tied = true;
      if (a.head == Head::none) a.labels = 0;
      if (a.head == Head::sequence_classification) a.head = Head::none;
    }
    // The architecture built: the family's for that head, on the checkpoint's body.
    std::string built;
    for (const auto& family : model::model_families())
      for (const auto& [architecture, head] : model::family_architectures(family))
        if (architecture == a.name) built = model::architecture_for_head(family, *in.head);
    a.name = built.empty() ? a.name + " with a new " + head_name(*in.head) + " head"
                           : built + (*in.head == Head::none ? ": " : ": a new head on ") + a.name + "'s body";
  }
  // A row past the positions does not run: an encoder's learned table has P rows (tach refuses
  // longer rows; RoBERTa's start after padding_idx), and a decoder's prompt with its new tokens
  // must stay within max_position_embeddings (tach generate refuses more).
  const int64_t positions = a.max_row_tokens > 0 ? a.max_row_tokens : a.P;
  const int64_t new_tokens = a.decoder ? in.generate_tokens : 0;
  std::string seq_len_note;
  // A question-answering model's rows are MLPerf's BERT shape unless -s says, as tach bench and
  // tach eval run one (run_qa's max_seq_length): 384 tokens, not the default 128.
  if (in.seq_len_is_default && a.head == Head::question_answering) {
    in.seq_len = kQuestionAnsweringTokens;
    seq_len_note = "MLPerf's BERT shape for a question-answering model, as tach bench runs it; -s sets another";
  }
  if (in.seq_len_is_default && positions > new_tokens && in.seq_len + new_tokens > positions) {
    in.seq_len = positions - new_tokens;
    seq_len_note = seq_len_note.empty() ? "the model's longest row; -s sets another"
                                        : "the model's longest row, short of MLPerf's 384 for a question-answering "
                                          "model; -s sets another";
  }
  const int64_t row = in.seq_len + new_tokens;
  // -s (and --generate-tokens) out of the model's range: a usage error, as tach bench's lengths.
  usage_check(positions <= 0 || row <= positions,
              "estimate: " +
                  (row == in.seq_len ? std::to_string(row) + " tokens per row"
                                     : std::to_string(in.seq_len) + " tokens + " + std::to_string(in.generate_tokens) +
                                           " new ones (" + std::to_string(row) + " per row)") +
                  " is past " + in.model + "'s " + std::to_string(positions) + " positions (max_position_embeddings" +
                  (positions != a.P ? " " + std::to_string(a.P) + ", starting after padding_idx" : std::string()) +
                  "); the longest row it takes is " + std::to_string(positions) + " tokens");
  MemoryEstimate e;
  e.model = in.model;
  e.architecture = a.name;
  e.note = a.note;
  e.parameters = a.parameters();
  e.seq_len = in.seq_len;
  e.seq_len_note = seq_len_note;
  const Totals t = compute(a, in, in.batch);
  usage_check(t.too_large.empty(), "estimate: " + t.too_large + " alone would be more than 512 PiB at batch " +
                                       std::to_string(in.batch) + " x " + std::to_string(in.seq_len) +
                                       " tokens: no device holds it; give a smaller batch (-b) or length (-s)");
  e.lines = t.lines;
  e.total_bytes = t.total;
  e.peak_phase = t.phase;
  e.trainable_parameters = t.trainable;
  if (is_lora(in)) e.lora_targets = lora_targets_of(a, in);
  usage_check(in.available_bytes >= 0, "estimate: the available memory cannot be negative");
  if (in.available_bytes > 0) e.available_source = "given (--available)";
  const int64_t avail = in.available_bytes > 0 ? in.available_bytes : available_memory(in.device, &e.available_source);
  e.available_bytes = int64_t(double(avail) * (1.0 - in.margin));
  e.fits = e.total_bytes <= e.available_bytes;
  // The largest batch that fits: doubling, then bisection (memory grows with the batch).
  int64_t lo = 0, hi = 1;
  const auto fits = [&](int64_t batch) {
    const Totals at = compute(a, in, batch);
    return at.too_large.empty() && at.total <= e.available_bytes;
  };
  while (hi <= (int64_t(1) << 20) && fits(hi)) lo = hi, hi *= 2;
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  e.largest_batch_that_fits = lo;
  return e;
}

}  // namespace tach
