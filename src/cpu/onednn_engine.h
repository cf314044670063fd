// The one oneDNN CPU engine every primitive tach creates runs on.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace tach::cpu {

dnnl::engine& onednn_engine();

}  // namespace tach::cpu
