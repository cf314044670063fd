// Parquet datasets: the files `datasets` writes for a Hub dataset's split (snappy with a
// dictionary, zstd with v2 pages and several row groups, gzip with small pages), their ClassLabel
// names, what eval and train make of them, and malformed files as errors (a deterministic mutation
// sweep here; fuzz_parquet under libFuzzer goes further). The comparison with pyarrow over every
// writer option is tests/parquet/test_parquet_vs_pyarrow.py.
#include <gtest/gtest.h>

#include <random>

#include "data/records.h"
#include "tach/dataset.h"
#include "train/train_data.h"
#include "tach/error.h"
#include "test_util.h"

namespace tach {
namespace {

std::string fixture(const std::string& name) { return test::fixtures_dir() + "/parquet/" + name; }

TEST(Parquet, ReadsEachCompressionAndLayoutDatasetsWrites) {
  for (const auto& [file, rows] : std::vector<std::pair<std::string, size_t>>{{"sst2-validation.parquet", 24},
                                                                              {"sst2-train.parquet", 40},
                                                                              {"sst2-test-gzip.parquet", 16}}) {
    DatasetOptions o;
    o.path = fixture(file);
    o.text_column = "sentence";
    const Dataset d = read_dataset(o);
    EXPECT_EQ(d.format, "parquet");
    ASSERT_EQ(d.examples.size(), rows) << file;
    EXPECT_EQ(d.columns, (std::vector<std::string>{"sentence", "label", "idx"}));
    EXPECT_EQ(d.label_names, (std::vector<std::string>{"negative", "positive"})) << "the ClassLabel's names";
    for (const auto& e : d.examples) EXPECT_TRUE(e.label == "0" || e.label == "1") << file;
  }
  DatasetOptions o;
  o.path = fixture("sst2-train.parquet");
  o.text_column = "sentence";
  const Dataset d = read_dataset(o);
  EXPECT_EQ(d.examples[1].text, "unflinchingly bleak and desperate ");
  EXPECT_EQ(d.examples[1].label, "0");
  EXPECT_EQ(d.examples[39].source_row, 40);
}

TEST(Parquet, AMissingColumnListsTheColumnsThereAre) {
  DatasetOptions o;
  o.path = fixture("sst2-validation.parquet");  // the text column is "sentence", not "text"
  const std::string e = test::error_of([&] { read_dataset(o); });
  EXPECT_NE(e.find("no text column 'text'; the columns are 'sentence', 'label', 'idx'"), std::string::npos) << e;
}

TEST(Parquet, MalformedFilesAreErrorsNeverCrashes) {
  const std::string good = test::read_text(fixture("sst2-train.parquet"));
  EXPECT_NE(test::error_of([&] { data::read_parquet("x.parquet", "PAR1"); }).find("not a Parquet file"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { data::read_parquet("x.parquet", good.substr(0, good.size() / 2)); }).find("x.parquet"),
            std::string::npos);
  // Every byte position flipped once in turn, then random multi-byte damage: records or an Error.
  std::mt19937 rng(7);
  int errors = 0, read = 0;
  auto attempt = [&](const std::string& bytes) {
    try {
      const auto r = data::read_parquet("m.parquet", bytes);
      for (const auto& row : r.rows) ASSERT_EQ(row.size(), r.columns.size());
      ++read;
    } catch (const Error&) { ++errors; }
  };
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = char(bad[i] ^ (1 << (i % 8)));
    attempt(bad);
  }
  for (int k = 0; k < 2000; ++k) {
    std::string bad = good;
    for (int j = 0; j < 4; ++j) bad[rng() % bad.size()] = char(rng());
    attempt(bad);
  }
  EXPECT_GT(errors, 0);
  EXPECT_GT(read, 0) << "damage inside values still reads";
}

TEST(Parquet, ANewHeadIsNamedByTheDatasetsClassLabels) {
  DatasetOptions o;
  o.path = fixture("sst2-train.parquet");
  o.text_column = "sentence";
  EXPECT_EQ(train::labels_from_data(read_dataset(o)), (std::vector<std::string>{"negative", "positive"}));
}

}  // namespace
}  // namespace tach
