// Datasets of tagged words (NER, chunking, POS): sentences as word lists with one tag per word.
// Two layouts, as they are published:
//  - CoNLL-style text (CoNLL-2003, WNUT): one word per line, whitespace-separated columns, the
//    word first and the tag in the last column unless told otherwise; a blank line ends a
//    sentence; `-DOCSTART-` lines (document boundaries) are skipped.
//  - JSON records, as Hugging Face datasets save them: one object per line (JSONL), a list of
//    objects, or an object of splits; each with a list of words (`tokens`) and a list of tags
//    (`ner_tags`), the tags as names or as integer ids into a label list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tach::data {

struct TaggedSentence {
  std::vector<std::string> words;
  std::vector<std::string> tags;  // one per word, as names
  int64_t source = 0;             // 1-based: the first line of a CoNLL sentence, the record of a JSON one
};

// CoNLL-style bytes. tag_column: a 0-based column, or negative from the end (-1: the last).
// Every word line needs the tag column and a word before it; a line without it is an error naming
// the file and the line. A UTF-8 BOM and CR line ends are accepted.
std::vector<TaggedSentence> read_conll(const std::string& path, const std::string& bytes, int tag_column);

struct TaggedJsonOptions {
  std::string words_key = "tokens";
  std::string tags_key = "ner_tags";
  std::string split;  // an object of splits: the one to read (default "test" when there is one)
  // Names of integer tags in id order (a model's id2label, or a dataset's label list); empty:
  // integer tags are an error. A Parquet file's own names for them (its ClassLabel) come first
  // unless these were given on purpose (tag_names_given: --tag-names, --labels).
  std::vector<std::string> tag_names;
  bool tag_names_given = false;
};

// JSON records: jsonl = one object per line; otherwise a list of objects or an object of splits
// (each a list of objects). Errors name the file, the record and the key.
std::vector<TaggedSentence> read_tagged_json(const std::string& path, const std::string& bytes, bool jsonl,
                                             const TaggedJsonOptions& options);

// Parquet records (the Hub's conll2003 layout: tokens and ner_tags lists, integer tags named by
// the file's ClassLabel); errors name the file and the row.
std::vector<TaggedSentence> read_tagged_parquet(const std::string& path, const std::string& bytes,
                                                const TaggedJsonOptions& options);

// By the extension: .json/.jsonl/.ndjson as JSON records, .parquet/.pq as Parquet records,
// anything else (.conll, .txt, .iob, .bio, no extension) as CoNLL text. format: "auto" or one of
// "conll", "json", "jsonl", "parquet".
std::vector<TaggedSentence> read_tagged_file(const std::string& path, const std::string& format, int tag_column,
                                             const TaggedJsonOptions& options);

}  // namespace tach::data
