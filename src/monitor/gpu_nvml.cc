// NVML loaded with dlopen: the handful of entry points the sampler reads. The structs are
// declared here as nvml.h lays them out (stable ABI), so no NVIDIA header or library is
// needed to build.
#include <dlfcn.h>

#include "tach/monitor.h"

namespace tach {

namespace {
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
// nvml.h's nvmlPciInfo_t (v3 layout, which nvmlDeviceGetPciInfo_v3 fills).
struct nvmlPciInfo_t {
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
constexpr int kNvmlClockSm = 1, kNvmlClockMem = 2, kNvmlTemperatureGpu = 0;
}  // namespace

struct GpuMonitor::Api {
  void* lib = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*count)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long*) = nullptr;
};

GpuMonitor::GpuMonitor() : api_(std::make_unique<Api>()) {
  Api& a = *api_;
  a.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!a.lib) {
    reason_ = "no GPU monitoring: libnvidia-ml.so.1 not found (no NVIDIA driver on this machine)";
    return;
  }
  const auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(a.lib, name));
  };
  sym(a.init, "nvmlInit_v2");
  sym(a.shutdown, "nvmlShutdown");
  sym(a.count, "nvmlDeviceGetCount_v2");
  sym(a.handle, "nvmlDeviceGetHandleByIndex_v2");
  sym(a.utilization, "nvmlDeviceGetUtilizationRates");
  sym(a.memory, "nvmlDeviceGetMemoryInfo");
  sym(a.pci, "nvmlDeviceGetPciInfo_v3");
  sym(a.power, "nvmlDeviceGetPowerUsage");
  sym(a.energy, "nvmlDeviceGetTotalEnergyConsumption");
  sym(a.clock, "nvmlDeviceGetClockInfo");
  sym(a.temperature, "nvmlDeviceGetTemperature");
  sym(a.throttle, "nvmlDeviceGetCurrentClocksThrottleReasons");
  unsigned int n = 0;
  if (!a.init || !a.count || !a.handle || a.init() != 0 || a.count(&n) != 0) {
    reason_ = "no GPU monitoring: NVML did not initialise (driver not loaded?)";
    return;
  }
  count_ = int(n);
  if (count_ == 0) reason_ = "no GPU monitoring: NVML reports no devices";
}

GpuMonitor::~GpuMonitor() {
  if (api_ && api_->lib) {
    if (count_ > 0 && api_->shutdown) api_->shutdown();
    dlclose(api_->lib);
  }
}

std::vector<GpuSample> GpuMonitor::sample() const {
  std::vector<GpuSample> out;
  const Api& a = *api_;
  for (int i = 0; i < count_; ++i) {
    GpuSample s;
    s.index = i;
    nvmlDevice_t dev = nullptr;
    if (a.handle(unsigned(i), &dev) != 0) continue;
    nvmlUtilization_t u{};
    if (a.utilization && a.utilization(dev, &u) == 0)
      s.utilization_percent = u.gpu, s.memory_utilization_percent = u.memory;
    nvmlMemory_t m{};
    if (a.memory && a.memory(dev, &m) == 0)
      s.memory_used_bytes = int64_t(m.used), s.memory_total_bytes = int64_t(m.total);
    nvmlPciInfo_t pci{};
    if (a.pci && a.pci(dev, &pci) == 0)
      s.pci_domain = int(pci.domain), s.pci_bus = int(pci.bus), s.pci_device = int(pci.device);
    unsigned int v = 0;
    if (a.power && a.power(dev, &v) == 0) s.power_w = double(v) / 1000.0;  // mW
    unsigned long long e = 0;
    if (a.energy && a.energy(dev, &e) == 0) s.energy_j = double(e) / 1000.0;  // mJ
    if (a.clock && a.clock(dev, kNvmlClockSm, &v) == 0) s.sm_clock_mhz = int(v);
    if (a.clock && a.clock(dev, kNvmlClockMem, &v) == 0) s.memory_clock_mhz = int(v);
    if (a.temperature && a.temperature(dev, kNvmlTemperatureGpu, &v) == 0) s.temperature_c = int(v);
    unsigned long long t = 0;
    if (a.throttle && a.throttle(dev, &t) == 0) s.throttle_reasons = t;
    out.push_back(s);
  }
  return out;
}

double GpuMonitor::energy_j(int index) const {
  const Api& a = *api_;
  nvmlDevice_t dev = nullptr;
  unsigned long long e = 0;
  if (index < 0 || index >= count_ || a.handle(unsigned(index), &dev) != 0 || !a.energy || a.energy(dev, &e) != 0)
    return -1;
  return double(e) / 1000.0;  // mJ
}

}  // namespace tach
