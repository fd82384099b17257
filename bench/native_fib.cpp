// fib.ab by hand: fib(n <= 1) = 1, two recursive calls per level.
#include "bench/native.h"

namespace ab::bench {
namespace {

int32_t fib(int32_t n) {
  if (n <= 1) return 1;
  // Wrapping addition, as the language's int does.
  return static_cast<int32_t>(static_cast<uint32_t>(fib(n - 1)) +
                              static_cast<uint32_t>(fib(n - 2)));
}

}  // namespace

void native_fib(const Batch& batch, uint64_t, uint32_t lane, uint32_t* out) {
  out[0] = static_cast<uint32_t>(fib(static_cast<int32_t>(batch.inputs[0][lane])));
}

}  // namespace ab::bench
