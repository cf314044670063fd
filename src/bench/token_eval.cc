// tach eval on a token classifier: tagged sentences → words split into sub-tokens as
// transformers' is_split_into_words=True splits them → the classifier → each word's first
// sub-token's label (run_ner's alignment) → seqeval's entity-level metrics.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <map>
#include <numeric>
#include <set>

#include "bench/bench_internal.h"
#include "bench/task_eval_setup.h"
#include "bench/task_passes.h"
#include "data/conll.h"
#include "data/dataset_kind.h"
#include "model/family.h"
#include "report/number_text.h"
#include "tach/error.h"
#include "tach/runtime.h"
#include "tach/token_classification.h"
#include "tasks/seqeval.h"
#include "tasks/split_words.h"

namespace fs = std::filesystem;

namespace tach {

namespace {

using report::fixed_text;

EntityScores scores_of(const tasks::EntityTypeScores& s) {
  return {s.type, s.precision, s.recall, s.f1, s.support, s.predicted, s.correct};
}

nlohmann::json scores_json(const EntityScores& s) {
  nlohmann::json j = {{"precision", s.precision}, {"recall", s.recall},       {"f1", s.f1},
                      {"support", s.support},     {"predicted", s.predicted}, {"correct", s.correct}};
  if (!s.type.empty()) j["type"] = s.type;
  return j;
}

std::string cell(double v, int width) {
  std::string t = std::isnan(v) ? "-" : fixed_text(v, 4);
  return t + std::string(size_t(std::max<int>(1, width - int(t.size()))), ' ');
}

std::string padded(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

}  // namespace

bool evaluates_token_classification(const BenchConfig& config) {
  return bench::evaluates_head(config, Head::token_classification, "ForTokenClassification");
}

namespace bench {

namespace {

// The tagged file, or, where it holds another task's data, an error saying so (rather than the
// reader's complaint about its first record). A table's complaint (what a word line needs) stands,
// with the model that reads the table.
std::vector<data::TaggedSentence> read_tagged_for_tokens(const BenchConfig& config, const TokenEvalOptions& options,
                                                         const ModelInfo& info) {
  data::TaggedJsonOptions jo;
  jo.words_key = config.dataset.text_column == "text" ? "tokens" : config.dataset.text_column;
  jo.tags_key = config.dataset.label_column == "label" ? "ner_tags" : config.dataset.label_column;
  jo.split = config.dataset.split;
  jo.tag_names = options.tag_names.empty() ? info.labels : options.tag_names;
  jo.tag_names_given = !options.tag_names.empty();
  try {
    return data::read_tagged_file(config.dataset.path, config.dataset.format, options.tag_column, jo);
  } catch (const Error& e) {
    const data::DatasetKind kind = data::guess_dataset_kind(config.dataset.path);
    if (kind == data::DatasetKind::table)
      throw Error(std::string(e.what()) + " (this file is " + data::dataset_kind_name(kind, config.dataset.path) +
                  ", which a sequence classifier reads: evaluate it with -m and a sequence classifier)");
    if (kind != data::DatasetKind::squad) throw;
    throw Error(data::other_task_data_message(
        config.dataset.path, kind, "CoNLL text or JSON records with tokens and tags, as a token classifier reads them",
        "evaluate it with -m and " + data::dataset_kind_reader(kind)));
  }
}

// Tags the model cannot predict: a dataset labelled with other names (or integer tags read in
// another order) scores them as missed; said rather than left for the metrics alone to show.
void note_unknown_tags(const std::vector<data::TaggedSentence>& sentences, const ModelInfo& info,
                       std::vector<std::string>& notes) {
  std::map<std::string, int64_t> unknown_tags;
  const std::set<std::string> model_labels(info.labels.begin(), info.labels.end());
  for (const auto& sentence : sentences)
    for (const auto& tag : sentence.tags)
      if (!model_labels.count(tag)) ++unknown_tags[tag];
  if (unknown_tags.empty()) return;
  std::string listed;
  for (const auto& [tag, count] : unknown_tags)
    listed += (listed.empty() ? "'" : ", '") + tag + "' (" + std::to_string(count) + "x)";
  // The entity types none of whose tags the model has: their entities are all missed (tach train
  // refuses such data; eval scores it, saying so).
  const auto type_of = [](const std::string& tag) {
    const size_t dash = tag.find('-');
    return dash == std::string::npos ? tag : tag.substr(dash + 1);
  };
  std::set<std::string> model_types, lacking;
  for (const auto& l : info.labels) model_types.insert(type_of(l));
  for (const auto& [tag, count] : unknown_tags)
    if (tag != "O" && !model_types.count(type_of(tag))) lacking.insert(type_of(tag));
  std::string types;
  for (const auto& t : lacking) types += (types.empty() ? "" : ", ") + t;
  notes.push_back("tags the model does not have among its labels, so never predicts: " + listed +
                  (types.empty() ? std::string()
                                 : "; entity types it cannot predict (every one of their entities counts as "
                                   "missed): " +
                                       types));
}

}  // namespace

TaggedEvalData read_tagged_eval_data(const BenchConfig& config, const TokenEvalOptions& options, const ModelInfo& info,
                                     std::vector<std::string>& notes) {
  TaggedEvalData d;
  d.dataset = config.dataset.path;
  d.scheme = tasks::parse_tag_scheme(options.tag_scheme);
  d.sentences = read_tagged_for_tokens(config, options, info);
  if (!config.sample_sizes.empty() || config.limit > 0) {
    int64_t n = config.sample_sizes.empty() ? config.limit
                                            : *std::max_element(config.sample_sizes.begin(), config.sample_sizes.end());
    if (config.limit > 0) n = std::min(n, config.limit);
    usage_check(n > 0, "sample sizes must be positive, not " + std::to_string(n));
    if (size_t(n) < d.sentences.size()) {
      d.sentences.resize(size_t(n));
      notes.push_back("the first " + std::to_string(n) + " sentences of the dataset (--sample-sizes, --limit)");
    }
  }
  note_unknown_tags(d.sentences, info, notes);
  d.tokenizer = Tokenizer::load(tokenizer_path_for(info, config.tokenizer));
  d.splitter = std::make_unique<tasks::WordSplitter>(*d.tokenizer, tasks::run_ner_adds_prefix_space(info.model_type));
  // Tags a strict scheme does not have, in the data or among the model's labels: refused now,
  // before a run directory is made.
  if (d.scheme != tasks::TagScheme::conlleval) {
    std::vector<tasks::TagSequence> tags;
    for (const auto& s : d.sentences) tags.push_back(s.tags);
    try {
      tasks::seqeval_scores(tags, tags, d.scheme);
    } catch (const Error& e) { throw Error(config.dataset.path + ": " + e.what()); }
    tasks::strict_entities(info.labels, d.scheme, 0, config.model + "'s labels (config.json id2label)");
  }
  d.max_length = options.max_length > 0 ? options.max_length : info.max_positions;
  if (info.max_positions > 0) d.max_length = std::min(d.max_length, info.max_positions);
  usage_check(d.max_length > 0, "the maximum length (-s) must be positive");
  return d;
}

TokenEvalPass token_eval_pass(const TaggedEvalData& data, const ModelInfo& info, int64_t batch_size,
                              const TokenLogitsForward& forward, bool warm_up,
                              std::vector<tasks::TagSequence>* predicted_out) {
  const std::vector<data::TaggedSentence>& sentences = data.sentences;
  TokenEvalPass pass;
  pass.scheme = tasks::tag_scheme_name(data.scheme);
  pass.sentences = int64_t(sentences.size());
  CpuLoadWindow load_window;  // other processes' CPU use while the pass is timed
  const auto t_all = std::chrono::steady_clock::now();
  std::vector<tasks::WordTokens> encoded;
  encoded.reserve(sentences.size());
  for (const auto& s : sentences) encoded.push_back(data.splitter->split(s.words, data.max_length));
  pass.tokenize_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
  // Batches of similar lengths carry little padding; predictions go back by index.
  std::vector<size_t> order(encoded.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return encoded[a].ids.size() < encoded[b].ids.size(); });
  std::vector<tasks::TagSequence> predicted(sentences.size());
  const auto batch_of = [&](size_t first, size_t last) {
    std::vector<std::vector<int32_t>> rows, types;
    for (size_t i = first; i < last; ++i) {
      rows.push_back(encoded[order[i]].ids);
      types.push_back(encoded[order[i]].type_ids);
    }
    return TokenBatch::from_rows(rows, info.pad_token_id, info.type_vocab_size > 0 ? types : decltype(types){});
  };
  const auto step = size_t(batch_size);
  // One untimed forward of the first batch, as the accuracy pass does: the first pays one-off
  // costs (packing caches, page faults, thread start-up).
  const auto t_warm = std::chrono::steady_clock::now();
  if (warm_up && !order.empty()) (void)forward(batch_of(0, std::min(step, order.size())));
  const double warm_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_warm).count();
  load_window.sample();
  for (size_t first = 0; first < order.size(); first += step) {
    const size_t last = std::min(order.size(), first + step);
    const TokenBatch batch = batch_of(first, last);
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor logits = forward(batch);  // [B, T, L]
    pass.model_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int64_t T = batch.seq_len(), L = int64_t(info.labels.size());
    check(logits.shape() == Shape{batch.batch(), T, L},
          "the token classifier gives logits of shape " + shape_str(logits.shape()) + " for a batch of [" +
              std::to_string(batch.batch()) + ", " + std::to_string(T) + "] tokens and " + std::to_string(L) +
              " labels (config.json id2label)");
    for (size_t i = first; i < last; ++i) {
      for (int64_t p : encoded[order[i]].first_token) {
        if (p < 0) continue;
        const float* row = logits.data<float>() + (int64_t(i - first) * T + p) * L;
        predicted[order[i]].push_back(info.labels[size_t(std::max_element(row, row + L) - row)]);
      }
    }
    load_window.sample();
  }
  pass.total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count() - warm_s;
  pass.sentences_per_s = pass.total_s > 0 ? double(sentences.size()) / pass.total_s : 0;
  pass.load = load_of(load_window.finish(threads()));
  // The truth of the words that have a prediction.
  std::vector<tasks::TagSequence> truth(sentences.size());
  for (size_t s = 0; s < sentences.size(); ++s) {
    pass.words += int64_t(sentences[s].words.size());
    for (size_t w = 0; w < sentences[s].words.size(); ++w)
      if (encoded[s].first_token[w] >= 0) truth[s].push_back(sentences[s].tags[w]);
      else ++pass.words_cut;
  }
  tasks::SeqevalResult r;
  try {
    r = tasks::seqeval_scores(truth, predicted, data.scheme);
  } catch (const UsageError&) { throw; } catch (const Error& e) {
    throw Error(data.dataset + ": " + e.what());
  }
  for (const auto& t : r.per_type) pass.per_type.push_back(scores_of(t));
  pass.micro = scores_of(r.micro);
  pass.macro = scores_of(r.macro);
  pass.weighted = scores_of(r.weighted);
  pass.word_accuracy = r.token_accuracy;
  if (predicted_out) *predicted_out = std::move(predicted);
  return pass;
}

std::string words_cut_note(int64_t words_cut) {
  return std::to_string(words_cut) +
         " words past the maximum length (the model's positions, or -s) have no prediction and are left out of both "
         "sides, as run_ner leaves them out";
}

}  // namespace bench

TokenEvalOutcome run_token_eval(const BenchConfig& given, const TokenEvalOptions& options) {
  BenchConfig config = given;
  TokenEvalOutcome out;
  (void)tasks::parse_tag_scheme(options.tag_scheme);  // a scheme that does not parse: before the model loads
  bench::prepare_task_eval(config,
                           "tach eval needs a dataset of tagged words (-d FILE: CoNLL text, or "
                           "JSON/JSONL records with tokens and ner_tags)",
                           out.notes);
  // The first pass's model first: its labels name integer tags, and a dataset or tokenizer that
  // cannot be read fails before a run directory is made.
  std::unique_ptr<EncoderModel> model =
      bench::load_first_eval_model(config, Head::token_classification, "seqeval's metrics", out.notes);
  const ModelInfo& info0 = model->info();
  out.model = config.model;
  out.architecture = info0.architecture;
  out.labels = info0.labels;
  const bench::TaggedEvalData data = bench::read_tagged_eval_data(config, options, info0, out.notes);
  out.dataset = config.dataset.path;
  if (config.run_id.empty())
    config.run_id = bench::unique_run_id(config.runs_dir, bench::default_run_id(config.model) + "-eval");
  bench::RunStore store = bench::RunStore::create((fs::path(config.runs_dir) / config.run_id).string(), config);
  out.run_dir = store.dir();

  for (const std::string& device : config.devices) {
    for (const std::string& dtype : config.dtypes) {
      if (!model) model = bench::load_eval_model(config, device, dtype);
      const EncoderModel& m = *model;
      TokenEvalPass pass = bench::token_eval_pass(
          data, m.info(), config.eval_batch_size, [&m](const TokenBatch& b) { return m.token_logits(b); },
          /*warm_up=*/true);
      pass.device = device;
      pass.dtype = dtype;
      out.passes.push_back(std::move(pass));
      model.reset();
    }
  }
  if (!out.passes.empty() && out.passes.front().words_cut > 0)
    out.notes.push_back(bench::words_cut_note(out.passes.front().words_cut));
  store.write_text("token_classification.json", token_eval_json(out) + "\n");
  store.write_text("summary.txt", token_eval_text(out));
  return out;
}

std::string token_eval_text(const TokenEvalOutcome& o) {
  std::string s = "token classification  " + o.model + " (" + o.architecture + ") on " + o.dataset + "\n";
  std::string labels;
  for (const auto& l : o.labels) labels += (labels.empty() ? "" : ", ") + l;
  s += "labels      " + labels + "\n";
  for (const auto& n : o.notes) s += "note        " + n + "\n";
  for (const TokenEvalPass& p : o.passes) {
    s += "pass        " + p.device + " " + p.dtype + ": " + std::to_string(p.sentences) + " sentences, " +
         std::to_string(p.words) + " words, seqeval " +
         (p.scheme == "conlleval" ? std::string("default mode (conlleval)") : "strict " + p.scheme) + "; " +
         fixed_text(p.sentences_per_s, 1) + " sentences/s (" + fixed_text(p.total_s, 3) + " s: tokenize " +
         fixed_text(p.tokenize_s, 3) + " s, model " + fixed_text(p.model_s, 3) + " s)" +
         bench::contended_rate_note(p.load) + "\n";
    s += "            " + padded("type", 14) + "precision recall    f1        entities (true, predicted, correct)\n";
    const auto row = [&](const std::string& name, const EntityScores& e) {
      s += "            " + padded(name, 14) + cell(e.precision, 10) + cell(e.recall, 10) + cell(e.f1, 10) +
           std::to_string(e.support) + ", " + std::to_string(e.predicted) + ", " + std::to_string(e.correct) + "\n";
    };
    for (const auto& t : p.per_type) row(t.type, t);
    row("micro avg", p.micro);
    row("macro avg", p.macro);
    row("weighted avg", p.weighted);
    s += "            word accuracy " + cell(p.word_accuracy, 8) + "\n";
  }
  return s;
}

std::string token_eval_json(const TokenEvalOutcome& o) {
  nlohmann::json passes = nlohmann::json::array();
  for (const TokenEvalPass& p : o.passes) {
    nlohmann::json types = nlohmann::json::array();
    for (const auto& t : p.per_type) types.push_back(scores_json(t));
    passes.push_back({{"device", p.device},
                      {"dtype", p.dtype},
                      {"scheme", p.scheme},
                      {"sentences", p.sentences},
                      {"words", p.words},
                      {"words_cut", p.words_cut},
                      {"per_type", types},
                      {"micro", scores_json(p.micro)},
                      {"macro", scores_json(p.macro)},
                      {"weighted", scores_json(p.weighted)},
                      {"word_accuracy", p.word_accuracy},
                      {"tokenize_s", p.tokenize_s},
                      {"model_s", p.model_s},
                      {"total_s", p.total_s},
                      {"sentences_per_s", p.sentences_per_s}});
    if (p.load.measured) passes.back()["load"] = bench::load_json(p.load);
  }
  // NaN (an average over no entity types) is written as null.
  return nlohmann::json{{"schema", "tach.eval.token_classification/1"},
                        {"dataset", o.dataset},
                        {"model", o.model},
                        {"architecture", o.architecture},
                        {"labels", o.labels},
                        {"notes", o.notes},
                        {"passes", passes}}
      .dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tach
