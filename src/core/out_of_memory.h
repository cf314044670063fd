// An allocation a device could not make: an Error (its message names the device, the bytes and
// what they were for) of its own type, so that a caller who knows the work (a training step) can
// add what would fit.
#pragma once

#include "tach/error.h"

namespace tach {

class OutOfMemory : public Error {
 public:
  using Error::Error;
};

}  // namespace tach
