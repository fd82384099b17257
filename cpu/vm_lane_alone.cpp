#include "cpu/vm_lane_alone.h"

#include <algorithm>

namespace ab {
namespace {

void add_range(std::vector<BatchOp::Part>& parts, uint32_t offset, uint32_t words) {
  for (const BatchOp::Part& p : parts)
    if (p.offset == offset) return;
  parts.push_back({offset, words});
}

}  // namespace

LaneAlonePlan plan_lane_alone(const LoweredBlock& block, const LoweredProgram& program,
                              const std::vector<BatchOp>& ops, const uint32_t* offset) {
  LaneAlonePlan plan;
  const Types& types = program.types();
  uint32_t widest = 0;
  for (const BatchOp& b : ops) {
    if (!b.run) return plan;
    plan.array_words += b.words;
    widest = std::max(widest, b.words);
    for (VarId v : b.touched) {
      if (program.vars[v].storage == Storage::Temp) continue;
      const uint32_t words = types.words(program.vars[v].type);
      add_range(plan.in, offset[v], words);
      if (v == b.op->dst) add_range(plan.out, offset[v], words);
    }
  }
  const VarId cond = block.term.kind == Terminator::Kind::Branch ? block.term.cond : -1;
  if (cond >= 0) add_range(plan.out, offset[cond], types.words(program.vars[cond].type));
  size_t copied = 0;
  for (const auto* parts : {&plan.in, &plan.out})
    for (const BatchOp::Part& p : *parts)
      copied += p.words;
  plan.eligible = widest >= kLaneAloneMinWords && copied * 8 <= plan.array_words;
  return plan;
}

bool prefer_lane_alone(const LaneAlonePlan& plan, const std::vector<uint32_t>& lanes) {
  if (!plan.eligible || lanes.empty()) return false;
  const auto [low, high] = std::minmax_element(lanes.begin(), lanes.end());
  const size_t span = size_t{*high} - *low + 1;
  return lanes.size() * 4 <= std::max<size_t>(span, 16) * 3;
}

namespace {

// The block for one lane; false, having written nothing to `frames`, when a kernel declines.
bool run_lane_alone(const LaneAlonePlan& plan, const std::vector<BatchOp>& ops,
                    const BatchFrames& frames, uint32_t lane, std::vector<uint32_t>& scratch,
                    const UniformData& uniforms) {
  const BatchFrames one{scratch.data(), 1};
  for (const BatchOp::Part& p : plan.in)
    for (uint32_t k = 0; k < p.words; ++k)
      scratch[p.offset + k] = frames.at(p.offset + k, lane);
  const uint32_t first = 0;
  const LaneSet set{&first, 1, 0, true};
  for (const BatchOp& b : ops)
    if (!b.run(b, one, set, uniforms)) return false;
  for (const BatchOp::Part& p : plan.out)
    for (uint32_t k = 0; k < p.words; ++k)
      frames.at(p.offset + k, lane) = scratch[p.offset + k];
  return true;
}

}  // namespace

std::vector<uint32_t> run_lanes_alone(const LaneAlonePlan& plan, const std::vector<BatchOp>& ops,
                                      const BatchFrames& frames, std::vector<uint32_t>& lanes,
                                      std::vector<uint32_t>& scratch, const UniformData& uniforms) {
  std::vector<uint32_t> declined;
  size_t kept = 0;
  for (uint32_t lane : lanes) {
    if (run_lane_alone(plan, ops, frames, lane, scratch, uniforms))
      lanes[kept++] = lane;
    else
      declined.push_back(lane);
  }
  lanes.resize(kept);
  return declined;
}

}  // namespace ab
