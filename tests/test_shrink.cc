// tach shrink's pieces apart from the binary: the Pareto frontier (dominance, ties, one variant),
// the variants' spellings and their refusals, a row's variant and accuracy in results.jsonl, and
// the findings that name the frontier.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tach/bench.h"
#include "tach/error.h"
#include "tach/shrink.h"
#include "test_util.h"

namespace tach {
namespace {

std::vector<std::string> frontier_names(const std::vector<ParetoVerdict>& v) {
  std::vector<std::string> names;
  for (const auto& x : v)
    if (x.on_frontier) names.push_back(x.name);
  return names;
}

TEST(Pareto, ADominatedVariantNamesEveryVariantThatDominatesIt) {
  // f32: the most accurate and the slowest; int8 as accurate as heads and faster (f32, slower, does
  // not dominate heads); ffn less accurate and slower than int8.
  const auto v = pareto_frontier({{"f32", 0.90, 10}, {"int8", 0.88, 4}, {"heads", 0.88, 6}, {"ffn", 0.80, 5}});
  EXPECT_EQ(frontier_names(v), (std::vector<std::string>{"f32", "int8"}));
  EXPECT_EQ(v[2].dominated_by, (std::vector<std::string>{"int8"}));
  EXPECT_EQ(v[3].dominated_by, (std::vector<std::string>{"int8"}));
  // Two dominators, in input order.
  const auto w = pareto_frontier({{"a", 0.9, 1}, {"b", 0.95, 1}, {"c", 0.8, 2}});
  EXPECT_EQ(w[2].dominated_by, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(w[0].dominated_by, (std::vector<std::string>{"b"}));  // same cost, less accurate
}

TEST(Pareto, EqualVariantsAreBothOnTheFrontierAndOneVariantIsItsOwnFrontier) {
  const auto tie = pareto_frontier({{"a", 0.9, 3}, {"b", 0.9, 3}});
  EXPECT_EQ(frontier_names(tie), (std::vector<std::string>{"a", "b"}));
  const auto one = pareto_frontier({{"only", 0.5, 7}});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(one[0].on_frontier);
  EXPECT_TRUE(pareto_frontier({}).empty());
  // A trade-off: neither dominates.
  EXPECT_EQ(frontier_names(pareto_frontier({{"fast", 0.7, 1}, {"good", 0.9, 5}})),
            (std::vector<std::string>{"fast", "good"}));
}

TEST(Pareto, CostsWithinTheirNoiseAreEqual) {
  // 1.00 and 0.99 ms with 0.01 ms of noise each: a tie, so the more accurate one alone dominates.
  const auto v = pareto_frontier({{"f32", 0.90, 1.00, 0.01}, {"heads", 0.90, 0.99, 0.01}, {"ffn", 0.85, 0.99, 0.01}});
  EXPECT_EQ(frontier_names(v), (std::vector<std::string>{"f32", "heads"}));
  EXPECT_EQ(v[2].dominated_by, (std::vector<std::string>{"f32", "heads"}));
  // Past the noise, the faster one dominates.
  const auto w = pareto_frontier({{"f32", 0.90, 1.00, 0.01}, {"heads", 0.90, 0.97, 0.01}});
  EXPECT_EQ(frontier_names(w), (std::vector<std::string>{"heads"}));
  // A row's latency noise: 1% of its median and the median's standard error.
  PointResult p;
  p.batch_latency_ms.n = 4;
  p.batch_latency_ms.median = 10;
  p.batch_latency_ms.std = 2;
  EXPECT_NEAR(latency_noise_ms(p), 0.1 + 1.2533, 1e-12);
}

TEST(ShrinkVariants, SpellingsBecomeNamedVariantsInTheOrderGiven) {
  ShrinkOptions o;
  o.base.model = "m";
  o.dtypes = {"f32", "int8"};
  o.prunes = {"heads:0.50", "ffn:0.25", "layers:2"};
  o.students = {"/x/small-student/"};
  const auto v = shrink_variants(o);
  std::vector<std::string> names;
  for (const auto& x : v) names.push_back(x.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"f32", "int8", "heads:0.5", "ffn:0.25", "layers:2", "student:small-student"}));
  EXPECT_EQ(v[2].dir_name(), "heads-0.5");
  EXPECT_EQ(v[2].dtype, "f32");
  EXPECT_EQ(v[5].model, "/x/small-student/");
  // Pruned models compute in the first dtype, and say so when it is not f32.
  o.dtypes = {"bfloat16"};
  EXPECT_EQ(shrink_variants(o)[1].name, "heads:0.5+bf16");
}

// Each variant names its own model and what was done to the base model to make it, not the base
// alone: a dtype, a pruned model's directory with what tach prune removed (its
// prune_summary.json), a student's directory.
TEST(ShrinkVariants, EachDescriptionNamesTheVariantsOwnModelAndTheBase) {
  test::TempDir tmp;
  ShrinkOptions o;
  o.base.model = "/models/base";
  o.dtypes = {"int8"};
  o.prunes = {"heads:0.5", "layers:1"};
  o.students = {"/x/small-student"};
  std::vector<ShrinkVariant> v = shrink_variants(o);
  ASSERT_EQ(v.size(), 4u);
  for (const auto& x : v) EXPECT_EQ(x.base, "/models/base") << x.name;
  EXPECT_EQ(describe_variant(v[0], "magnitude"), "/models/base at int8");
  // A pruned variant once tach prune has written it: heads 8 -> 4, FFN 40 -> 30, layers 2 -> 1.
  v[1].model = tmp.file("heads-0.5");
  std::filesystem::create_directories(v[1].model);
  std::ofstream(v[1].model + "/prune_summary.json")
      << R"({"before": {"heads": 8, "ffn_width": 40, "layers": 2}, "after": {"heads": 4, "ffn_width": 30, "layers": 1}})";
  EXPECT_EQ(describe_variant(v[1], "importance"),
            v[1].model +
                ": /models/base with 4 of 8 attention heads, the FFN from 40 to 30 neurons a layer and 1 of 2 layers "
                "removed (heads:0.5, ranked by importance), in int8");
  EXPECT_EQ(describe_variant(v[3], "magnitude"), "/x/small-student: a student, measured beside /models/base, in int8");
}

TEST(ShrinkVariants, BadSpellingsAreUsageErrorsNamingThem) {
  const auto refused = [](std::vector<std::string> dtypes, std::vector<std::string> prunes, const std::string& want) {
    ShrinkOptions o;
    o.base.model = "m";
    o.dtypes = std::move(dtypes);
    o.prunes = std::move(prunes);
    try {
      (void)shrink_variants(o);
      ADD_FAILURE() << "accepted; want " << want;
    } catch (const UsageError& e) { EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what(); }
  };
  refused({"f32"}, {"attention:0.5"}, "--prune attention:0.5: not a pruning tach shrink knows");
  refused({"f32"}, {"heads"}, "--prune heads: not a pruning");
  refused({"f32"}, {"heads:1"}, "heads takes a fraction in [0, 1), got 1");
  refused({"f32"}, {"ffn:-0.1"}, "ffn takes a fraction in [0, 1)");
  refused({"f32"}, {"ffn:0.5x"}, "ffn takes a fraction in [0, 1)");
  refused({"f32"}, {"layers:1.5"}, "layers takes a count of layers");
  refused({"f32"}, {"layers:0"}, "layers takes a count of layers");
  refused({"f64"}, {}, "--dtype f64: not one of f32, bf16, f16, int8, nf4");
  refused({"int8", "int8"}, {}, "variant int8 is given twice");
  refused({"f32"}, {"heads:0.5", "heads:0.50"}, "variant heads:0.5 is given twice");
}

// tach train saves to RUN_DIR/model by default: such students are named by their runs, so two of
// them are two variants, not "student:model" given twice; two directories of one name still clash.
TEST(ShrinkVariants, StudentsSavedByTachTrainAreNamedByTheirRuns) {
  ShrinkOptions o;
  o.base.model = "m";
  o.students = {"runs/distilled/model", "runs/recovered/model/", "/x/small-student"};
  const auto v = shrink_variants(o);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[1].name, "student:distilled");
  EXPECT_EQ(v[2].name, "student:recovered");
  EXPECT_EQ(v[3].name, "student:small-student");
  o.students = {"a/same", "b/same"};
  try {
    (void)shrink_variants(o);
    ADD_FAILURE() << "two students named same were accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("variant student:same is given twice"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rename one of the directories"), std::string::npos) << e.what();
  }
}

PointResult row(const std::string& variant, const std::string& dtype, int64_t batch, double accuracy, double ms,
                int64_t peak) {
  PointResult p;
  p.key.variant = variant;
  p.key.dtype = dtype;
  p.key.batch = batch;
  p.accuracy.measured = true;
  p.accuracy.accuracy = accuracy;
  p.accuracy.examples = 6;
  p.accuracy.dataset = "dataset d.csv";
  p.batch_latency_ms.n = 5;
  p.batch_latency_ms.median = ms;
  p.allocator["total"] = {peak, peak};
  return p;
}

TEST(ShrinkRows, AVariantIsAnAxisOfTheIdAndLeavingItOutLeavesItsDtypeOut) {
  const PointResult f32 = row("f32", "f32", 8, 0.9, 2, 100), int8 = row("int8", "int8", 8, 0.9, 1, 50);
  EXPECT_EQ(f32.key.id(), "f32/cpu/f32/t0/b8/s128");
  EXPECT_EQ(int8.key.id_without("variant"), f32.key.id_without("variant"));
  EXPECT_EQ(f32.key.id_without("variant"), "cpu/t0/b8/s128");
  // A bench point (no variant) keeps the id it always had, and its dtype when the variant is left out.
  PointKey bench;
  EXPECT_EQ(bench.id(), "cpu/f32/t0/b1/s128");
  EXPECT_EQ(bench.id_without("variant"), "cpu/f32/t0/b1/s128");
}

TEST(ShrinkRows, VariantAndAccuracyRoundTripThroughAResultsLine) {
  const PointResult p = row("heads:0.5", "f32", 1, 0.8333, 1.5, 4096);
  const std::string line = point_to_json(p);
  EXPECT_NE(line.find("\"variant\":\"heads:0.5\""), std::string::npos) << line;
  const PointResult q = point_from_json(line, "test");
  EXPECT_EQ(q.key.variant, "heads:0.5");
  EXPECT_EQ(q.key.id(), p.key.id());
  EXPECT_TRUE(q.accuracy.measured);
  EXPECT_DOUBLE_EQ(q.accuracy.accuracy, 0.8333);
  EXPECT_EQ(q.accuracy.examples, 6);
  EXPECT_EQ(q.accuracy.dataset, "dataset d.csv");
  // A bench line has neither field, and reads back without them.
  const std::string plain = point_to_json(PointResult{});
  EXPECT_EQ(plain.find("variant"), std::string::npos);
  EXPECT_FALSE(point_from_json(plain, "test").accuracy.measured);
}

TEST(ShrinkRows, FindingsNameTheFrontierAndWhatDominatesTheRest) {
  const std::vector<PointResult> rows = {row("f32", "f32", 1, 0.90, 2.0, 400), row("int8", "int8", 1, 0.90, 1.0, 200),
                                         row("heads:0.5", "f32", 1, 0.80, 1.5, 300)};
  const std::vector<std::string> f = shrink_findings(rows);
  ASSERT_GE(f.size(), 2u);
  EXPECT_NE(f[0].find("median batch latency, cpu/t0/b1/s128: on the frontier int8"), std::string::npos) << f[0];
  EXPECT_NE(f[0].find("f32 (accuracy 0.9000 at 2 ms) is dominated by int8"), std::string::npos) << f[0];
  EXPECT_NE(f[0].find("heads:0.5 (accuracy 0.8000 at 1.5 ms) is dominated by int8"), std::string::npos) << f[0];
  EXPECT_NE(f[1].find("peak memory"), std::string::npos) << f[1];
  const std::string table = shrink_table(rows);
  EXPECT_NE(table.find("heads:0.5"), std::string::npos) << table;
  EXPECT_NE(table.find("0.8000"), std::string::npos) << table;
}

}  // namespace
}  // namespace tach
