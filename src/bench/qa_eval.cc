// tach eval on a question-answering model: SQuAD questions → windows of question and context →
// the model's start and end logits → the best span of each question (transformers'
// question-answering pipeline) → the official SQuAD exact match and F1.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "bench/bench_internal.h"
#include "bench/task_eval_setup.h"
#include "bench/task_passes.h"
#include "data/dataset_kind.h"
#include "data/squad.h"
#include "model/family.h"
#include "report/number_text.h"
#include "tach/error.h"
#include "tach/question_answering.h"
#include "tach/runtime.h"
#include "tasks/answer_question.h"

namespace fs = std::filesystem;

namespace tach {

namespace {

using report::fixed_text;

nlohmann::json scores_json(const SquadScores& s, bool v2) {
  nlohmann::json j = {{"exact_match", s.exact}, {"f1", s.f1}, {"total", s.total}};
  // A group with no questions is left out, as the official v2.0 script leaves it out (its scores
  // would be a 0% that no question earned).
  if (v2 && s.has_answer_total > 0) {
    j["HasAns_exact"] = s.has_answer_exact;
    j["HasAns_f1"] = s.has_answer_f1;
    j["HasAns_total"] = s.has_answer_total;
  }
  if (v2 && s.no_answer_total > 0) {
    j["NoAns_exact"] = s.no_answer_exact;
    j["NoAns_f1"] = s.no_answer_f1;
    j["NoAns_total"] = s.no_answer_total;
  }
  return j;
}

// The SQuAD file, or, where it cannot be read and holds another task's data, an error saying so
// (rather than the JSON parser's complaint about a CoNLL file's first line).
SquadData read_squad_for_qa(const std::string& path) {
  try {
    return read_squad(path);
  } catch (const Error&) {
    const data::DatasetKind kind = data::guess_dataset_kind(path);
    if (kind == data::DatasetKind::unknown || kind == data::DatasetKind::squad) throw;
    // A table of texts and labels (GLUE's TSV, a CSV) or tagged words: the JSON reader's complaint
    // about its first byte says nothing a user can act on.
    throw Error(data::other_task_data_message(path, kind,
                                              "SQuAD-format data (v1.1/v2.0 JSON, or records with id, context, "
                                              "question and answers) as a question-answering model reads it",
                                              "evaluate it with -m and " + data::dataset_kind_reader(kind)));
  }
}

}  // namespace

bool evaluates_question_answering(const BenchConfig& config) {
  return bench::evaluates_head(config, Head::question_answering, "ForQuestionAnswering");
}

int64_t question_answering_bench_length(const BenchConfig& config) {
  if (!evaluates_question_answering(config)) return 0;
  const int64_t positions = model::summarize_architecture(model::resolve_model(config.model)).P;
  return positions > 0 ? std::min<int64_t>(384, positions) : 384;
}

namespace bench {

SquadEvalData read_squad_eval_data(const BenchConfig& config, AnswerOptions options, const ModelInfo& info,
                                   std::vector<std::string>& notes) {
  SquadEvalData d;
  d.squad = read_squad_for_qa(config.dataset.path);
  if (!config.sample_sizes.empty() || config.limit > 0) {
    int64_t n = config.sample_sizes.empty() ? config.limit
                                            : *std::max_element(config.sample_sizes.begin(), config.sample_sizes.end());
    if (config.limit > 0) n = std::min(n, config.limit);
    usage_check(n > 0, "sample sizes must be positive, not " + std::to_string(n));
    if (size_t(n) < d.squad.questions.size()) {
      d.squad.questions.resize(size_t(n));
      notes.push_back("the first " + std::to_string(n) + " questions of the dataset (--sample-sizes, --limit)");
    }
  }
  // SQuAD v2.0 is answered as run_qa.py answers it (version_2_with_negative): the empty answer competes.
  if (d.squad.v2 && !options.handle_impossible_answer) {
    options.handle_impossible_answer = true;
    notes.push_back(
        "SQuAD v2.0 data: the empty answer competes with the spans (as run_qa.py's version_2_with_negative and "
        "tach eval --handle-impossible-answer)");
  }
  if (info.max_positions > 0 && options.max_length > info.max_positions) {
    options.max_length = info.max_positions;
    options.doc_stride = std::min<int64_t>(options.doc_stride, options.max_length / 2);
    notes.push_back("windows of " + std::to_string(options.max_length) + " tokens, the model's positions");
  }
  d.options = options;
  d.tokenizer = Tokenizer::load(tokenizer_path_for(info, config.tokenizer));
  for (const auto& q : d.squad.questions) {
    d.questions.push_back({q.question, q.context});
    d.gold.push_back(q.answers);
  }
  return d;
}

QaEvalPass qa_eval_pass(const SquadEvalData& data, const ModelInfo& info, int64_t batch_size,
                        const TokenLogitsForward& forward, bool warm_up, std::vector<std::string>* best_out) {
  const std::vector<Question>& questions = data.questions;
  QaEvalPass pass;
  pass.questions = int64_t(questions.size());
  // One untimed question first, as the accuracy pass warms up: the first forward pays one-off
  // costs (packing caches, page faults, thread start-up).
  if (warm_up && !questions.empty())
    (void)answer_questions(info, forward, *data.tokenizer, {questions.front()}, data.options);
  CpuLoadWindow load;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> best;
  const size_t step = size_t(batch_size);
  for (size_t first = 0; first < questions.size(); first += step) {
    const std::vector<Question> chunk(questions.begin() + long(first),
                                      questions.begin() + long(std::min(questions.size(), first + step)));
    for (const auto& answers : answer_questions(info, forward, *data.tokenizer, chunk, data.options, step))
      best.push_back(answers.empty() ? "" : answers.front().text);
    load.sample();
  }
  pass.total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  pass.load = load_of(load.finish(threads()));
  pass.questions_per_s = pass.total_s > 0 ? double(questions.size()) / pass.total_s : 0;
  pass.scores = squad_scores(data.gold, best, data.squad.v2 ? SquadVersion::v2 : SquadVersion::v1);
  if (best_out) *best_out = std::move(best);
  return pass;
}

}  // namespace bench

QaEvalOutcome run_qa_eval(const BenchConfig& given, AnswerOptions options) {
  BenchConfig config = given;
  QaEvalOutcome out;
  bench::prepare_task_eval(
      config,
      "tach eval on a question-answering model needs SQuAD data (-d FILE: SQuAD v1.1/v2.0 JSON, or "
      "records with id, context, question and answers as JSON or JSONL)",
      out.notes);
  data::check_squad_format(config.dataset.format, "");

  // The first pass's model, the data and the tokenizer first: what cannot be read fails before a
  // run directory is made.
  std::unique_ptr<EncoderModel> model =
      bench::load_first_eval_model(config, Head::question_answering, "SQuAD's scores", out.notes);
  const ModelInfo& info0 = model->info();
  out.model = config.model;
  out.architecture = info0.architecture;
  const bench::SquadEvalData data = bench::read_squad_eval_data(config, options, info0, out.notes);
  out.dataset = config.dataset.path;
  out.layout = data.squad.layout;
  out.v2 = data.squad.v2;
  out.options = data.options;

  if (config.run_id.empty())
    config.run_id = bench::unique_run_id(config.runs_dir, bench::default_run_id(config.model) + "-eval");
  bench::RunStore store = bench::RunStore::create((fs::path(config.runs_dir) / config.run_id).string(), config);
  out.run_dir = store.dir();
  nlohmann::json predictions = nlohmann::json::object();

  for (const std::string& device : config.devices) {
    for (const std::string& dtype : config.dtypes) {
      if (!model) model = bench::load_eval_model(config, device, dtype);
      const EncoderModel& m = *model;
      std::vector<std::string> best;
      QaEvalPass pass = bench::qa_eval_pass(
          data, m.info(), config.eval_batch_size, [&m](const TokenBatch& b) { return m.token_logits(b); },
          /*warm_up=*/true, &best);
      pass.device = device;
      pass.dtype = dtype;
      if (out.passes.empty())
        for (size_t i = 0; i < best.size(); ++i) predictions[data.squad.questions[i].id] = best[i];
      out.passes.push_back(pass);
      model.reset();
    }
  }
  store.write_text("question_answering.json", qa_eval_json(out) + "\n");
  store.write_text("predictions.json",
                   predictions.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  store.write_text("summary.txt", qa_eval_text(out));
  return out;
}

std::string qa_eval_text(const QaEvalOutcome& o) {
  std::string s =
      "question answering  " + o.model + " (" + o.architecture + ") on " + o.dataset + " (" + o.layout + ")\n";
  s += "windows     " + std::to_string(o.options.max_length) + " tokens sharing " +
       std::to_string(o.options.doc_stride) + " context tokens; answers of at most " +
       std::to_string(o.options.max_answer_len) + " tokens" +
       (o.options.handle_impossible_answer ? ", the empty answer allowed" : "") + "\n";
  for (const auto& n : o.notes) s += "note        " + n + "\n";
  for (const QaEvalPass& p : o.passes) {
    s += "pass        " + p.device + " " + p.dtype + ": " + std::to_string(p.questions) + " questions, SQuAD " +
         (o.v2 ? "v2.0" : "v1.1") + " scores; " + fixed_text(p.questions_per_s, 1) + " questions/s (" +
         fixed_text(p.total_s, 3) + " s)" + bench::contended_rate_note(p.load) + "\n";
    s += "            exact match " + fixed_text(p.scores.exact, 2) + "%  F1 " + fixed_text(p.scores.f1, 2) + "%  (" +
         std::to_string(p.scores.total) + " questions)\n";
    if (o.v2 && p.scores.has_answer_total > 0)
      s += "            HasAns      exact match " + fixed_text(p.scores.has_answer_exact, 2) + "%  F1 " +
           fixed_text(p.scores.has_answer_f1, 2) + "%  (" + std::to_string(p.scores.has_answer_total) + ")\n";
    if (o.v2 && p.scores.no_answer_total > 0)
      s += "            NoAns       exact match " + fixed_text(p.scores.no_answer_exact, 2) + "%  F1 " +
           fixed_text(p.scores.no_answer_f1, 2) + "%  (" + std::to_string(p.scores.no_answer_total) + ")\n";
  }
  return s;
}

std::string qa_eval_json(const QaEvalOutcome& o) {
  nlohmann::json passes = nlohmann::json::array();
  for (const QaEvalPass& p : o.passes)
    passes.push_back({{"device", p.device},
                      {"dtype", p.dtype},
                      {"questions", p.questions},
                      {"scores", scores_json(p.scores, o.v2)},
                      {"total_s", p.total_s},
                      {"questions_per_s", p.questions_per_s}});
  for (size_t i = 0; i < o.passes.size(); ++i)
    if (o.passes[i].load.measured) passes[i]["load"] = bench::load_json(o.passes[i].load);
  return nlohmann::json{{"schema", "tach.eval.question_answering/1"},
                        {"dataset", o.dataset},
                        {"layout", o.layout},
                        {"squad_version", o.v2 ? "v2.0" : "v1.1"},
                        {"model", o.model},
                        {"architecture", o.architecture},
                        {"options",
                         {{"max_length", o.options.max_length},
                          {"doc_stride", o.options.doc_stride},
                          {"max_answer_len", o.options.max_answer_len},
                          {"handle_impossible_answer", o.options.handle_impossible_answer}}},
                        {"notes", o.notes},
                        {"passes", passes}}
      .dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tach
