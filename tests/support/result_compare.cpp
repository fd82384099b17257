#include "support/result_compare.h"

#include <fmt/format.h>

#include <algorithm>

namespace ab::testing {

std::string describe_error(const LaneError& error) {
  return fmt::format("lane {}: {} in {} at line {}, step {}", error.lane, fault_name(error.code),
                     error.function, error.line, error.step);
}

std::string describe_difference(const RunResult& expected, const RunResult& actual) {
  constexpr int kMaxReported = 5;
  std::string text;
  int reported = 0;
  auto report = [&](const std::string& line) {
    if (reported++ < kMaxReported) text += line + "\n";
  };

  if (expected.outputs.size() != actual.outputs.size()) {
    report(fmt::format("output sizes differ: {} vs {} words", expected.outputs.size(),
                       actual.outputs.size()));
  } else {
    const size_t lanes = std::max<size_t>(expected.faulted.size(), 1);
    const size_t words_per_lane = expected.outputs.size() / lanes;
    for (size_t w = 0; w < expected.outputs.size(); ++w) {
      if (expected.outputs[w] != actual.outputs[w]) {
        report(fmt::format("lane {} word {}: expected 0x{:08x}, got 0x{:08x}",
                           words_per_lane ? w / words_per_lane : 0,
                           words_per_lane ? w % words_per_lane : w, expected.outputs[w],
                           actual.outputs[w]));
      }
    }
  }

  if (expected.faulted != actual.faulted) {
    const size_t lanes = std::min(expected.faulted.size(), actual.faulted.size());
    if (expected.faulted.size() != actual.faulted.size()) {
      report(fmt::format("faulted sizes differ: {} vs {}", expected.faulted.size(),
                         actual.faulted.size()));
    }
    for (size_t lane = 0; lane < lanes; ++lane) {
      if (expected.faulted[lane] != actual.faulted[lane]) {
        report(fmt::format("lane {}: faulted expected {}, got {}", lane,
                           int(expected.faulted[lane]), int(actual.faulted[lane])));
      }
    }
  }

  const size_t errors = std::max(expected.errors.size(), actual.errors.size());
  for (size_t i = 0; i < errors; ++i) {
    if (i >= expected.errors.size()) {
      report("unexpected error " + describe_error(actual.errors[i]));
      continue;
    }
    if (i >= actual.errors.size()) {
      report("missing error " + describe_error(expected.errors[i]));
      continue;
    }
    const LaneError& e = expected.errors[i];
    const LaneError& a = actual.errors[i];
    if (e.lane != a.lane || e.code != a.code || e.function != a.function || e.line != a.line ||
        e.step != a.step) {
      report(fmt::format("error {}: expected {}, got {}", i, describe_error(e), describe_error(a)));
    }
  }
  if (reported > kMaxReported) {
    text += fmt::format("... and {} more differences\n", reported - kMaxReported);
  }
  return text;
}

}  // namespace ab::testing
