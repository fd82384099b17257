// Matrix products and the one-array reductions (docs/language.md, "Matrix products"): the
// interpreter computes each product element in the documented summation order, bit for bit
// against an independent float loop written from the documentation, and the vm agrees.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cpu/interp.h"
#include "cpu/vm.h"
#include "ir/ops.h"
#include "support/result_compare.h"
#include "support/samples.h"

namespace ab {
namespace {

// One lane: runs `source`'s main on interp and vm, checks they agree, returns interp's outputs.
std::vector<uint32_t> run_one(const std::string& source,
                              std::vector<std::vector<uint32_t>> inputs) {
  const testing::CompiledProgram c = testing::compile_program(source, "products.ab");
  Batch batch;
  batch.lanes = 1;
  batch.inputs = std::move(inputs);
  const RunResult interp = run_interp(c.program, c.entry, batch, {});
  REQUIRE(interp.errors.empty());
  const RunResult vm = run_vm(c.lowered, batch, {});
  CHECK(testing::describe_difference(interp, vm).empty());
  return interp.outputs;
}

std::vector<uint32_t> words(const std::vector<float>& v) {
  std::vector<uint32_t> w;
  for (float f : v)
    w.push_back(float_bits(f));
  return w;
}

// The documented order, written here from docs/language.md: blocks of 64 terms, each a float
// partial sum from +0 of rounded products, the partials added in order to a total from +0.
float blocked_sum(const std::vector<float>& x, const std::vector<float>& y) {
  float total = 0.0f;
  for (size_t first = 0; first < x.size(); first += 64) {
    float partial = 0.0f;
    for (size_t k = first; k < std::min(first + 64, x.size()); ++k) {
      const float term = x[k] * y[k];
      partial = partial + term;
    }
    total = total + partial;
  }
  return total;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& f : v)
    f = d(gen);
  return v;
}

TEST_CASE("products: each element sums blocks of 64 terms, then the blocks, in order") {
  constexpr int K = 150;  // two full blocks and one of 22
  // Row 0 shows the blocks: 1e8 then 149 ones. In order, every 1 is lost against 1e8 (its ulp
  // is 8); in blocks, the second and third blocks' 64 and 22 survive: 1e8 + 64, then + 22
  // rounds to 1e8 + 88.
  std::vector<float> a0(K, 1.0f), v(K, 1.0f);
  v[0] = 1e8f;
  const std::vector<float> a1 = random_floats(K, 1), a2 = random_floats(K, 2);
  const std::vector<float> w = random_floats(K, 3);
  std::vector<uint32_t> a = words(a0);
  for (float f : a1)
    a.push_back(float_bits(f));
  const auto out = run_one("fn main(a: float[2][150], v: float[150]) -> float[2] { return a @ v; }",
                           {a, words(v)});
  REQUIRE(out.size() == 2);
  CHECK(bits_float(out[0]) == 100000088.0f);
  CHECK(out[0] == float_bits(blocked_sum(a0, v)));
  CHECK(out[1] == float_bits(blocked_sum(a1, v)));

  // v @ A: column sums over the rows, the same order over the 150 rows.
  std::vector<uint32_t> columns;  // A[150][2], A[k][0] = a1[k], A[k][1] = a2[k]
  for (int k = 0; k < K; ++k) {
    columns.push_back(float_bits(a1[k]));
    columns.push_back(float_bits(a2[k]));
  }
  const auto left =
      run_one("fn main(w: float[150], a: float[150][2]) -> float[2] { return w @ a; }",
              {words(w), columns});
  REQUIRE(left.size() == 2);
  CHECK(left[0] == float_bits(blocked_sum(w, a1)));
  CHECK(left[1] == float_bits(blocked_sum(w, a2)));

  // A @ B and transpose: (A @ transpose(A))[i][j] sums row i times row j.
  const auto gram =
      run_one("fn main(a: float[150][2]) -> float[2][2] { return transpose(a) @ a; }", {columns});
  REQUIRE(gram.size() == 4);
  CHECK(gram[0] == float_bits(blocked_sum(a1, a1)));
  CHECK(gram[1] == float_bits(blocked_sum(a1, a2)));
  CHECK(gram[2] == float_bits(blocked_sum(a2, a1)));
  CHECK(gram[3] == float_bits(blocked_sum(a2, a2)));
}

TEST_CASE("products: a term is a rounded product, then a rounded add (no fma)") {
  // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11, which cancels the first term
  // exactly; an fma would keep the 2^-24.
  const float e = 1.0f + std::ldexp(1.0f, -12), f = 1.0f + std::ldexp(1.0f, -11);
  const auto out = run_one("fn main(a: float[1][2], v: float[2]) -> float[1] { return a @ v; }",
                           {words({-1.0f, e}), words({f, e})});
  CHECK(bits_float(out[0]) == 0.0f);
}

TEST_CASE("products: dot is a product's element, so a row of a @ v is dot(row, v) at any length") {
  // 1e8 then 149 ones: one chain of adds would lose every 1 (1e8's ulp is 8); dot sums blocks of
  // 64 like a product, so the second and third blocks' 64 and 22 survive: 1e8 + 88.
  std::vector<float> ones(150, 1.0f), big_first(150, 1.0f);
  big_first[0] = 1e8f;
  const auto blocked =
      run_one("fn main(a: float[150], v: float[150]) -> float { return dot(a, v); }",
              {words(ones), words(big_first)});
  CHECK(bits_float(blocked.at(0)) == 100000088.0f);
  // Up to 64 terms, the single chain from +0.
  const auto chain =
      run_one("fn main(a: float[64], v: float[64]) -> float { return dot(a, v); }",
              {words(std::vector<float>(64, 1.0f)),
               words(std::vector<float>(big_first.begin(), big_first.begin() + 64))});
  CHECK(bits_float(chain.at(0)) == 1e8f);

  for (int k : {64, 150}) {
    CAPTURE(k);
    const std::vector<float> a = random_floats(3 * k, 4), v = random_floats(k, 5);
    const auto out =
        run_one(fmt::format("fn main(a: float[3][{0}], v: float[{0}]) -> float[6] {{\n"
                            "    let z = a @ v;\n"
                            "    return [z[0], z[1], z[2], dot(a[0], v), dot(v, a[1]), "
                            "dot(a[2], v)];\n"
                            "}}\n",
                            k),
                {words(a), words(v)});
    for (int i = 0; i < 3; ++i)
      CHECK(out[i] == out[3 + i]);
  }
}

TEST_CASE("products: max, min, log_sum_exp and mean of an array") {
  const float inf = std::numeric_limits<float>::infinity();
  const std::string source =
      "fn main(v: float[4]) -> float[4] { return [max(v), min(v), log_sum_exp(v), mean(v)]; }";
  auto run = [&](std::vector<float> v) {
    const auto out = run_one(source, {words(v)});
    return std::vector<float>{bits_float(out[0]), bits_float(out[1]), bits_float(out[2]),
                              bits_float(out[3])};
  };
  const auto plain = run({3.0f, 7.0f, -1.0f, 0.5f});
  CHECK(plain[0] == 7.0f);
  CHECK(plain[1] == -1.0f);
  CHECK(plain[2] ==
        doctest::Approx(7.0 + std::log1p(std::exp(-4.0) + std::exp(-8.0) + std::exp(-6.5)))
            .epsilon(1e-6));
  CHECK(plain[3] == 2.375f);
  // Shifted by the max: no overflow far above exp's range.
  CHECK(run({1000.0f, 1000.0f, -inf, 1000.0f})[2] ==
        doctest::Approx(1000.0 + std::log(3.0)).epsilon(1e-6));
  CHECK(run({-inf, -inf, -inf, -inf})[2] == -inf);
  CHECK(run({inf, 1.0f, -inf, 2.0f})[2] == inf);
  CHECK(std::isnan(run({1.0f, std::nanf(""), 2.0f, 3.0f})[2]));
  // int arrays: max and min only
  const auto ints =
      run_one("fn main(v: int[3]) -> int[2] { return [max(v), min(v)]; }", {{5u, 0xFFFFFFF9u, 2u}});
  CHECK(static_cast<int32_t>(ints[0]) == 5);
  CHECK(static_cast<int32_t>(ints[1]) == -7);
}

TEST_CASE("products: a product may overwrite its own operand (v = m @ v)") {
  const auto out = run_one(
      "fn main(m: float[2][2], v0: float[2]) -> float[2] {\n"
      "    var v = v0;\n"
      "    for k in 0..3 { v = m @ v; }\n"
      "    return v;\n"
      "}\n",
      {words({0.0f, 1.0f, 1.0f, 1.0f}), words({1.0f, 1.0f})});
  // Fibonacci: (1, 1) -> (1, 2) -> (2, 3) -> (3, 5)
  CHECK(bits_float(out[0]) == 3.0f);
  CHECK(bits_float(out[1]) == 5.0f);
}

}  // namespace
}  // namespace ab
