#include <gtest/gtest.h>

#include "model/config.h"
#include "model/family.h"
#include "tach/error.h"
#include "test_util.h"

namespace tach::model {
namespace {

void expect_error(const std::string& json, const std::string& needle) {
  try {
    parse_encoder_config_text(json, "config.json");
    FAIL() << "expected an error containing: " << needle;
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what(); }
}

TEST(Config, SharedDistilbertSst2) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared/ is not present; the real configs live there";
  EncoderConfig c =
      load_encoder_config(test::shared_dir() + "/configs/distilbert-base-uncased-finetuned-sst-2-english.config.json");
  EXPECT_EQ(c.family, model_family("distilbert").encoder);
  EXPECT_EQ(c.architecture, "DistilBertModel");
  EXPECT_FALSE(c.classification_head);
  EXPECT_EQ(c.hidden_size, 768);
  EXPECT_EQ(c.num_layers, 6);
  EXPECT_EQ(c.intermediate_size, 3072);
  EXPECT_EQ(c.type_vocab_size, 0);
  EXPECT_EQ(c.id2label, (std::vector<std::string>{"NEGATIVE", "POSITIVE"}));
  EXPECT_EQ(c.label2id.at("POSITIVE"), 1);
}

TEST(Config, SharedBertTiny) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared/ is not present; the real configs live there";
  EncoderConfig c = load_encoder_config(test::shared_dir() + "/configs/bert-tiny-imdb.config.json");
  EXPECT_EQ(c.family, model_family("bert").encoder);
  EXPECT_TRUE(c.classification_head);
  EXPECT_EQ(c.hidden_size, 128);
  EXPECT_EQ(c.num_heads, 2);
  EXPECT_EQ(c.type_vocab_size, 2);
  EXPECT_FLOAT_EQ(c.layer_norm_eps, 1e-12f);
  EXPECT_EQ(c.problem_type, "single_label_classification");
  EXPECT_EQ(c.num_labels(), 2);  // no id2label: transformers' default of two labels
}

TEST(Config, LabelsFromNumLabels) {
  EncoderConfig c = parse_encoder_config_text(R"({"model_type":"bert","vocab_size":10,"num_labels":3})", "c");
  EXPECT_EQ(c.id2label, (std::vector<std::string>{"LABEL_0", "LABEL_1", "LABEL_2"}));
}

TEST(ConfigMalformed, UnknownModelTypeListsSupported) {
  expect_error(R"({"model_type":"gpt2","vocab_size":10})",
               "is not one tach builds (bert, distilbert, roberta, xlm-roberta, mpnet, qwen2, llama, mistral, qwen3, "
               "gemma3_text, modernbert)");
}

TEST(ConfigMalformed, UnknownArchitectureListsSupported) {
  expect_error(R"({"model_type":"bert","vocab_size":10,"architectures":["BertForNextSentencePrediction"]})",
               "BertModel, BertForSequenceClassification, BertForTokenClassification, BertForQuestionAnswering, "
               "BertForMaskedLM, DistilBertModel");
}

// The checkpoints users download: masked LMs, token classifiers and QA models, for every encoder family.
TEST(Config, PerTokenHeadArchitectures) {
  const std::pair<const char*, Head> cases[] = {
      {R"({"model_type":"bert","vocab_size":10,"architectures":["BertForMaskedLM"]})", Head::masked_lm},
      {R"({"model_type":"distilbert","vocab_size":10,"architectures":["DistilBertForTokenClassification"]})",
       Head::token_classification},
      {R"({"model_type":"roberta","vocab_size":10,"architectures":["RobertaForQuestionAnswering"]})",
       Head::question_answering},
      {R"({"model_type":"xlm-roberta","vocab_size":10,"architectures":["XLMRobertaForMaskedLM"]})", Head::masked_lm},
      {R"({"model_type":"mpnet","vocab_size":10,"architectures":["MPNetForMaskedLM"]})", Head::masked_lm},
      {R"({"model_type":"bert","vocab_size":10,"architectures":["BertModel"]})", Head::none},
  };
  for (const auto& [text, head] : cases) {
    const EncoderConfig c = parse_encoder_config_text(text, "config.json");
    EXPECT_EQ(c.checkpoint_head, head) << text;
    EXPECT_FALSE(c.classification_head) << text;
    EXPECT_TRUE(c.tie_word_embeddings) << text;
  }
  EXPECT_FALSE(
      parse_encoder_config_text(
          R"({"model_type":"bert","vocab_size":10,"architectures":["BertForMaskedLM"],"tie_word_embeddings":false})",
          "config.json")
          .tie_word_embeddings);
}

TEST(ConfigMalformed, ArchitectureOfAnotherFamily) {
  expect_error(R"({"model_type":"bert","vocab_size":10,"architectures":["DistilBertModel"]})", "does not belong");
}

TEST(ConfigMalformed, FieldTypesAndRanges) {
  expect_error(R"({"model_type":"bert"})", "missing \"vocab_size\"");
  expect_error(R"({"model_type":"bert","vocab_size":"big"})", "\"vocab_size\" must be an integer");
  expect_error(R"({"model_type":"bert","vocab_size":-4})", "must be a positive integer");
  expect_error(R"({"model_type":"bert","vocab_size":10,"hidden_size":10,"num_attention_heads":3})", "not divisible");
  expect_error(R"({"model_type":"bert","vocab_size":10,"layer_norm_eps":2})", "\"layer_norm_eps\" must be in (0, 1)");
  expect_error(R"({"model_type":"bert","vocab_size":10,"hidden_act":"swish"})", "activation \"swish\"");
  expect_error(R"({"model_type":"bert","vocab_size":10,"position_embedding_type":"relative_key"})", "absolute");
  expect_error(R"([1,2])", "must be a JSON object");
  expect_error(R"({"model_type":)", "not valid JSON");
  expect_error(R"({"model_type":"bert","vocab_size":1e999})", "not valid JSON");
  expect_error(R"({"model_type":"bert","vocab_size":18446744073709551615})", "must be a positive integer");
}

TEST(ConfigMalformed, Labels) {
  expect_error(R"({"model_type":"bert","vocab_size":10,"id2label":{"0":"a","2":"b"}})", "keys must be the class ids");
  expect_error(R"({"model_type":"bert","vocab_size":10,"id2label":{"0":"a","1":"b"},"num_labels":3})",
               "id2label has 2 entries");
  expect_error(R"({"model_type":"bert","vocab_size":10,"id2label":{"0":"a","1":"b"},"label2id":{"a":1}})",
               "disagrees with id2label");
  expect_error(R"({"model_type":"bert","vocab_size":10,"problem_type":"ranking"})", "problem_type");
}

}  // namespace
}  // namespace tach::model
