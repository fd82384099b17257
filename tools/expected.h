// Errors as values for the command-line tool: a function that can fail returns Expected<T>,
// which holds either its value or one human-readable message (no "error: " prefix; main adds it
// unless the message is already `formatted`, as the compiler's diagnostics are).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace ab::cli {

struct Error {
  std::string message;
  bool formatted = false;  // a complete message to print as is (compiler diagnostics)
};

inline Error fail(std::string message) {
  return Error{std::move(message)};
}

template <class T>
class Expected {
 public:
  Expected(T value) : state_(std::in_place_index<0>, std::move(value)) {}
  Expected(Error error) : state_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() { return std::get<0>(state_); }
  const T& value() const { return std::get<0>(state_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const std::string& error() const { return std::get<1>(state_).message; }
  // The failure, to pass up unchanged from a function returning another Expected.
  Error failure() const { return std::get<1>(state_); }

 private:
  std::variant<T, Error> state_;
};

// For operations that produce nothing but may fail.
using Status = Expected<std::monostate>;
inline Status ok_status() {
  return Status(std::monostate{});
}

}  // namespace ab::cli
