//! ab_raise and AB_PC for Memory residency (codegen/glsl_codegen.h): a lane's fault record
//! and PC live in the state buffer. Embedded at build time (codegen/shader_texts.h).

void ab_raise(uint lane, uint code, uint block, uint op, uint step) {
  const uint L = P.lanes;
  state.w[AB_SLOT_FAULT * L + lane] = code;
  state.w[AB_SLOT_FAULT_BLOCK * L + lane] = block;
  state.w[AB_SLOT_FAULT_OP * L + lane] = op;
  state.w[AB_SLOT_FAULT_STEP * L + lane] = step;
  state.w[AB_SLOT_PC * L + lane] = P.exit_pc;
}
// An index_out_of_range fault: ab_raise's record plus which dynamic index and its word.
void ab_raise_index(uint lane, uint block, uint op, uint step, uint ordinal, uint value) {
  state.w[AB_SLOT_FAULT_INDEX * P.lanes + lane] = ordinal;
  state.w[AB_SLOT_FAULT_VALUE * P.lanes + lane] = value;
  ab_raise(lane, AB_FAULT_INDEX_OUT_OF_RANGE, block, op, step);
}
#define AB_PC(lane) state.w[AB_SLOT_PC * P.lanes + (lane)]
