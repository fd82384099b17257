// Per-lane counter-based random numbers: Philox4x32-10 (Salmon et al., SC 2011).
//
// Draw k of lane L under seed S is philox(counter = {k_lo, k_hi, L, 0}, key = {S_lo, S_hi}); a
// lane advances its draw counter by one per uniform() or normal() in program order, so a lane's
// numbers do not depend on the backend, the schedule, the batch size or the lane's neighbours.
// The GLSL code generator emits the same function (see its prelude).
#pragma once

#include <array>
#include <cstdint>

namespace ab {

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// A float in [0, 1): the top 24 bits of the first output word, scaled by 2^-24.
float random_uniform(uint64_t seed, uint32_t lane, uint64_t draw);
// A standard normal: Box-Muller over the first two output words of the same draw.
float random_normal(uint64_t seed, uint32_t lane, uint64_t draw);

}  // namespace ab
