// Dataset readers (CSV, TSV, JSONL, JSON splits) and the label map.
#include <gtest/gtest.h>

#include "tach/dataset.h"
#include "test_util.h"

namespace tach {
namespace {

using test::error_of;

Dataset read(const std::string& path, DatasetOptions o = {}) {
  o.path = path;
  return read_dataset(o);
}

TEST(Dataset, CsvWithBomQuotesAndMultilineFields) {
  test::TempDir dir;
  test::write_text(dir.file("a.csv"), "\xEF\xBB\xBFtext,label\n\"a, \"\"quoted\"\"\nline\",pos\nplain  ,neg\n");
  const Dataset d = read(dir.file("a.csv"));
  EXPECT_EQ(d.format, "csv");
  ASSERT_EQ(d.examples.size(), 2u);
  EXPECT_EQ(d.examples[0].text, "a, \"quoted\"\nline");
  EXPECT_EQ(d.examples[0].label, "pos");
  EXPECT_EQ(d.examples[1].text, "plain  ");  // nothing trimmed, as Python's csv
  EXPECT_EQ(d.examples[1].source_row, 3);
}

TEST(Dataset, TsvWithoutHeaderUsesColumnIndices) {
  test::TempDir dir;
  test::write_text(dir.file("n.tsv"), "\"say \"\"hi\"\"\"\tWorld\nsecond\tSports\n");
  DatasetOptions o;
  o.text_column = "0";
  o.label_column = "1";
  const Dataset d = read(dir.file("n.tsv"), o);
  ASSERT_EQ(d.examples.size(), 2u);
  EXPECT_EQ(d.examples[0].text, "say \"hi\"");
  EXPECT_EQ(d.examples[1].label, "Sports");
  // With the default column name, the error lists what there is.
  EXPECT_NE(error_of([&] { read(dir.file("n.tsv")); }).find("no text column 'text'; the columns are '0', '1'"),
            std::string::npos);
}

// Asked for a column its header does not have, an SST-2-like file names its header's columns
// (not '0', '1': the first record was read as data when it did not name the column asked for).
TEST(Dataset, HeaderFoundWhenAskedForAnotherColumnName) {
  test::TempDir dir;
  test::write_text(dir.file("sst.tsv"), "text\tlabel\nit 's a charming journey .\t1\nunflinchingly bleak\t0\n");
  DatasetOptions o;
  o.text_column = "sentence";
  EXPECT_NE(error_of([&] {
              read(dir.file("sst.tsv"), o);
            }).find("no text column 'sentence'; the columns are 'text', 'label'"),
            std::string::npos);
  // texts only (tach embed's --file): the same
  o.label_column.clear();
  EXPECT_NE(error_of([&] { read(dir.file("sst.tsv"), o); }).find("the columns are 'text', 'label'"), std::string::npos);
  // A file without a header whose labels are names stays without one, asked for by name or index.
  test::write_text(dir.file("ag.tsv"), "Fears for pensions\tBusiness\nA goal\tSports\n");
  o.text_column = "sentence";
  EXPECT_NE(error_of([&] { read(dir.file("ag.tsv"), o); }).find("the columns are '0', '1'"), std::string::npos);
  // One without a header whose labels are numbers, asked for by index, keeps its first record.
  test::write_text(dir.file("num.tsv"), "first text\t1\nsecond\t0\n");
  o.text_column = "0";
  o.label_column = "1";
  const Dataset d = read(dir.file("num.tsv"), o);
  ASSERT_EQ(d.examples.size(), 2u);
  EXPECT_EQ(d.examples[0].text, "first text");
}

TEST(Dataset, JsonlAndPairs) {
  test::TempDir dir;
  test::write_text(dir.file("a.jsonl"),
                   "{\"q\": \"a\", \"p\": \"b\", \"y\": 1}\n\n{\"q\": \"c\", \"p\": \"d\", \"y\": 0}\n");
  DatasetOptions o;
  o.text_column = "q";
  o.text_pair_column = "p";
  o.label_column = "y";
  const Dataset d = read(dir.file("a.jsonl"), o);
  ASSERT_EQ(d.examples.size(), 2u);
  EXPECT_EQ(d.examples[1].text_pair, "d");
  EXPECT_EQ(d.examples[1].label, "0");
  EXPECT_EQ(d.examples[1].source_row, 3);
  test::write_text(dir.file("bad.jsonl"), "{\"q\": 1}\n{oops\n");
  EXPECT_NE(error_of([&] { read(dir.file("bad.jsonl"), o); }).find("bad.jsonl:2: not JSON"), std::string::npos);
}

TEST(Dataset, JsonSplits) {
  test::TempDir dir;
  test::write_text(dir.file("s.json"), R"({"train": [["x", "a"]], "val": [["y", "b"], ["z", "a"]]})");
  EXPECT_NE(error_of([&] { read(dir.file("s.json")); }).find("none is called 'test'; choose one of: train, val"),
            std::string::npos);
  DatasetOptions o;
  o.split = "val";
  const Dataset d = read(dir.file("s.json"), o);
  EXPECT_EQ(d.split, "val");
  ASSERT_EQ(d.examples.size(), 2u);
  EXPECT_EQ(d.examples[1].text, "z");
  o.split = "dev";
  EXPECT_NE(error_of([&] { read(dir.file("s.json"), o); }).find("no split 'dev'; the file has: train, val"),
            std::string::npos);
  test::write_text(dir.file("o.json"), R"({"test": [{"text": "x", "label": 2}]})");
  EXPECT_EQ(read(dir.file("o.json")).examples.at(0).label, "2");
}

TEST(Dataset, BadInputGetsClearErrors) {
  test::TempDir dir;
  test::write_text(dir.file("empty.csv"), "text,label\n");
  EXPECT_NE(error_of([&] { read(dir.file("empty.csv")); }).find("is empty: no records"), std::string::npos);
  test::write_text(dir.file("ragged.csv"), "text,label\na,b\nc\n");
  EXPECT_NE(error_of([&] { read(dir.file("ragged.csv")); }).find("record 3 has 1 fields, the header has 2"),
            std::string::npos);
  test::write_text(dir.file("quote.csv"), "text,label\n\"never closed,1\n");
  EXPECT_NE(error_of([&] { read(dir.file("quote.csv")); }).find("malformed CSV"), std::string::npos);
  test::write_text(dir.file("nolabel.csv"), "text,label\nhello,\n");
  EXPECT_NE(error_of([&] { read(dir.file("nolabel.csv")); }).find("record 2 has no label"), std::string::npos);
  EXPECT_NE(error_of([&] { read(dir.file("missing.csv")); }).find("not found"), std::string::npos);
  test::write_text(dir.file("x.parquet"), "PAR1");  // a Parquet name, not a Parquet file
  EXPECT_NE(error_of([&] { read(dir.file("x.parquet")); }).find("not a Parquet file"), std::string::npos);
  test::write_text(dir.file("x.xlsx"), "PK");
  EXPECT_NE(error_of([&] { read(dir.file("x.xlsx")); }).find("--dataset-format"), std::string::npos);
  DatasetOptions o;
  o.label_column = "sentiment";
  test::write_text(dir.file("ok.csv"), "text,label\nhi,1\n");
  EXPECT_NE(error_of([&] {
              read(dir.file("ok.csv"), o);
            }).find("no label column 'sentiment'; the columns are 'text', 'label'"),
            std::string::npos);
}

TEST(LabelMap, NamesThenIntegerIds) {
  const LabelMap m({"negative", "positive"});
  const std::vector<Example> ex{{"a", "", "positive", 1}, {"b", "", "0", 2}, {"c", "", "1", 3}};
  EXPECT_EQ(m.ids_of(ex, "d"), (std::vector<int32_t>{1, 0, 1}));
  const std::vector<Example> bad{{"a", "", "2", 1}, {"b", "", "neutral", 2}, {"c", "", "neutral", 3}};
  const std::string e = error_of([&] { m.ids_of(bad, "d.csv"); });
  EXPECT_NE(e.find("labels the model does not know: '2' (1x), 'neutral' (2x)"), std::string::npos) << e;
  EXPECT_NE(e.find("0=negative, 1=positive"), std::string::npos) << e;
}

TEST(Dataset, ShuffleIsDeterministicAndAPermutation) {
  std::vector<Example> a, b;
  for (int i = 0; i < 50; ++i) a.push_back({std::to_string(i), "", "0", i});
  b = a;
  shuffle_examples(a, 7);
  shuffle_examples(b, 7);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].text, b[i].text);
  std::sort(a.begin(), a.end(), [](const Example& x, const Example& y) { return x.source_row < y.source_row; });
  for (int i = 0; i < 50; ++i) EXPECT_EQ(a[size_t(i)].source_row, i);
}

// The real files in ../shared/data, with the row counts DATA.md gives.
TEST(SharedData, ReadsEveryDatasetWithItsDocumentedCount) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared is absent";
  const std::string dir = test::shared_dir() + "/data/";
  EXPECT_EQ(read(dir + "sst2/dev.tsv").examples.size(), 872u);
  EXPECT_EQ(read(dir + "sst2/train.tsv").examples.size(), 67349u);
  DatasetOptions ag;
  ag.text_column = "0";
  ag.label_column = "1";
  const Dataset agnews = read(dir + "agnews/test.tsv", ag);
  EXPECT_EQ(agnews.examples.size(), 7600u);
  const Dataset imdb = read(dir + "imdb/sample.csv");
  EXPECT_EQ(imdb.examples.size(), 1000u);
  EXPECT_EQ(imdb.columns.at(0), "text");  // the byte-order mark is not part of the name
  const Dataset clinc = read(dir + "clinc150/data_full.json");
  EXPECT_EQ(clinc.split, "test");
  EXPECT_EQ(clinc.examples.size(), 4500u);
  DatasetOptions oos;
  oos.split = "oos_test";
  EXPECT_EQ(read(dir + "clinc150/data_full.json", oos).examples.size(), 1000u);
}

TEST(Dataset, MultiLabelSetsFromListsAndCommas) {
  EXPECT_EQ(split_label_set(R"(["sports", "politics"])", "r"), (std::vector<std::string>{"sports", "politics"}));
  EXPECT_EQ(split_label_set("[0, 3]", "r"), (std::vector<std::string>{"0", "3"}));
  EXPECT_EQ(split_label_set(" sports ,politics", "r"), (std::vector<std::string>{"sports", "politics"}));
  EXPECT_TRUE(split_label_set("", "r").empty());
  EXPECT_TRUE(split_label_set("[]", "r").empty());
  EXPECT_NE(test::error_of([] { split_label_set("[sports", "rec 4"); }).find("rec 4: the label set [sports"),
            std::string::npos);
  EXPECT_NE(test::error_of([] { split_label_set("a,,b", "rec 5"); }).find("empty name"), std::string::npos);
  EXPECT_NE(test::error_of([] { split_label_set("[1.5]", "rec 6"); }).find("integer ids"), std::string::npos);

  std::vector<Example> ex(3);
  ex[0].label = R"(["b", "a"])";
  ex[1].label = "1";
  ex[2].label = "";
  const LabelMap map({"a", "b"});
  EXPECT_EQ(map.label_sets_of(ex, "d"), (std::vector<std::vector<int32_t>>{{1, 0}, {1}, {}}));
  ex[2].label = "a, c, c";
  const std::string err = test::error_of([&] { map.label_sets_of(ex, "d.jsonl"); });
  EXPECT_NE(err.find("d.jsonl: labels the model does not know: 'c' (2x)"), std::string::npos) << err;
}

}  // namespace
}  // namespace tach
