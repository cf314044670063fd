// Helpers shared by the tests: temporary directories and hand-built safetensors files.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tach/model.h"
#include "tach/tensor.h"

namespace tach::test {

// [rows, cols] f32 with N(0, scale²) values from a seeded std::mt19937.
Tensor random_normal(int64_t rows, int64_t cols, uint32_t seed, float scale = 1.f);

// got [M, N] (row stride ld) against want [M, N] (dense), each within rel of want's largest
// magnitude (at least 1e-3); the first element off fails, naming its row and column.
void expect_near_scaled(const float* got, int64_t ld, const std::vector<double>& want, int64_t M, int64_t N,
                        double rel);

// A fresh directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct FakeTensor {
  std::string name;
  std::string dtype = "F32";
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // empty: filled with deterministic bytes of the right size
};

// Serialises tensors into safetensors bytes (header padded to 8 bytes as the library does).
std::vector<uint8_t> safetensors_bytes(const std::vector<FakeTensor>& tensors, const std::string& metadata_json = "");
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);
void write_text(const std::string& path, const std::string& text);
std::string read_text(const std::string& path);

// Fixture paths; tests skip with a reason when shared/ is absent.
std::string fixtures_dir();
std::string shared_dir();
bool shared_available();

// The message of the tach::Error fn throws, or "(no error)".
std::string error_of(const std::function<void()>& fn);

// Largest |a - b| / (|b| + floor) over two float arrays.
double max_relative_error(const float* a, const float* b, size_t n, double floor);

// Rows of ids padded with pad_id on the right, or on the left (as decoders are fed), with the
// attention mask. ids, mask: [rows, longest row]
TokenBatch padded_batch(const std::vector<std::vector<int32_t>>& rows, int32_t pad_id, bool left);

// n normal samples (mean 0, standard deviation `scale`), deterministic in seed.
std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.0f);

// The one gradient harness: analytic[i] against the central difference (L(x + h e_i) - L(x - h e_i)) / 2h
// for every element of x, where loss() reads x. h = 1e-2 keeps the f32 forward's rounding below
// the tolerance, abs_tol + rel_tol * |numeric|.
void expect_finite_difference(std::vector<float>& x, const std::vector<float>& analytic,
                              const std::function<double()>& loss, const std::string& what, double abs_tol = 3e-3,
                              double rel_tol = 3e-3);

}  // namespace tach::test
