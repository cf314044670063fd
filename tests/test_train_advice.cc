// Every flag that tach's advice names exists: the training diagnosis (every branch, on curves
// built to reach it), the Next steps of a training and an inference sweep's summary.txt, and what
// tach estimate suggests when a model does not fit. Each flag is looked up in the option table
// of the command the sentence names (`tach train -b 16 ...`), else of the command that printed
// it, as the real binary's --help lists them. Advice on a precision the sweep measured follows
// the measurement.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <stdio.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_internal.h"
#include "cpu/train_gemm.h"
#include "tach/bench.h"
#include "tach/report.h"
#include "tach/system_info.h"
#include "test_util.h"

namespace tach {
namespace {

// Standard output of build/tach with these arguments (a shell command line; arguments are plain).
std::string tach_output(const std::string& args) {
  const std::string cmd = std::string(TACH_BINARY_DIR) + "/tach " + args + " 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}

// The options of `tach <command>`, from its --help: the names on each option line (CLI11 lists
// them as "  -b,--batch-size INT ..."; a negated flag as "--shuffle{false},--no-shuffle").
std::set<std::string> option_table(const std::string& command) {
  static std::map<std::string, std::set<std::string>> cache;
  if (auto it = cache.find(command); it != cache.end()) return it->second;
  const std::string help = tach_output(command + " --help");
  std::set<std::string> names;
  const std::regex line(R"(^\s+(-[^\s]+))");
  const std::regex name(R"(--?[A-Za-z][A-Za-z0-9-]*)");
  std::istringstream in(help);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_search(l, m, line)) continue;
    const std::string head = m[1];
    for (auto it = std::sregex_iterator(head.begin(), head.end(), name); it != std::sregex_iterator(); ++it)
      names.insert(it->str());
  }
  EXPECT_TRUE(names.count("--help")) << "tach " << command << " --help listed no options:\n" << help;
  return cache[command] = names;
}

struct NamedFlag {
  std::string command, flag, text;
};

// The flags a text names, each with the command it belongs to: after "tach bench --train" or
// "tach train", up to the end of that clause (", ", ";", ":", a parenthesis or ". "), the named
// command's; elsewhere `printed_by`'s. A bench --train sentence's flags are bench's.
std::vector<NamedFlag> flags_in(const std::string& text, const std::string& printed_by) {
  std::vector<NamedFlag> out;
  const std::regex token(R"(tach ([a-z]+)|(^|[\s(])(--?[A-Za-z][A-Za-z0-9-]*)|(, |; |: |\(|\)|\. |\n))");
  std::string context = printed_by;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), token); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    if (m[1].matched) context = m[1];
    else if (m[3].matched) out.push_back({context, m[3], text});
    else context = printed_by;
  }
  return out;
}

void expect_flags_exist(const std::string& text, const std::string& printed_by) {
  for (const NamedFlag& f : flags_in(text, printed_by)) {
    const std::set<std::string> options = option_table(f.command);
    EXPECT_TRUE(options.count(f.flag)) << "tach " << f.command << " has no " << f.flag << ", named in:\n" << f.text;
  }
}

PointResult point(int64_t batch, double ms, const std::string& dtype = "f32", const std::string& exec = "eager",
                  bool gc = false, double gemm_eff = 0.6) {
  PointResult p;
  p.key.kind = "train";
  p.key.method = "full";
  p.key.dtype = dtype;
  p.key.exec = exec;
  p.key.gradient_checkpointing = gc;
  p.key.batch = batch;
  std::mt19937 rng{uint32_t(batch)};
  std::uniform_real_distribution<double> u(-0.02, 0.02);
  for (int i = 0; i < 20; ++i) p.batch_latency_samples_ms.push_back(ms * (1 + u(rng)));
  p.batch_latency_ms = bench::distribution(p.batch_latency_samples_ms);
  p.measured_runs = 20;
  p.samples_per_s = double(batch) * 1e3 / ms;
  p.train.gemm_efficiency = gemm_eff;
  p.train.gemm_time_share = 0.5;
  p.train.mfu = 0.3;
  p.allocator["total"] = {int64_t(1) << 28, int64_t(1) << 28};
  p.peak_rss_bytes = int64_t(1) << 28;
  p.train.estimate_bytes = int64_t(1) << 27;
  p.train.available_bytes = int64_t(8) << 30;
  return p;
}

std::optional<TrainEstimate> estimate(const PointKey&, int64_t batch, bool gc) {
  return TrainEstimate{(1 << 20) + batch * (gc ? (1 << 18) : (1 << 20)), int64_t(1) << 30};
}

// Curves that reach every branch of the diagnosis: overhead-bound, a decline, eager without a
// fused sibling, checkpointing unmeasured, f32 and bf16 with and without the other measured.
std::vector<std::vector<PointResult>> curves() {
  return {
      {point(1, 100), point(4, 104), point(16, 116)},
      {point(8, 80), point(16, 100), point(32, 160), point(64, 500, "f32", "eager", false, 0.3)},
      {point(8, 100), point(16, 180), point(8, 80, "f32", "fused"), point(16, 144, "f32", "fused"),
       point(8, 130, "f32", "eager", true), point(16, 234, "f32", "eager", true)},
      {point(8, 100), point(16, 180), point(8, 400, "bf16"), point(16, 720, "bf16")},
      {point(8, 100, "bf16"), point(16, 180, "bf16")},
  };
}

std::string advice_of(const std::vector<TrainDiagnosis>& d, const std::string& series_dtype) {
  std::string s;
  for (const auto& x : d)
    if (x.key.dtype == series_dtype)
      for (const auto& a : x.advice) s += a + "\n";
  return s;
}

TEST(TrainAdvice, EveryFlagTheDiagnosisNamesExists) {
  for (const auto& c : curves())
    for (bool bf16_hw : {false, true})
      for (const auto& d : diagnose_training(c, estimate, bf16_hw)) {
        for (const auto& f : d.findings) expect_flags_exist(f, "bench");
        for (const auto& a : d.advice) expect_flags_exist(a, "bench");
      }
}

TEST(TrainAdvice, AMeasuredPrecisionDecidesTheAdvice) {
  // bf16 measured 4x slower than f32: never advised, even where the CPU multiplies bf16 in hardware.
  const std::vector<PointResult> slower = curves()[3];
  for (bool bf16_hw : {false, true}) {
    const auto d = diagnose_training(slower, estimate, bf16_hw);
    const std::string f32 = advice_of(d, "f32"), bf16 = advice_of(d, "bf16");
    EXPECT_EQ(f32.find("with --dtype bf16"), std::string::npos) << f32;
    EXPECT_EQ(f32.find("should speed up"), std::string::npos) << f32;
    EXPECT_NE(f32.find("bf16 was measured at 0.25x f32's throughput at batch 16"), std::string::npos) << f32;
    EXPECT_NE(f32.find("stay in f32"), std::string::npos) << f32;
    EXPECT_NE(bf16.find("train with --dtype f32"), std::string::npos) << bf16;
  }
  // Unmeasured: the hardware decides, and the advice names the sweep that measures it.
  const std::vector<PointResult> f32_only = curves()[0];
  EXPECT_NE(advice_of(diagnose_training(f32_only, estimate, false), "f32").find("stay in f32"), std::string::npos);
  const std::string hw = advice_of(diagnose_training(f32_only, estimate, true), "f32");
  EXPECT_NE(hw.find("--dtype f32,bf16 measures it"), std::string::npos) << hw;
}

std::vector<PointResult> contended(std::vector<PointResult> pts) {
  for (auto& p : pts) p.load.measured = p.load.contended = true, p.load.other_cores_mean = 1.9;
  return pts;
}

std::string findings_of(const std::vector<TrainDiagnosis>& d) {
  std::string s;
  for (const auto& x : d)
    for (const auto& f : x.findings) s += f + "\n";
  return s;
}

// Advice on --dtype follows a measurement only when it can carry it: not contended, and a
// difference beyond the points' noise. Otherwise the comparison is inconclusive, and says why.
TEST(TrainAdvice, AContendedOrWithinNoisePrecisionIsInconclusive) {
  const std::string busy = advice_of(diagnose_training(contended(curves()[3]), estimate, true), "f32");
  EXPECT_EQ(busy.find("stay in f32"), std::string::npos) << busy;
  EXPECT_NE(busy.find("inconclusive: both points were measured while other processes took the cores"),
            std::string::npos)
      << busy;
  const std::vector<PointResult> same = {point(8, 100), point(16, 180), point(8, 101, "bf16"), point(16, 178, "bf16")};
  const std::string close = advice_of(diagnose_training(same, estimate, true), "f32");
  EXPECT_EQ(close.find("train with --dtype bf16"), std::string::npos) << close;
  EXPECT_NE(close.find("within the points' noise"), std::string::npos) << close;
  EXPECT_NE(close.find("inconclusive"), std::string::npos) << close;
}

// A fit whose step gets cheaper with the batch, or from contended points, is no cost model.
TEST(TrainAdvice, NoCostModelFromANegativeSlopeOrContendedPoints) {
  const auto negative = diagnose_training({point(2, 150), point(4, 120), point(8, 62)}, estimate, false);
  const std::string f = findings_of(negative);
  EXPECT_EQ(f.find("A step costs"), std::string::npos) << f;
  EXPECT_NE(f.find("No fixed and per-sample cost"), std::string::npos) << f;
  EXPECT_EQ(advice_of(negative, "f32").find("where the fixed"), std::string::npos);
  const std::string busy = findings_of(diagnose_training(contended(curves()[0]), estimate, false));
  EXPECT_EQ(busy.find("A step costs"), std::string::npos) << busy;
  EXPECT_NE(busy.find("3 of the 3 points were measured while other processes took the cores"), std::string::npos)
      << busy;
}

// performance_report.md says which points were contended, before any series.
TEST(TrainAdvice, PerformanceReportNamesContention) {
  const auto pts = contended(curves()[0]);
  const std::string md = performance_report_md("m", pts, diagnose_training(pts, estimate, false));
  const auto at = md.find("**CONTENDED:** 3 of 3 points");
  EXPECT_NE(at, std::string::npos) << md;
  EXPECT_LT(at, md.find("\n## ")) << md;
}

// A ratio over 100% of a ceiling measured under load is no efficiency: it says so instead.
TEST(TrainAdvice, AnEfficiencyAgainstALoadedCeilingIsNotTrusted) {
  auto pts = curves()[0];
  for (auto& p : pts) p.train.ceiling_under_load = true, p.train.mfu = 1.76, p.train.gemm_efficiency = 2.56;
  pts[0].train.mfu = 0.4;
  const std::string md = performance_report_md("m", pts, diagnose_training(pts, estimate, false));
  EXPECT_EQ(md.find("176%"), std::string::npos) << md;
  EXPECT_EQ(md.find("256%"), std::string::npos) << md;
  EXPECT_NE(md.find("ceiling measured under load, not trusted"), std::string::npos) << md;
  EXPECT_NE(md.find("40% (ceiling measured under load)"), std::string::npos) << md;
}

TEST(TrainAdvice, GradientAccumulationNamesTachTrainsFlag) {
  const std::string a = advice_of(diagnose_training(curves()[0], estimate, false), "f32");
  EXPECT_NE(a.find("tach train -b 16 --gradient-accumulation-steps 4 gives 64"), std::string::npos) << a;
}

// A batch past what fits is not advised bare: the advice accumulates micro-batches that fit.
TEST(TrainAdvice, ABatchPastWhatFitsIsReachedByAccumulation) {
  // 100 ms fixed + 1 ms per sample wants batch 900; the estimate (1 MiB + 1 MiB per sample, 64 MiB
  // here) lets 62 fit once scaled by the measured peaks (twice the estimate).
  const auto small = [](const PointKey&, int64_t batch, bool gc) -> std::optional<TrainEstimate> {
    return TrainEstimate{(1 << 20) + batch * (gc ? (1 << 18) : (1 << 20)), int64_t(128) << 20};
  };
  const auto d = diagnose_training(curves()[0], small, false);
  ASSERT_EQ(d.size(), 1u);
  ASSERT_GT(d[0].largest_fit, 0);
  const std::string a = advice_of(d, "f32");
  const std::string fit = std::to_string(d[0].largest_fit);
  EXPECT_NE(a.find("only " + fit + " fit at seq 128, so accumulate: tach train -b " + fit), std::string::npos) << a;
  expect_flags_exist(a, "bench");
}

TEST(TrainAdvice, EveryFlagASummarysNextStepsNamesExists) {
  test::TempDir root;
  SweepOutcome o;
  o.run_dir = root.path() + "/run";
  BenchConfig train = train_sweep_defaults();
  train.model = "preset:bert-tiny";
  const std::vector<PointResult> dtype_curve = curves()[2];  // a copy: curves() is a temporary
  o.results = dtype_curve;
  expect_flags_exist(summary_text(train, o), "bench");
  BenchConfig inference;
  inference.model = "preset:bert-tiny";
  inference.input = "synthetic";
  o.results.clear();
  PointResult p = point(1, 2);
  p.key.kind = "forward";
  o.results.push_back(p);
  expect_flags_exist(summary_text(inference, o), "bench");
}

// summary.txt: contention is the first finding (it qualifies the rest), never a next step, and a
// best batch among contended points is not stated as a fact.
TEST(TrainAdvice, ContentionIsTheFirstFindingAndWithholdsTheBestBatch) {
  test::TempDir root;
  SweepOutcome o;
  o.run_dir = root.path() + "/run";
  BenchConfig train = train_sweep_defaults();
  train.model = "preset:bert-tiny";
  o.results = contended(curves()[0]);
  const std::string t = summary_text(train, o);
  const auto findings = t.find("Findings"), busy = t.find("CONTENDED: 3 of 3 points"), next = t.find("Next steps");
  ASSERT_NE(busy, std::string::npos) << t;
  EXPECT_LT(findings, busy) << t;
  EXPECT_LT(busy, next) << "the CONTENDED block sits under Next steps:\n" << t;
  EXPECT_LT(busy, t.find("Throughput peaks")) << t;

  BenchConfig inference;
  inference.model = "preset:bert-tiny";
  inference.input = "synthetic";
  o.results.clear();
  for (auto [batch, ms] : {std::pair{1, 100.0}, std::pair{4, 2.2}}) {
    PointResult p = point(batch, ms);
    p.key.kind = "forward";
    p.key.seq_len = 64;
    o.results.push_back(p);
  }
  o.results = contended(o.results);
  const std::string i = summary_text(inference, o);
  EXPECT_EQ(i.find("the best throughput is at batch"), std::string::npos) << i;
  EXPECT_NE(i.find("which batch gives the best throughput is inconclusive"), std::string::npos) << i;
  EXPECT_LT(i.find("CONTENDED: 2 of 2 points"), i.find("inconclusive")) << i;
  // summary.json says the same to a program: the best batch is there, flagged as not a finding.
  auto findings_json = nlohmann::json::parse(summary_json(inference, o)).at("findings");
  ASSERT_EQ(findings_json.size(), 1u);
  EXPECT_EQ(findings_json[0].at("contended_points"), 2);
  EXPECT_FALSE(findings_json[0].at("best_batch_conclusive").get<bool>());
  o.results[0].load.contended = o.results[1].load.contended = false;  // quiet: stated
  EXPECT_NE(summary_text(inference, o).find("the best throughput is at batch 4"), std::string::npos);
  findings_json = nlohmann::json::parse(summary_json(inference, o)).at("findings");
  EXPECT_TRUE(findings_json[0].at("best_batch_conclusive").get<bool>());
}

TEST(TrainAdvice, EveryFlagEstimateSuggestsExists) {
  for (const char* args : {"estimate -m preset:bert-tiny -b 100000000 -s 512 --mode train-full",
                           "estimate -m preset:bert-tiny -b 4000000 -s 512 --mode train-lora"}) {
    const std::string out = tach_output(args);
    ASSERT_FALSE(out.empty()) << args;
    expect_flags_exist(out, "estimate");
  }
}

// Every option of every command, as their --help lists them (and the top level's).
std::set<std::string> every_option() {
  std::set<std::string> all = option_table("");
  const std::string help = tach_output("--help");
  std::istringstream in(help);
  const std::regex command(R"(^  ([a-z]+)\s)");
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, command))
      for (const auto& o : option_table(m[1])) all.insert(o);
  }
  return all;
}

// Every message tach can print, wherever it is built: a flag named in any string literal of the
// sources (src/, tools/tach/) is one some command takes. Flags of other programs that tach runs
// or tells the user to run, and hidden aliases (absent from --help on purpose), are listed here.
TEST(TrainAdvice, EveryFlagInTachsMessagesExists) {
  const std::set<std::string> others = {// sbatch's, in the job scripts and plans of bench --slurm
                                        "--array", "--chdir", "--cpus-per-task", "--gpus-per-task", "--job-name",
                                        "--ntasks", "--parsable", "--partition", "--time",
                                        // Chromium's, for report --pdf
                                        "--headless", "--disable-gpu", "--no-sandbox", "--print-to-pdf",
                                        "--no-pdf-header-footer",
                                        // hidden aliases: classify's former --compute
                                        "--compute"};
  const std::set<std::string> options = every_option();
  const std::filesystem::path root = std::filesystem::path(test::fixtures_dir()).parent_path().parent_path();
  std::vector<std::filesystem::path> files;
  for (const char* dir : {"src", "tools/tach"})
    for (const auto& e : std::filesystem::recursive_directory_iterator(root / dir))
      if (e.path().extension() == ".cc") files.push_back(e.path());
  ASSERT_GT(files.size(), 50u) << root;
  const std::regex literal(R"xx("((?:[^"\\\n]|\\.)*)")xx");
  const std::regex flag(R"((?:^|[\s(`\[])(--[a-z][a-z0-9-]*)(\*?))");
  int checked = 0;
  for (const auto& f : files) {
    std::ifstream in(f);
    for (std::string line; std::getline(in, line);) {
      if (line.find_first_not_of(' ') != std::string::npos && line.compare(line.find_first_not_of(' '), 2, "//") == 0)
        continue;  // a comment
      for (auto l = std::sregex_iterator(line.begin(), line.end(), literal); l != std::sregex_iterator(); ++l) {
        const std::string text = (*l)[1];
        for (auto m = std::sregex_iterator(text.begin(), text.end(), flag); m != std::sregex_iterator(); ++m) {
          const std::string name = (*m)[1];
          ++checked;
          if (options.count(name) || others.count(name)) continue;
          const bool prefix = (*m)[2].length() > 0 || name.back() == '-';  // "the --lora-* options"
          const bool prefix_ok = prefix && std::any_of(options.begin(), options.end(),
                                                       [&](const std::string& o) { return o.rfind(name, 0) == 0; });
          EXPECT_TRUE(prefix_ok) << f.filename().string() << ": no command takes " << name << ", named in \"" << text
                                 << "\"";
        }
      }
    }
  }
  EXPECT_GT(checked, 100);
}

// The advice's "this CPU multiplies bf16 in hardware" is the CPU's and oneDNN's ISA, not whether
// oneDNN has a bf16 matmul at all (it emulates one on any AVX-512 CPU). Run again with oneDNN
// held below AVX512_BF16 (DNNL_MAX_CPU_ISA=AVX512_CORE_VNNI, tests/cmake/train_truths.cmake).
TEST(TrainAdvice, Bf16HardwareIsTheIsaNotTheMatmul) {
  const CpuIsa isa = detect_isa();
  const char* cap = std::getenv("DNNL_MAX_CPU_ISA");
  const bool capped = cap && std::string(cap) == "AVX512_CORE_VNNI";
  EXPECT_EQ(cpu::bf16_gemm_in_hardware(), (isa.avx512_bf16 || isa.amx_bf16) && !capped);
  if (capped && isa.avx512f) { EXPECT_TRUE(cpu::bf16_train_gemm_onednn()) << "oneDNN emulates bf16 on AVX-512"; }
}

// The extraction itself: a clause after "tach X" is X's, the rest the printer's.
TEST(TrainAdvice, FlagsAreReadWithTheirCommand) {
  const auto f = flags_in("Ask: tach profile --train -m M -b B (trace), or --profile here; tach train -b 4", "bench");
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f[0].command + " " + f[0].flag, "profile --train");
  EXPECT_EQ(f[2].command + " " + f[2].flag, "profile -b");
  EXPECT_EQ(f[3].command + " " + f[3].flag, "bench --profile");
  EXPECT_EQ(f[4].command + " " + f[4].flag, "train -b");
}

}  // namespace
}  // namespace tach
