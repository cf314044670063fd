// tach shrink's run: the pruned models made, each variant's sweep with its accuracy pass run as
// tach bench --accuracy runs it (a run of its own under RUN_DIR/variants/), and its rows, tagged
// with the variant and its accuracy, appended to RUN_DIR/results.jsonl.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "bench/bench_internal.h"
#include "prune/calibration.h"
#include "shrink/shrink_internal.h"
#include "tach/device.h"
#include "tach/error.h"
#include "tach/prune.h"
#include "tach/runtime.h"
#include "tach/shrink.h"

namespace tach {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kShrinkSchema = "tach.shrink/1";

// shrink.json: what the run was asked for, so that --resume runs the same variants.
std::string options_json(const ShrinkOptions& o) {
  return json({{"schema", kShrinkSchema},
               {"base", json::parse(bench_config_to_json(o.base))},
               {"dtypes", o.dtypes},
               {"prunes", o.prunes},
               {"students", o.students},
               {"prune_by", o.prune_by},
               {"calibration_data", o.calibration_data},
               {"calibration_samples", o.calibration_samples}})
             .dump(2) +
         "\n";
}

ShrinkOptions options_from_json(const std::string& text, const std::string& where) {
  try {
    const json j = json::parse(text);
    check(j.value("schema", "") == kShrinkSchema, where + ": not a " + std::string(kShrinkSchema) + " file");
    ShrinkOptions o;
    o.base = bench_config_from_json(j.at("base").dump(), where);
    o.dtypes = j.at("dtypes").get<std::vector<std::string>>();
    o.prunes = j.at("prunes").get<std::vector<std::string>>();
    o.students = j.at("students").get<std::vector<std::string>>();
    o.prune_by = j.value("prune_by", o.prune_by);
    o.calibration_data = j.value("calibration_data", o.calibration_data);
    o.calibration_samples = j.value("calibration_samples", o.calibration_samples);
    return o;
  } catch (const json::exception& e) { throw Error(where + ": " + e.what()); }
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  check(bool(in), p.string() + ": cannot read");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A pruned variant's model, made with tach prune's library in RUN_DIR/models/ (reused by --resume
// when already there). prune's refusals (no pruning rule for the family, a layer left with no
// heads) are usage errors naming the variant; calibration data the head cannot read is an error.
void make_pruned_model(ShrinkVariant& v, const ShrinkOptions& o, const fs::path& run_dir, bool reuse) {
  const fs::path dir = run_dir / "models" / v.dir_name();
  v.model = dir.string();
  if (reuse && fs::is_regular_file(dir / "config.json")) return;
  PruneOptions p;
  p.model = o.base.model;
  p.output = dir.string();
  if (v.part == "heads") p.heads = v.amount;
  if (v.part == "ffn") p.ffn = v.amount;
  if (v.part == "layers") p.layers = std::to_string(int64_t(v.amount));
  p.by = o.prune_by;
  if (o.prune_by == "importance") {  // ranked on labelled data, tokenized as the accuracy pass is
    p.data = o.base.dataset;
    if (!o.calibration_data.empty()) p.data.path = o.calibration_data;
    p.calibration_samples = o.calibration_samples;
    p.tokenizer = o.base.tokenizer;
    p.max_length = o.base.eval_max_length;
  }
  // tach prune's words for its options, as shrink names them.
  const auto in_shrink_words = [](const std::string& message) {
    return message + (message.find("--by ") == std::string::npos
                          ? ""
                          : " (tach prune's --by is --prune-by here, its -d --calibration-data or -d)");
  };
  try {
    (void)prune_model(p);
  } catch (const prune::CalibrationDataError& e) {
    // Calibration data the head cannot read is an input error, exit 1, as every command's data errors.
    throw Error("--prune " + v.name + ": " + in_shrink_words(e.what()));
  } catch (const Error& e) { throw UsageError("--prune " + v.name + ": " + in_shrink_words(e.what())); }
}

// The variant's accuracy pass on the point's device and dtype (the whole pass: its most examples).
PointResult::Accuracy accuracy_for(const SweepOutcome& out, const PointKey& key) {
  PointResult::Accuracy a;
  for (const AccuracyResult& r : out.accuracy) {
    if (parse_device(r.device).str() != parse_device(key.device).str() || r.dtype != key.dtype) continue;
    if (a.measured && r.examples <= a.examples) continue;
    a.measured = true;
    a.accuracy = r.accuracy;
    a.macro_f1 = r.macro_f1;
    a.examples = r.examples;
    a.dataset = out.accuracy_dataset;
  }
  return a;
}

// A variant's own run: started, or continued where a kill left it.
SweepOutcome variant_sweep(const ShrinkOptions& o, const ShrinkVariant& v, const std::string& run_dir,
                           const BenchObserver& observer) {
  const BenchConfig c = shrink::variant_config(o, v, run_dir);
  const fs::path dir = fs::path(c.runs_dir) / c.run_id;
  try {
    if (fs::is_regular_file(dir / "config.json")) return resume_bench(dir.string(), observer);
    return run_bench(c, observer);
  } catch (const Stopped&) {
    throw Stopped("stopped during variant " + v.name + "; every finished row is in " + run_dir +
                  ": continue with tach shrink --resume " + run_dir);
  }
}

// Every variant's own model, what was done to the base model to make it, and the base.
std::string variants_text(const ShrinkOptions& o, const std::vector<ShrinkVariant>& variants) {
  size_t width = 0;
  for (const auto& v : variants) width = std::max(width, v.name.size());
  std::string s;
  for (const auto& v : variants)
    s += "  " + v.name + std::string(width + 2 - v.name.size(), ' ') + describe_variant(v, o.prune_by) + "\n";
  return s;
}

// The variant's own run names what it measured (tach report's header reads it): the variant, its
// model, what was done to the base model to make it, and the base.
void write_variant_json(const ShrinkOptions& o, const ShrinkVariant& v, const std::string& run_dir) {
  const BenchConfig c = shrink::variant_config(o, v, run_dir);
  const fs::path dir = fs::path(c.runs_dir) / c.run_id;
  if (!fs::is_directory(dir)) return;  // the sweep wrote nothing (every point refused before it ran)
  const json j = {{"schema", "tach.shrink.variant/1"},
                  {"variant", v.name},
                  {"kind", v.kind},
                  {"model", v.model},
                  {"base_model", v.base},
                  {"dtype", v.dtype},
                  {"made", describe_variant(v, o.prune_by)}};
  bench::RunStore::write_file((dir / "variant.json").string(), j.dump(2) + "\n");
}

std::string summary_text(const ShrinkOptions& o, const ShrinkOutcome& out) {
  std::string s = "tach shrink: variants of " + o.base.model + " on " + o.base.dataset.path + ", " +
                  std::to_string(out.variants.size()) + " variant(s), each measured on its own model:\n" +
                  variants_text(o, out.variants) + "\n" + shrink_table(out.rows) + "\nFindings\n";
  for (const auto& f : out.findings) s += "- " + f + "\n";
  return s;
}

ShrinkOutcome execute(const ShrinkOptions& o, std::vector<ShrinkVariant> variants, bench::RunStore& store,
                      const ShrinkObserver& observer) {
  ShrinkOutcome out;
  out.run_dir = store.dir();
  const StopScope stoppable;
  for (size_t i = 0; i < variants.size(); ++i) {
    const ShrinkVariant& v = variants[i];
    if (stop_requested())
      throw Stopped("stopped before variant " + v.name + "; continue with tach shrink --resume " + store.dir());
    if (observer.on_variant) observer.on_variant(v, i, variants.size());
    const SweepOutcome sweep = variant_sweep(o, v, store.dir(), observer.bench);
    write_variant_json(o, v, store.dir());
    for (PointResult p : sweep.results) {
      p.key.variant = v.name;
      if (store.is_finished(p.key)) {
        ++out.resumed_rows;
        continue;
      }
      if (p.status == "ok") p.accuracy = accuracy_for(sweep, p.key);
      store.append(p);
    }
  }
  // Every row, in the variants' order, from the store (appended before or now).
  const bench::RunStore read = bench::RunStore::open(store.dir(), "");
  for (const ShrinkVariant& v : variants)
    for (const PointResult& p : read.finished())
      if (p.key.variant == v.name) out.rows.push_back(p);
  out.variants = std::move(variants);
  out.findings = shrink_findings(out.rows);
  bench::RunStore::write_file((fs::path(store.dir()) / "summary.txt").string(), summary_text(o, out));
  return out;
}

// The run directory's own config.json: the base model at every variant's dtype, with the accuracy
// pass, so that tach report and tach compare read it as any run.
BenchConfig run_config(const ShrinkOptions& o, const std::vector<ShrinkVariant>& variants) {
  BenchConfig c = o.base;
  c.accuracy = true;
  c.tensorboard = false;
  c.dtypes.clear();
  for (const auto& v : variants)
    if (std::find(c.dtypes.begin(), c.dtypes.end(), v.dtype) == c.dtypes.end()) c.dtypes.push_back(v.dtype);
  return c;
}

}  // namespace

ShrinkOutcome run_shrink(const ShrinkOptions& given, const ShrinkObserver& observer) {
  ShrinkOptions o = given;
  std::vector<ShrinkVariant> variants = shrink_variants(o);
  check_shrink_variants(o, variants);
  // unique_run_id makes the directory it names (so no other run takes the id): made here too.
  std::error_code ec;
  const bool made_here = o.base.run_id.empty() || !fs::exists(fs::path(o.base.runs_dir) / o.base.run_id, ec);
  if (o.base.run_id.empty())
    o.base.run_id = bench::unique_run_id(o.base.runs_dir, bench::default_run_id(o.base.model) + "-shrink");
  const fs::path dir = fs::path(o.base.runs_dir) / o.base.run_id;
  fs::create_directories(dir, ec);
  check(!ec, dir.string() + ": cannot create the run directory: " + ec.message());
  refuse_run_dir_in_use(dir.string(), {"shrink.json", "results.jsonl", "config.json", "accuracy.json", "steps.jsonl"},
                        "choose another --run-id" + (fs::exists(dir / "shrink.json")
                                                         ? ", or continue it with tach shrink --resume " + dir.string()
                                                         : std::string()));
  // Pruned before the run is made: a pruning the model cannot take (or its calibration data) is
  // refused with nothing written but the models made before it, in a directory given with --run-id
  // that was there already; a directory this run made holds nothing else, and goes with them.
  try {
    for (ShrinkVariant& v : variants)
      if (v.kind == "prune") make_pruned_model(v, o, dir, /*reuse=*/false);
  } catch (...) {
    if (made_here) fs::remove_all(dir, ec);
    throw;
  }
  bench::RunStore store = bench::RunStore::create(dir.string(), run_config(o, variants));
  store.write_text("shrink.json", options_json(o));
  return execute(o, std::move(variants), store, observer);
}

ShrinkOutcome resume_shrink(const std::string& run_dir, const ShrinkObserver& observer) {
  const fs::path shrink_json = fs::path(run_dir) / "shrink.json";
  check(fs::is_regular_file(shrink_json), run_dir + ": no shrink.json, so this is not a tach shrink run");
  const ShrinkOptions o = options_from_json(read_file(shrink_json), shrink_json.string());
  std::vector<ShrinkVariant> variants = shrink_variants(o);
  for (ShrinkVariant& v : variants)
    if (v.kind == "prune") make_pruned_model(v, o, run_dir, /*reuse=*/true);
  bench::RunStore store = bench::RunStore::open(run_dir);
  ShrinkOutcome out = execute(o, std::move(variants), store, observer);
  return out;
}

}  // namespace tach
