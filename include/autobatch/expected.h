// A value or an error. The engine reports every failure (no device, a shader that does not
// compile, a batch that does not fit) as an Expected holding an Error, never as a crash or an
// exception escaping the API. The command-line tool uses the same types.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace ab {

struct Error {
  // One human-readable message, without an "error: " prefix.
  std::string message;
  // True when the message is complete as it is (compiler diagnostics with their source lines and
  // carets): print it unchanged instead of prefixing it. The engine's own errors leave it false.
  bool formatted = false;
};

template <class T>
class Expected {
 public:
  Expected(T value) : value_(std::move(value)) {}
  Expected(Error error) : error_(std::move(error)) {}

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  // The message; empty when ok().
  const std::string& error() const { return error_.message; }
  // The whole error (message and `formatted`), to pass up unchanged from a function that
  // returns another Expected; only meaningful when !ok().
  const Error& failure() const { return error_; }
  // The value; only valid when ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  // Moves the value out of a temporary: `auto run = *VulkanRun::create(...)` for a move-only T.
  T&& operator*() && { return std::move(*value_); }

 private:
  std::optional<T> value_;
  Error error_;
};

// For calls that return nothing but may fail.
struct Ok {};
using Status = Expected<Ok>;

}  // namespace ab
