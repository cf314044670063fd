// tach classify: run a sequence classifier over token ids and time it. Texts arrive with the
// tokenizer; until then ids come from --ids, --ids-file, or are drawn at random (--batch/--seq-len).
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "commands.h"
#include "format.h"
#include "head_option.h"
#include "head_outputs.h"
#include "task_output.h"
#include "tach/parameter_count.h"
#include "tach/error.h"
#include "tach/memory.h"
#include "tach/model.h"
#include "tach/monitor.h"
#include "tach/runtime.h"
#include "tach/stats.h"
#include "tach/system_info.h"
#include "tach/token_classification.h"
#include "tach/tokenizer.h"
#include "tf32_option.h"
#include "usage.h"

namespace tach::cli {

namespace {

struct ClassifyOptions {
  std::string model = "preset:distilbert-base-uncased";
  std::vector<std::string> ids;
  std::vector<std::string> types;
  std::string ids_file;
  std::vector<std::string> texts;
  std::string tokenizer;  // default: the model directory's
  int batch = 8;
  int seq_len = 128;
  int warmup = 2;
  int repeat = 10;
  int threads = 0;
  std::string compute = "f32";
  std::string device = "cpu";
  bool allow_tf32 = false;
  uint64_t seed = 0;
  std::string adapter;  // a peft LoRA adapter merged at load
  std::string head = "auto";
  int show_rows = 8;
  bool json = false;
  std::string aggregation = "simple";  // a token classifier's entities, as the pipeline's aggregation_strategy
};

std::vector<int32_t> parse_id_list(const std::string& text, const std::string& where) {
  std::vector<int32_t> out;
  std::string tok;
  std::stringstream ss(text);
  while (ss >> tok) {
    std::stringstream parts(tok);
    std::string part;
    while (std::getline(parts, part, ',')) {
      if (part.empty()) continue;
      try {
        size_t used = 0;
        const long long v = std::stoll(part, &used);
        if (used != part.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument("");
        out.push_back(static_cast<int32_t>(v));
      } catch (const std::exception&) {
        throw Error(where + ": '" + part + "' is not a token id (a non-negative integer)");
      }
    }
  }
  return out;
}

// One row per line: "101 2023 102", "101,2023,102", or JSON {"input_ids": [...], "token_type_ids": [...]}.
void read_ids_file(const std::string& path, std::vector<std::vector<int32_t>>& rows,
                   std::vector<std::vector<int32_t>>& types) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open");
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string where = path + ":" + std::to_string(lineno);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (line.find('{') != std::string::npos) {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(line);
        rows.push_back(j.at("input_ids").get<std::vector<int32_t>>());
        if (j.contains("token_type_ids")) types.push_back(j["token_type_ids"].get<std::vector<int32_t>>());
      } catch (const nlohmann::json::exception& e) {
        throw Error(where + ": expected {\"input_ids\": [ints], \"token_type_ids\": [ints]}: " + e.what());
      }
    } else {
      rows.push_back(parse_id_list(line, where));
    }
  }
  if (!types.empty() && types.size() != rows.size())
    throw Error(path + ": token_type_ids given on some lines but not all");
}

// A text longer than the model's positions, cut to them as the pipelines cut it.
struct CutText {
  int64_t text = 0;              // 1-based
  int64_t tokens = 0, kept = 0;  // with the special tokens
};

// "text 2: 700 tokens, cut to the model's 512 positions; its last 188 tokens are not read"
std::string cut_text_note(const CutText& c, const ModelInfo& info) {
  const int64_t cut = c.tokens - c.kept;
  return "text " + std::to_string(c.text) + ": " + std::to_string(c.tokens) + " tokens, cut to the model's " +
         std::to_string(c.kept) + " positions; its last " + std::to_string(cut) + " token" + (cut == 1 ? "" : "s") +
         (info.head == Head::sequence_classification ? (cut == 1 ? " is" : " are") + std::string(" not read")
                                                     : " (and their words) get no label");
}

// Texts through the tokenizer: the model directory's unless --tokenizer names one. The tokenizer
// and its path stay for a token classifier's entities; `cut` gets the texts truncated to the
// model's positions (found untimed, by their whole encoding).
TokenBatch tokenize_texts(const ClassifyOptions& opt, const ModelInfo& info, std::string* what, double* seconds,
                          std::unique_ptr<Tokenizer>* tokenizer, std::string* tokenizer_path,
                          std::vector<CutText>* cut) {
  const std::string path = tokenizer_path_for(info, opt.tokenizer);
  const auto t0 = std::chrono::steady_clock::now();
  auto tok = Tokenizer::load(path);
  TokenBatch batch = encode_texts_for(*tok, info, opt.texts);
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int32_t* mask = batch.attention_mask.data<int32_t>();
  for (size_t r = 0; r < opt.texts.size(); ++r) {
    int64_t kept = 0;
    for (int64_t t = 0; t < batch.seq_len(); ++t) kept += mask[int64_t(r) * batch.seq_len() + t] != 0;
    const int64_t whole = int64_t(tok->encode(opt.texts[r]).ids.size());
    if (whole > kept) cut->push_back({int64_t(r) + 1, whole, kept});
  }
  *what = std::to_string(opt.texts.size()) + " texts through " + path;
  *tokenizer = std::move(tok);
  *tokenizer_path = path;
  return batch;
}

// A token classifier's tokens and entities for each text, as transformers' token-classification
// pipeline gives them (--aggregation). logits: [B, T, labels] of the batch the texts were encoded
// into (right-padded: row r's tokens are its first ones).
struct TextEntities {
  std::vector<TokenEntity> tokens;  // every token but the special ones, 'O' included
  Aggregation aggregation = Aggregation::simple;
  std::vector<TokenEntity> outside_left_out;  // aggregation none: the tokens not labelled 'O'
  std::vector<EntityGroup> groups;            // otherwise: the groups not labelled 'O'
};
std::vector<TextEntities> text_entities(const ClassifyOptions& opt, const ModelInfo& info, const Tokenizer& tokenizer,
                                        const std::string& tokenizer_path, const Tensor& logits,
                                        const TokenBatch& batch) {
  EncodeOptions eo;  // as encode_texts_for encoded the batch
  if (info.max_positions > 0) {
    eo.truncation = Truncation{};
    eo.truncation->max_length = size_t(info.max_positions);
  }
  const std::vector<Encoding> encodings = tokenizer.encode_batch(opt.texts, eo);
  const std::optional<int32_t> unk = unknown_token_id(tokenizer_path, tokenizer);
  const bool marks_subwords = tokenizer_marks_subwords(tokenizer_path);
  const Aggregation aggregation = parse_aggregation(opt.aggregation);
  const auto join = [&](const std::vector<std::string>& tokens) { return tokenizer.decode_tokens(tokens); };
  const int64_t T = batch.seq_len(), L = logits.size(2);
  check(L == int64_t(info.labels.size()), "the token classifier gives " + std::to_string(L) + " scores per token for " +
                                              std::to_string(info.labels.size()) + " labels (config.json id2label)");
  std::vector<TextEntities> out;
  for (size_t r = 0; r < encodings.size(); ++r) {
    const Encoding& e = encodings[r];
    const int32_t* row_ids = batch.input_ids.data<int32_t>() + int64_t(r) * T;
    check(int64_t(e.ids.size()) <= T && std::equal(e.ids.begin(), e.ids.end(), row_ids),
          "text " + std::to_string(r + 1) + ": its tokens differ from the batch's row");
    TextEntities te;
    te.tokens =
        token_entities(opt.texts[r], e, logits.data<float>() + int64_t(r) * T * L, info.labels, unk, marks_subwords);
    te.aggregation = aggregation;
    if (aggregation == Aggregation::none) te.outside_left_out = without_outside(te.tokens);
    else if (aggregation == Aggregation::simple) te.groups = without_outside(group_entities(te.tokens, join));
    else te.groups = without_outside(group_entities(word_entities(te.tokens, aggregation, info.labels, join), join));
    out.push_back(std::move(te));
  }
  return out;
}

nlohmann::json entities_json(const TextEntities& te) {
  nlohmann::json tokens = nlohmann::json::array(), groups = nlohmann::json::array();
  for (const TokenEntity& t : te.tokens)
    tokens.push_back({{"index", t.index},
                      {"word", t.word},
                      {"entity", t.entity},
                      {"score", t.score},
                      {"start", t.start},
                      {"end", t.end}});
  for (const EntityGroup& g : te.groups)
    groups.push_back(
        {{"entity_group", g.entity_group}, {"score", g.score}, {"word", g.word}, {"start", g.start}, {"end", g.end}});
  for (const TokenEntity& t : te.outside_left_out)  // aggregation none: the pipeline's entities are tokens
    groups.push_back({{"entity", t.entity},
                      {"score", t.score},
                      {"index", t.index},
                      {"word", t.word},
                      {"start", t.start},
                      {"end", t.end}});
  return {{"tokens", tokens}, {"aggregation", aggregation_name(te.aggregation)}, {"entities", groups}};
}

// Two lines for the terminal: the entity groups, then each token's label and score.
std::string entities_text(const TextEntities& te) {
  std::string groups, tokens;
  for (const EntityGroup& g : te.groups)
    groups += (groups.empty() ? "" : "; ") + g.entity_group + " '" + g.word + "' [" + std::to_string(g.start) + ", " +
              std::to_string(g.end) + ") " + fixed(g.score, 4);
  for (const TokenEntity& t : te.outside_left_out)
    groups += (groups.empty() ? "" : "; ") + t.entity + " '" + t.word + "' [" + std::to_string(t.start) + ", " +
              std::to_string(t.end) + ") " + fixed(t.score, 4);
  for (const TokenEntity& t : te.tokens)
    tokens += (tokens.empty() ? "" : ", ") + t.word + " " + t.entity + " " + fixed(t.score, 4);
  return "            entities  " + (groups.empty() ? "none (every token is O)" : groups) + "\n" +
         "            tokens    " + tokens + "\n";
}

TokenBatch make_input(const ClassifyOptions& opt, const ModelInfo& info, std::string* what) {
  std::vector<std::vector<int32_t>> rows, types;
  if (!opt.ids_file.empty()) read_ids_file(opt.ids_file, rows, types);
  for (size_t i = 0; i < opt.ids.size(); ++i)
    rows.push_back(parse_id_list(opt.ids[i], "--ids #" + std::to_string(i + 1)));
  for (size_t i = 0; i < opt.types.size(); ++i)
    types.push_back(parse_id_list(opt.types[i], "--types #" + std::to_string(i + 1)));
  if (!rows.empty()) {
    *what = std::to_string(rows.size()) + " rows from " + (opt.ids_file.empty() ? "--ids" : opt.ids_file);
    return TokenBatch::from_rows(rows, info.pad_token_id, types);
  }
  check(opt.batch > 0 && opt.seq_len > 0, "--batch and --seq-len must be positive");
  // Random ids in [1000, vocab): past BERT's special and unused tokens, like real words.
  std::mt19937 rng(static_cast<uint32_t>(opt.seed));
  const int32_t lo = info.vocab_size > 2000 ? 1000 : 1;
  std::uniform_int_distribution<int32_t> pick(lo, static_cast<int32_t>(info.vocab_size - 1));
  rows.assign(size_t(opt.batch), std::vector<int32_t>(size_t(opt.seq_len)));
  for (auto& r : rows)
    for (auto& id : r) id = pick(rng);
  *what = "random ids (seed " + std::to_string(opt.seed) + ")";
  return TokenBatch::from_rows(rows, info.pad_token_id);
}

// What one classify run measured and computed, for the JSON or the terminal.
struct ClassifyRun {
  std::unique_ptr<Model> model;
  double load_s = 0, tokenize_s = 0, timer_s = 0;
  bool per_token = false;  // a per-token head's logits [B, T, *], else a sequence classifier's [B, L]
  std::string input_what;
  std::vector<CutText> cut;
  TokenBatch batch;
  Tensor logits, scores;  // scores: a sequence classifier's (softmax or sigmoid), empty otherwise
  std::vector<TextEntities> entities;
  std::vector<double> seconds;
  Summary lat;
  CpuLoad load;
  MemoryStats before, after;
  ForwardCost cost;
  SystemInfo sys;

  int64_t labels() const { return per_token ? 0 : logits.size(1); }
  int64_t best_label(int64_t r) const {
    const int64_t L = labels();
    const float* sc = scores.data<float>();
    int64_t best = 0;
    for (int64_t l = 1; l < L; ++l)
      if (sc[r * L + l] > sc[r * L + best]) best = l;
    return best;
  }
};

// Loads the model, makes the batch, and times opt.repeat forwards after opt.warmup.
ClassifyRun measure_classify(const ClassifyOptions& opt) {
  using clock = std::chrono::steady_clock;
  if (opt.threads > 0) set_threads(opt.threads);
  check(opt.warmup >= 0 && opt.repeat >= 1, "--warmup must be >= 0 and --repeat >= 1");
  check_allow_tf32(opt.allow_tf32, {opt.device}, {opt.compute});
  check_dtype_on_device(opt.compute, opt.device);
  LoadOptions lo;
  lo.seed = opt.seed;
  lo.adapter = opt.adapter;
  lo.device = parse_device(opt.device);
  lo.compute = parse_compute_dtype(opt.compute);
  lo.allow_tf32 = opt.allow_tf32;
  lo.head = head_to_load(opt.head, HeadUse::as_published);

  ClassifyRun run;
  const auto t_load0 = clock::now();
  run.model = load_model(opt.model, lo);
  run.load_s = std::chrono::duration<double>(clock::now() - t_load0).count();
  const ModelInfo& info = run.model->info();
  check(info.head != Head::none, opt.model + " is a bare " + (info.causal_lm ? "causal LM" : "encoder") + " (" +
                                     info.architecture + "): nothing to classify with (--head builds a new head)");
  // The head built: a sequence classifier's logits [B, L], or a per-token head's [B, T, *].
  run.per_token = info.head != Head::sequence_classification;
  Model& model = *run.model;
  const bool per_token = run.per_token;
  const auto forward = [&](const TokenBatch& b) { return per_token ? model.token_logits(b) : model.classify(b); };

  std::unique_ptr<Tokenizer> tokenizer;
  std::string tokenizer_path;
  check(opt.texts.empty() || (opt.ids.empty() && opt.ids_file.empty()), "give texts or ids, not both");
  run.batch = opt.texts.empty()
                  ? make_input(opt, info, &run.input_what)
                  : tokenize_texts(opt, info, &run.input_what, &run.tokenize_s, &tokenizer, &tokenizer_path, &run.cut);

  // The books of the device the model runs on (a GPU's for --device cuda).
  run.before = memory_stats(info.device);
  reset_memory_peaks(info.device);
  for (int i = 0; i < opt.warmup; ++i) run.logits = forward(run.batch);
  // Other processes' CPU use over the timed runs, read between them: on a shared machine the
  // latency below can be theirs, not the model's, and the output says so.
  CpuLoadWindow load_window;
  for (int i = 0; i < opt.repeat; ++i) {
    const auto t0 = clock::now();
    run.logits = forward(run.batch);
    run.seconds.push_back(std::chrono::duration<double>(clock::now() - t0).count());
    load_window.sample();
  }
  run.load = load_window.finish(threads());
  run.after = memory_stats(info.device);
  run.lat = summarize(run.seconds);
  run.cost = model.forward_cost(run.batch.batch(), run.batch.seq_len());
  if (!per_token) run.scores = scores_from_logits(run.logits, info.problem_type);
  run.timer_s = timer_overhead_seconds();
  run.sys = system_info();
  // A token classifier on texts: its entities, as the token-classification pipeline groups them.
  if (info.head == Head::token_classification && tokenizer)
    run.entities = text_entities(opt, info, *tokenizer, tokenizer_path, run.logits, run.batch);
  return run;
}

void print_classify_json(const ClassifyOptions& opt, const ClassifyRun& run) {
  const ModelInfo& info = run.model->info();
  const TokenBatch& batch = run.batch;
  const Summary& lat = run.lat;
  const CpuLoad& load = run.load;
  const int64_t B = batch.batch(), T = batch.seq_len(), L = run.labels();
  nlohmann::json j;
  j["schema"] = "tach.classify/1";
  j["model"] = model_json(info);
  j["model"]["labels"] = info.labels;
  j["model"]["problem_type"] = info.problem_type;
  j["machine"] = {{"cpu", run.sys.cpu_model},
                  {"threads", threads()},
                  {"gemm", run.sys.gemm_library},
                  {"device", info.device.str()}};
  j["input"] = {{"batch", B},
                {"seq_len", T},
                {"real_tokens", batch.real_tokens()},
                {"source", run.input_what},
                {"tokenize_s", run.tokenize_s}};
  if (!opt.texts.empty()) j["input"]["texts"] = opt.texts;
  if (!run.cut.empty()) {
    j["input"]["truncated"] = nlohmann::json::array();
    for (const CutText& c : run.cut)
      j["input"]["truncated"].push_back(
          {{"text", c.text}, {"tokens", c.tokens}, {"kept", c.kept}, {"note", cut_text_note(c, info)}});
  }
  j["rows"] = nlohmann::json::array();
  const float* lg = run.logits.data<float>();
  for (int64_t r = 0; r < B; ++r) {
    if (run.per_token) {
      j["rows"].push_back(per_token_outputs_json(info.head, run.logits, batch, r));
      if (!run.entities.empty()) j["rows"].back().update(entities_json(run.entities[size_t(r)]));
      continue;
    }
    const float* sc = run.scores.data<float>();
    std::vector<float> lr(lg + r * L, lg + (r + 1) * L), sr(sc + r * L, sc + (r + 1) * L);
    j["rows"].push_back({{"label", info.labels[size_t(run.best_label(r))]}, {"logits", lr}, {"scores", sr}});
  }
  j["timing"] = {{"unit", "s"},          {"method", "wall clock (steady_clock) around one batched forward"},
                 {"warmup", opt.warmup}, {"repetitions", opt.repeat},
                 {"median", lat.median}, {"min", lat.min},
                 {"max", lat.max},       {"p10", lat.p10},
                 {"p90", lat.p90},       {"iqr", lat.iqr},
                 {"mean", lat.mean},     {"samples", run.seconds},
                 {"load_s", run.load_s}, {"timer_overhead_s", run.timer_s}};
  j["load"] = cpu_load_json(load);
  j["throughput"] = {{"samples_per_s", double(B) / lat.median},
                     {"tokens_per_s", double(B * T) / lat.median},
                     {"flops_per_forward", run.cost.flops},
                     {"achieved_flops_per_s", run.cost.flops / lat.median}};
  const MemoryStats& after = run.after;
  j["memory"] = {{"unit", "bytes"},
                 {"device", info.device.str()},
                 {"weights", after[MemoryCategory::weights].current},
                 {"activations_peak", after[MemoryCategory::activations].peak},
                 {"workspace_peak", after[MemoryCategory::workspace].peak},
                 {"total_peak", after.total.peak},
                 {"mapped", after.mapped.current},
                 {"allocator_cached", after.cached.current},
                 {"before_total", run.before.total.current}};
  std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// Each shown row's label and scores (or a per-token head's outputs and entities).
void print_classify_rows(const ClassifyOptions& opt, const ClassifyRun& run) {
  const ModelInfo& info = run.model->info();
  const int64_t B = run.batch.batch(), L = run.labels();
  const int64_t shown = std::min<int64_t>(B, opt.show_rows);
  for (int64_t r = 0; r < shown; ++r) {
    if (run.per_token) {
      std::cout << "row " << r << (r < 10 ? "      " : "     ")
                << per_token_outputs_line(info, run.logits, run.batch, r) << "\n";
      if (!run.entities.empty()) std::cout << entities_text(run.entities[size_t(r)]);
      continue;
    }
    const float* sc = run.scores.data<float>();
    std::cout << "row " << r << (r < 10 ? "      " : "     ") << info.labels[size_t(run.best_label(r))] << "  (";
    for (int64_t l = 0; l < L; ++l)
      std::cout << (l ? ", " : "") << info.labels[size_t(l)] << " " << fixed(sc[r * L + l], 4);
    std::cout << ")\n";
  }
  if (shown < B) std::cout << "...         " << (B - shown) << " more rows (--show-rows, or --json for all)\n";
}

void print_classify_text(const ClassifyOptions& opt, const ClassifyRun& run) {
  const ModelInfo& info = run.model->info();
  const TokenBatch& batch = run.batch;
  const Summary& lat = run.lat;
  const MemoryStats& after = run.after;
  const int64_t B = batch.batch(), T = batch.seq_len();
  std::cout << "model       " << info.spec << ": " << info.architecture << ", " << parameter_count_text(info.parameters)
            << " parameters, weights " << info.weights_dtype << ", compute " << dtype_name(info.compute) << "\n"
            << "            " << info.source << "\n";
  for (const auto& n : info.notes) std::cout << "note        " << n << "\n";
  std::cout << "machine     " << run.sys.cpu_model << ", " << threads() << " threads, GEMM " << run.sys.gemm_library
            << (info.device.kind == DeviceKind::cpu ? "" : "; the model runs on " + info.device.str()) << "\n"
            << "input       " << B << " rows x " << T << " tokens (" << batch.real_tokens() << " real), "
            << run.input_what << "\n"
            << (opt.texts.empty()
                    ? ""
                    : "tokenize    " + fixed(run.tokenize_s * 1e3, 1) + " ms (load + encode, not in the latency)\n");
  for (const CutText& c : run.cut) std::cout << "note        " << cut_text_note(c, info) << "\n";
  std::cout << "load        " << fixed(run.load_s, 2) << " s (config, weights, packing)\n";
  print_classify_rows(opt, run);
  std::cout << "latency     per batch, wall clock; " << opt.warmup << " warm-up runs discarded, " << opt.repeat
            << " timed\n"
            << "            " << describe_ms(lat) << "\n"
            << "load        " << describe_cpu_load(run.load)
            << (run.load.contended
                    ? "\n            CONTENDED: the latency above is the shared machine's, not the model's "
                      "(fewer threads with -t, or a quieter machine)"
                    : "")
            << "\n"
            << "throughput  " << fixed(double(B) / lat.median, 1) << " samples/s, "
            << fixed(double(B * T) / lat.median, 0) << " tokens/s (from the median)\n"
            << "compute     " << fixed(run.cost.flops / 1e9, 2) << " GFLOP per batch (declared by the ops), "
            << fixed(run.cost.flops / lat.median / 1e9, 1) << " GFLOP/s achieved\n"
            << "memory      " << (info.device.kind == DeviceKind::cpu ? "" : info.device.str() + ": ") << "weights "
            << human_bytes(double(after[MemoryCategory::weights].current))
            << (info.device.kind == DeviceKind::cpu ? " (packed for the GEMM)" : "") << ", activations peak "
            << human_bytes(double(after[MemoryCategory::activations].peak)) << ", mapped files "
            << human_bytes(double(after.mapped.current)) << ", allocator cache "
            << human_bytes(double(after.cached.current)) << " (counted by tach's allocator)\n"
            << "overhead    " << fixed(run.timer_s * 1e9, 0) << " ns per clock reading (two per timed run)\n";
}

int run_classify(const ClassifyOptions& opt) {
  const ClassifyRun run = measure_classify(opt);
  if (opt.json) print_classify_json(opt, run);
  else print_classify_text(opt, run);
  return 0;
}

}  // namespace

Command add_classify_command(CLI::App& app) {
  auto opt = std::make_shared<ClassifyOptions>();
  CLI::App* sub = app.add_subcommand("classify",
                                     "Run a classifier (or the head --head picks) on texts or token ids; print "
                                     "labels, scores and timings");
  sub->add_option("-m,--model", opt->model,
                  "Model: preset:NAME (an unknown NAME lists them all), a directory with "
                  "config.json and model.safetensors, or a hub id ORG/NAME[@REV] in the Hugging Face cache")
      ->capture_default_str();
  sub->add_option("--ids", opt->ids, "One row of token ids, e.g. \"101 7592 102\" (repeat for more rows)");
  sub->add_option("--types", opt->types, "token_type_ids for the matching --ids row (BERT only)");
  sub->add_option("--text", opt->texts,
                  "A text to classify (repeat for more rows); tokenized with the model's "
                  "tokenizer, truncated to its max positions");
  sub->add_option("-k,--tokenizer", opt->tokenizer,
                  "Tokenizer for --text: tokenizer.json or a directory (default: the model directory's)");
  sub->add_option("--ids-file", opt->ids_file,
                  "File with one row per line: ids separated by spaces or commas, or JSON {\"input_ids\": [...]}");
  sub->add_option(kBatchOption, opt->batch, "Rows of random ids when no ids are given")
      ->capture_default_str()
      ->check(positive_count("batch size", "batch sizes"));
  sub->add_option("-s,--seq-len", opt->seq_len, "Tokens per row of random ids")
      ->capture_default_str()
      ->check(positive_count("sequence length", "sequence lengths"));
  sub->add_option("--warmup", opt->warmup, "Untimed runs before timing")
      ->capture_default_str()
      ->check(non_negative_count("--warmup"));
  sub->add_option("--repeat", opt->repeat, "Timed runs")
      ->capture_default_str()
      ->check(positive_count("--repeat", "--repeat values"));
  sub->add_option("-t,--threads", opt->threads,
                  "Threads (default: the cores other processes leave free at start, or OMP_NUM_THREADS)")
      ->check(thread_count());
  sub->add_option(
         "--dtype", opt->compute,
         "Compute dtype: f32, bf16, int8 (the linears quantized: dynamically on the cpu, weight-only on cuda) or nf4 "
         "(4-bit weights); f16 too on cuda")
      ->capture_default_str()
      ->check(compute_dtype_name("--dtype"));
  sub->add_option("--device", opt->device, "cpu, cuda or cuda:N")->capture_default_str()->check(device_name(false));
  add_allow_tf32_option(sub, opt->allow_tf32);
  sub->add_option("--compute", opt->compute, "Same as --dtype (the former name)")
      ->group("")  // hidden alias
      ->check(compute_dtype_name("--compute"));
  sub->add_option("--adapter", opt->adapter,
                  "A LoRA adapter directory as peft saves it (adapter_config.json, adapter_model.safetensors), merged "
                  "into the weights at load; its head replaces the model's");
  sub->add_option("--seed", opt->seed, "Seed for preset weights, a new head's weights and random ids")
      ->capture_default_str();
  add_head_option(sub, opt->head, HeadUse::as_published);
  sub->add_option("--show-rows", opt->show_rows, "Rows to print")
      ->capture_default_str()
      ->check(non_negative_count("--show-rows"));
  sub->add_option("--aggregation", opt->aggregation,
                  "A token classifier's entities from --text, as the pipeline's aggregation_strategy: simple (tokens "
                  "grouped by label), first, average, max (words first, labelled by their first token, mean scores "
                  "or best token), none (each token)")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "simple", "first", "average", "max"}));
  sub->add_flag("--json", opt->json, "Print machine-readable JSON (schema tach.classify/1)");
  return {sub, [opt] { return run_classify(*opt); }};
}

}  // namespace tach::cli
