// tach embed: sentence embeddings of texts, as sentence-transformers computes them (pooling and
// normalisation from the model's modules.json), printed, or written as .npy / .jsonl.
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "format.h"
#include "head_option.h"
#include "tach/parameter_count.h"
#include "tach/dataset.h"
#include "tach/embed.h"
#include "tach/error.h"
#include "tach/model.h"
#include "tach/runtime.h"
#include "tach/system_info.h"
#include "tach/tokenizer.h"
#include "usage.h"

namespace tach::cli {

namespace {

struct EmbedCliOptions {
  std::string model;
  std::vector<std::string> texts;
  std::string file;
  std::string text_column = "text";
  std::string tokenizer;
  std::string output;
  int64_t batch_size = 32;
  int64_t max_length = 0;
  std::string prompt_name, prompt;
  std::string dtype = "f32";
  int threads = 0;
  int show_rows = 8;
  std::string head = "auto";
  bool similarity = false;
  bool json = false;
};

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A dataset file (.csv, .tsv, .jsonl, .json, .parquet) gives its text column; anything else (or "-",
// standard input) is one text per line, an empty line an empty text.
std::vector<std::string> read_texts_file(const EmbedCliOptions& opt) {
  std::vector<std::string> out;
  const std::string& p = opt.file;
  if (p != "-" && (has_suffix(p, ".csv") || has_suffix(p, ".tsv") || has_suffix(p, ".jsonl") ||
                   has_suffix(p, ".json") || has_suffix(p, ".parquet"))) {
    DatasetOptions d;
    d.path = p;
    d.text_column = opt.text_column;
    d.label_column.clear();
    for (auto& e : read_dataset(d).examples) out.push_back(std::move(e.text));
    return out;
  }
  std::ifstream file;
  if (p != "-") {
    file.open(p, std::ios::binary);
    check(file.good(), p + ": cannot open");
  }
  std::istream& in = p == "-" ? std::cin : file;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(line);
  }
  check(!out.empty(), p + ": no lines to embed");
  return out;
}

std::string quoted_preview(const std::string& text, size_t max_bytes) {
  std::string s = text.size() <= max_bytes ? text : text.substr(0, max_bytes);
  // Never cut inside a UTF-8 sequence.
  while (s.size() < text.size() && !s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
  if (s.size() < text.size() && !s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0xC0) s.pop_back();
  for (char& c : s)
    if (c == '\n' || c == '\t') c = ' ';
  return "\"" + s + (s.size() < text.size() ? "...\"" : "\"");
}

double dot(const float* a, const float* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(a[i]) * b[i];
  return s;
}

int run_embed(const EmbedCliOptions& opt) {
  using clock = std::chrono::steady_clock;
  if (opt.threads > 0) set_threads(opt.threads);
  check(!opt.model.empty(),
        "-m MODEL is required: a sentence-transformers model directory or hub id (e.g. "
        "sentence-transformers/all-MiniLM-L6-v2), or a bare encoder");
  check(opt.dtype != "f16", "--dtype f16: embeddings compute in f32, bf16 or int8");
  std::vector<std::string> texts = opt.texts;
  if (!opt.file.empty())
    for (auto& t : read_texts_file(opt)) texts.push_back(std::move(t));
  check(!texts.empty(), "nothing to embed: give --text (repeat for more) or --file");

  if (opt.prompt.empty()) check_prompt_name(opt.model, opt.prompt_name);  // before the weights load
  LoadOptions lo;
  lo.compute = parse_compute_dtype(opt.dtype);
  lo.head = head_to_load(opt.head, HeadUse::bare_body);
  const auto t_load = clock::now();
  auto model = load_model(opt.model, lo);
  const double load_s = std::chrono::duration<double>(clock::now() - t_load).count();
  const ModelInfo& info = model->info();
  check(info.embedding, opt.model + " (" + info.architecture + ") is not an embedding model: it has a " +
                            (info.classifier ? "classification head (use tach classify)" : "language-model head") +
                            " and no sentence-transformers config (modules.json)");
  const std::string tok_path = tokenizer_path_for(info, opt.tokenizer);
  auto tokenizer = Tokenizer::load(tok_path);
  EmbedOptions eo;
  eo.batch_size = opt.batch_size;
  eo.max_length = opt.max_length;
  eo.prompt_name = opt.prompt_name;
  if (!opt.prompt.empty()) eo.prompt = opt.prompt;
  const Embeddings e = embed_texts(*model, *tokenizer, texts, eo);
  if (!opt.output.empty()) write_embeddings(opt.output, e, texts);

  const int64_t N = e.vectors.size(0), E = e.vectors.size(1);
  const float* v = e.vectors.data<float>();
  int64_t total_tokens = 0, truncated = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    total_tokens += e.tokens[i];
    truncated += e.truncated[i] ? 1 : 0;
  }
  const SystemInfo sys = system_info();
  const std::string method = "wall clock (steady_clock) around each batch's forward and pooling, summed";

  if (opt.json) {
    nlohmann::json j;
    j["schema"] = "tach.embed/1";
    j["model"] = {{"spec", info.spec},
                  {"source", info.source},
                  {"architecture", info.architecture},
                  {"parameters", info.parameters},
                  {"weights_dtype", info.weights_dtype},
                  {"compute_dtype", std::string(dtype_name(info.compute))},
                  {"pooling", info.pooling},
                  {"normalized", info.normalized},
                  {"embedding_dim", E},
                  {"max_length", e.max_length},
                  {"prompt", e.prompt},
                  {"prompt_name", e.prompt_name},
                  {"notes", info.notes}};
    j["machine"] = {{"cpu", sys.cpu_model},
                    {"threads", threads()},
                    {"gemm", sys.gemm_library},
                    {"device", lo.device.str()}};
    j["rows"] = nlohmann::json::array();
    for (int64_t i = 0; i < N; ++i)
      j["rows"].push_back({{"text", texts[size_t(i)]},
                           {"tokens", e.tokens[size_t(i)]},
                           {"truncated", bool(e.truncated[size_t(i)])},
                           {"embedding", std::vector<float>(v + i * E, v + (i + 1) * E)}});
    j["timing"] = {{"unit", "s"},
                   {"method", method},
                   {"load_s", load_s},
                   {"tokenize_s", e.tokenize_s},
                   {"forward_s", e.forward_s},
                   {"batches", e.batches},
                   {"padded_tokens", e.padded_tokens},
                   {"texts_per_s", double(N) / e.forward_s}};
    if (!opt.output.empty()) j["output"] = opt.output;
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }

  std::cout << "model       " << info.spec << ": " << info.architecture << ", " << parameter_count_text(info.parameters)
            << " parameters, weights " << info.weights_dtype << ", compute " << dtype_name(info.compute) << "\n"
            << "            " << info.source << "\n";
  for (const auto& n : info.notes) std::cout << "note        " << n << "\n";
  std::cout << "embedding   " << E << " dims, " << info.pooling << " pooling"
            << (info.normalized ? ", L2-normalised" : ", not normalised") << "; texts cut at " << e.max_length
            << " tokens\n";
  if (!e.prompt.empty())
    std::cout << "prompt      " << (e.prompt_name.empty() ? "given" : "\"" + e.prompt_name + "\"")
              << " before every text: " << nlohmann::json(e.prompt).dump() << "\n";
  std::cout << "machine     " << sys.cpu_model << ", " << threads() << " threads, GEMM " << sys.gemm_library << "\n"
            << "input       " << N << " texts, " << total_tokens << " tokens, " << truncated << " truncated; "
            << e.batches << " batches of up to " << opt.batch_size << ", longest first (" << e.padded_tokens
            << " padded tokens)\n"
            << "load        " << fixed(load_s, 2) << " s (config, weights, packing)\n"
            << "tokenize    " << fixed(e.tokenize_s * 1e3, 1) << " ms (wall clock, all texts)\n"
            << "forward     " << fixed(e.forward_s * 1e3, 1) << " ms (" << method << "), "
            << fixed(double(N) / e.forward_s, 1) << " texts/s\n";
  const int64_t shown = std::min<int64_t>(N, opt.show_rows);
  for (int64_t i = 0; i < shown; ++i) {
    std::cout << "text " << i
              << std::string(i < 10    ? 6
                             : i < 100 ? 5
                                       : 4,
                             ' ')
              << "norm " << fixed(std::sqrt(dot(v + i * E, v + i * E, E)), 4) << "  [";
    for (int64_t k = 0; k < std::min<int64_t>(E, 4); ++k) std::cout << (k ? ", " : "") << fixed(v[i * E + k], 4);
    std::cout << (E > 4 ? ", ...]  " : "]  ") << quoted_preview(texts[size_t(i)], 48) << "\n";
  }
  if (shown < N)
    std::cout << "...         " << (N - shown) << " more texts (--show-rows, --json, or -o FILE.npy|.jsonl for all)\n";
  if (opt.similarity) {
    const int64_t k = std::min<int64_t>(N, 8);
    std::cout << "similarity  cosine, the first " << k << " texts\n";
    for (int64_t a = 0; a < k; ++a) {
      std::cout << "            ";
      const double na = std::sqrt(dot(v + a * E, v + a * E, E));
      for (int64_t b = 0; b < k; ++b) {
        const double nb = std::sqrt(dot(v + b * E, v + b * E, E));
        const double c = na > 0 && nb > 0 ? dot(v + a * E, v + b * E, E) / (na * nb) : 0.0;
        std::cout << (c < 0 ? "" : " ") << fixed(c, 3) << " ";
      }
      std::cout << " text " << a << "\n";
    }
  }
  if (!opt.output.empty()) std::cout << "output      " << opt.output << " (" << N << " x " << E << " float32)\n";
  return 0;
}

}  // namespace

Command add_embed_command(CLI::App& app) {
  auto opt = std::make_shared<EmbedCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "embed",
      "Sentence embeddings of texts with a sentence-transformers model (all-MiniLM, bge, e5, ...) or a bare "
      "encoder: pooling and normalisation as its modules.json says");
  sub->add_option("-m,--model", opt->model,
                  "Model: a directory (config.json, model.safetensors, modules.json, 1_Pooling/), or a hub id "
                  "ORG/NAME[@REV]. A bare encoder without modules.json gets mean pooling, as sentence-transformers "
                  "gives it")
      ->required();
  sub->add_option("--text", opt->texts, "A text to embed (repeat for more)");
  sub->add_option("-f,--file", opt->file,
                  "Texts from a file: .csv/.tsv/.jsonl/.json through --text-column, anything else one text per "
                  "line (- reads standard input)");
  sub->add_option("--text-column", opt->text_column, "The text column or key of a dataset --file")
      ->capture_default_str();
  sub->add_option("-k,--tokenizer", opt->tokenizer, "tokenizer.json or a directory (default: the model directory's)");
  sub->add_option("-o,--output", opt->output,
                  "Write every embedding: FILE.npy (float32 [texts, dims], numpy.load reads it) or FILE.jsonl (one "
                  "object per text); written atomically");
  sub->add_option(kBatchOption, opt->batch_size, "Texts per forward")
      ->capture_default_str()
      ->check(positive_count("batch size", "batch sizes"));
  sub->add_option("--max-length", opt->max_length,
                  "Tokens per text, special tokens included (default: the model's max_seq_length from "
                  "sentence_bert_config.json, else its positions)")
      ->check(positive_count("--max-length", "--max-length values"));
  sub->add_option("--prompt-name", opt->prompt_name,
                  "A prompt of the model's config_sentence_transformers.json (e.g. query), put before every text as "
                  "sentence-transformers' encode(prompt_name=...) does (default: its default_prompt_name, if any)");
  sub->add_option("--prompt", opt->prompt, "Text put before every text (overrides --prompt-name)");
  sub->add_option("--dtype", opt->dtype,
                  "Compute dtype: f32, bf16, int8 (dynamic quantization of the linears) or nf4 (4-bit weights)")
      ->capture_default_str()
      ->check(compute_dtype_name("--dtype"));
  sub->add_option("-t,--threads", opt->threads,
                  "Threads (default: the cores other processes leave free at start, or OMP_NUM_THREADS)")
      ->check(thread_count());
  sub->add_option("--show-rows", opt->show_rows, "Texts to print")
      ->capture_default_str()
      ->check(non_negative_count("--show-rows"));
  add_head_option(sub, opt->head, HeadUse::bare_body);
  sub->add_flag("--similarity", opt->similarity, "Print the cosine similarity of the first 8 texts to each other");
  sub->add_flag("--json", opt->json, "Print machine-readable JSON with every vector (schema tach.embed/1)");
  return {sub, [opt] { return run_embed(*opt); }};
}

}  // namespace tach::cli
