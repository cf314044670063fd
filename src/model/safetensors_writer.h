// Writing safetensors files and whole model directories so that a crash or a full disk never
// leaves something that looks valid: bytes go to a temporary name, are flushed to disk, and
// only then renamed into place (rename is atomic on one filesystem).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tach/tensor.h"

namespace tach::model {

// Writes `tensors` (contiguous, any dtype tach has) in the given order, header padded to 8 bytes
// as the safetensors library pads it. Throws naming the file and the failing operation (a full
// disk included); the temporary file is removed and `path` is untouched then.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Writes a text file the same way (temporary name, flush, rename).
void write_file_atomically(const std::string& path, const std::string& text);

// Builds a directory: fill(tmp) writes into a fresh temporary sibling, which is then renamed to
// `dir` (an existing `dir` is replaced only after the new one is complete).
void write_directory_atomically(const std::string& dir, const std::function<void(const std::string& tmp)>& fill);

// Copies the tokenizer files a model directory may hold (tokenizer.json, vocab.txt, merges.txt,
// their configs) from src_dir into dst_dir, so that a written model tokenizes as its source did.
void copy_tokenizer_files(const std::string& src_dir, const std::string& dst_dir);

}  // namespace tach::model
