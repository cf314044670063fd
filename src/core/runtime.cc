#include "tach/runtime.h"

#include "core/parallel.h"

namespace tach {

void set_threads(int n) { core::set_num_threads(n); }
int threads() { return core::num_threads(); }

}  // namespace tach
