// Checks for the numeric and path options of every subcommand (run, debug, bench): a bad value
// is refused with one message that names the option and what it accepts, e.g.
//   --max-steps: expected a whole number from 1 to 4294967295, got '-5'
//
// Why not CLI11's own conversions: CLI11 2.1 reads an unsigned option with strtoull, which takes
// "-1" as 2^64-1 and saturates an overflow without a word, and reads a leading 0 as octal.
// These checks run on the text before CLI11 converts it, and rewrite a good value in plain
// decimal so that the conversion reads it as checked. Use them with ->transform().
//
// Header-only: bench/run_bench.cpp declares the bench options with them without linking the tool.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "autobatch/expected.h"
#include "autobatch/user_input.h"

namespace ab::cli {

// A CLI11 validator from a check that returns Status: CLI11 wants "" for a good value and the
// message otherwise, a convention that ends here.
inline CLI::Validator validator(std::function<Status(std::string&)> check,
                                const std::string& description) {
  return CLI::Validator(
      [check = std::move(check)](std::string& text) {
        const Status checked = check(text);
        return checked ? std::string() : checked.error();
      },
      description);
}

// A whole number from `min` to `max`, written in decimal or as 0x hex.
inline CLI::Validator whole_number_in(uint64_t min, uint64_t max) {
  auto check = [min, max](std::string& text) -> Status {
    std::string_view digits = text;
    int base = 10;
    if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
      base = 16;
      digits.remove_prefix(2);
    }
    uint64_t value = 0;
    const auto [end, ec] =
        std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
    const bool in_range = !digits.empty() && end == digits.data() + digits.size() &&
                          ec == std::errc() && value >= min && value <= max;
    if (!in_range)
      return Error{
          fmt::format("expected a whole number from {} to {}, got '{}'", min, max, excerpt(text))};
    text = std::to_string(value);
    return Ok{};
  };
  return validator(check, fmt::format("{} to {}", min, max));
}

// A number of seconds from 0 to `max`: a decimal such as 0.5 or 2.
inline CLI::Validator seconds_in(double max) {
  auto check = [max](std::string& text) -> Status {
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    const bool in_range = !text.empty() && end == text.data() + text.size() && ec == std::errc() &&
                          std::isfinite(value) && value >= 0 && value <= max;
    if (!in_range)
      return Error{
          fmt::format("expected a number of seconds from 0 to {}, got '{}'", max, excerpt(text))};
    return Ok{};
  };
  return validator(check, fmt::format("0 to {} s", max));
}

// A path that is not empty: an empty one names no file, and would otherwise mean "not given".
inline CLI::Validator non_empty_path(std::string_view what) {
  auto check = [what = std::string(what)](std::string& text) -> Status {
    if (text.empty()) return Error{fmt::format("expected {}, got an empty path", what)};
    return Ok{};
  };
  return validator(check, "");
}

}  // namespace ab::cli
