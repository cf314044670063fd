// The GPU's ceilings for the roofline, measured with the kernels tach itself runs (cuBLASLt
// GEMMs) and a device-to-device copy, timed with CUDA events.
#include <cuda_runtime.h>

#include <ctime>
#include <functional>

#include "core/utc_time.h"
#include "cuda/cublaslt.h"
#include "cuda/cuda_error.h"
#include "cuda/stream.h"
#include "tach/error.h"
#include "tach/profile.h"
#include "tach/tensor.h"

namespace tach {
namespace {

// Best of `reps` event-timed runs after three untimed ones, in seconds.
double best_gpu_seconds(int device, int reps, const std::function<void()>& fn) {
  for (int i = 0; i < 3; ++i) fn();
  cuda::Event start(device), stop(device);
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    start.record();
    fn();
    stop.record();
    best = std::min(best, double(cuda::Event::elapsed_ms(start, stop)) * 1e-3);
  }
  return best;
}

double gemm_flops(int device, cuda::GemmPrecision precision, int64_t n) {
  const DType in = precision == cuda::GemmPrecision::bf16  ? DType::bf16
                   : precision == cuda::GemmPrecision::f16 ? DType::f16
                                                           : DType::f32;
  const Device d = Device::cuda(device);
  // Inputs of small random-looking values: zeros would let the hardware save power and run faster.
  Tensor host = Tensor::empty({n, n}, DType::f32, Device::cpu(), MemoryCategory::workspace);
  uint32_t state = 12345;
  for (int64_t i = 0; i < n * n; ++i) {
    state = state * 1664525u + 1013904223u;
    host.data<float>()[i] = float(int32_t(state >> 9) % 2001 - 1000) * 1e-3f;
  }
  const Tensor a = host.to(in, MemoryCategory::workspace).to_device(d, MemoryCategory::workspace);
  Tensor y = Tensor::empty({n, n}, DType::f32, d, MemoryCategory::workspace);
  cuda::LinearArgs args;
  args.M = args.N = args.K = n;
  args.ld_x = args.ld_y = n;
  args.precision = precision;
  const double s =
      best_gpu_seconds(device, 10, [&] { cuda::linear(device, y.raw(), a.raw(), a.raw(), nullptr, args); });
  return 2.0 * double(n) * double(n) * double(n) / s;
}

}  // namespace

GpuCeilings measure_gpu_ceilings(Device device) {
  check(device.kind == DeviceKind::cuda && cuda_available() && device.index < cuda_device_count(),
        "GPU ceilings on " + device.str() + ": " + (cuda_available() ? "no such device" : cuda_unavailable_reason()));
  const int idx = device.index;
  GpuCeilings c;
  c.device = device.str();
  for (const CudaDeviceInfo& d : cuda_devices())
    if (d.index == idx) c.name = d.name;
  c.gemm_f32_flops = gemm_flops(idx, cuda::GemmPrecision::f32, 4096);
  c.gemm_tf32_flops = gemm_flops(idx, cuda::GemmPrecision::tf32, 8192);
  c.gemm_bf16_flops = gemm_flops(idx, cuda::GemmPrecision::bf16, 8192);
  c.gemm_f16_flops = gemm_flops(idx, cuda::GemmPrecision::f16, 8192);
  const size_t bytes = size_t(1) << 30;
  Tensor src = Tensor::zeros({int64_t(bytes)}, DType::u8, device, MemoryCategory::workspace);
  Tensor dst = Tensor::empty({int64_t(bytes)}, DType::u8, device, MemoryCategory::workspace);
  const double s = best_gpu_seconds(idx, 10, [&] {
    cuda::check(cudaMemcpyAsync(dst.raw(), src.raw(), bytes, cudaMemcpyDeviceToDevice, cuda::stream(idx)),
                "cudaMemcpyAsync");
  });
  c.memory_bytes_per_s = 2.0 * double(bytes) / s;
  c.method =
      "cuBLASLt GEMM 8192^3 (f32: 4096^3), f32 accumulation, f32 output, best of 10 after 3 warm-ups, CUDA "
      "events; memory: device-to-device copy of 1 GiB, read + written, best of 10";
  c.measured_at = core::utc_now_iso();
  return c;
}

}  // namespace tach
