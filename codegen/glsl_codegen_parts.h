// The pieces the GLSL code generator's files share (glsl_codegen.h is the interface):
//   glsl_codegen.cpp    a block's function (BlockEmitter) and the op spellings it uses;
//   glsl_lane_state.cpp where the generated code finds a lane's words (BankAddress, the registers
//                       of register residency, ab_load/ab_store, ab_raise);
//   glsl_sweep.cpp      the lane sweep, the local schedule per lane's entry point;
//   glsl_assembly.cpp   the program-level source: the header, the prelude, run_block, the loop
//                       counts and the entry points, put together by generate_glsl.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codegen/glsl_codegen.h"

namespace ab {

constexpr uint32_t kUnrollWords = 8;  // aggregates up to this size are unrolled, larger ones loop
// On a device that caps loops, a loop over this many words or more (its enclosing loops' trips
// counted) takes kLongLoopUnroll words an iteration (BlockEmitter::for_index): long arrays' loops
// pass lavapipe's loop cap eight times later; shorter loops, and other devices' code, are
// unchanged.
constexpr uint32_t kLongLoopWords = 1024;
constexpr uint32_t kLongLoopUnroll = 8;

// What a device with a loop limit (GlslTarget::loop_limit, lavapipe's) counts for a piece of
// code: `iterations` when lanes run it, at most, each loop's final test counted as one more and a
// switch as a loop of one pass (2); `statements` when the code is passed over with no lane
// active, as lavapipe does every branch it predicates (1 per loop statement).
struct LoopCount {
  uint64_t iterations = 0;
  uint64_t statements = 0;
};

// Register residency: the lane's fixed and stack-pointer slots live in private globals
// rs<slot> and each Register/Stacked variable's current value in rv<var>, loaded once per
// dispatch (ab_load) and written back at its end (ab_store).
std::string slot_register(uint32_t s);
std::string var_register(VarId v);
// Stack k's private copy (SourcePart::private_stack_depth).
std::string private_stack(int k);

// Every access of the generated code to the lane state and the stack arenas, under a run's bank
// plan (state_layout.h, Banks). With one binding each, the code of a layout without banks.
class BankAddress {
 public:
  explicit BankAddress(const Banks& banks) : b_(banks) {}
  const Banks& banks() const { return b_; }

  // The state word (an lvalue) of slot `s` plus `plus` (a GLSL uint expression, or "") of `lane`,
  // in bank `j` (that of s + plus: state_pieces); by default s's.
  std::string state(uint32_t s, const std::string& plus = "", int32_t j = -1) const {
    const uint32_t bank = j < 0 ? bank_of(s) : static_cast<uint32_t>(j);
    std::string row;
    if (plus.empty())
      row = fmt::format("{}u", s - first(bank));
    else if (s >= first(bank))
      row = fmt::format("({}u + uint({}))", s - first(bank), plus);
    else  // a value that starts in an earlier bank
      row = fmt::format("(uint({}) - {}u)", plus, first(bank) - s);
    return fmt::format("{}.w[{} * L + lane{}]", state_name(bank), row, delta(bank));
  }
  uint32_t bank_of(uint32_t s) const {
    return b_.state == 1 ? 0 : std::min(s / b_.state_slots, b_.state - 1);
  }
  // A slot the code computes (the GLSL uint expression `s`): a read, and a write statement.
  std::string state_get(const std::string& s) const {
    if (b_.state == 1) return fmt::format("state.w[{} * L + lane]", s);
    return fmt::format("ab_state_get({}, lane)", s);
  }
  std::string state_set(const std::string& s, const std::string& value) const {
    if (b_.state == 1) return fmt::format("state.w[{} * L + lane] = {};", s, value);
    return fmt::format("ab_state_set({}, lane, {});", s, value);
  }
  // The ranges [lo, hi) of the n words from slot s that share a bank.
  std::vector<std::pair<uint32_t, uint32_t>> state_pieces(uint32_t s, uint32_t n) const {
    std::vector<std::pair<uint32_t, uint32_t>> pieces;
    for (uint32_t lo = 0; lo < n;) {
      const uint32_t j = bank_of(s + lo);
      const uint32_t hi = j + 1 < b_.state ? std::min(n, first(j + 1) - s) : n;
      pieces.push_back({lo, hi});
      lo = hi;
    }
    return pieces;
  }
  // Word `g` (a GLSL uint expression) of arena a: a read, and a write statement.
  std::string arena_get(uint32_t a, const std::string& g) const {
    if (b_.arena == 1) return fmt::format("arena{}.w[{}]", a, g);
    return fmt::format("ab_arena{}_get({})", a, g);
  }
  std::string arena_set(uint32_t a, const std::string& g, const std::string& value) const {
    if (b_.arena == 1) return fmt::format("arena{}.w[{}] = {};", a, g, value);
    return fmt::format("ab_arena{}_set({}, {});", a, g, value);
  }

  // The bindings beyond the first of each buffer and the helpers the accesses above call (after
  // ab_common.glsl and the arenas' first bindings).
  std::string declarations(uint32_t arenas) const {
    std::string out;
    if (b_.state > 1) {
      std::string get, set;
      for (uint32_t j = 0; j < b_.state; ++j) {
        if (j > 0)
          out += fmt::format(
              "layout(set = 0, binding = AB_BIND_STATE_BANK1 + {}, std430) buffer StateBank{} {{ "
              "uint w[]; }} {};\n",
              j - 1, j, state_name(j));
        const std::string word =
            fmt::format("{}.w[(s - {}u) * L + lane{}]", state_name(j), first(j), delta(j));
        const std::string test =
            j + 1 < b_.state ? fmt::format("if (s < {}u) ", first(j + 1)) : std::string();
        get += fmt::format("  {}return {};\n", test, word);
        set += fmt::format("  {}{{ {} = w; return; }}\n", test, word);
      }
      out += "uint ab_state_get(uint s, uint lane) {\n  const uint L = P.lanes;\n" + get +
             "}\nvoid ab_state_set(uint s, uint lane, uint w) {\n  const uint L = P.lanes;\n" +
             set + "}\n";
    }
    if (b_.arena > 1) {
      uint32_t shift = 0;
      while ((1u << shift) < b_.window_words)
        ++shift;
      for (uint32_t a = 0; a < arenas; ++a) {
        std::string get, set;
        for (uint32_t j = 0; j < b_.arena; ++j) {
          if (j > 0)
            out += fmt::format(
                "layout(set = 0, binding = AB_BIND_ARENA_WINDOW1 + {}, std430) buffer "
                "Arena{}Window{} {{ uint w[]; }} {};\n",
                a * (AB_ARENA_WINDOWS - 1) + j - 1, a, j, window_name(a, j));
          const std::string test = j + 1 < b_.arena
                                       ? fmt::format("if (g < {}u) ", (j + 1) * b_.window_words)
                                       : std::string();
          const std::string word =
              fmt::format("{}.w[g - {}u]", window_name(a, j), j * b_.window_words);
          get += fmt::format("  {}return {};\n", test, word);
          set += fmt::format("  {}{{ {} = w; return; }}\n", test, word);
        }
        out += fmt::format(
            "uint ab_arena{0}_get(uint g) {{\n{1}}}\n"
            "void ab_arena{0}_set(uint g, uint w) {{\n{2}}}\n",
            a, get, set);
      }
    }
    return out;
  }

 private:
  uint32_t first(uint32_t j) const { return j * b_.state_slots; }
  static std::string state_name(uint32_t j) { return j == 0 ? "state" : fmt::format("state{}", j); }
  static std::string window_name(uint32_t a, uint32_t j) {
    return j == 0 ? fmt::format("arena{}", a) : fmt::format("arena{}_{}", a, j);
  }
  // What bank j's binding, starting at an aligned offset, has before its first slot.
  std::string delta(uint32_t j) const {
    if (j == 0 || b_.align_mask == 0) return "";
    return fmt::format(" + (({}u * L) & {}u)", first(j), b_.align_mask);
  }

  Banks b_;
};

// A source's first lines: the version and the float controls the target allows.
std::string float_controls_header(const GlslTarget& target);
// ab_layout.h, ab_common.glsl (as the hand-written kernels include them) and the uniform buffer.
std::string common_declarations();

// Fills in a piece of shaders/ (shader_texts.h): each name in `values` that stands as a whole
// identifier (AB_RS_<SLOT>: the register of slot AB_SLOT_<SLOT>), and each line holding only a
// `//@marker` in `values`, with the line's indentation and end, is replaced by its text.
std::string fill_in(std::string_view piece,
                    std::initializer_list<std::pair<std::string_view, std::string>> values);

// shaders/ab_raise_registers.glsl, with slot_register's names.
std::string raise_in_registers();

// The private globals of register residency and ab_load / ab_store, which move a lane's state
// between them and the state buffer once per dispatch (values over `register_words` words are
// not among them: the blocks read and write those in the state buffer). Every state-buffer access
// in a shader is a loop over the SIMD lanes that lavapipe compiles separately (a store costs it
// ~30M instructions, docs/performance.md, "Compile time"), so:
// - a kernel moves only what its part's blocks use, and stores back only what they may change;
// - the fault record, which only ab_raise writes, is not loaded, and is stored only by a lane
//   that faulted in this dispatch;
// - with `compact` (a split program's kernels), beyond a few words the words go through one load
//   and one store in a loop, a switch picking each word's register. It costs the dispatch time
//   quadratic in the words moved (nuts_tree's 128 words made a 1024-lane run 1.3x slower), so
//   an unsplit program keeps one access per word;
// - every word has a constant index: a private array indexed in a loop is lowered into a ladder
//   of tests per access (an int[256] variable took 31 s to compile that way instead of 9 s).
// - with a private_depth, the stacks the part uses are private arrays for the dispatch: the
//   entries below each stack pointer are copied in and, at the end, back out.
std::string lane_registers(const LoweredProgram& program, const StateLayout& layout,
                           const BlockSet& part, bool with_vars, bool compact,
                           uint32_t private_depth, uint32_t register_words, const Banks& banks);

// What a part's blocks use: the variables they read or write, those they may change, and the
// fixed slots their ops and terminators need.
struct PartUse {
  std::vector<bool> used, written;  // by variable
  bool calls = false, tail_calls = false, returns = false, random = false, emits = false;
};

PartUse part_use(const LoweredProgram& program, const BlockSet& part);  // in glsl_codegen.cpp

// Block b's function (BlockEmitter) appended to `out`, under the part's residency options;
// returns its loops. unroll_long_loops: for a device that caps loops (GlslTarget::loop_limit),
// long loops take kLongLoopUnroll words an iteration; other devices' code is unchanged.
LoopCount emit_block(const LoweredProgram& program, const StateLayout& layout, int32_t b,
                     Residency residency, const SourcePart& part, std::string& out,
                     bool unroll_long_loops = false);

// A lane sweep's entry point (glsl_sweep.cpp): `entry`, a KernelEntry::lane_sweep template, with
// the part's sweep filled in. `sweep_loops`: the loops of one pass over the sweep.
std::string lane_entry_point(const LoweredProgram& program, const SourcePart& part,
                             const std::vector<LoopCount>& block_loops, std::string_view entry,
                             LoopCount& sweep_loops);

}  // namespace ab
