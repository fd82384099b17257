// The language's own numerics on the host, exactly as every backend computes them, so a host can
// reproduce what a program draws or computes bit for bit (the benchmark's native baselines do):
//
// Random numbers: per-lane, counter-based Philox4x32-10 (Salmon et al., SC 2011). Draw k of lane
// L under seed S (RunOptions::seed) is philox(counter = {k_lo, k_hi, L, 0}, key = {S_lo, S_hi});
// a lane advances its draw counter by one per uniform() or normal() call in program order, so its
// numbers do not depend on the backend, the schedule, the batch size or the lane's neighbours.
//
// Transcendental functions: exp, log, sin, cos, tanh and pow of the language (docs/language.md),
// one definition shared by the CPU backends and the generated kernels.
#pragma once

#include <array>
#include <cstdint>

namespace ab {

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// uniform(): a float in [0, 1), the top 24 bits of the first output word scaled by 2^-24.
float random_uniform(uint64_t seed, uint32_t lane, uint64_t draw);
// normal(): a standard normal, Box-Muller over the first two output words of the same draw.
float random_normal(uint64_t seed, uint32_t lane, uint64_t draw);

// The language's exp(), log(), sin(), cos(), tanh() and pow() on floats.
float ab_exp(float x);
float ab_log(float x);
float ab_sin(float x);
float ab_cos(float x);
float ab_tanh(float x);
float ab_pow(float x, float y);

// The special functions of the language (docs/language.md, "Special functions"), the same
// definitions as every backend's.
float ab_lgamma(float x);
float ab_digamma(float x);
float ab_trigamma(float x);
float ab_log1p(float x);
float ab_log1m(float x);  // ln(1 - x), Stan's log1m
float ab_expm1(float x);
float ab_log1p_exp(float x);
float ab_log_sum_exp(float a, float b);
float ab_erf(float x);
float ab_erfc(float x);
float ab_inv_logit(float x);

// The summation order of a matrix product (docs/language.md, "Matrix products"), the one
// definition that the interpreter (ir/ops.h, matrix_words), the vm, the generated kernels and the
// benchmark's native models follow: an element of a product sums its terms in blocks of
// kProductBlock consecutive terms, in order of the summed index; each block's partial sum starts
// at +0 and adds its terms in order (each a rounded product, then a rounded add: never an fma),
// and the element, starting at +0, adds the blocks' partials in order.
inline constexpr uint32_t kProductBlock = 64;

// Calls block(first, end) for each block of `count` terms, in order: [0, 64), [64, 128), ...
template <typename Block>
void for_each_product_block(uint32_t count, Block&& block) {
  for (uint32_t first = 0; first < count; first += kProductBlock)
    block(first, count - first < kProductBlock ? count : first + kProductBlock);
}

// One element of a product in that order: the sum over k < count of a(k) * b(k).
template <typename A, typename B>
float product_element(uint32_t count, A&& a, B&& b) {
  float total = 0.0f;
  for_each_product_block(count, [&](uint32_t first, uint32_t end) {
    float partial = 0.0f;
    for (uint32_t k = first; k < end; ++k)
      partial = partial + a(k) * b(k);
    total = total + partial;
  });
  return total;
}

}  // namespace ab
