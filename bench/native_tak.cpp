// tak.ab by hand: the Takeuchi function, three recursive calls as another call's arguments.
#include "bench/native.h"

namespace ab::bench {
namespace {

int32_t tak(int32_t x, int32_t y, int32_t z) {
  if (y < x) return tak(tak(x - 1, y, z), tak(y - 1, z, x), tak(z - 1, x, y));
  return z;
}

}  // namespace

void native_tak(const Batch& batch, uint64_t, uint32_t lane, uint32_t* out) {
  out[0] = static_cast<uint32_t>(tak(static_cast<int32_t>(batch.inputs[0][lane]),
                                     static_cast<int32_t>(batch.inputs[1][lane]),
                                     static_cast<int32_t>(batch.inputs[2][lane])));
}

}  // namespace ab::bench
