// Loading and running models. The CLI and later modules use only this header.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tach/device.h"
#include "tach/dtype.h"
#include "tach/tensor.h"

namespace tach {

// A padded batch of token ids.
// input_ids: [B, T] i32  attention_mask: [B, T] i32 (1 = token, 0 = padding)
// token_type_ids: [B, T] i32 or undefined (all zeros)
struct TokenBatch {
  Tensor input_ids;
  Tensor attention_mask;
  Tensor token_type_ids;

  int64_t batch() const { return input_ids.size(0); }
  int64_t seq_len() const { return input_ids.size(1); }
  int64_t real_tokens() const;  // sum of the mask
  // The same batch with each tensor on `device` (a tensor already there is shared, not copied).
  TokenBatch on(Device device) const;
  // Pads rows of different lengths on the right with pad_id. type_rows may be empty, or one
  // row per id row of the same length.
  static TokenBatch from_rows(const std::vector<std::vector<int32_t>>& rows, int32_t pad_id,
                              const std::vector<std::vector<int32_t>>& type_rows = {});
  // Pads on the left instead, for generation: decoders continue from the last column.
  static TokenBatch left_padded(const std::vector<std::vector<int32_t>>& rows, int32_t pad_id);
};

// The head a model runs on its body's hidden states.
enum class Head { none, sequence_classification, token_classification, question_answering, masked_lm };
// --head's spellings: "none", "sequence-classification", "token-classification",
// "question-answering", "masked-lm".
const char* head_name(Head h);
// "auto" -> std::nullopt (the checkpoint's own head); a name above -> its head; anything else a
// UsageError naming the choices.
std::optional<Head> parse_head(const std::string& name);

struct ModelInfo {
  std::string spec;            // as given
  std::string source;          // directory, hub snapshot, or "synthetic weights (seed N)"
  std::string model_type;      // config.json's: bert, distilbert, qwen2, llama, mistral, qwen3, gemma3_text
  std::string tokenizer_hint;  // a tokenizer of the family to suggest when a model has none ("bert-base-uncased")
  std::string architecture;    // as built
  bool classifier = false;     // has a sequence-classification head (head == Head::sequence_classification)
  Head head = Head::none;      // the head built
  Head checkpoint_head = Head::none;  // the head the checkpoint was published with (its architecture)
  std::vector<std::string> labels;
  std::string problem_type;  // single_label_classification | multi_label_classification | regression
  int64_t parameters = 0;
  int64_t disk_bytes = 0;     // the safetensors files read; 0 for synthetic weights
  std::string weights_dtype;  // as stored: f32, f16, bf16 (or "mixed")
  DType compute = DType::f32;
  // f32 linears on a GPU multiply on TF32 tensor cores (LoadOptions::allow_tf32 with f32 compute).
  bool gemm_tf32 = false;
  // The forward's activations (the residual stream, GEMM inputs and outputs, attention): bf16 or
  // f16 on a GPU for a model computed in bf16 or f16, else f32.
  DType activations = DType::f32;
  Device device = Device::cpu();  // where the weights live and the forward runs
  int64_t vocab_size = 0, hidden_size = 0, num_layers = 0, num_heads = 0, intermediate_size = 0;
  int64_t max_positions = 0, type_vocab_size = 0;  // max_positions: the tokens a row can hold (RoBERTa: 2 fewer)
  int64_t num_kv_heads = 0, head_dim = 0;          // decoders: grouped-query attention
  bool causal_lm = false;                          // can produce vocabulary logits and generate
  bool bidirectional = false;          // every token sees both sides (encoders, ModernBERT): never generates
  std::vector<int64_t> eos_token_ids;  // decoders: generation stops at these
  std::string positions;               // "learned absolute", "rotary (theta 1e6)", ...
  int32_t pad_token_id = 0;
  bool has_pad_token = true;  // false for a decoder whose config names none (batches of 1 then)
  // Sentence embeddings: a model with a sentence-transformers config (modules.json), or a bare
  // encoder (mean pooling, as sentence-transformers treats a plain transformers model).
  bool embedding = false;        // Model::embed pools its hidden states into one vector per row
  std::string pooling;           // "mean", "cls", "cls+mean", ...
  bool normalized = false;       // the vectors are L2-normalised (a Normalize module)
  int64_t embedding_dim = 0;     // the pooled vector's length
  int64_t max_seq_length = 0;    // sentence-transformers' max_seq_length, capped by the positions (0: none)
  bool lowercase_input = false;  // sentence_bert_config.json's do_lower_case: lowercase texts first
  std::map<std::string, std::string> prompts;  // config_sentence_transformers.json: name -> text put before inputs
  std::string default_prompt_name;             // the prompt used when none is asked for ("": none)
  std::vector<std::string> notes;              // decisions made while loading, for the user to see
};

struct LoadOptions {
  Device device = Device::cpu();
  // The GEMMs' input dtype; accumulation is f32 everywhere. CPU: f32, or bf16 (inputs rounded to
  // bf16). CUDA: f32 (full f32, not TF32, as PyTorch's default), bf16 or f16 through cuBLASLt.
  DType compute = DType::f32;
  // CUDA, f32 compute: the linears' GEMMs round their inputs to TF32 (10 mantissa bits) on the
  // tensor cores and accumulate in f32, as torch.backends.cuda.matmul.allow_tf32 = True. Off by
  // default (PyTorch's default too); no effect on bf16/f16 compute; an error on a CPU, which has no TF32.
  bool allow_tf32 = false;
  uint64_t seed = 0;  // synthetic weights of presets
  // A LoRA adapter directory as peft saves it (empty: none), merged into the weights at load;
  // the head it carries (modules_to_save) replaces the checkpoint's.
  std::string adapter;
  // The model will generate token by token (few rows per linear call). On a CPU where oneDNN's f32
  // matmul repacks its weights at every call (no AVX-512), f32 linears then run on tach's panel
  // kernels, which read the weights faster for a few rows and slower for a batch's thousands.
  bool decoding = false;
  // The head to build: std::nullopt (auto) = the checkpoint's own, as published. A head the
  // checkpoint lacks is built new (initialised as transformers initialises it, seeded by `seed`),
  // with transformers' note; a checkpoint's head that is not used is left out (not loaded, not counted).
  std::optional<Head> head;
  int64_t new_head_labels = 0;  // labels of a new classification head (0: config.json's id2label, else 2)
};

// Work one forward pass does, from the ops' declared costs.
struct ForwardCost {
  double flops = 0;
  double bytes = 0;
};

struct GenerateOptions {
  int64_t max_new_tokens = 32;
  bool stop_at_eos = true;  // a row that produced an end-of-sequence token gets pad tokens after it
  // On a GPU: the steps after the first replay one captured CUDA graph (false: kernel by kernel,
  // for comparisons; TACH_CUDA_GRAPHS=0 does the same for every run).
  bool cuda_graphs = true;
};

// Greedy decoding results and their timing: the prefill/decode split benchmarks need.
struct Generation {
  std::vector<std::vector<int32_t>> tokens;  // the new tokens of each row
  int64_t prompt_tokens = 0;                 // real (unpadded) prompt tokens, all rows
  double time_to_first_token_s = 0;          // the prompt's forward and the first token's choice
  std::vector<double> decode_step_s;         // every later step: one token for every row
  double total_s = 0;
  // What one decode step must read from memory at the least: every weight as the run stores it
  // (packed, in the compute dtype: int8 and bf16 read fewer bytes), and the key/value cache up to
  // the step's length (the mean over the decode steps). These bytes over the memory bandwidth are
  // the fastest a step can be.
  double decode_weight_bytes = 0, decode_cache_bytes = 0;
  // How the decode steps ran: kernel by kernel (and why), or as a replayed CUDA graph (its size).
  std::string decode_method;
};

// A model tach runs: an encoder (BERT, DistilBERT) or a decoder (Qwen2, Llama, Mistral, Qwen3, Gemma 3).
class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelInfo& info() const = 0;
  // last_hidden_state: [B, T, hidden] f32
  virtual Tensor hidden_states(const TokenBatch& batch) const = 0;
  // logits: [B, num_labels] f32. An error for a bare encoder.
  virtual Tensor classify(const TokenBatch& batch) const = 0;
  // The per-token heads' raw outputs, f32 on the host: token classification [B, T, num_labels],
  // question answering [B, T, 2] (start logit, end logit), masked LM [B, T, vocab]. An error
  // naming the model's head for any other head.
  virtual Tensor token_logits(const TokenBatch& batch) const;
  // The same outputs at chosen rows only (fill-mask's mask tokens): rows[b] the positions of
  // sequence b, each in [0, T), in the order wanted (a sequence may have none). [R, outputs] f32
  // on the host, R the rows in all, sequence 0's first. A model whose last layer and head can run
  // for those rows alone does so; otherwise they are the rows of token_logits. An error naming a
  // row outside its sequence.
  Tensor token_logits_at(const TokenBatch& batch, const std::vector<std::vector<int64_t>>& rows) const;
  // Sentence embeddings: [B, embedding_dim] f32, pooled (and normalised) as info().pooling says.
  // An error for a model that is not an embedding model (info().embedding false).
  virtual Tensor embed(const TokenBatch& batch) const;
  // What tach bench and tach profile time: the head built (a classifier's logits, or a per-token
  // head's token_logits), else an embedding model's vectors, else a causal LM's prefill
  // (prefill_logits); an error for a model that is none.
  Tensor measured_forward(const TokenBatch& batch) const;
  // The work of measured_forward (or of the forward alone, for a model that is neither).
  virtual ForwardCost forward_cost(int64_t batch, int64_t seq_len) const = 0;
  // The work of hidden_states: every token through every layer, no head (what an embedding model
  // wrapped around this one pools). By default forward_cost, which is that for a model without a head.
  virtual ForwardCost hidden_states_cost(int64_t batch, int64_t seq_len) const { return forward_cost(batch, seq_len); }
  // The final hidden state of one token per row, [B, C] f32 on the host: rows[b] in [0, T) (what
  // cls or last-token pooling reads). A model whose last layer can run for those rows alone does
  // so, as its classifier does; otherwise they are gathered from hidden_states. An error unless
  // there is one row per sequence, each inside it.
  Tensor hidden_rows(const TokenBatch& batch, const std::vector<int64_t>& rows) const;
  // Its work on full rows of seq_len tokens, reading each row's first token (first_token) or its last.
  virtual ForwardCost hidden_rows_cost(int64_t batch, int64_t seq_len, bool /*first_token*/) const {
    return hidden_states_cost(batch, seq_len);
  }
  // Causal LMs. logits: [B, T, V] f32. An error for models without an LM head.
  virtual Tensor lm_logits(const TokenBatch& batch) const;
  // Causal LMs: the prefill of generation, the forward over the prompts and the LM head at each
  // row's last real token only. logits: [B, V] f32.
  virtual Tensor prefill_logits(const TokenBatch& batch) const;
  // Greedy decoding with a key/value cache. prompts: left-padded (the last column real).
  virtual Generation generate(const TokenBatch& prompts, const GenerateOptions& options) const;

 protected:
  // hidden_rows once its rows are checked; by default the rows of hidden_states.
  virtual Tensor checked_hidden_rows(const TokenBatch& batch, const std::vector<int64_t>& rows) const;
  // token_logits_at once its rows are checked (at least one in all); by default the rows of token_logits.
  virtual Tensor checked_token_logits_at(const TokenBatch& batch, const std::vector<std::vector<int64_t>>& rows) const;
};
using EncoderModel = Model;  // the name this interface had when it held encoders only

// spec: "preset:NAME", a model directory, or a hub id ORG/NAME[@REV] in the Hugging Face cache.
std::unique_ptr<EncoderModel> load_model(const std::string& spec, const LoadOptions& options = {});
std::vector<std::string> preset_names();

// Asks the Hugging Face Hub for ORG/NAME[@REV] now (load_model uses a cached snapshot without
// asking) and fetches what tach reads into the cache, as huggingface_hub lays it out; returns
// the snapshot directory. HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE/HF_HOME, HF_HUB_OFFLINE apply.
std::string download_model(const std::string& hub_id);
// A Hub dataset's files: hf://datasets/ORG/NAME[@REV][/PATH] (or a name such as glue/sst2) → the
// cached files of PATH, or of `split` (its shards in order), so that offline runs find them.
// read_dataset takes the same names directly.
std::vector<std::string> download_dataset_files(const std::string& spec, const std::string& split);

class Tokenizer;
// The tokenizer to read for a model: `given` when set, else the files beside its weights (its
// directory or hub snapshot). Synthetic weights ship none: an error saying to pass --tokenizer.
std::string tokenizer_path_for(const ModelInfo& info, const std::string& given = "");
// What to do about a model with synthetic weights and no tokenizer: --tokenizer DIR with the
// tokenizer.json of `hint` (a Hub id, "" when none is known), which tach download fetches.
std::string missing_tokenizer_message(const std::string& model, const std::string& hint);
// Texts as tach classify feeds a model: special tokens added, each row truncated to the model's
// positions (longest_first, as transformers' pipelines do), padded on the right.
TokenBatch encode_texts_for(const Tokenizer& tokenizer, const ModelInfo& info, const std::vector<std::string>& texts);

// Turns logits into scores as the problem type says: softmax (single label), sigmoid (multi
// label), identity (regression). logits: [B, L]  returns [B, L]
Tensor scores_from_logits(const Tensor& logits, const std::string& problem_type);

}  // namespace tach
