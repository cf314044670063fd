// BERT's config.json fields, which RoBERTa and XLM-RoBERTa share (roberta.cc).
#pragma once

namespace tach::model {

struct Field;
struct EncoderConfig;

void read_bert_config(const Field& f, EncoderConfig& c);

}  // namespace tach::model
