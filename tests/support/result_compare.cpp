#include "support/result_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ir/exec.h"

namespace ab::testing {

std::string describe_error(const LaneError& error) {
  return fmt::format("lane {}: {} in {} at line {}, step {}", error.lane, fault_text(error),
                     error.function, error.line, error.step);
}

// Every field, the detail's text included: each backend names a fault as the interpreter does.
static bool same_error(const LaneError& e, const LaneError& a) {
  return e.lane == a.lane && e.code == a.code && e.function == a.function && e.line == a.line &&
         e.step == a.step && e.detail == a.detail;
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
    if (!same_error(e, a)) {
      report(fmt::format("error {}: expected {}, got {}", i, describe_error(e), describe_error(a)));
    }
  }
  if (reported > kMaxReported) {
    text += fmt::format("... and {} more differences\n", reported - kMaxReported);
  }
  return text;
}

void word_kinds(const Types& types, TypeId t, std::vector<Scalar>& out) {
  const Type& type = types[t];
  if (type.kind == Type::Kind::Scalar) {
    out.push_back(type.scalar);
  } else if (type.kind == Type::Kind::Array) {
    for (uint32_t i = 0; i < type.count; ++i)
      word_kinds(types, type.elem, out);
  } else if (type.kind == Type::Kind::Struct) {
    for (const Field& f : types.struct_def(t).fields)
      word_kinds(types, f.type, out);
  }
}

bool same_float(uint32_t a, uint32_t b) {
  return a == b || (std::isnan(bits_float(a)) && std::isnan(bits_float(b)));
}

std::string compare_results(const LoweredProgram& program, const RunResult& expected,
                            const RunResult& actual) {
  std::vector<Scalar> kinds;
  if (program.output >= 0) word_kinds(program.types(), program.vars[program.output].type, kinds);
  std::string out;
  int shown = 0;
  if (expected.faulted != actual.faulted) out += "faulted lanes differ\n";
  if (expected.outputs.size() != actual.outputs.size())
    return out + fmt::format("output sizes differ: {} vs {}\n", expected.outputs.size(),
                             actual.outputs.size());
  const size_t per_lane = kinds.size();
  for (size_t i = 0; i < expected.outputs.size() && shown < 5; ++i) {
    const Scalar k = kinds[i % per_lane];
    const bool same = k == Scalar::Float ? same_float(expected.outputs[i], actual.outputs[i])
                                         : expected.outputs[i] == actual.outputs[i];
    if (!same) {
      out += fmt::format("lane {} word {}: expected {:#x}, got {:#x}\n", i / per_lane, i % per_lane,
                         expected.outputs[i], actual.outputs[i]);
      ++shown;
    }
  }
  if (expected.errors.size() != actual.errors.size())
    out += fmt::format("{} errors expected, {} reported\n", expected.errors.size(),
                       actual.errors.size());
  for (size_t i = 0; i < std::min(expected.errors.size(), actual.errors.size()) && shown < 10;
       ++i) {
    const LaneError &e = expected.errors[i], &a = actual.errors[i];
    if (!same_error(e, a)) {
      out += fmt::format("expected {}\n     got {}\n", describe_error(e), describe_error(a));
      ++shown;
    }
  }
  // Emitted records, lane by lane, with the same float rule.
  if (expected.records_emitted != actual.records_emitted)
    out += fmt::format("{} records emitted expected, {} reported\n", expected.records_emitted,
                       actual.records_emitted);
  std::vector<Scalar> record_kinds;
  if (program.source && program.source->emit_type != Types::kVoid)
    word_kinds(program.types(), program.source->emit_type, record_kinds);
  if (expected.emitted.size() != actual.emitted.size()) {
    out += fmt::format("emitted streams for {} lanes expected, {} reported\n",
                       expected.emitted.size(), actual.emitted.size());
  } else {
    for (size_t lane = 0; lane < expected.emitted.size() && shown < 10; ++lane) {
      const auto &e = expected.emitted[lane], &a = actual.emitted[lane];
      bool same = e.size() == a.size();
      for (size_t i = 0; same && i < e.size(); ++i)
        same = record_kinds[i % record_kinds.size()] == Scalar::Float ? same_float(e[i], a[i])
                                                                      : e[i] == a[i];
      if (!same) {
        out += fmt::format("lane {}: emitted {} words expected, {} differ or are missing\n", lane,
                           e.size(), a.size());
        ++shown;
      }
    }
  }
  return out;
}

}  // namespace ab::testing
