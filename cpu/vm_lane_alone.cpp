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
    if (!b.run || product_terms(b) > 0) return plan;
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

namespace {

void copy_in(const LaneAlonePlan& plan, const BatchFrames& frames, uint32_t lane, uint32_t* one) {
  for (const BatchOp::Part& p : plan.in)
    for (uint32_t k = 0; k < p.words; ++k)
      one[p.offset + k] = frames.at(p.offset + k, lane);
}

void copy_out(const LaneAlonePlan& plan, const BatchFrames& frames, uint32_t lane,
              const uint32_t* one) {
  for (const BatchOp::Part& p : plan.out)
    for (uint32_t k = 0; k < p.words; ++k)
      frames.at(p.offset + k, lane) = one[p.offset + k];
}

}  // namespace

std::vector<uint32_t> run_lanes_alone(const LaneAlonePlan& plan, const std::vector<BatchOp>& ops,
                                      const BatchFrames& frames, std::vector<uint32_t>& lanes,
                                      std::vector<uint32_t>& scratch, const UniformData& uniforms) {
  const size_t words = scratch.size() / kLaneAloneGroup;
  std::vector<uint32_t> declined;
  size_t kept = 0;
  const uint32_t zero = 0;
  const LaneSet set{&zero, 1, 0, true};
  for (size_t first = 0; first < lanes.size(); first += kLaneAloneGroup) {
    // The group's lanes still running, each with its frame.
    uint32_t group[kLaneAloneGroup];
    uint32_t* frame[kLaneAloneGroup];
    size_t n = std::min(kLaneAloneGroup, lanes.size() - first);
    for (size_t g = 0; g < n; ++g) {
      group[g] = lanes[first + g];
      frame[g] = scratch.data() + g * words;
      copy_in(plan, frames, group[g], frame[g]);
    }
    for (const BatchOp& b : ops) {
      if (b.read_in_place) continue;  // its reader reads its words where they come from
      if (sum_in_frames(b, frame, n, uniforms)) continue;
      size_t live = 0;
      for (size_t g = 0; g < n; ++g) {
        if (!b.run(b, {frame[g], 1}, set, uniforms)) {
          declined.push_back(group[g]);
          continue;
        }
        group[live] = group[g];
        frame[live++] = frame[g];
      }
      n = live;
    }
    for (size_t g = 0; g < n; ++g) {
      copy_out(plan, frames, group[g], frame[g]);
      lanes[kept++] = group[g];
    }
  }
  lanes.resize(kept);
  return declined;
}

}  // namespace ab
