// ackermann.ab by hand: the Ackermann function, a call nested in a call's argument.
#include "bench/native.h"

namespace ab::bench {
namespace {

int32_t ack(int32_t m, int32_t n) {
  if (m == 0) return static_cast<int32_t>(static_cast<uint32_t>(n) + 1u);
  if (n == 0) return ack(m - 1, 1);
  return ack(m - 1, ack(m, n - 1));
}

}  // namespace

void native_ackermann(const Batch& batch, uint64_t, uint32_t lane, uint32_t* out) {
  out[0] = static_cast<uint32_t>(ack(static_cast<int32_t>(batch.inputs[0][lane]),
                                     static_cast<int32_t>(batch.inputs[1][lane])));
}

}  // namespace ab::bench
