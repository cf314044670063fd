#include "cpu/onednn_engine.h"

namespace tach::cpu {

dnnl::engine& onednn_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

}  // namespace tach::cpu
