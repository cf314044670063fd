// Process-wide runtime settings the CLI exposes.
#pragma once

namespace tach {

// Threads for tach's pool and oneDNN (they share one OpenMP runtime). n <= 0: the default.
void set_threads(int n);
int threads();

}  // namespace tach
