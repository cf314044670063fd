// tach::Error: the one exception type tach throws for anything a user can act on.
#pragma once

#include <stdexcept>
#include <string>

namespace tach {

// The message says what was wrong and, where it helps, what to do about it
// ("model.safetensors: tensor 'classifier.weight' has shape [2, 768], config.json needs [3, 768]").
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Work stopped on request (Ctrl-C, tach/runtime.h) after saving what it finished; the message says
// how to resume.
class Stopped : public Error {
 public:
  explicit Stopped(const std::string& message) : Error(message) {}
};

// A value the user gave that is out of range or not one of the choices ("--dtype f64", "--margin
// 1.5"), found past parsing: a usage error, exit status 2, like a malformed value. One type, so
// that every command's value checks (usage_check) end the same way.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message) {}
};

// Throws tach::UsageError(message) when cond is false: for checks on the values of options.
inline void usage_check(bool cond, const std::string& message) {
  if (!cond) throw UsageError(message);
}

// Throws tach::Error(message) when cond is false. A function, not a macro: no hidden locals.
inline void check(bool cond, const std::string& message) {
  if (!cond) throw Error(message);
}

}  // namespace tach
