// collatz.ab by hand: the number of Collatz steps from n down to 1 (inputs are >= 1).
#include "bench/native.h"

namespace ab::bench {

void native_collatz(const Batch& batch, uint64_t, uint32_t lane, uint32_t* out) {
  int32_t x = static_cast<int32_t>(batch.inputs[0][lane]);
  int32_t steps = 0;
  while (x != 1) {
    // Wrapping 3x + 1, as the language's int does; truncating division and remainder.
    if (x % 2 == 0)
      x = x / 2;
    else
      x = static_cast<int32_t>(3u * static_cast<uint32_t>(x) + 1u);
    ++steps;
  }
  out[0] = static_cast<uint32_t>(steps);
}

}  // namespace ab::bench
