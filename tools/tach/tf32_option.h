// --allow-tf32, the same in every command that loads a model to run it (bench, run, classify,
// profile, generate, embed): PyTorch's torch.backends.cuda.matmul.allow_tf32 for tach's GPU linears.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace tach::cli {

// The flag's help, for every command alike.
extern const char* const kAllowTf32Help;

// Adds --allow-tf32 to `sub`, writing `allow`.
CLI::Option* add_allow_tf32_option(CLI::App* sub, bool& allow);

// A usage error (exit status 2) where --allow-tf32 could not act, rather than a run that ignores
// it: a CPU among the devices (the CPU has no TF32; "auto" is judged when it resolves, by the
// loader), or no f32 among the compute dtypes (bf16, f16, int8 and nf4 GEMMs are not f32's).
// training: the command trains (tach's training GEMMs run at the run's own precision).
void check_allow_tf32(bool allow, const std::vector<std::string>& devices, const std::vector<std::string>& dtypes,
                      bool training = false);

}  // namespace tach::cli
