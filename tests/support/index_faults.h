// A program whose lanes miss an array in each way an access can: named arrays, a struct's field,
// a constant then a dynamic index, two dynamic indices, a uniform, a uint index and a temporary
// (tests/ir/faults_test.cpp checks the words; tests/engine/engine_semantics_test.cpp checks
// every schedule against the interpreter). Lane 9 finishes; the others fault.
#pragma once

#include "autobatch/batch.h"
#include "autobatch/numerics.h"

namespace ab::testing {

inline constexpr const char* kIndexFaultsSource = R"(struct Params { mu: float, eta: float[3] }
uniform table: float[4];
fn main(kind: int, k: int) -> float {
  let q = [1.0, 2.0, 3.0];
  let m = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]];
  let p = Params { mu: 0.5, eta: q };
  if kind == 0 { return q[k]; }
  if kind == 1 { return p.eta[k]; }
  if kind == 2 { return m[1][k]; }
  if kind == 3 { return m[k - 4][k]; }
  if kind == 4 { return table[k]; }
  if kind == 5 { return q[uint(k)]; }
  return q[k] + [q[0], 7.0][k];
}
)";

inline Batch index_faults_batch() {
  Batch batch;
  batch.lanes = 11;
  batch.inputs = {{0, 0, 1, 2, 3, 3, 4, 5, 5, 6, 6}, {3, ~0u, 7, 2, 5, 9, 4, 3, ~0u, 1, 2}};
  batch.uniforms = {{float_bits(1.0f), float_bits(2.0f), float_bits(3.0f), float_bits(4.0f)}};
  return batch;
}

}  // namespace ab::testing
