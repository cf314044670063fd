// Decoding's bandwidth floor (tach/profile.h): what tach generate prints and tach bench records
// beside each decoding point.
#include <algorithm>

#include "tach/profile.h"
#include "tach/plain_number.h"

namespace tach {

DecodeLimit decode_limit(double bytes_per_step, Device device, double median_step_s) {
  DecodeLimit d;
  d.bytes_per_step = bytes_per_step;
  if (device.kind == DeviceKind::cuda) {
    const GpuCeilings c = measure_gpu_ceilings(device);
    d.bandwidth = c.memory_bytes_per_s;
    d.method = c.name + ": " + c.method;
  } else {
    const MachineCeilings c = memory_bandwidth_ceiling();
    d.bandwidth = c.memory_bytes_per_s;
    d.read_bandwidth = c.memory_read_bytes_per_s;
    d.method = c.from_cache ? "STREAM triad and read-only, " + describe_ceilings_provenance(c) : c.method;
    if (!c.from_cache && c.load_measured)
      d.method += "; other processes used " + plain_number(c.other_cores, 3) + " cores during it, load average " +
                  plain_number(c.load_average, 3);
    // Measured now beside busy processes: the bandwidth is theirs to share, so the limit is too
    // low and the fraction of it moves with their load.
    if (c.under_load)
      d.warning = "WARNING: the bandwidth was measured under load (" +
                  (c.load_measured ? "other processes used " + plain_number(c.other_cores, 3) + " cores"
                                   : std::string("other processes' CPU use could not be read")) +
                  "), so the limit is too low and its % is not trusted; measure it on a quiet machine: tach info "
                  "--ceilings";
  }
  if (d.bandwidth <= 0) return d;
  d.limit_s = bytes_per_step / d.bandwidth;
  d.fraction = median_step_s > 0 ? d.limit_s / median_step_s : 0;
  if (d.read_bandwidth > 0) {
    d.read_limit_s = bytes_per_step / d.read_bandwidth;
    d.read_fraction = median_step_s > 0 ? d.read_limit_s / median_step_s : 0;
  }
  // A floor the median step beat by more than 10% is not a floor: the bandwidth was measured at
  // another time or under load (a VM's bandwidth can move by a third within minutes).
  if (d.warning.empty() && std::max(d.fraction, d.read_fraction) > 1.1)
    d.warning =
        "WARNING: the median step ran faster than the limit allows, so the bandwidth figure is too low for "
        "this run (measured at another time, or under load); measure it again on a quiet machine: tach info "
        "--ceilings --remeasure";
  return d;
}

}  // namespace tach
