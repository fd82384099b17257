#include "support/samples.h"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "ir/frontend/frontend.h"
#include "ir/ops.h"

namespace ab::testing {
namespace {

using LaneWords = std::vector<std::vector<uint32_t>>;

uint32_t int_word(int32_t v) {
  return static_cast<uint32_t>(v);
}

// An int in [lo, hi] drawn from the lane's hash stream `salt`.
int32_t lane_int(uint64_t salt, uint32_t lane, int32_t lo, int32_t hi) {
  const uint64_t span = static_cast<uint64_t>(static_cast<int64_t>(hi) - lo + 1);
  return static_cast<int32_t>(lo + static_cast<int64_t>(lane_hash(salt, lane) % span));
}

// A float in [lo, hi) on a grid of 1/1024, so inputs print and reproduce exactly.
float lane_float(uint64_t salt, uint32_t lane, float lo, float hi) {
  const double unit = static_cast<double>(lane_hash(salt, lane) % 1024) / 1024.0;
  return static_cast<float>(lo + (hi - lo) * unit);
}

std::vector<SampleCase> build_samples() {
  std::vector<SampleCase> cases;

  cases.push_back({.file = "fib.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     return {{int_word(lane_int(1, lane, 0, 17))}};
                   },
                   .input_bounds = "n in 0..17"});

  cases.push_back({.file = "ackermann.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     const int32_t m = lane_int(2, lane, 0, 3);
                     const int32_t n = lane_int(3, lane, 0, m == 3 ? 3 : 6);
                     return {{int_word(m)}, {int_word(n)}};
                   },
                   .input_bounds = "m in 0..3, n in 0..6 (0..3 when m = 3)"});

  cases.push_back({.file = "even_odd.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     return {{int_word(lane_int(4, lane, 0, 63))}};
                   },
                   .input_bounds = "n in 0..63"});

  cases.push_back({.file = "collatz.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     return {{int_word(lane_int(5, lane, 1, 300))}};
                   },
                   .input_bounds = "n in 1..300"});

  cases.push_back({.file = "gcd.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     return {{int_word(lane_int(6, lane, -5000, 5000))},
                             {int_word(lane_int(7, lane, -1000, 1000))}};
                   },
                   .input_bounds = "a in -5000..5000, b in -1000..1000"});

  cases.push_back({.file = "divmod.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     // Every 23rd lane (from lane 5) divides by zero and fails main's assert.
                     const int32_t b = lane % 23 == 5 ? 0 : lane_int(9, lane, 1, 50);
                     return {{int_word(lane_int(8, lane, 0, 100000))}, {int_word(b)}};
                   },
                   .input_bounds = "a in 0..100000, b in 1..50 (0 on lanes 5, 28, ...: assert)"});

  cases.push_back({.file = "simpson.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     const float a = lane_float(10, lane, 0.0f, 1.0f);
                     const float b = a + lane_float(11, lane, 0.5f, 3.0f);
                     return {{float_bits(a)}, {float_bits(b)}};
                   },
                   .input_bounds = "a in [0, 1), b - a in [0.5, 3)"});

  cases.push_back({.file = "merge_sort.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     std::vector<uint32_t> values;
                     for (uint32_t i = 0; i < 16; ++i) {
                       values.push_back(int_word(lane_int(12 + i, lane, -100, 100)));
                     }
                     return {values, {int_word(lane_int(40, lane, 0, 16))}};
                   },
                   .input_bounds = "16 values in -100..100, count in 0..16"});

  cases.push_back({.file = "random.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     return {{float_bits(lane_float(41, lane, 0.5f, 4.0f))},
                             {int_word(lane_int(42, lane, 0, 200))}};
                   },
                   .uses_random = true,
                   .input_bounds = "barrier in [0.5, 4), max_steps in 0..200"});

  cases.push_back({.file = "tak.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     return {{int_word(lane_int(43, lane, 0, 7))},
                             {int_word(lane_int(44, lane, 0, 5))},
                             {int_word(lane_int(45, lane, 0, 4))}};
                   },
                   .input_bounds = "x in 0..7, y in 0..5, z in 0..4"});

  cases.push_back({.file = "table_lookup.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     // The last knot is 26.25: lanes with x >= 26.25 read past the table.
                     return {{float_bits(lane_float(46, lane, -1.0f, 29.0f))}};
                   },
                   .uniforms =
                       [] {
                         std::vector<uint32_t> knots, values;
                         for (int i = 0; i < 16; ++i) {
                           knots.push_back(float_bits(static_cast<float>(i) + 0.05f * i * i));
                           values.push_back(float_bits(std::sin(static_cast<float>(i))));
                         }
                         return UniformData{knots, values};
                       },
                   .input_bounds = "x in [-1, 29), knots 0 .. 26.25 (x >= 26.25 faults)"});

  cases.push_back({.file = "nuts_tree.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     std::vector<uint32_t> q0;
                     for (uint32_t i = 0; i < 4; ++i) {
                       q0.push_back(float_bits(lane_float(50 + i, lane, -2.0f, 2.0f)));
                     }
                     return {q0,
                             {float_bits(lane_float(54, lane, 0.1f, 0.5f))},
                             {int_word(lane_int(55, lane, 0, 3))}};
                   },
                   .uses_random = true,
                   .input_bounds = "q0 in [-2, 2)^4, eps in [0.1, 0.5), iterations in 0..3"});

  cases.push_back({.file = "faults.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     // Kinds 1..5 fault; about half the lanes compute normally (kind 0).
                     const int32_t kind = lane % 2 == 0 ? 0 : lane_int(56, lane, 1, 5);
                     return {{int_word(kind)}, {int_word(lane_int(57, lane, -50, 50))}};
                   },
                   .input_bounds = "kind 0 on even lanes, 1..5 on odd ones; x in -50..50",
                   // Kind 5 spins forever: a small budget keeps it fast.
                   .options = {.max_steps = 5000}});

  cases.push_back({.file = "bits.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     return {{static_cast<uint32_t>(lane_hash(58, lane))}};
                   },
                   .input_bounds = "x any int"});
  return cases;
}

}  // namespace

const std::vector<SampleCase>& all_samples() {
  static const std::vector<SampleCase> cases = build_samples();
  return cases;
}

const SampleCase& sample_case(const std::string& file) {
  for (const SampleCase& c : all_samples()) {
    if (c.file == file) return c;
  }
  FAIL("no sample case for ", file);
  return all_samples().front();
}

Batch make_batch(const SampleCase& sample, uint32_t lanes) {
  Batch batch;
  batch.lanes = lanes;
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    const LaneWords words = sample.lane_inputs(lanes, lane);
    if (batch.inputs.empty()) batch.inputs.resize(words.size());
    for (size_t p = 0; p < words.size(); ++p) {
      batch.inputs[p].insert(batch.inputs[p].end(), words[p].begin(), words[p].end());
    }
  }
  if (sample.uniforms) batch.uniforms = sample.uniforms();
  return batch;
}

std::string read_sample(const std::string& file) {
  const std::string path = std::string(AB_SOURCE_DIR) + "/samples/" + file;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    FAIL_CHECK("cannot read sample ", path);
    return {};
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Program load_sample(const std::string& file) {
  const std::string source = read_sample(file);
  Diagnostics diags(file, source);
  std::optional<Program> program = compile_source(source, file, diags);
  if (!program) FAIL("sample ", file, " does not compile:\n", diags.format());
  return std::move(*program);
}

int line_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  if (at == std::string::npos) return 0;
  int line = 1;
  for (size_t i = 0; i < at; ++i)
    line += text[i] == '\n';
  return line;
}

}  // namespace ab::testing
