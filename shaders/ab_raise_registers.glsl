//! ab_raise and AB_PC for Registers residency (codegen/glsl_codegen.h): the register-resident
//! twin of ab_raise_memory.glsl. Each AB_RS_<SLOT> stands for the private variable that holds
//! slot AB_SLOT_<SLOT> (glsl_codegen.cpp fills in the names). Embedded at build time
//! (codegen/shader_texts.h).

void ab_raise(uint lane, uint code, uint block, uint op, uint step) {
  AB_RS_FAULT = code;
  AB_RS_FAULT_BLOCK = block;
  AB_RS_FAULT_OP = op;
  AB_RS_FAULT_STEP = step;
  AB_RS_PC = P.exit_pc;
}
// An index_out_of_range fault: ab_raise's record plus which dynamic index and its word.
void ab_raise_index(uint lane, uint block, uint op, uint step, uint ordinal, uint value) {
  AB_RS_FAULT_INDEX = ordinal;
  AB_RS_FAULT_VALUE = value;
  ab_raise(lane, AB_FAULT_INDEX_OUT_OF_RANGE, block, op, step);
}
#define AB_PC(lane) AB_RS_PC
