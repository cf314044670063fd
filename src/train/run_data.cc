// A run's data: --dataset's examples read as its task reads them (texts, tagged words, SQuAD
// questions), tokenized once into training rows (train/train_data.h, train/task_data.h,
// train/qa_features.h), and cut into each step's micro-batches in the epoch's seeded order.
#include <algorithm>

#include "data/conll.h"
#include "data/dataset_kind.h"
#include "data/squad.h"
#include "tach/error.h"
#include "tach/tokenizer.h"
#include "tasks/split_words.h"
#include "train/qa_features.h"
#include "train/task_data.h"
#include "train/train_run.h"

namespace tach::train {

namespace {

// The training or evaluation data's options: --dataset's columns with `which`'s path and split
// (JSON split files: "train" by default for training). The masked LM reads texts only.
DatasetOptions data_source(const TrainRun& r, const DatasetOptions& which) {
  DatasetOptions d = r.o.data;
  d.path = which.path;
  d.split = which.split;
  if (&which == &r.o.data && d.split.empty()) d.split = "train";
  if (r.task == Head::masked_lm) d.label_column.clear(), d.text_pair_column.clear();
  return d;
}

// `read` of a per-token task's file; where it fails on another task's data, an error naming the file
// kind and the --task that reads it (rather than the reader's complaint about its first line, or a
// SQuAD file's top-level keys listed as splits).
// How the command reads `task`'s data, for the fix a message names: "--task T" (tach train), or a
// model of that task where the command has no --task (r.task_flag empty: tach prune).
std::string task_reader(const TrainRun& r, const std::string& task) {
  return r.task_flag.empty() ? "-m with a " + task + " model" : r.task_flag + " " + task;
}

template <class Read>
auto read_for_task(const TrainRun& r, const std::string& path, Head task, Read read) -> decltype(read()) {
  try {
    return read();
  } catch (const Error& e) {
    const bool tagged = task == Head::token_classification;
    const data::DatasetKind kind = data::guess_dataset_kind(path);
    const std::string other = data::dataset_kind_task(kind);
    if (other.empty() || other == (tagged ? "token-classification" : "question-answering")) throw;
    // The CoNLL reader's complaint about a table says what a word line needs: it stands.
    if (tagged && kind == data::DatasetKind::table)
      throw Error(std::string(e.what()) + " (this file is " + data::dataset_kind_name(kind, path) +
                  ", which a sequence classifier reads: " + task_reader(r, "sequence-classification") + ")");
    throw Error(data::other_task_data_message(
        path, kind,
        tagged ? "CoNLL text or JSON records with tokens and tags, as a token classifier reads them"
               : "SQuAD-format data (v1.1/v2.0 JSON, or records with id, context, question and answers) as a "
                 "question-answering model reads it",
        task_reader(r, other) + " reads it"));
  }
}

// Tagged sentences (CoNLL or JSON records): the words under --text-column (default tokens) and
// the tags under --label-column (default ner_tags); integer tags name the head's labels.
std::vector<data::TaggedSentence> read_tagged(const TrainRun& r, const DatasetOptions& which) {
  data::TaggedJsonOptions jo;
  if (r.o.data.text_column != "text") jo.words_key = r.o.data.text_column;
  if (r.o.data.label_column != "label") jo.tags_key = r.o.data.label_column;
  jo.split = which.split.empty() && &which == &r.o.data ? "" : which.split;
  jo.tag_names = !r.o.labels.empty()                          ? r.o.labels
                 : r.src.has_head(Head::token_classification) ? r.src.id2label()
                                                              : r.labels;
  const std::string& format = r.o.data.format;
  check(format == "auto" || format == "conll" || format == "json" || format == "jsonl",
        (r.task_flag.empty() ? std::string("a token classifier") : r.task_flag + " token-classification") +
            " reads CoNLL or JSON tagged words: --dataset-format auto, conll, json or jsonl, not " + format);
  return read_for_task(r, which.path, Head::token_classification,
                       [&] { return data::read_tagged_file(which.path, format, -1, jo); });
}

// The collator's settings: the tokenizer's mask token, random tokens from all of its vocabulary.
MlmMasking mlm_masking(const TrainRun& r, const Tokenizer& tokenizer) {
  MlmMasking m;
  m.probability = r.o.mlm_probability;
  for (const char* token : {"[MASK]", "<mask>"})
    if (const auto id = tokenizer.token_to_id(token); id && m.mask_token_id < 0) m.mask_token_id = *id;
  m.vocab_size = int64_t(tokenizer.vocab_size());
  check(m.vocab_size <= r.src.vocab_size(), "the tokenizer has " + std::to_string(m.vocab_size) + " tokens and " +
                                                r.o.model + " only " + std::to_string(r.src.vocab_size()) +
                                                " embeddings: a random replacement could fall outside them");
  return m;
}

template <class Examples>
void keep_first(Examples& examples, int64_t max_samples) {
  if (max_samples > 0 && int64_t(examples.size()) > max_samples) examples.resize(size_t(max_samples));
}

// How every task's rows are tokenized: the tokenizer, the pad id and the lengths.
struct Tokenizing {
  std::unique_ptr<Tokenizer> tokenizer;
  int32_t pad_id = 0;
  int64_t eval_length = 0;
  bool types = false, fixed = false;
};

// The per-token heads' rows (masked LM, token classification, question answering).
void prepare_task_data(TrainRun& r, const Tokenizing& t) {
  const TrainOptions& o = r.o;
  const Tokenizer& tok = *t.tokenizer;
  if (r.task == Head::masked_lm) {
    const MlmMasking masking = mlm_masking(r, tok);
    r.data = prepare_mlm_data(r.train_set, tok, o.max_length, t.fixed, t.pad_id, t.types, masking, o.seed);
    if (r.has_eval)
      r.eval_data = prepare_mlm_data(read_dataset(data_source(r, o.eval_data)), tok, t.eval_length, false, t.pad_id,
                                     t.types, masking, o.seed);
  } else if (r.task == Head::token_classification) {
    // run_ner's rule: a space before each word for the byte-level BPE model types it names.
    const bool prefix_space = tasks::run_ner_adds_prefix_space(r.src.model_type);
    r.data = prepare_token_data(r.tagged, o.data.path, tok, prefix_space, r.labels, o.label_all_tokens, o.max_length,
                                t.fixed, t.pad_id, t.types);
    if (r.has_eval)
      r.eval_data = prepare_token_data(read_tagged(r, o.eval_data), o.eval_data.path, tok, prefix_space, r.labels,
                                       o.label_all_tokens, t.eval_length, false, t.pad_id, t.types);
  } else {
    r.data = prepare_qa_data(r.questions, tok, o.max_length, o.doc_stride, t.fixed, t.pad_id, t.types);
    if (r.has_eval)
      r.eval_data = prepare_qa_data(read_for_task(r, o.eval_data.path, Head::question_answering,
                                                  [&] { return data::read_squad(o.eval_data.path); })
                                        .questions,
                                    tok, t.eval_length, o.doc_stride, false, t.pad_id, t.types);
  }
}

}  // namespace

void read_training_examples(TrainRun& r) {
  if (r.task == Head::token_classification) {
    r.tagged = read_tagged(r, r.o.data);
    keep_first(r.tagged, r.o.max_samples);
  } else if (r.task == Head::question_answering) {
    data::check_squad_format(r.o.data.format, r.task_flag);
    r.questions = read_for_task(r, r.o.data.path, Head::question_answering, [&] {
                    return data::read_squad(r.o.data.path);
                  }).questions;
    keep_first(r.questions, r.o.max_samples);
  } else {
    // JSON split files: train on "train", not "test".
    r.train_set = read_dataset(data_source(r, r.o.data));
    keep_first(r.train_set.examples, r.o.max_samples);
  }
}

void prepare_data(TrainRun& r) {
  const TrainOptions& o = r.o;
  r.tokenizer_path = !o.tokenizer.empty() ? o.tokenizer : r.src.location.dir;
  check(!r.tokenizer_path.empty(),
        missing_tokenizer_message(o.model, r.src.family ? r.src.family->tokenizer_hint : ""));
  Tokenizing t;
  t.tokenizer = Tokenizer::load(r.tokenizer_path);
  check_tokenizer_fits(*t.tokenizer, o.tokenizer, o.model, r.src.vocab_size());  // before any row runs
  check(r.src.pad_token_id() >= 0 || o.batch_size == 1,
        o.model +
            ": config.json names no pad_token_id, so padded rows of a batch cannot be told apart; set "
            "pad_token_id in config.json or train with --batch-size 1");
  t.pad_id = int32_t(std::max<int64_t>(0, r.src.pad_token_id()));
  t.eval_length = o.eval_max_length > 0 ? o.eval_max_length : o.max_length;
  // A pair's second text is type 1 in a BERT-style tokenizer's encoding. A one-type model (RoBERTa,
  // XLM-R) reads zeros, as its own tokenizer gives it no types and as tach's inference feeds it.
  t.types = r.model->uses_token_types() && r.src.config.type_vocab_size > 1, t.fixed = o.padding == "max_length";
  r.has_eval = !o.eval_data.path.empty();
  if (r.task != Head::sequence_classification) return prepare_task_data(r, t);
  r.data =
      prepare_train_data(r.train_set, *t.tokenizer, r.labels, r.problem_type, o.max_length, t.fixed, t.pad_id, t.types);
  if (!r.has_eval) return;
  r.eval_data = prepare_train_data(read_dataset(data_source(r, o.eval_data)), *t.tokenizer, r.labels, r.problem_type,
                                   t.eval_length, false, t.pad_id, t.types);
}

// A micro-batch's rows for step `step`: the epoch's order, cut by the batch size.
MicroBatchSource micro_batches_of(const TrainRun& r, const std::vector<int64_t>& order, int64_t first_batch,
                                  int64_t epoch) {
  return [&r, &order, first_batch, epoch](int64_t micro, TokenBatch* batch, Targets* targets) {
    const int64_t b = first_batch + micro, B = r.plan.batch;
    std::vector<int64_t> idx(order.begin() + b * B, order.begin() + std::min(r.plan.examples, (b + 1) * B));
    if (r.dp) idx = rank_rows(idx, r.dp->rank(), r.dp->size());
    if (!idx.empty()) make_batch(r.data, idx, batch, targets, epoch);  // none: this rank sits the batch out
  };
}

}  // namespace tach::train
