#include "model/activation_dtype.h"

#include <cstdlib>
#include <string>

#include "ops/cast.h"
#include "tach/error.h"

namespace tach::model {

namespace {

// TACH_GPU_ACTIVATIONS: unset, "auto" (the linears' dtype) or "f32"; anything else is an error,
// so that a typo never measures the wrong thing.
bool f32_activations_asked() {
  const char* env = std::getenv("TACH_GPU_ACTIVATIONS");
  if (env == nullptr || *env == '\0' || std::string(env) == "auto") return false;
  if (std::string(env) == "f32") return true;
  throw Error("TACH_GPU_ACTIVATIONS=" + std::string(env) + ": expected auto or f32");
}

}  // namespace

DType inference_activations(const ops::Linear& first_linear) {
  const DType own = first_linear.activation_dtype();
  if (own == DType::f32) return own;
  const DType compute = first_linear.compute_dtype();
  const bool takes_f32 = compute == DType::bf16 || compute == DType::f16;  // converts its f32 input
  return takes_f32 && f32_activations_asked() ? DType::f32 : own;
}

std::string activations_note(DType compute, DType activations, Device device) {
  if (device.kind == DeviceKind::cpu || compute == DType::f32) return "";
  const std::string a(dtype_name(activations));
  if (activations != DType::f32)
    return a +
           " activations end to end on the GPU: the residual stream, every GEMM's input and output, attention and "
           "the key/value cache in " +
           a +
           "; norms, softmax and pooling accumulate in f32; the outputs come back "
           "as f32";
  return "f32 activations around " + std::string(dtype_name(compute)) +
         " GEMMs (TACH_GPU_ACTIVATIONS=f32): each GEMM converts its input and writes f32, attention converts q, k "
         "and v";
}

Tensor as_f32(const Tensor& t) {
  if (t.dtype() == DType::f32) return t;
  Tensor out = Tensor::empty(t.shape(), DType::f32, t.device());
  ops::cast(out, t);
  return out;
}

}  // namespace tach::model
