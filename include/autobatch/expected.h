// A value or an error message. The engine reports every failure (no device, a shader that does
// not compile, a batch that does not fit) as an Expected holding a message, never as a crash or
// an exception escaping the API.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace ab {

struct Error {
  std::string message;
};

template <class T>
class Expected {
 public:
  Expected(T value) : value_(std::move(value)) {}
  Expected(Error error) : error_(std::move(error.message)) {}

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  // The message; empty when ok().
  const std::string& error() const { return error_; }
  // The value; only valid when ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  std::string error_;
};

// For calls that return nothing but may fail.
struct Ok {};
using Status = Expected<Ok>;

}  // namespace ab
