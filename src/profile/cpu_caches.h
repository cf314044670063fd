// The CPU's caches as sysfs describes them, for the roofline: an op whose bytes fit in the
// last-level cache can move them faster than the DRAM bandwidth ceiling allows.
#pragma once

#include <cstdint>
#include <string>

namespace tach::profile {

// The size of the highest-level data or unified cache of cpu0 (cache_dir/indexN/{level,type,size},
// sizes as "32768K", "32M" or bytes); 0 where sysfs does not say (not Linux, a container
// without /sys). Read once per cache_dir.
int64_t last_level_cache_bytes(const std::string& cache_dir = "/sys/devices/system/cpu/cpu0/cache");

}  // namespace tach::profile
