//! The product kernel (docs/engine.md, "Matrix products"): `dst = a @ b` for every lane waiting
//! at one product block (codegen/product_blocks.h), one invocation per lane, a uniform operand
//! shared by the workgroup's lanes through shared memory in tiles of AB_PRODUCT_TILE rows (or
//! columns) by AB_PRODUCT_BLOCK summed terms. Every output element is the language's sum
//! (ir/ops.h, matrix_words): per block of AB_PRODUCT_BLOCK terms a partial from +0 adding
//! rounded products in order, the partials added in order to a total from +0, so the bits are
//! the interpreter's. The work is the pairs (output tile, summation block), tile-major; a
//! dispatch takes the pairs [AB_PRODUCT_FIRST, AB_PRODUCT_END) (a device that caps a dispatch's
//! loop iterations gets several dispatches), keeping an unfinished total in the result's words.
//! In the local schedule's round (AB_PRODUCT_LANES_ROUND) the one ending at the last pair moves
//! the lanes on (their step, their PC) or, out of step budget, faults them at the block as every
//! backend does; in the global schedule's step (AB_PRODUCT_LANES_MASKED or _LISTED) it serves the
//! chosen block's lanes only and leaves the step, the jump and the fault to the step kernel that
//! follows, whose code for the block is the jump alone. Compiled at run time after the float
//! controls and ab_common.glsl (codegen/product_blocks.h, product_kernel_glsl); it depends on no
//! program. Embedded at build time (engine/schedules/entry_texts.h).
shared float ab_tile[AB_PRODUCT_TILE * AB_PRODUCT_BLOCK];
shared uint ab_any_here;

#define AB_PW(i) P.product[i]

float ab_operand(bool uniform_word, uint base, uint index, uint lane) {
  return uintBitsToFloat(uniform_word ? uni.w[base + index]
                                      : state.w[(base + index) * P.lanes + lane]);
}

// The lane invocation i serves, or AB_NO_BLOCK: every lane of the batch, or the i-th of the
// global step's list, read as ab_entry_global_compacted.glsl reads it.
uint ab_product_lane(uint i) {
  if (AB_PW(AB_PRODUCT_LANES) != AB_PRODUCT_LANES_LISTED) return i < P.lanes ? i : AB_NO_BLOCK;
  const bool lists = ctrl.w[AB_CTRL_LISTS] != 0u;
  if (lists ? i >= ctrl.w[AB_CTRL_ACTIVE] : i >= ctrl.w[AB_CTRL_LIST_LEN]) return AB_NO_BLOCK;
  return list.w[lists ? ctrl.w[AB_CTRL_LIST_READ] * P.lanes + i : i];
}

void main() {
  const uint lane = ab_product_lane(gl_GlobalInvocationID.x), L = P.lanes;
  const uint block_id = AB_PW(AB_PRODUCT_BLOCK_ID);
  const bool round = AB_PW(AB_PRODUCT_LANES) == AB_PRODUCT_LANES_ROUND;
  const uint m = AB_PW(AB_PRODUCT_M), k = AB_PW(AB_PRODUCT_K), p = AB_PW(AB_PRODUCT_P);
  const bool a_uniform = AB_PW(AB_PRODUCT_A_UNIFORM) != 0u;
  const bool b_uniform = AB_PW(AB_PRODUCT_B_UNIFORM) != 0u;
  const uint a_base = AB_PW(AB_PRODUCT_A_BASE), b_base = AB_PW(AB_PRODUCT_B_BASE);
  const uint dst = AB_PW(AB_PRODUCT_DST);
  const bool tile_b = AB_PW(AB_PRODUCT_TILE_B) != 0u;
  const bool here = lane < L && state.w[AB_SLOT_PC * L + lane] == block_id &&
                    (round || ctrl.w[AB_CTRL_BLOCK] == block_id);
  const bool run = here && AB_STEP_ALLOWED(state.w[AB_SLOT_STEPS * L + lane], P.max_steps);
  if (gl_LocalInvocationIndex == 0u) ab_any_here = 0u;
  barrier();
  if (run) ab_any_here = 1u;
  barrier();
  // The tiled index f runs over a's rows (b's columns with tile_b), the other index o over b's
  // columns (a's rows): output (f, o) is dst word f * p + o (o * p + f).
  const uint tiled = tile_b ? p : m, other = tile_b ? m : p;
  const uint blocks = (k + AB_PRODUCT_BLOCK - 1u) / AB_PRODUCT_BLOCK;
  const uint tiles = (tiled + AB_PRODUCT_TILE - 1u) / AB_PRODUCT_TILE;
  const bool tile_uniform = tile_b ? b_uniform : a_uniform;
  const float zero = uintBitsToFloat(P.zero);  // +0 the driver cannot fold (ab_common.glsl)
  const uint first = AB_PW(AB_PRODUCT_FIRST), end = AB_PW(AB_PRODUCT_END);
  if (ab_any_here != 0u) {
    float total[AB_PRODUCT_TILE];
    float lane_block[AB_PRODUCT_BLOCK];
    for (uint q = first; q < end; ++q) {
      const uint kb = q % blocks, to = q / blocks, o = to % other, t = to / other;
      const uint k0 = kb * AB_PRODUCT_BLOCK, kn = min(uint(AB_PRODUCT_BLOCK), k - k0);
      const uint f0 = t * AB_PRODUCT_TILE, fn = min(uint(AB_PRODUCT_TILE), tiled - f0);
      if (tile_uniform) {  // the workgroup's tile of the uniform operand
        barrier();          // every lane is done with the previous pair's tile
        for (uint i = gl_LocalInvocationIndex; i < AB_PRODUCT_TILE * AB_PRODUCT_BLOCK;
             i += AB_GROUP_SIZE) {
          const uint r = i / AB_PRODUCT_BLOCK, kk = i % AB_PRODUCT_BLOCK;
          float v = 0.0;
          if (r < fn && kk < kn)
            v = tile_b ? ab_operand(true, b_base, (k0 + kk) * p + f0 + r, 0u)
                       : ab_operand(true, a_base, (f0 + r) * k + k0 + kk, 0u);
          ab_tile[i] = v;
        }
        barrier();
      }
      if (run) {
        if (q == first || kb == 0u)  // a tile's totals start at +0, or where a dispatch left them
          for (uint r = 0u; r < fn; ++r) {
            const uint word_at = tile_b ? o * p + f0 + r : (f0 + r) * p + o;
            total[r] = kb == 0u ? zero : uintBitsToFloat(state.w[(dst + word_at) * L + lane]);
          }
        // This lane's words of the other operand for the block: a's row o, or b's column o.
        for (uint kk = 0u; kk < kn; ++kk)
          lane_block[kk] = tile_b ? ab_operand(a_uniform, a_base, o * k + k0 + kk, lane)
                                  : ab_operand(b_uniform, b_base, (k0 + kk) * p + o, lane);
        for (uint r = 0u; r < fn; ++r) {
          precise float partial = zero;
          for (uint kk = 0u; kk < kn; ++kk) {
            float tiled_word;
            if (tile_uniform)
              tiled_word = ab_tile[r * AB_PRODUCT_BLOCK + kk];
            else
              tiled_word = tile_b ? ab_operand(false, b_base, (k0 + kk) * p + f0 + r, lane)
                                  : ab_operand(false, a_base, (f0 + r) * k + k0 + kk, lane);
            // a's word times b's, as matrix_words multiplies them
            precise float term = tile_b ? lane_block[kk] * tiled_word : tiled_word * lane_block[kk];
            partial = partial + term;
          }
          precise float sum = total[r] + partial;
          total[r] = sum;
        }
        if (kb + 1u == blocks || q + 1u == end)
          for (uint r = 0u; r < fn; ++r) {
            const uint word_at = tile_b ? o * p + f0 + r : (f0 + r) * p + o;
            state.w[(dst + word_at) * L + lane] = floatBitsToUint(total[r]);
          }
      }
    }
  }
  if (!round || !here || end != tiles * other * max(blocks, 1u)) return;
  if (run) {  // the block is done: the lane's step, and its jump
    state.w[AB_SLOT_STEPS * L + lane] += 1u;
    state.w[AB_SLOT_PC * L + lane] = AB_PW(AB_PRODUCT_NEXT);
  } else {  // out of step budget before the block (AB_STEP_ALLOWED), as the lane kernels fault
    state.w[AB_SLOT_FAULT * L + lane] = AB_FAULT_STEP_BUDGET;
    state.w[AB_SLOT_FAULT_BLOCK * L + lane] = block_id;
    state.w[AB_SLOT_FAULT_OP * L + lane] = AB_NO_BLOCK;
    state.w[AB_SLOT_FAULT_STEP * L + lane] = state.w[AB_SLOT_STEPS * L + lane];
    state.w[AB_SLOT_PC * L + lane] = P.exit_pc;
  }
}
