// tach shrink's variants: what --dtype, --prune and --student spell, and what each needs checked
// before anything is pruned or measured.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "bench/bench_internal.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/family.h"
#include "shrink/shrink_internal.h"
#include "tach/error.h"
#include "tach/plain_number.h"
#include "tach/question_answering.h"
#include "tach/shrink.h"
#include "tach/token_classification.h"

namespace tach {

namespace fs = std::filesystem;

namespace {

const char* const kPruneSpellings = "heads:F or ffn:F (a fraction in [0, 1)), or layers:N (a count of layers)";

// "0.5" -> 0.5, the whole text a number; nullopt otherwise.
bool parse_number(const std::string& text, double* value) {
  try {
    size_t used = 0;
    *value = std::stod(text, &used);
    return used == text.size() && std::isfinite(*value);
  } catch (const std::exception&) { return false; }
}

ShrinkVariant prune_variant(const std::string& spec) {
  const size_t colon = spec.find(':');
  ShrinkVariant v;
  v.kind = "prune";
  v.part = spec.substr(0, colon);
  usage_check(colon != std::string::npos && (v.part == "heads" || v.part == "ffn" || v.part == "layers"),
              "--prune " + spec + ": not a pruning tach shrink knows; spell it " + kPruneSpellings);
  const std::string amount = spec.substr(colon + 1);
  if (v.part == "layers") {
    usage_check(parse_number(amount, &v.amount) && v.amount >= 1 && v.amount == std::floor(v.amount),
                "--prune " + spec + ": layers takes a count of layers to remove, a whole number from 1");
  } else {
    usage_check(parse_number(amount, &v.amount) && v.amount >= 0 && v.amount < 1,
                "--prune " + spec + ": " + v.part + " takes a fraction in [0, 1), got " + amount);
  }
  v.name = v.part + ":" + plain_number(v.amount);
  return v;
}

std::string canonical_dtype(const std::string& d) {
  return d == "float32" ? "f32" : d == "bfloat16" ? "bf16" : d == "float16" ? "f16" : d;
}

// A classifier's labels as config.json names them (id2label in id order), or its count alone.
std::vector<std::string> labels_of(const std::string& model) {
  const model::ModelLocation loc = model::resolve_model(model);
  if (loc.dir.empty()) return {};
  const nlohmann::json config = model::read_json_file((fs::path(loc.dir) / "config.json").string());
  std::map<int64_t, std::string> by_id;
  if (config.contains("id2label") && config.at("id2label").is_object())
    for (const auto& [id, name] : config.at("id2label").items())
      by_id[std::stoll(id)] = name.is_string() ? name.get<std::string>() : name.dump();
  std::vector<std::string> labels;
  for (const auto& [_, name] : by_id) labels.push_back(name);
  // No id2label: transformers' default names for the classifier's outputs.
  if (labels.empty())
    for (int64_t i = 0; i < model::summarize_architecture(loc).labels; ++i)
      labels.push_back("LABEL_" + std::to_string(i));
  return labels;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "none" : s;
}

// A student's name in the table: its directory's, or its run's where the directory is tach train's
// default RUN_DIR/model (every such student would otherwise be "model").
std::string student_name(const std::string& dir) {
  fs::path p = fs::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "dir/" normalises to "dir/" with an empty name
  if (p.filename() == "model" && !p.parent_path().filename().empty()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace

std::string ShrinkVariant::dir_name() const {
  std::string s = name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '-';
  return s;
}

std::vector<ShrinkVariant> shrink_variants(const ShrinkOptions& o) {
  std::vector<ShrinkVariant> out;
  usage_check(!o.dtypes.empty(), "--dtype needs at least one dtype");
  const std::string first_dtype = canonical_dtype(o.dtypes.front());
  // Pruned models and students compute in the first dtype; a name says so unless it is f32.
  const std::string dtype_suffix = first_dtype == "f32" ? "" : "+" + first_dtype;
  for (const auto& given : o.dtypes) {
    const std::string d = canonical_dtype(given);
    usage_check(d == "f32" || d == "bf16" || d == "f16" || d == "int8" || d == "nf4",
                "--dtype " + given + ": not one of f32, bf16, f16, int8, nf4");
    ShrinkVariant v;
    v.name = v.dtype = d;
    v.kind = "dtype";
    v.model = v.base = o.base.model;
    out.push_back(v);
  }
  for (const auto& spec : o.prunes) {
    ShrinkVariant v = prune_variant(spec);
    v.model = v.base = o.base.model;  // until it is pruned into the run directory
    v.name += dtype_suffix;
    v.dtype = first_dtype;
    out.push_back(v);
  }
  for (const auto& dir : o.students) {
    usage_check(!dir.empty(), "--student needs a model directory");
    ShrinkVariant v;
    v.kind = "student";
    v.model = dir;
    v.base = o.base.model;
    v.dtype = first_dtype;
    v.name = "student:" + student_name(dir) + dtype_suffix;
    out.push_back(v);
  }
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t j = i + 1; j < out.size(); ++j)
      usage_check(out[i].name != out[j].name,
                  "variant " + out[i].name + " is given twice (" + (out[i].kind == "student" ? "--student" : "") +
                      (out[i].kind == "prune" ? "--prune" : "") + (out[i].kind == "dtype" ? "--dtype" : "") +
                      "): give each once" +
                      (out[i].kind == "student"
                           ? " (a student is named by its directory, or by its run where the directory is tach "
                             "train's RUN_DIR/model: rename one of the directories)"
                           : ""));
  return out;
}

namespace {

// What tach prune removed, from the sizes before and after in its prune_summary.json: "4 of 8
// attention heads", "the FFN from 40 to 30 neurons a layer", "1 of 2 layers".
std::string what_prune_removed(const ShrinkVariant& v) {
  const fs::path summary = fs::path(v.model) / "prune_summary.json";
  if (!fs::is_regular_file(summary)) return "";
  const nlohmann::json j = model::read_json_file(summary.string());
  const nlohmann::json &b = j.at("before"), &a = j.at("after");
  auto count = [&](const char* key) { return std::make_pair(b.value(key, int64_t(0)), a.value(key, int64_t(0))); };
  std::vector<std::string> parts;
  if (const auto [before, after] = count("heads"); after < before)
    parts.push_back(std::to_string(before - after) + " of " + std::to_string(before) + " attention heads");
  if (const auto [before, after] = count("ffn_width"); after < before)
    parts.push_back("the FFN from " + std::to_string(before) + " to " + std::to_string(after) + " neurons a layer");
  if (const auto [before, after] = count("layers"); after < before)
    parts.push_back(std::to_string(before - after) + " of " + std::to_string(before) + " layers");
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return s;
}

}  // namespace

std::string describe_variant(const ShrinkVariant& v, const std::string& prune_by) {
  if (v.kind == "dtype") return v.base + " at " + v.dtype;
  if (v.kind == "student") return v.model + ": a student, measured beside " + v.base + ", in " + v.dtype;
  const std::string removed = what_prune_removed(v);
  return v.model + ": " + v.base + " with " + (removed.empty() ? "nothing" : removed) + " removed (" + v.part + ":" +
         plain_number(v.amount) + ", ranked by " + prune_by + "), in " + v.dtype;
}

BenchConfig shrink::variant_config(const ShrinkOptions& o, const ShrinkVariant& v, const std::string& run_dir) {
  BenchConfig c = o.base;
  c.model = v.model;
  c.dtypes = {v.dtype};
  c.accuracy = true;
  c.tensorboard = false;  // the rows are the shrink run's; each variant's own run keeps only its files
  c.runs_dir = (fs::path(run_dir) / "variants").string();
  c.run_id = v.dir_name();
  return c;
}

void check_shrink_variants(const ShrinkOptions& o, const std::vector<ShrinkVariant>& variants) {
  usage_check(!o.base.dataset.path.empty(),
              "tach shrink needs a labelled dataset for each variant's accuracy: pass -d/--dataset FILE");
  usage_check(!variants.empty(), "no variant to measure: give --dtype, --prune or --student");
  usage_check(o.prune_by == "magnitude" || o.prune_by == "importance",
              "--prune-by " + o.prune_by + ": not one of magnitude, importance");
  usage_check(o.prune_by == "importance" || (o.calibration_data.empty() && o.calibration_samples == 128),
              "--calibration-data and --calibration-samples are for --prune-by importance");
  usage_check(o.calibration_samples >= 1,
              "--calibration-samples " + std::to_string(o.calibration_samples) + ": must be 1 or more");
  BenchConfig base = o.base;
  base.accuracy = true;
  base.dtypes = {variants.front().dtype};
  // The table's accuracy, Pareto fronts and findings are a sequence classifier's: a per-token head
  // is named, with what measures it, rather than its data file being blamed for not being rows.
  const std::string per_token = evaluates_token_classification(base) ? "a token classifier"
                                : evaluates_question_answering(base) ? "a question-answering model"
                                                                     : "";
  usage_check(per_token.empty(), "tach shrink compares sequence classifiers; " + o.base.model + " is " + per_token +
                                     ": tach bench -m MODEL --accuracy -d " + o.base.dataset.path +
                                     " --dtype f32,int8,nf4 gives its task's scores beside its latency per dtype, "
                                     "and for each pruned or distilled model in turn");
  check_lengths_fit_model(base);
  const std::vector<std::string> base_labels = labels_of(o.base.model);
  for (const ShrinkVariant& v : variants) {
    const BenchConfig c = shrink::variant_config(o, v, "");
    try {
      check_sweep_config(c);
    } catch (const UsageError& e) { throw UsageError("variant " + v.name + ": " + e.what()); }
    if (v.kind == "prune") {
      usage_check(model::resolve_model(o.base.model).kind != model::ModelLocation::Kind::preset,
                  "variant " + v.name + ": tach prune writes a checkpoint from a checkpoint's files; " + o.base.model +
                      " is a preset with synthetic weights");
    }
    if (v.kind != "student") continue;
    usage_check(!fs::is_regular_file(fs::path(v.model) / "adapter_config.json") ||
                    fs::is_regular_file(fs::path(v.model) / "config.json"),
                "--student " + v.model +
                    ": a LoRA adapter (adapter_config.json), not a model: tach merge --model BASE --adapter " +
                    v.model + " -o DIR writes the merged model to give here");
    usage_check(fs::is_regular_file(fs::path(v.model) / "config.json"),
                "--student " + v.model +
                    ": no config.json there (a student is a model directory, as tach train "
                    "--save writes)");
    check_lengths_fit_model(c);
    const std::vector<std::string> labels = labels_of(v.model);
    usage_check(labels == base_labels, "--student " + v.model + ": its labels (" + joined(labels) +
                                           ") differ from the model's (" + joined(base_labels) +
                                           "): its accuracy would not be the same task's");
  }
  bench::check_text_inputs(base);  // the dataset's columns and the tokenizer, before anything runs
}

}  // namespace tach
