// Models and tokenizers: load_model, Model.classify/embed/generate/hidden_states/lm_logits, Tokenizer.
// Inputs are encoded exactly as the CLI encodes them (tach::encode_texts_for), so results equal
// tach classify's and tach embed's. Arrays come back without a copy: a numpy array over the
// tensor's own memory, which the array keeps alive.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "tach/embed.h"
#include "tach/error.h"
#include "tach/model.h"
#include "tach/tokenizer.h"

namespace py = pybind11;

namespace tach::python {

namespace {

// A float32 array over the tensor's memory (copied to the CPU and made contiguous first if needed).
py::array_t<float> to_numpy(const Tensor& t) {
  Tensor host = t.on(Device::cpu());
  if (host.dtype() != DType::f32) host = host.to(DType::f32);
  if (!host.is_contiguous()) host = host.contiguous();
  auto* owner = new Tensor(std::move(host));
  py::capsule keep(owner, [](void* p) { delete static_cast<Tensor*>(p); });
  std::vector<py::ssize_t> shape(owner->shape().begin(), owner->shape().end()), strides(shape.size());
  py::ssize_t stride = sizeof(float);
  for (size_t d = shape.size(); d-- > 0;) strides[d] = stride, stride *= shape[d];
  return py::array_t<float>(shape, strides, owner->data<float>(), keep);
}

using Rows = std::vector<std::vector<int32_t>>;

// Rows of ids from a list of lists or a 2-D integer array.
Rows rows_of(const py::handle& ids) {
  Rows rows;
  for (const auto& row : ids) rows.push_back(row.cast<std::vector<int32_t>>());
  return rows;
}

bool is_texts(const py::handle& inputs) {
  if (py::isinstance<py::str>(inputs)) return true;
  if (!py::isinstance<py::sequence>(inputs) || py::len(inputs) == 0) return false;
  return py::isinstance<py::str>(inputs.cast<py::sequence>()[0]);
}

std::vector<std::string> texts_of(const py::handle& inputs) {
  if (py::isinstance<py::str>(inputs)) return {inputs.cast<std::string>()};
  return inputs.cast<std::vector<std::string>>();
}

// A model and the tokenizer read for it on first use (its own files, or the one given at load).
struct PyModel {
  std::unique_ptr<Model> model;
  std::string tokenizer_path;  // "" : the model's own
  std::unique_ptr<Tokenizer> tokenizer;

  const Tokenizer& tok() {
    if (!tokenizer) tokenizer = Tokenizer::load(tokenizer_path_for(model->info(), tokenizer_path));
    return *tokenizer;
  }
  // Texts (a str or a list of str) through the tokenizer, or rows of ids (with optional type ids).
  TokenBatch batch_of(const py::handle& inputs, const py::object& token_type_ids) {
    check(!inputs.is_none(), "no inputs: give texts or rows of token ids");
    if (is_texts(inputs)) return encode_texts_for(tok(), model->info(), texts_of(inputs));
    const Rows types = token_type_ids.is_none() ? Rows{} : rows_of(token_type_ids);
    return TokenBatch::from_rows(rows_of(inputs), model->info().pad_token_id, types);
  }
  // The inputs as a batch, `run` on it without the GIL, the result as an array.
  template <class Run>
  py::array_t<float> forward(const py::object& inputs, const py::object& token_type_ids, Run run) {
    const TokenBatch b = batch_of(inputs, token_type_ids);
    Tensor out;
    {
      py::gil_scoped_release unlocked;
      out = run(b);
    }
    return to_numpy(out);
  }
};

py::dict info_dict(const ModelInfo& i) {
  py::dict d;
  d["spec"] = i.spec, d["source"] = i.source, d["model_type"] = i.model_type, d["architecture"] = i.architecture;
  d["classifier"] = i.classifier, d["labels"] = i.labels, d["problem_type"] = i.problem_type;
  d["parameters"] = i.parameters, d["disk_bytes"] = i.disk_bytes, d["weights_dtype"] = i.weights_dtype;
  d["dtype"] = std::string(dtype_name(i.compute)), d["device"] = i.device.str();
  d["vocab_size"] = i.vocab_size, d["hidden_size"] = i.hidden_size, d["num_layers"] = i.num_layers;
  d["num_heads"] = i.num_heads, d["num_kv_heads"] = i.num_kv_heads, d["head_dim"] = i.head_dim;
  d["intermediate_size"] = i.intermediate_size, d["max_positions"] = i.max_positions;
  d["causal_lm"] = i.causal_lm, d["embedding"] = i.embedding, d["pooling"] = i.pooling;
  d["normalized"] = i.normalized, d["embedding_dim"] = i.embedding_dim, d["positions"] = i.positions;
  d["pad_token_id"] = i.pad_token_id, d["eos_token_ids"] = i.eos_token_ids, d["notes"] = i.notes;
  return d;
}

py::dict encoding_dict(const Encoding& e) {
  py::dict d;
  d["ids"] = e.ids, d["tokens"] = e.tokens, d["offsets"] = e.offsets, d["type_ids"] = e.type_ids;
  d["attention_mask"] = e.attention_mask, d["special_tokens_mask"] = e.special_tokens_mask;
  py::list overflowing;
  for (const auto& o : e.overflowing) overflowing.append(encoding_dict(o));
  d["overflowing"] = overflowing;
  return d;
}

}  // namespace

void bind_model(py::module_& m) {
  py::class_<PyModel>(m, "Model", "A model on tach's engine (load it with tach.load_model).")
      .def_property_readonly(
          "info", [](const PyModel& self) { return info_dict(self.model->info()); },
          "What was loaded: architecture, sizes, labels, dtype, device, pooling, notes")
      .def(
          "classify",
          [](PyModel& self, const py::object& inputs, const py::object& token_type_ids) {
            return self.forward(inputs, token_type_ids, [&](const TokenBatch& b) { return self.model->classify(b); });
          },
          py::arg("inputs"), py::arg("token_type_ids") = py::none(),
          "Logits [B, num_labels] float32 of texts (encoded as tach classify does: truncated to the model's "
          "positions, padded on the right) or of rows of token ids.")
      .def(
          "scores",
          [](PyModel& self, const py::object& inputs, const py::object& token_type_ids) {
            return self.forward(inputs, token_type_ids, [&](const TokenBatch& b) {
              return scores_from_logits(self.model->classify(b), self.model->info().problem_type);
            });
          },
          py::arg("inputs"), py::arg("token_type_ids") = py::none(),
          "Scores [B, num_labels]: softmax (single label), sigmoid (multi-label) or the logits (regression).")
      .def(
          "hidden_states",
          [](PyModel& self, const py::object& inputs, const py::object& token_type_ids) {
            return self.forward(inputs, token_type_ids,
                                [&](const TokenBatch& b) { return self.model->hidden_states(b); });
          },
          py::arg("inputs"), py::arg("token_type_ids") = py::none(), "The last hidden state [B, T, hidden] float32.")
      .def(
          "lm_logits",
          [](PyModel& self, const py::object& inputs) {
            return self.forward(inputs, py::none(), [&](const TokenBatch& b) { return self.model->lm_logits(b); });
          },
          py::arg("inputs"),
          "A causal LM's vocabulary logits [B, T, vocab] float32 at every position (texts or rows of token "
          "ids), for losses and perplexity; an error for a model without an LM head.")
      .def(
          "embed",
          [](PyModel& self, const py::object& texts, int64_t batch_size, int64_t max_length,
             const std::optional<std::string>& prompt, const std::string& prompt_name) {
            const std::vector<std::string> t = texts_of(texts);
            EmbedOptions o;
            o.batch_size = batch_size, o.max_length = max_length, o.prompt = prompt, o.prompt_name = prompt_name;
            const Tokenizer& tok = self.tok();
            Embeddings e;
            {
              py::gil_scoped_release unlocked;
              e = embed_texts(*self.model, tok, t, o);
            }
            return to_numpy(e.vectors);
          },
          py::arg("texts"), py::arg("batch_size") = 32, py::arg("max_length") = 0, py::arg("prompt") = py::none(),
          py::arg("prompt_name") = "",
          "Sentence embeddings [N, embedding_dim] float32, as tach embed and sentence-transformers' encode "
          "compute them (batched by length, pooled, normalised where the model says so).")
      .def(
          "generate",
          [](PyModel& self, const py::object& prompts, int64_t max_new_tokens, bool stop_at_eos) {
            Rows rows;
            const bool texts = is_texts(prompts);
            if (texts)
              for (const auto& t : texts_of(prompts)) rows.push_back(self.tok().encode(t).ids);
            else rows = rows_of(prompts);
            const TokenBatch b = TokenBatch::left_padded(rows, self.model->info().pad_token_id);
            GenerateOptions o;
            o.max_new_tokens = max_new_tokens, o.stop_at_eos = stop_at_eos;
            Generation g;
            {
              py::gil_scoped_release unlocked;
              g = self.model->generate(b, o);
            }
            py::dict d;
            d["tokens"] = g.tokens;
            if (texts) {
              std::vector<std::string> decoded;
              for (const auto& row : g.tokens) decoded.push_back(self.tok().decode(row));
              d["texts"] = decoded;
            }
            d["prompt_tokens"] = g.prompt_tokens, d["time_to_first_token_s"] = g.time_to_first_token_s;
            d["decode_step_s"] = g.decode_step_s, d["total_s"] = g.total_s;
            d["decode_method"] = g.decode_method;
            return d;
          },
          py::arg("prompts"), py::arg("max_new_tokens") = 32, py::arg("stop_at_eos") = true,
          "Greedy decoding with a key/value cache, as tach generate runs it: the new tokens of each row (and "
          "their text, for text prompts), the time to the first token and every decode step's time in seconds.");

  m.def(
      "load_model",
      [](const std::string& spec, const std::string& dtype, const std::string& device, const std::string& adapter,
         const std::string& tokenizer, uint64_t seed) {
        LoadOptions o;
        o.compute = parse_compute_dtype(dtype);
        o.device = parse_device(device);
        o.adapter = adapter, o.seed = seed;
        auto pm = std::make_unique<PyModel>();
        pm->tokenizer_path = tokenizer;
        {
          py::gil_scoped_release unlocked;
          pm->model = load_model(spec, o);
        }
        return pm;
      },
      py::arg("spec"), py::arg("dtype") = "f32", py::arg("device") = "cpu", py::arg("adapter") = "",
      py::arg("tokenizer") = "", py::arg("seed") = 0,
      "Loads a model as the CLI's --model does: preset:NAME, a directory with config.json and safetensors, or a "
      "hub id ORG/NAME[@REV] in the Hugging Face cache. dtype: f32, bf16 or int8 (f16 on cuda); device: cpu, cuda, "
      "cuda:N; adapter: a peft LoRA directory merged at load; tokenizer: for texts (default: the model's own).");

  py::class_<Tokenizer>(m, "Tokenizer", "A tokenizer that gives the ids Hugging Face's tokenizers library gives.")
      .def(py::init([](const std::string& path) { return Tokenizer::load(path); }), py::arg("path"),
           "path: a tokenizer.json, or a directory with tokenizer.json, vocab.txt, or vocab.json + merges.txt")
      .def(
          "encode",
          [](const Tokenizer& t, const std::string& text, const std::optional<std::string>& pair,
             bool add_special_tokens) {
            return encoding_dict(pair ? t.encode_pair(text, *pair, add_special_tokens)
                                      : t.encode(text, add_special_tokens));
          },
          py::arg("text"), py::arg("pair") = py::none(), py::arg("add_special_tokens") = true,
          "One text (or a pair) as a dict: ids, tokens, offsets (byte ranges), type_ids, attention_mask, "
          "special_tokens_mask, overflowing")
      .def(
          "encode_batch",
          [](const Tokenizer& t, const std::vector<std::string>& texts, bool add_special_tokens) {
            std::vector<Encoding> es;
            {
              py::gil_scoped_release unlocked;
              es = t.encode_batch(texts, add_special_tokens);
            }
            py::list out;
            for (const auto& e : es) out.append(encoding_dict(e));
            return out;
          },
          py::arg("texts"), py::arg("add_special_tokens") = true, "Many texts across tach's threads, in order")
      .def("decode", &Tokenizer::decode, py::arg("ids"), py::arg("skip_special_tokens") = true)
      .def("token_to_id", &Tokenizer::token_to_id, py::arg("token"))
      .def("id_to_token", &Tokenizer::id_to_token, py::arg("id"))
      .def_property_readonly("vocab_size", &Tokenizer::vocab_size, "Tokens, added tokens included")
      .def("__repr__", [](const Tokenizer& t) { return "tach.Tokenizer(" + t.describe() + ")"; });

  m.def("preset_names", &preset_names, "The built-in presets (preset:NAME), with synthetic weights");
}

}  // namespace tach::python
