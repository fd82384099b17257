// nuts_tree.ab by hand: NUTS-shaped control flow over a float[4] state. Every float operation is
// written in the order the .ab source states it (and the project builds with
// -ffp-contract=off), and the random draws happen in the same program order with the same
// per-lane Philox stream, so results equal the interpreter's bit for bit.
#include <bit>

#include "autobatch/numerics.h"
#include "bench/native.h"

namespace ab::bench {
namespace {

constexpr int kMaxDepth = 6;  // MAX_DEPTH in nuts_tree.ab
constexpr int kDim = 4;

struct Vec {
  float v[kDim];
};
struct State {
  Vec q, p;
};
struct Tree {
  State minus, plus;
  Vec proposal;
  int32_t size;
  bool stop;
};

// The language's dot: acc = 0, then acc + x[i] * y[i] in index order.
float dot(const Vec& x, const Vec& y) {
  float acc = 0.0f;
  for (int i = 0; i < kDim; ++i)
    acc = acc + x.v[i] * y.v[i];
  return acc;
}

State leapfrog(const State& s, float eps) {
  State next;
  Vec p_half;
  for (int i = 0; i < kDim; ++i)
    p_half.v[i] = s.p.v[i] - s.q.v[i] * (eps * 0.5f);
  for (int i = 0; i < kDim; ++i)
    next.q.v[i] = s.q.v[i] + p_half.v[i] * eps;
  for (int i = 0; i < kDim; ++i)
    next.p.v[i] = p_half.v[i] - next.q.v[i] * (eps * 0.5f);
  return next;
}

float energy(const State& s) {
  return 0.5f * (dot(s.q, s.q) + dot(s.p, s.p));
}

bool u_turn(const State& minus, const State& plus) {
  Vec span;
  for (int i = 0; i < kDim; ++i)
    span.v[i] = plus.q.v[i] - minus.q.v[i];
  return dot(span, minus.p) < 0.0f || dot(span, plus.p) < 0.0f;
}

Tree build_tree(const State& s, float direction, int32_t depth, float eps, float h0,
                LaneStream& rng) {
  if (depth == 0) {
    const State next = leapfrog(s, direction * eps);
    const bool diverged = energy(next) - h0 > 1000.0f;
    return Tree{next, next, next.q, 1, diverged};
  }
  const Tree first = build_tree(s, direction, depth - 1, eps, h0, rng);
  if (first.stop) return first;
  const State edge = direction < 0.0f ? first.minus : first.plus;
  const Tree second = build_tree(edge, direction, depth - 1, eps, h0, rng);
  Tree tree = first;
  if (direction < 0.0f)
    tree.minus = second.minus;
  else
    tree.plus = second.plus;
  if (rng.uniform() * static_cast<float>(first.size + second.size) <
      static_cast<float>(second.size))
    tree.proposal = second.proposal;
  tree.size = first.size + second.size;
  tree.stop = second.stop || u_turn(tree.minus, tree.plus);
  return tree;
}

Vec transition(const Vec& q0, float eps, LaneStream& rng) {
  State start;
  start.q = q0;
  for (int i = 0; i < kDim; ++i)
    start.p.v[i] = rng.normal();
  const float h0 = energy(start);
  Tree tree{start, start, q0, 1, false};
  for (int32_t depth = 0; depth < kMaxDepth; ++depth) {
    float direction = 1.0f;
    if (rng.uniform() < 0.5f) direction = -1.0f;
    const State edge = direction < 0.0f ? tree.minus : tree.plus;
    const Tree sub = build_tree(edge, direction, depth, eps, h0, rng);
    if (sub.stop) break;
    if (rng.uniform() * static_cast<float>(tree.size) < static_cast<float>(sub.size))
      tree.proposal = sub.proposal;
    if (direction < 0.0f)
      tree.minus = sub.minus;
    else
      tree.plus = sub.plus;
    tree.size += sub.size;
    if (u_turn(tree.minus, tree.plus)) break;
  }
  return tree.proposal;
}

}  // namespace

void native_nuts_tree(const Batch& batch, uint64_t seed, uint32_t lane, uint32_t* out) {
  Vec q;
  for (int i = 0; i < kDim; ++i)
    q.v[i] = std::bit_cast<float>(batch.inputs[0][size_t{lane} * kDim + i]);
  const float eps = std::bit_cast<float>(batch.inputs[1][lane]);
  const auto iterations = static_cast<int32_t>(batch.inputs[2][lane]);
  LaneStream rng{seed, lane};
  for (int32_t i = 0; i < iterations; ++i)
    q = transition(q, eps, rng);
  for (int i = 0; i < kDim; ++i)
    out[i] = std::bit_cast<uint32_t>(q.v[i]);
}

}  // namespace ab::bench
