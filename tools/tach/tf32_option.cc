#include "tf32_option.h"

#include "tach/device.h"
#include "tach/error.h"

namespace tach::cli {

const char* const kAllowTf32Help =
    "CUDA, f32 compute: the linears' GEMMs run on TF32 tensor cores (inputs rounded to 10 mantissa bits, f32 "
    "accumulation), as torch.backends.cuda.matmul.allow_tf32 = True; off by default, as in PyTorch. Recorded in the "
    "model's notes (and a bench run's config.json); refused on a CPU and without f32 among the dtypes";

CLI::Option* add_allow_tf32_option(CLI::App* sub, bool& allow) {
  return sub->add_flag("--allow-tf32", allow, kAllowTf32Help);
}

void check_allow_tf32(bool allow, const std::vector<std::string>& devices, const std::vector<std::string>& dtypes,
                      bool training) {
  if (!allow) return;
  usage_check(!training,
              "--allow-tf32 applies to inference: a training step's f32 GEMMs run in full f32 (--dtype bf16 runs them "
              "on the tensor cores)");
  for (const std::string& d : devices) {
    // auto is the GPU where one is usable, else the CPU: refused here, before any run directory.
    const bool cuda = d == "auto" ? cuda_available() : parse_device(d).kind == DeviceKind::cuda;
    usage_check(cuda, "--allow-tf32 with --device " + d + (d == "auto" ? " (the CPU: no usable GPU here)" : "") +
                          ": TF32 is a GPU tensor-core format, and the CPU's f32 GEMMs have no such mode (run on "
                          "--device cuda, or drop --allow-tf32)");
  }
  bool f32 = false;
  std::string given;
  for (const std::string& t : dtypes) {
    f32 = f32 || t == "f32" || t == "float32";
    given += (given.empty() ? "" : ",") + t;
  }
  usage_check(f32, "--allow-tf32 changes f32 GEMMs only, and --dtype " + given +
                       " computes none in f32 (add f32 to --dtype, or drop --allow-tf32)");
}

}  // namespace tach::cli
