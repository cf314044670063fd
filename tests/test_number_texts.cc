// Numbers in what tach prints, as a person writes them: a model's parameter count with three
// significant digits whatever its size (a tiny model is never "0.0 M"), in every place that
// prints one (the commands' model line, summary.txt, report.html); other numbers in messages
// without std::to_string's six decimals.
#include <gtest/gtest.h>

#include <string>

#include "tach/bench.h"
#include "tach/parameter_count.h"
#include "tach/plain_number.h"
#include "tach/report.h"

namespace tach {
namespace {

TEST(ParameterCountText, ThreeSignificantDigitsAndAUnit) {
  EXPECT_EQ(parameter_count_text(0), "0");
  EXPECT_EQ(parameter_count_text(950), "950");
  EXPECT_EQ(parameter_count_text(1000), "1.00 k");
  EXPECT_EQ(parameter_count_text(7'504), "7.50 k");
  EXPECT_EQ(parameter_count_text(28'710), "28.7 k");
  EXPECT_EQ(parameter_count_text(4'385'920), "4.39 M");
  EXPECT_EQ(parameter_count_text(66'955'010), "67.0 M");
  EXPECT_EQ(parameter_count_text(109'483'778), "109 M");
  EXPECT_EQ(parameter_count_text(1'235'814'400), "1.24 B");
}

TEST(ParameterCountText, RoundingUpToTheNextUnitMovesToIt) {
  EXPECT_EQ(parameter_count_text(999'499), "999 k");
  EXPECT_EQ(parameter_count_text(999'999), "1.00 M");  // not "1000 k"
  EXPECT_EQ(parameter_count_text(99'960), "100 k");    // not "100.0 k"
  EXPECT_EQ(parameter_count_text(9'996), "10.0 k");
  EXPECT_EQ(parameter_count_text(999'600'000), "1.00 B");
}

// summary.txt's model line of a tiny model (a test fixture of 7.5k parameters) once read "0.0 M".
TEST(ParameterCountText, SummaryOfATinyModel) {
  BenchConfig config;
  config.model = "tiny";
  SweepOutcome out;
  out.run_dir = "runs/tiny";
  ModelSummary m;
  m.architecture = "BertForSequenceClassification";
  m.parameters = 7'504;
  m.weights_dtype = "f32";
  out.models.push_back(m);
  const std::string text = summary_text(config, out);
  EXPECT_NE(text.find("BertForSequenceClassification, 7.50 k parameters, weights f32"), std::string::npos) << text;
  EXPECT_EQ(text.find("0.0 M"), std::string::npos) << text;
}

// Numbers in messages (a new head's N(0, 0.02), --lr -1, the load average) as a person writes
// them, never std::to_string's 0.020000.
TEST(PlainNumber, AsAPersonWritesThem) {
  EXPECT_EQ(plain_number(0.2), "0.2");
  EXPECT_EQ(plain_number(0.02), "0.02");
  EXPECT_EQ(plain_number(-1.0), "-1");
  EXPECT_EQ(plain_number(16.0), "16");
  EXPECT_EQ(plain_number(2e-5), "2e-05");
  EXPECT_EQ(plain_number(double(0.1f)), "0.1");  // a float field (lora_alpha) too
  EXPECT_EQ(plain_number(5.6612, 3), "5.66");
  EXPECT_EQ(plain_number(0.0, 3), "0");
}

}  // namespace
}  // namespace tach
