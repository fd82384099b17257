// Shared between the hand-written GLSL kernels, the generated GLSL and the C++ host: the words of
// the control buffer, the per-lane state slots, the fault codes, the heuristic ids, the step
// budget rule, the descriptor bindings and the push constants. Plain #defines so that one file
// serves both languages; the C++ side takes its enums from them (ir/ops.h's Fault, ir/run.h's
// Heuristic) or checks its structs against them with static_asserts (engine/device/kernels.h's
// PushConstants), so a drift fails the build.
#ifndef AB_LAYOUT_H
#define AB_LAYOUT_H

// ---- control buffer (binding AB_BIND_CTRL), in 32-bit words ----
#define AB_CTRL_BLOCK 0     // block chosen for the current step; AB_NO_BLOCK when none
#define AB_CTRL_DONE 1      // 1 once no lane is live
#define AB_CTRL_STEPS_LO 2  // scheduler steps taken (64-bit)
#define AB_CTRL_STEPS_HI 3
#define AB_CTRL_TRACE_LEN 4     // trace entries written since the host last reset it
#define AB_CTRL_ACTIVE 5        // lanes waiting at the chosen block (they all run it)
#define AB_CTRL_LIST_LEN 6      // compaction: lanes appended to the active list so far
#define AB_CTRL_NOT_FINISHED 7  // local schedule: some lane is still live after the dispatch
#define AB_CTRL_INDIRECT_X 8    // indirect dispatch arguments for the compacted step
#define AB_CTRL_INDIRECT_Y 9
#define AB_CTRL_INDIRECT_Z 10
#define AB_CTRL_UTIL_LO 11  // sum over steps of 2^24 * active / live (64-bit)
#define AB_CTRL_UTIL_HI 12
#define AB_CTRL_GROUP_STEPS 13      // local schedule: group steps taken in this dispatch (summed)
#define AB_CTRL_LANE_ITERATIONS 14  // local: group steps summed over the lanes busy in them
#define AB_CTRL_LANE_SLOTS 15       // local: group steps times the group's lanes
#define AB_CTRL_UNFIT 16            // global/fused: the batch did not fit the kernel's subgroup
// global/fused: steps taken in this submission (a split program's parts share P.budget)
#define AB_CTRL_BUDGET_USED 17
// global/compacted with per-block lane lists (AB_CTRL_LISTS = 1): the list region the current
// step reads, the region no block holds (XOR exit_pc, so that a zeroed buffer means region
// exit_pc), and the subgroups (invocations without ballot) of the step done so far, so that the
// last one picks the next block.
#define AB_CTRL_LIST_READ 18
#define AB_CTRL_LIST_SPARE 19
#define AB_CTRL_STEP_DONE 20
#define AB_CTRL_LISTS 21  // 1: per-block lane lists; 0: the compaction pass lists the lanes
// With lists: which of the two sets of per-block indirect arguments the next pick writes.
#define AB_CTRL_ARGS_SET 22
#define AB_CTRL_HEADER_WORDS 24
// After the header: counts[exit_pc] (lanes waiting per block; with lists, each list's length),
// block_exec[exit_pc], the trace, two words (block, active) per step, then the list map: word b
// is the list region of block b XOR b (a zeroed buffer maps block b to region b); then two sets
// of indirect-dispatch arguments, three words per block, for the step kernels specialized to
// one block: only the chosen block's are non-zero.
#define AB_CTRL_COUNTS AB_CTRL_HEADER_WORDS

#define AB_NO_BLOCK 0xFFFFFFFFu
// The specialization constant of the global/compacted step kernel: the one block it runs, or
// AB_NO_BLOCK for the block the pick chose (AB_CTRL_BLOCK).
#define AB_SPEC_ONLY_BLOCK 0

// ---- per-lane state (binding AB_BIND_STATE): slot s of lane l is word s * lanes + l ----
#define AB_SLOT_PC 0
#define AB_SLOT_PC_SP 1  // entries on the PC stack (the exit PC at the bottom counts)
#define AB_SLOT_STEPS 2  // blocks this lane has run
#define AB_SLOT_DRAWS 3  // random draws this lane has made
#define AB_SLOT_FAULT 4  // Fault code (0 = none)
#define AB_SLOT_FAULT_BLOCK 5
#define AB_SLOT_FAULT_OP 6  // op index in the block; AB_NO_BLOCK for the terminator or entry
#define AB_SLOT_FAULT_STEP 7
#define AB_SLOT_CALLS 8
#define AB_SLOT_MAX_DEPTH 9
#define AB_SLOT_EMITTED 10  // records in this lane's stream since the host last drained it
#define AB_SLOT_PARKED 11   // 1 + the block a lane with a full stream waits at; 0 = not parked
// An index_out_of_range fault's cause (ir/exec.h's IndexFault): which dynamic index of the op's
// path, and its raw word.
#define AB_SLOT_FAULT_INDEX 12
#define AB_SLOT_FAULT_VALUE 13
#define AB_FIXED_SLOTS 14  // then a stack pointer per Stacked variable, then variables' words

// ---- fault codes (AB_SLOT_FAULT), the values of ir/ops.h's Fault ----
#define AB_FAULT_NONE 0u
#define AB_FAULT_STACK_OVERFLOW 1u
#define AB_FAULT_DIVISION_BY_ZERO 2u
#define AB_FAULT_INDEX_OUT_OF_RANGE 3u
#define AB_FAULT_ASSERT_FAILED 4u
#define AB_FAULT_STEP_BUDGET 5u
#define AB_FAULT_SHARD_FAILED 6u  // set by the host alone: a shard's device or process failed
#define AB_FAULT_CODES 7u         // one more than the largest code

// ---- block-picking heuristics (P.heuristic), the values of ir/run.h's Heuristic ----
#define AB_HEURISTIC_MIN_PC 0u      // the waiting block with the smallest PC
#define AB_HEURISTIC_MOST_LANES 1u  // the block with the most lanes waiting (ties: smallest PC)

// ---- the step budget (P.max_steps), checked before every block by every backend ----
// A lane that has run `steps` blocks may run another; otherwise it faults with
// AB_FAULT_STEP_BUDGET at the block it waits at.
#define AB_STEP_ALLOWED(steps, max_steps) ((steps) < (max_steps))

// ---- descriptor bindings (set 0) ----
#define AB_BIND_CTRL 0
#define AB_BIND_STATE 1
#define AB_BIND_LIST 2
#define AB_BIND_UNIFORMS 3
#define AB_BIND_ARENA0 4  // stack arenas AB_BIND_ARENA0 .. AB_BIND_ARENA0 + AB_ARENAS - 1
#define AB_ARENAS 8
// The output stream of `emit`: record r of lane l, word k at (r * lanes + l) * words + k, for
// r below P.stream_cap; the host drains it between submissions.
#define AB_BIND_STREAM (AB_BIND_ARENA0 + AB_ARENAS)
// Banks (codegen/state_layout.h, Banks): a lane state or an arena larger than one binding may
// hold spans several bindings of its buffer. Bank 0 of the state is AB_BIND_STATE, banks 1 ..
// AB_STATE_BANKS - 1 follow; window 0 of arena a is AB_BIND_ARENA0 + a, its windows 1 ..
// AB_ARENA_WINDOWS - 1 at AB_BIND_ARENA_WINDOW1 + a * (AB_ARENA_WINDOWS - 1) + (window - 1).
// 32 bindings in all: lavapipe's maxPerStageDescriptorStorageBuffers. A device that binds fewer
// gets the first of them only (VulkanProgram::Impl::bindings), and so fewer banks.
#define AB_STATE_BANKS 4
#define AB_ARENA_WINDOWS 3
#define AB_BIND_STATE_BANK1 (AB_BIND_STREAM + 1)
#define AB_BIND_ARENA_WINDOW1 (AB_BIND_STATE_BANK1 + AB_STATE_BANKS - 1)
#define AB_BINDINGS (AB_BIND_ARENA_WINDOW1 + AB_ARENAS * (AB_ARENA_WINDOWS - 1))

// ---- push constants (`Params P` in ab_common.glsl, PushConstants in engine/device/kernels.h) ----
// Byte offsets of the 32-bit members; the GLSL block places each member at its offset and the C++
// struct static_asserts its own against them.
#define AB_PUSH_LANES 0
#define AB_PUSH_EXIT_PC 4
#define AB_PUSH_DEPTH 8
#define AB_PUSH_MAX_STEPS 12
#define AB_PUSH_HEURISTIC 16
#define AB_PUSH_TRACE_CAP 20
#define AB_PUSH_SEED_LO 24
#define AB_PUSH_SEED_HI 28
#define AB_PUSH_BUDGET 32
#define AB_PUSH_ZERO 36
#define AB_PUSH_STREAM_CAP 40
#define AB_PUSH_FIRST_LANE 44
#define AB_PUSH_BYTES 48
// The product kernel's words after them (shaders/ab_product.glsl, ProductPush in
// engine/device/kernels.h): which product block it runs and the range of its work this dispatch
// takes. The pipeline layout's range covers them, so every kernel shares one layout.
#define AB_PUSH_PRODUCT AB_PUSH_BYTES
#define AB_PRODUCT_BLOCK_ID 0  // the product block; its lanes wait at it
#define AB_PRODUCT_NEXT 1      // the block its jump goes to
#define AB_PRODUCT_M 2         // a is m x k, b is k x p, row-major (ir/ops.h, MatrixShape)
#define AB_PRODUCT_K 3
#define AB_PRODUCT_P 4
#define AB_PRODUCT_A_BASE 5  // first uniform word, or first state slot
#define AB_PRODUCT_A_UNIFORM 6
#define AB_PRODUCT_B_BASE 7
#define AB_PRODUCT_B_UNIFORM 8
#define AB_PRODUCT_DST 9      // the result's first state slot
#define AB_PRODUCT_TILE_B 10  // 1: the tiles are b's columns (b uniform, a not); 0: a's rows
#define AB_PRODUCT_FIRST 11   // the (tile, block) pairs this dispatch takes: [first, end)
#define AB_PRODUCT_END 12
#define AB_PRODUCT_LANES 13  // which lanes and who moves them on: AB_PRODUCT_LANES_* below
#define AB_PRODUCT_WORDS 14
// AB_PRODUCT_LANES: the local schedule's round (every lane of the batch waiting at the block; the
// kernel takes the lanes' step and jump), or the global schedule's step when it chose the block
// (its lanes, every lane tested as the masked step kernel does or those the step's list holds as
// the compacted step kernel reads it; the step kernel then takes the step and the jump).
#define AB_PRODUCT_LANES_ROUND 0
#define AB_PRODUCT_LANES_MASKED 1
#define AB_PRODUCT_LANES_LISTED 2
#define AB_PUSH_RANGE_BYTES (AB_PUSH_PRODUCT + 4 * AB_PRODUCT_WORDS)
// A product's summation block (ir/ops.h, kProductBlock: docs/language.md, "Matrix products") and
// the rows (or columns) of a uniform operand one workgroup shares through shared memory.
#define AB_PRODUCT_BLOCK 64
#define AB_PRODUCT_TILE 16

#define AB_GROUP_SIZE 64  // invocations per workgroup of every kernel

#endif
