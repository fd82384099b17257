#include "ir/random.h"

#include "ir/float_math.h"

#include <cmath>

namespace ab {
namespace {

std::array<uint32_t, 4> draw_words(uint64_t seed, uint32_t lane, uint64_t draw) {
  return philox4x32_10({static_cast<uint32_t>(draw), static_cast<uint32_t>(draw >> 32), lane, 0u},
                       {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

constexpr float kTwoToMinus24 = 1.0f / 16777216.0f;

}  // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
    k[0] += kWeyl0;
    k[1] += kWeyl1;
  }
  return c;
}

float random_uniform(uint64_t seed, uint32_t lane, uint64_t draw) {
  return static_cast<float>(draw_words(seed, lane, draw)[0] >> 8) * kTwoToMinus24;
}

float random_normal(uint64_t seed, uint32_t lane, uint64_t draw) {
  const auto w = draw_words(seed, lane, draw);
  const float u1 = static_cast<float>((w[0] >> 8) + 1u) * kTwoToMinus24;  // (0, 1]: log is finite
  const float u2 = static_cast<float>(w[1] >> 8) * kTwoToMinus24;
  return std::sqrt(-2.0f * ab_log(u1)) * ab_cos(6.2831853f * u2);
}

}  // namespace ab
