#include "codegen/glsl_codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <set>
#include <string_view>
#include <utility>

#include "codegen/glsl_prelude.h"
#include "codegen/shader_texts.h"
#include "passes/analysis/sweep_order.h"
#include "shaders/ab_layout.h"

namespace ab {
namespace {

constexpr uint32_t kUnrollWords = 8;  // aggregates up to this size are unrolled, larger ones loop

// The language's scalar names are GLSL's.
const char* glsl_type(Scalar s) {
  return scalar_name(s);
}

// A word (uint) read as a typed scalar, and a typed scalar written back as a word.
std::string typed(Scalar s, const std::string& w) {
  switch (s) {
    case Scalar::Bool:
      return "(" + w + " != 0u)";
    case Scalar::Int:
      return "int(" + w + ")";
    case Scalar::UInt:
      return w;
    case Scalar::Float:
      return "uintBitsToFloat(" + w + ")";
  }
  return w;
}

std::string untyped(Scalar s, const std::string& e) {
  switch (s) {
    case Scalar::Bool:
      return "uint(" + e + ")";
    case Scalar::Int:
      return "uint(" + e + ")";
    case Scalar::UInt:
      return e;
    case Scalar::Float:
      return "floatBitsToUint(" + e + ")";
  }
  return e;
}

std::string zero_of(Scalar s) {
  switch (s) {
    case Scalar::Int:
      return "0";
    case Scalar::Float:
      return "0.0";
    default:
      return "0u";
  }
}

// What a device with a loop limit (GlslTarget::loop_limit, lavapipe's) counts for a piece of
// code: `iterations` when lanes run it, at most, each loop's final test counted as one more and a
// switch as a loop of one pass (2); `statements` when the code is passed over with no lane
// active, as lavapipe does every branch it predicates (1 per loop statement).
struct LoopCount {
  uint64_t iterations = 0;
  uint64_t statements = 0;
};

// The loops of the prelude's helper behind `code` for one scalar of kind `in`
// (shaders/ab_math.glsl, ab_ops.glsl): the op's row says (ir/ops.cpp).
LoopCount helper_loops(OpCode code, Scalar in) {
  const LoopCost cost = helper_cost(code, in);
  return {cost.iterations, cost.statements};
}

// Register residency: the lane's fixed and stack-pointer slots live in private globals
// rs<slot> and each Register/Stacked variable's current value in rv<var>, loaded once per
// dispatch (ab_load) and written back at its end (ab_store).
std::string slot_register(uint32_t s) {
  return fmt::format("rs{}", s);
}
std::string var_register(VarId v) {
  return fmt::format("rv{}", v);
}
// Stack k's private copy (SourcePart::private_stack_depth).
std::string private_stack(int k) {
  return fmt::format("ab_stack{}", k);
}

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

class BlockEmitter {
 public:
  // slots_in_registers: Memory residency with the fixed and stack-pointer slots in registers
  // (SourcePart::slots_in_registers).
  // private_stacks: the stacks are the private arrays of SourcePart::private_stack_depth.
  // register_words: Register residency keeps variables of at most this many words in registers
  // (SourcePart::register_words); longer ones are read and written in the state buffer.
  BlockEmitter(const LoweredProgram& p, const StateLayout& layout, int32_t index,
               Residency residency, std::string& out, bool slots_in_registers = false,
               bool private_stacks = false, uint32_t register_words = kRegisterWords,
               const Banks& banks = {})
      : p_(p),
        L_(layout),
        T_(p.types()),
        b_(index),
        block_(p.blocks[index]),
        registers_(residency == Residency::Registers),
        slots_in_registers_(registers_ || slots_in_registers),
        private_stacks_(registers_ && private_stacks),
        register_words_(register_words),
        at_(banks),
        out_(out) {}

  void emit() {
    collect_vars();
    line(0, fmt::format("// block {} '{}'", b_, block_.name));
    line(0, fmt::format("void block_{}(uint lane) {{", b_));
    line(1, "const uint L = P.lanes;");
    const size_t count_at = out_.size();
    // A full stream parks the lane before the block changes anything: it looks finished to
    // every schedule until the host drains the stream and puts it back at this block.
    if (emits_)
      line(1, fmt::format("if ({} >= P.stream_cap) {{ {} = {}u; {} = P.exit_pc; return; }}",
                          slot(AB_SLOT_EMITTED), slot(AB_SLOT_PARKED), b_ + 1, slot(AB_SLOT_PC)));
    // The caller has checked the step budget (run_block, or the lane sweep's loops): one check
    // site per kernel instead of one per block, each a fault record the driver compiles.
    line(1, fmt::format("uint steps = {};", slot(AB_SLOT_STEPS)));
    line(1, "steps += 1u;");
    line(1, fmt::format("{} = steps;", slot(AB_SLOT_STEPS)));
    if (uses_random_) line(1, fmt::format("uint draws = {};", slot(AB_SLOT_DRAWS)));
    for (VarId v : referenced_)
      declare(v);
    for (size_t i = 0; i < block_.ops.size(); ++i)
      emit_op(block_.ops[i], static_cast<uint32_t>(i));
    for (VarId v : written_)
      store(v);
    if (uses_random_) line(1, fmt::format("{} = draws;", slot(AB_SLOT_DRAWS)));
    emit_terminator();
    line(0, "}");
    // Counted on entry, before any loop runs: the bound is known once the body is written.
    if (loops_.iterations > 0)
      out_.insert(count_at, fmt::format("  AB_COUNT_LOOPS({}u);\n", loops_.iterations));
  }

  // The block's loops (known after emit).
  const LoopCount& loops() const { return loops_; }

 private:
  uint32_t words(VarId v) const { return T_.words(p_.vars[v].type); }
  Scalar leaf_kind(VarId v) const {
    const TypeId t = T_.leaf(p_.vars[v].type);
    return T_.is_scalar(t) ? T_[t].scalar : Scalar::UInt;
  }
  std::string name(VarId v) const { return fmt::format("v{}", v); }
  // A Register or Stacked variable's current value is a register (var_register) rather than its
  // words in the state buffer.
  bool in_register(VarId v) const { return registers_ && words(v) <= register_words_; }
  // Word `idx` of variable v (scalars ignore idx).
  std::string word(VarId v, const std::string& idx) const {
    return words(v) == 1 ? name(v) : fmt::format("{}[{}]", name(v), idx);
  }
  std::string slot(uint32_t s, const std::string& plus = "") const {
    if (slots_in_registers_) return slot_register(s);  // only fixed and stack-pointer slots
    return mem_slot(s, plus);
  }
  // A slot's word in the state buffer.
  std::string mem_slot(uint32_t s, const std::string& plus = "") const {
    return at_.state(s, plus);
  }
  void line(int indent, const std::string& s) {
    out_.append(indent * 2, ' ');
    out_ += s;
    out_ += '\n';
  }
  void raise(int indent, const std::string& code, const std::string& op) {
    line(indent, fmt::format("{{ ab_raise(lane, {}, {}u, {}, steps); return; }}", code, b_, op));
  }

  void collect_vars() {
    std::set<VarId> refs, written;
    for (const Op& op : block_.ops) {
      const bool restores = op.code == OpCode::Pop || op.code == OpCode::Update;
      for (VarId a : op.args) {
        // Read before any write: its value comes from the state (the ops write whole values).
        if (!refs.count(a) && !restores) read_first_.insert(a);
        refs.insert(a);
      }
      if (op.dst >= 0) {
        refs.insert(op.dst);
        written.insert(op.dst);
      }
      if (restores) written.insert(op.args[0]);
      if (op.code == OpCode::RandUniform || op.code == OpCode::RandNormal) uses_random_ = true;
      if (op.code == OpCode::Emit) emits_ = true;
    }
    if (block_.term.kind == Terminator::Kind::Branch) {
      if (!refs.count(block_.term.cond)) read_first_.insert(block_.term.cond);
      refs.insert(block_.term.cond);
    }
    referenced_.assign(refs.begin(), refs.end());
    for (VarId v : written)
      if (p_.vars[v].storage != Storage::Temp) written_.push_back(v);
  }

  // Emits `body(idx)` for idx over n words from `first`: unrolled for small n, else a loop over
  // `i`.
  template <class F>
  void for_words(int indent, uint32_t n, F body, uint32_t first = 0) {
    for_index(indent, "i", n, body, first);
  }
  // The same over a loop variable of another name (for loops inside loops).
  template <class F>
  void for_index(int indent, const std::string& var, uint32_t n, F body, uint32_t first = 0) {
    if (n <= kUnrollWords) {
      for (uint32_t i = first; i < first + n; ++i)
        body(indent, std::to_string(i));
      return;
    }
    const uint64_t before = loops_.iterations;
    line(indent, fmt::format("for (uint {0} = {1}u; {0} < {2}u; ++{0}) {{", var, first, first + n));
    body(indent + 1, var);
    line(indent, "}");
    // n iterations and the final test, each with the body's own loops.
    loops_.iterations = before + uint64_t{n} * (1 + loops_.iterations - before) + 1;
    loops_.statements += 1;
  }

  // for_words over the n words of a value at state slot s, one run of words per bank:
  // body(indent, idx, the state word of idx).
  template <class F>
  void for_state_words(int indent, uint32_t s, uint32_t n, F body) {
    for (const auto& [lo, hi] : at_.state_pieces(s, n)) {
      const auto bank = static_cast<int32_t>(at_.bank_of(s + lo));
      for_words(
          indent, hi - lo,
          [&](int ind, const std::string& i) {
            body(ind, i, n == 1 ? at_.state(s) : at_.state(s, i, bank));
          },
          lo);
    }
  }

  void add(const LoopCount& c) {
    loops_.iterations += c.iterations;
    loops_.statements += c.statements;
  }

  void declare(VarId v) {
    const uint32_t n = words(v);
    if (n == 1)
      line(1, fmt::format("uint {};", name(v)));
    else
      line(1, fmt::format("uint {}[{}];", name(v), n));
    if (p_.vars[v].storage == Storage::Temp) return;
    if (in_register(v)) {
      line(1, fmt::format("{} = {};", name(v), var_register(v)));
      return;
    }
    // A variable the block writes before reading needs no load (a buffer access saved).
    if (!read_first_.count(v)) return;
    const uint32_t s = static_cast<uint32_t>(L_.var_slot[v]);
    for_state_words(1, s, n, [&](int ind, const std::string& i, const std::string& mem) {
      line(ind, fmt::format("{} = {};", word(v, i), mem));
    });
  }

  void store(VarId v) {
    if (in_register(v)) {
      line(1, fmt::format("{} = {};", var_register(v), name(v)));
      return;
    }
    const uint32_t n = words(v);
    const uint32_t s = static_cast<uint32_t>(L_.var_slot[v]);
    for_state_words(1, s, n, [&](int ind, const std::string& i, const std::string& mem) {
      line(ind, fmt::format("{} = {};", mem, word(v, i)));
    });
  }

  // Word `w` of stack k's entry `sp` (GLSL expressions): a read, and a write statement.
  std::string stack_get(int k, const std::string& sp, const std::string& w) const {
    const StackPlacement& s = L_.stacks[k];
    if (private_stacks_) return private_stack_word(k, sp, w);
    return at_.arena_get(s.arena, arena_word(k, sp, w));
  }
  std::string stack_set(int k, const std::string& sp, const std::string& w,
                        const std::string& value) const {
    const StackPlacement& s = L_.stacks[k];
    if (private_stacks_) return fmt::format("{} = {};", private_stack_word(k, sp, w), value);
    return at_.arena_set(s.arena, arena_word(k, sp, w), value);
  }
  std::string private_stack_word(int k, const std::string& sp, const std::string& w) const {
    return fmt::format("{}[({}) * {}u + {}]", private_stack(k), sp, L_.stacks[k].words, w);
  }
  // The arena word (state_layout.h: [depth][words][lanes] from the stack's base).
  std::string arena_word(int k, const std::string& sp, const std::string& w) const {
    const StackPlacement& s = L_.stacks[k];
    return fmt::format("({}u * P.depth + ({}) * {}u + {}) * L + lane", s.base, sp, s.words, w);
  }

  void emit_elementwise(const Op& op, uint32_t index) {
    const OpInfo& info = op_info(op.code);
    const bool select = op.code == OpCode::Select;
    const Scalar in = leaf_kind(select ? op.args[1] : op.args[0]);
    const Scalar out = leaf_kind(op.dst);
    const uint32_t n = words(op.dst);
    const bool float_out = !select && out == Scalar::Float;
    for_words(1, n, [&](int ind, const std::string& i) {
      std::string operand[3];
      for (size_t k = 0; k < op.args.size() && k < 3; ++k) {
        const std::string w = word(op.args[k], i);
        if (select)
          operand[k] = k == 0 ? typed(Scalar::Bool, w) : w;  // Select moves raw words
        else
          operand[k] = typed(in, w);
      }
      const std::string expr =
          fmt::format(fmt::runtime(info.glsl), operand[0], operand[1], operand[2]);
      add(helper_loops(op.code, in));
      if (float_out)
        line(ind, fmt::format("{{ precise float r = {}; {} = floatBitsToUint(r); }}", expr,
                              word(op.dst, i)));
      else
        line(ind, fmt::format("{} = {};", word(op.dst, i), select ? expr : untyped(out, expr)));
    });
    if ((op.code == OpCode::Div || op.code == OpCode::Rem) && in != Scalar::Float)
      raise_if_faulted(index);
  }

  void raise_if_faulted(uint32_t index) {
    line(1, fmt::format("if (ab_fault_code != 0u) {{ ab_raise(lane, ab_fault_code, {}u, {}u, "
                        "steps); return; }}",
                        b_, index));
  }

  void emit_reduction(const Op& op) {
    const Scalar in = leaf_kind(op.args[0]);
    const uint32_t n = words(op.args[0]);
    const std::string type = in == Scalar::Float ? "precise float" : glsl_type(in);
    line(1, "{");
    line(2, fmt::format("{} acc = {};", type, zero_of(in)));
    for_words(2, n, [&](int ind, const std::string& i) {
      std::string term = typed(in, word(op.args[0], i));
      if (op.code == OpCode::Dot)
        term = fmt::format(fmt::runtime(op_info(OpCode::Mul).glsl), term,
                           typed(in, word(op.args[1], i)));
      line(ind, fmt::format("{{ {} term = {}; acc = {}; }}", type, term,
                            fmt::format(fmt::runtime(op_info(OpCode::Add).glsl), "acc", "term")));
    });
    line(2, fmt::format("{} = {};", name(op.dst), untyped(in, "acc")));
    line(1, "}");
  }

  // max(v), min(v): the chain of the binary rule from v[0]; log_sum_exp(v): then shift + log(the
  // sum of exp(v[i] - shift) from +0), shift = ab_lse_shift(max) (exec.cpp's reduce_extreme).
  void emit_extreme(const Op& op) {
    const Scalar in = leaf_kind(op.args[0]);
    const uint32_t n = words(op.args[0]);
    const std::string type = in == Scalar::Float ? "precise float" : glsl_type(in);
    const char* rule = op_info(op.code == OpCode::ReduceMin ? OpCode::Min : OpCode::Max).glsl;
    line(1, "{");
    line(2, fmt::format("{} acc = {};", type, typed(in, word(op.args[0], "0"))));
    if (n > 1)
      for_words(
          2, n - 1,
          [&](int ind, const std::string& i) {
            line(ind, fmt::format("acc = {};", fmt::format(fmt::runtime(rule), "acc",
                                                           typed(in, word(op.args[0], i)))));
          },
          1);
    if (op.code == OpCode::ReduceLogSumExp) {
      line(2, "precise float shift = ab_lse_shift(acc);");
      line(2, "precise float s = 0.0;");
      for_words(2, n, [&](int ind, const std::string& i) {
        line(ind, fmt::format("{{ precise float d = {} - shift; s = s + ab_exp(d); }}",
                              typed(in, word(op.args[0], i))));
      });
      line(2, "acc = shift + ab_log(s);");
    }
    line(2, fmt::format("{} = {};", name(op.dst), untyped(in, "acc")));
    line(1, "}");
  }

  // a @ b, outer(a, b), transpose(a) (ops.h, matrix_words): each product element sums its k in
  // blocks of kProductBlock, a partial from +0 per block, the blocks' partials added in order.
  void emit_matrix(const Op& op) {
    const VarId a = op.args[0], b = op.args.size() > 1 ? op.args[1] : -1;
    const MatrixShape s =
        matrix_shape(T_, op.code, p_.vars[a].type, b >= 0 ? p_.vars[b].type : Types::kVoid);
    const uint32_t n = words(op.dst);
    const bool aliases = op.dst == a || op.dst == b;
    line(1, "{");
    if (aliases) line(2, fmt::format("uint res[{}];", n));
    auto out = [&](const std::string& idx) {
      return aliases ? fmt::format("res[{}]", idx) : word(op.dst, idx);
    };
    auto a_at = [&](const std::string& m, const std::string& k) {
      return typed(Scalar::Float, word(a, fmt::format("{} * {}u + {}", m, s.k, k)));
    };
    if (op.code == OpCode::Transpose) {
      for_index(2, "m", s.m, [&](int i1, const std::string& m) {
        for_index(i1, "k", s.k, [&](int i2, const std::string& k) {
          line(i2, fmt::format("{} = {};", out(fmt::format("{} * {}u + {}", k, s.m, m)),
                               word(a, fmt::format("{} * {}u + {}", m, s.k, k))));
        });
      });
    } else {
      for_index(2, "m", s.m, [&](int i1, const std::string& m) {
        for_index(i1, "p", s.p, [&](int i2, const std::string& p) {
          const std::string dst = out(fmt::format("{} * {}u + {}", m, s.p, p));
          if (op.code == OpCode::Outer) {
            line(i2, fmt::format("{{ precise float r = {} * {}; {} = floatBitsToUint(r); }}",
                                 typed(Scalar::Float, word(a, m)), typed(Scalar::Float, word(b, p)),
                                 dst));
            return;
          }
          line(i2, "{");
          line(i2 + 1, "precise float total = 0.0;");
          auto block = [&](int ind, const std::string& first, uint32_t len) {
            line(ind, "{");
            line(ind + 1, "precise float partial = 0.0;");
            for_index(ind + 1, "k", len, [&](int i3, const std::string& k) {
              const std::string kk = fmt::format("{} + {}", first, k);
              line(i3,
                   fmt::format(
                       "{{ precise float term = {} * {}; partial = partial + term; }}", a_at(m, kk),
                       typed(Scalar::Float, word(b, fmt::format("({}) * {}u + {}", kk, s.p, p)))));
            });
            line(ind + 1, "total = total + partial;");
            line(ind, "}");
          };
          const uint32_t full = s.k / kProductBlock, rest = s.k % kProductBlock;
          for_index(i2 + 1, "kb", full, [&](int i3, const std::string& kb) {
            block(i3, fmt::format("{} * {}u", kb, kProductBlock), kProductBlock);
          });
          if (rest) block(i2 + 1, fmt::format("{}u", full * kProductBlock), rest);
          line(i2 + 1, fmt::format("{} = floatBitsToUint(total);", dst));
          line(i2, "}");
        });
      });
    }
    if (aliases)
      for_words(2, n, [&](int ind, const std::string& i) {
        line(ind, fmt::format("{} = res[{}];", word(op.dst, i), i));
      });
    line(1, "}");
  }

  // Emits `uint off = ...;` resolving the access path, faulting on a bad dynamic index.
  void emit_path(const Op& op, size_t first_index_arg, uint32_t index) {
    uint32_t static_off = 0;
    for (const PathStep& s : op.path)
      if (!s.dynamic) static_off += s.offset;
    line(2, fmt::format("uint off = {}u;", static_off));
    size_t next = first_index_arg;
    for (const PathStep& s : op.path) {
      if (!s.dynamic) continue;
      const size_t ordinal = next - first_index_arg;
      const VarId ix = op.args[next++];
      const bool is_signed = leaf_kind(ix) == Scalar::Int;
      line(2, fmt::format("if ({}{} >= {}u) {{ ab_raise_index(lane, {}u, {}u, steps, {}u, {}); "
                          "return; }}",
                          is_signed ? fmt::format("int({}) < 0 || ", name(ix)) : "", name(ix),
                          s.count, b_, index, ordinal, untyped(leaf_kind(ix), name(ix))));
      line(2, fmt::format("off += {} * {}u;", name(ix), s.stride));
    }
  }

  void emit_const(const Op& op, uint32_t index) {
    // Float constants (and structs, which may hold floats) go through P.zero; see
    // ab_common.glsl. Integer constants stay visible for the compiler to fold.
    const TypeId type = p_.vars[op.dst].type;
    const bool hide = T_.is_struct(type) || leaf_kind(op.dst) == Scalar::Float;
    const bool uniform =
        std::all_of(op.imm.begin(), op.imm.end(), [&](uint32_t w) { return w == op.imm[0]; });
    if (uniform && op.imm.size() > kUnrollWords) {  // a long array of one value: a loop
      for_words(1, static_cast<uint32_t>(op.imm.size()), [&](int ind, const std::string& i) {
        line(ind,
             fmt::format("{} = 0x{:08x}u{};", word(op.dst, i), op.imm[0], hide ? " ^ P.zero" : ""));
      });
      return;
    }
    for (uint32_t i = 0; i < op.imm.size(); ++i)
      line(1, fmt::format("{} = 0x{:08x}u{};", word(op.dst, std::to_string(i)), op.imm[i],
                          hide ? " ^ P.zero" : ""));
  }

  // a struct or array from its parts, through a local copy: a part may be the destination.
  void emit_make(const Op& op, uint32_t index) {
    const uint32_t n = words(op.dst);
    line(1, "{");
    line(2, fmt::format("uint made[{}];", n));
    uint32_t at = 0;
    for (VarId a : op.args) {  // a loop per long part: the code does not grow with it
      const uint32_t m = words(a);
      for_words(2, m, [&](int ind, const std::string& i) {
        line(ind, fmt::format("made[{}u + {}] = {};", at, i, word(a, i)));
      });
      at += m;
    }
    for_words(2, n, [&](int ind, const std::string& i) {
      line(ind, fmt::format("{} = made[{}];", word(op.dst, i), i));
    });
    line(1, "}");
  }

  void emit_get(const Op& op, uint32_t index) {
    line(1, "{");
    emit_path(op, 1, index);
    const VarId src = op.args[0];
    for_words(2, words(op.dst), [&](int ind, const std::string& i) {
      line(ind,
           fmt::format("{} = {};", word(op.dst, i),
                       words(src) == 1 ? name(src) : fmt::format("{}[off + {}]", name(src), i)));
    });
    line(1, "}");
  }

  void emit_set(const Op& op, uint32_t index) {
    line(1, "{");
    emit_path(op, 2, index);
    const VarId src = op.args[0], value = op.args[1];
    const uint32_t m = words(value);
    line(2, fmt::format("uint value[{}];", m));
    for_words(2, m, [&](int ind, const std::string& i) {
      line(ind, fmt::format("value[{}] = {};", i, word(value, i)));
    });
    if (src != op.dst)
      for_words(2, words(op.dst), [&](int ind, const std::string& i) {
        line(ind, fmt::format("{} = {};", word(op.dst, i), word(src, i)));
      });
    for_words(2, m, [&](int ind, const std::string& i) {
      line(ind, fmt::format("{} = value[{}];",
                            words(op.dst) == 1 ? name(op.dst)
                                               : fmt::format("{}[off + {}]", name(op.dst), i),
                            i));
    });
    line(1, "}");
  }

  void emit_uniform_get(const Op& op, uint32_t index) {
    line(1, "{");
    emit_path(op, 0, index);
    const uint32_t base = L_.uniform_base.at(op.index);
    for_words(2, words(op.dst), [&](int ind, const std::string& i) {
      line(ind, fmt::format("{} = uni.w[{}u + off + {}];", word(op.dst, i), base, i));
    });
    line(1, "}");
  }

  // emit(v): appends v's words to the lane's output stream.
  void emit_record(const Op& op, uint32_t index) {
    const VarId v = op.args[0];
    const uint32_t n = words(v);
    line(1, "{");
    line(2, fmt::format("const uint base = ({} * L + lane) * {}u;", slot(AB_SLOT_EMITTED), n));
    for_words(2, n, [&](int ind, const std::string& i) {
      line(ind, fmt::format("stream.w[base + {}] = {};", i, word(v, i)));
    });
    line(2, fmt::format("{} += 1u;", slot(AB_SLOT_EMITTED)));
    line(1, "}");
  }

  // push, pop, update: the variable's per-lane stack in P.depth slots.
  void emit_stack_op(const Op& op, uint32_t index) {
    const VarId v = op.args[0];
    const int k = L_.stack_of.at(v);
    const std::string sp_slot = slot(static_cast<uint32_t>(L_.sp_slot.at(v)));
    line(1, "{");
    if (op.code == OpCode::Push) {
      line(2, fmt::format("const uint sp = {};", sp_slot));
      line(2, "if (sp >= P.depth)");
      raise(3, "AB_FAULT_STACK_OVERFLOW", fmt::format("{}u", index));
      for_words(2, words(v), [&](int ind, const std::string& i) {
        line(ind, stack_set(k, "sp", i, word(v, i)));
      });
      line(2, fmt::format("{} = sp + 1u;", sp_slot));
    } else {
      // The lowering balances pushes and pops; the clamp only keeps a bug in bounds.
      line(2, fmt::format("const uint sp = min({} - 1u, P.depth - 1u);", sp_slot));
      if (op.code == OpCode::Pop) line(2, fmt::format("{} = sp;", sp_slot));
      for_words(2, words(v), [&](int ind, const std::string& i) {
        line(ind, fmt::format("{} = {};", word(v, i), stack_get(k, "sp", i)));
      });
    }
    line(1, "}");
  }

  void emit_op(const Op& op, uint32_t index) {
    const OpInfo& info = op_info(op.code);
    line(1, fmt::format("// {} {}: {}", index, op.loc.line, info.name));
    switch (op.code) {
      case OpCode::Const:
        return emit_const(op, index);
      case OpCode::Copy:
        if (op.dst == op.args[0]) return;
        for_words(1, words(op.dst), [&](int ind, const std::string& i) {
          line(ind, fmt::format("{} = {};", word(op.dst, i), word(op.args[0], i)));
        });
        return;
      case OpCode::Make:
        return emit_make(op, index);
      case OpCode::Get:
        return emit_get(op, index);
      case OpCode::Set:
        return emit_set(op, index);
      case OpCode::UniformGet:
        return emit_uniform_get(op, index);
      case OpCode::Dot:
      case OpCode::Sum:
        return emit_reduction(op);
      case OpCode::ReduceMax:
      case OpCode::ReduceMin:
      case OpCode::ReduceLogSumExp:
        return emit_extreme(op);
      case OpCode::MatMul:
      case OpCode::Outer:
      case OpCode::Transpose:
        return emit_matrix(op);
      case OpCode::RandUniform:
      case OpCode::RandNormal:
        line(1, fmt::format("{} = floatBitsToUint({}(lane, draws));", name(op.dst),
                            op.code == OpCode::RandUniform ? "ab_rand_uniform" : "ab_rand_normal"));
        line(1, "draws += 1u;");
        add(helper_loops(op.code, Scalar::Float));
        return;
      case OpCode::Emit:
        return emit_record(op, index);
      case OpCode::Assert:
        line(1, fmt::format("if ({} == 0u)", name(op.args[0])));
        raise(2, "AB_FAULT_ASSERT_FAILED", fmt::format("{}u", index));
        return;
      case OpCode::Push:
      case OpCode::Pop:
      case OpCode::Update:
        return emit_stack_op(op, index);
      case OpCode::Call:
      case OpCode::Count_:
        line(1, "// (call: not in the lowered form)");
        return;
      default:
        emit_elementwise(op, index);
        return;
    }
  }

  void emit_terminator() {
    const Terminator& t = block_.term;
    const std::string pc = slot(AB_SLOT_PC);
    switch (t.kind) {
      case Terminator::Kind::Jump:
        line(1, fmt::format("{} = {}u;", pc, t.target));
        return;
      case Terminator::Kind::Branch:
        line(1,
             fmt::format("{} = {} != 0u ? {}u : {}u;", pc, name(t.cond), t.target, t.target_else));
        return;
      case Terminator::Kind::PushJump:
        line(1, "{");
        line(2, fmt::format("const uint psp = {};", slot(AB_SLOT_PC_SP)));
        line(2, "if (psp >= P.depth)");
        raise(3, "AB_FAULT_STACK_OVERFLOW", fmt::format("{}u", block_.ops.size()));
        line(2, stack_set(0, "psp", "0u", fmt::format("{}u", t.target_else)));
        line(2, fmt::format("{} = psp + 1u;", slot(AB_SLOT_PC_SP)));
        line(2, fmt::format("{} = {}u;", pc, t.target));
        line(2, fmt::format("{} += 1u;", slot(AB_SLOT_CALLS)));
        line(2, fmt::format("{0} = max({0}, psp + 1u);", slot(AB_SLOT_MAX_DEPTH)));
        line(1, "}");
        return;
      case Terminator::Kind::TailJump:  // a call that reuses the frame: nothing to push
        line(1, fmt::format("{} = {}u;", pc, t.target));
        line(1, fmt::format("{} += 1u;", slot(AB_SLOT_CALLS)));
        return;
      case Terminator::Kind::Return:
        line(1, "{");
        line(2, fmt::format("const uint psp = {} - 1u;", slot(AB_SLOT_PC_SP)));
        line(2, fmt::format("{} = psp;", slot(AB_SLOT_PC_SP)));
        line(2, fmt::format("{} = {};", pc, stack_get(0, "min(psp, P.depth - 1u)", "0u")));
        line(1, "}");
        return;
    }
  }

  const LoweredProgram& p_;
  const StateLayout& L_;
  const Types& T_;
  int32_t b_;
  const LoweredBlock& block_;
  bool registers_;           // variables in registers
  bool slots_in_registers_;  // fixed and stack-pointer slots in registers
  bool private_stacks_;      // stacks in private arrays (SourcePart::private_stack_depth)
  uint32_t register_words_;  // longer variables stay in memory in Register residency
  BankAddress at_;           // where the state and stack words are (the run's Banks)
  std::string& out_;
  std::vector<VarId> referenced_, written_;
  std::set<VarId> read_first_;
  bool uses_random_ = false;
  LoopCount loops_;  // of for_words and the helpers
  // The block holds an Emit (at most one: the front end starts a block at each).
  bool emits_ = false;
};

// Fills in a piece of shaders/ (shader_texts.h): each name in `values` that stands as a whole
// identifier (AB_RS_<SLOT>: the register of slot AB_SLOT_<SLOT>), and each line holding only a
// `//@marker` in `values`, with the line's indentation and end, is replaced by its text.
std::string fill_in(std::string_view piece,
                    std::initializer_list<std::pair<std::string_view, std::string>> values) {
  std::string text(piece);
  for (const auto& [name, value] : values) {
    for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at)) {
      size_t from = at, to = at + name.size();
      if (name.starts_with("//@")) {
        from = text.rfind('\n', at) + 1;  // 0 on the first line
        to = text.find('\n', at) + 1;
      } else if (to < text.size() &&
                 (std::isalnum(static_cast<unsigned char>(text[to])) || text[to] == '_')) {
        at = to;  // a longer name
        continue;
      }
      text.replace(from, to - from, value);
      at = from + value.size();
    }
  }
  return text;
}

// The fault record: the slots only ab_raise and ab_raise_index write.
constexpr uint32_t kFaultSlots[] = {AB_SLOT_FAULT,      AB_SLOT_FAULT_BLOCK, AB_SLOT_FAULT_OP,
                                    AB_SLOT_FAULT_STEP, AB_SLOT_FAULT_INDEX, AB_SLOT_FAULT_VALUE};

// shaders/ab_raise_registers.glsl, with slot_register's names.
std::string raise_in_registers() {
  return fill_in(kAbRaiseRegistersText, {{"AB_RS_FAULT", slot_register(AB_SLOT_FAULT)},
                                         {"AB_RS_FAULT_BLOCK", slot_register(AB_SLOT_FAULT_BLOCK)},
                                         {"AB_RS_FAULT_OP", slot_register(AB_SLOT_FAULT_OP)},
                                         {"AB_RS_FAULT_STEP", slot_register(AB_SLOT_FAULT_STEP)},
                                         {"AB_RS_FAULT_INDEX", slot_register(AB_SLOT_FAULT_INDEX)},
                                         {"AB_RS_FAULT_VALUE", slot_register(AB_SLOT_FAULT_VALUE)},
                                         {"AB_RS_PC", slot_register(AB_SLOT_PC)}});
}

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
                           uint32_t private_depth, uint32_t register_words, const Banks& banks) {
  const BankAddress at(banks);
  const Types& types = program.types();
  std::vector<bool> used(program.vars.size(), false), written(program.vars.size(), false);
  bool calls = false, tail_calls = false, returns = false, random = false, emits = false;
  part.each([&](int32_t b) {
    const LoweredBlock& block = program.blocks[b];
    for (const Op& op : block.ops) {
      for (VarId a : op.args)
        used[a] = true;
      if (op.dst >= 0) used[op.dst] = written[op.dst] = true;
      if (op.code == OpCode::Pop || op.code == OpCode::Update) written[op.args[0]] = true;
      random = random || op.code == OpCode::RandUniform || op.code == OpCode::RandNormal;
      emits = emits || op.code == OpCode::Emit;
    }
    if (block.term.kind == Terminator::Kind::Branch) used[block.term.cond] = true;
    calls = calls || block.term.kind == Terminator::Kind::PushJump;
    tail_calls = tail_calls || block.term.kind == Terminator::Kind::TailJump;
    returns = returns || block.term.kind == Terminator::Kind::Return;
  });
  struct Word {
    std::string reg;  // the register holding it
    uint32_t slot;
    bool stored;  // the part may change it
  };
  std::vector<Word> words;
  std::string decls, load, store;
  auto slot_word = [&](uint32_t s) { return at.state(s); };
  auto add_slot = [&](uint32_t s) {
    decls += fmt::format("uint {};\n", slot_register(s));
    words.push_back({slot_register(s), s, true});
  };
  add_slot(AB_SLOT_PC);
  add_slot(AB_SLOT_STEPS);
  if (calls || returns) add_slot(AB_SLOT_PC_SP);
  if (random) add_slot(AB_SLOT_DRAWS);
  if (emits) {
    add_slot(AB_SLOT_EMITTED);
    add_slot(AB_SLOT_PARKED);
  }
  if (calls || tail_calls) add_slot(AB_SLOT_CALLS);  // a tail call counts as a call
  if (calls) add_slot(AB_SLOT_MAX_DEPTH);
  for (size_t v = 0; v < program.vars.size(); ++v)
    if (used[v] && layout.sp_slot[v] >= 0) add_slot(static_cast<uint32_t>(layout.sp_slot[v]));
  for (size_t v = 0; v < program.vars.size() && with_vars; ++v) {
    if (!used[v] || layout.var_slot[v] < 0) continue;
    const uint32_t n = types.words(program.vars[v].type);
    if (n > register_words) continue;  // the blocks read and write it in the state buffer
    const uint32_t s = static_cast<uint32_t>(layout.var_slot[v]);
    const std::string reg = var_register(static_cast<VarId>(v));
    if (n == 1) {
      decls += fmt::format("uint {};\n", reg);
      words.push_back({reg, s, written[v]});
      continue;
    }
    decls += fmt::format("uint {}[{}];\n", reg, n);
    if (n <= kUnrollWords || !compact) {
      for (uint32_t i = 0; i < n; ++i)
        words.push_back({fmt::format("{}[{}]", reg, i), s + i, written[v]});
      continue;
    }
    // A longer array of a split program: one access per word, outside the switch (whose time
    // per dispatch is quadratic in its cases).
    for (uint32_t i = 0; i < n; ++i) {
      load += fmt::format("  {}[{}] = {};\n", reg, i, slot_word(s + i));
      if (written[v]) store += fmt::format("  {} = {}[{}];\n", slot_word(s + i), reg, i);
    }
  }
  std::vector<const Word*> stored;
  for (const Word& w : words)
    if (w.stored) stored.push_back(&w);
  // The fault record: stored only by a lane that faulted in this dispatch (another's may hold an
  // earlier fault's record, which these registers, never loaded, would overwrite).
  const std::string faulted = fmt::format("{} != 0u", slot_register(AB_SLOT_FAULT));
  for (uint32_t s : kFaultSlots)
    decls += fmt::format("uint {};\n", slot_register(s));
  load += fmt::format("  {} = 0u;\n", slot_register(AB_SLOT_FAULT));
  if (!compact || words.size() <= kUnrollWords) {
    for (const Word& w : words)
      load += fmt::format("  {} = {};\n", w.reg, slot_word(w.slot));
  } else {
    std::string slots, regs;
    for (size_t i = 0; i < words.size(); ++i) {
      slots += fmt::format("      case {}u: s = {}u; break;\n", i, words[i].slot);
      regs += fmt::format("      case {}u: {} = w; break;\n", i, words[i].reg);
    }
    load += fmt::format(
        "  for (uint i = 0u; i < {}u; ++i) {{\n    uint s = 0u;\n    switch (i) {{\n{}    }}\n"
        "    const uint w = {};\n    switch (i) {{\n{}    }}\n  }}\n",
        words.size(), slots, at.state_get("s"), regs);
  }
  if (!compact || stored.size() + std::size(kFaultSlots) <= kUnrollWords) {
    for (const Word* w : stored)
      store += fmt::format("  {} = {};\n", slot_word(w->slot), w->reg);
    store += fmt::format("  if ({}) {{\n", faulted);
    for (uint32_t s : kFaultSlots)
      store += fmt::format("    {} = {};\n", slot_word(s), slot_register(s));
    store += "  }\n";
  } else {
    std::string cases;
    for (size_t i = 0; i < stored.size(); ++i)
      cases += fmt::format("      case {}u: w = {}; s = {}u; break;\n", i, stored[i]->reg,
                           stored[i]->slot);
    size_t i = stored.size();
    for (uint32_t s : kFaultSlots)
      cases += fmt::format("      case {}u: w = {}; s = {}u; keep = {}; break;\n", i++,
                           slot_register(s), s, faulted);
    store += fmt::format(
        "  for (uint i = 0u; i < {}u; ++i) {{\n    uint w = 0u, s = 0u;\n    bool keep = true;\n"
        "    switch (i) {{\n{}    }}\n    if (keep) {}\n  }}\n",
        i, cases, at.state_set("s", "w"));
  }
  if (private_depth > 0) {
    std::vector<std::pair<int, uint32_t>> stacks;  // (stack, its stack-pointer slot)
    if (calls || returns) stacks.push_back({0, AB_SLOT_PC_SP});
    for (size_t v = 0; v < program.vars.size(); ++v)
      if (used[v] && layout.stack_of[v] >= 0)
        stacks.push_back({layout.stack_of[v], static_cast<uint32_t>(layout.sp_slot[v])});
    for (const auto& [k, sp] : stacks) {
      const StackPlacement& st = layout.stacks[k];
      const std::string entries =
          fmt::format("min({}, {}u) * {}u", slot_register(sp), private_depth, st.words);
      const std::string word = fmt::format("({}u * P.depth + i) * L + lane", st.base);
      decls += fmt::format("uint {}[{}];\n", private_stack(k), private_depth * st.words);
      load += fmt::format("  for (uint i = 0u; i < {}; ++i) {}[i] = {};\n", entries,
                          private_stack(k), at.arena_get(st.arena, word));
      store += fmt::format("  for (uint i = 0u; i < {}; ++i) {}\n", entries,
                           at.arena_set(st.arena, word, fmt::format("{}[i]", private_stack(k))));
    }
  }
  return decls + "void ab_load(uint lane) {\n  const uint L = P.lanes;\n" + load +
         "}\nvoid ab_store(uint lane) {\n  const uint L = P.lanes;\n" + store + "}\n";
}

// The numbers of ab_common.glsl's loop counting, for a kernel that runs many blocks per dispatch
// on a device with a loop limit. What one iteration of a dispatch loop costs whatever its lanes
// do, as lavapipe passes over every branch it predicates: AB_ITERATION_LOOPS for the kernels
// that pick a block (run_block's switch over every block of the part, counted 2, and the loop's
// test); the lane sweep counts its passes itself (SweepEmitter, AB_COUNT_PASS), and one pass over
// the whole sweep bounds its one more iteration. AB_LOOP_ROOM_ROW: the room below target.loop_limit
// for a SIMD row's own count (the subgroup, lane and fused kernels count each run block's loops
// once per row), AB_LOOP_ROOM_LANE for a lane's (the workgroup kernel: a row's count is at most the
// sum of its lanes'). After the last check that passed, a dispatch takes one more iteration and its
// fixed loops (ab_load and ab_store over the words, the fused kernel's counts). At least 1: a
// dispatch always takes a step, so a program whose one iteration alone could reach the limit is not
// protected (docs/engine.md).
std::string loop_count_defines(const GlslTarget& target, const StateLayout& layout,
                               const LoweredProgram& program,
                               const std::vector<LoopCount>& block_loops, const LoopCount& sweep,
                               uint32_t private_stack_depth) {
  const uint64_t lanes = std::max<uint32_t>(target.loop_lanes, 1);
  uint64_t passed = 0, longest = 0;  // over the part's blocks
  for (const LoopCount& c : block_loops) {
    passed += c.statements;
    longest = std::max(longest, c.iterations);
  }
  const uint64_t per_pick = passed + 3, per_sweep = sweep.statements + 2;
  const uint64_t one_more = std::max(longest + per_pick + lanes + 1, sweep.iterations + per_sweep);
  // ab_load and ab_store: the slots, and with private stacks a loop per stack copying its live
  // entries, in and back out (at most the private arrays' words each way).
  uint64_t private_words = 0;
  for (const StackPlacement& st : layout.stacks)
    private_words += uint64_t{private_stack_depth} * st.words;
  const uint64_t fixed = 6 * uint64_t{layout.slots} + 2 * program.blocks.size() + 64 +
                         (private_stack_depth ? 2 * private_words + 4 * layout.stacks.size() : 0);
  const uint64_t usable = target.loop_limit > fixed ? target.loop_limit - fixed : 0;
  auto room = [&](uint64_t n) { return n > one_more ? n - one_more : 1; };
  return fmt::format(
      "#define AB_ITERATION_LOOPS {}u\n#define AB_LOOP_ROOM_ROW {}u\n#define AB_LOOP_ROOM_LANE "
      "{}u\n",
      per_pick, room(usable), room(usable / lanes));
}

// run_block: block b for a lane, once its step budget is checked (the same check the VM makes
// before every block, made in one place).
std::string run_block_function(bool slots_in_registers, const BlockSet& blocks) {
  const std::string steps =
      slots_in_registers ? slot_register(AB_SLOT_STEPS) : "state.w[AB_SLOT_STEPS * P.lanes + lane]";
  std::string out = fmt::format(
      "void run_block(uint lane, uint b) {{\n"
      "  const uint steps = {};\n"
      "  if (!AB_STEP_ALLOWED(steps, P.max_steps)) {{\n"
      "    ab_raise(lane, AB_FAULT_STEP_BUDGET, b, AB_NO_BLOCK, steps);\n"
      "    return;\n"
      "  }}\n"
      "  switch (b) {{\n",
      steps);
  blocks.each(
      [&](int32_t b) { out += fmt::format("    case {0}u: block_{0}(lane); break;\n", b); });
  return out + "    default: break;\n  }\n}\n";
}

// Emits the items of a sweep: a block runs for the lanes waiting at it; a component is a loop
// that goes on while any lane of the subgroup waits at one of its blocks (its row of
// ab_members, a bit per block).
class SweepEmitter {
 public:
  // Up to this many words per row, each component's row is inlined as constants.
  static constexpr uint32_t kInlineMemberWords = 8;
  // block_loops: each block's loops (by block number), summed into loops() over the items.
  SweepEmitter(const BlockSet& part, const std::vector<LoopCount>& block_loops)
      : part_(part),
        hull_(part.hull()),
        words_(static_cast<uint32_t>(hull_.end - hull_.first) / 32 + 1),
        block_loops_(block_loops) {}

  // Emits the items whose blocks are in the part; a component without any is left out. Returns
  // the loop iterations one pass over these items costs at most on a device that counts them
  // (AB_COUNT_PASS): every block's loops as if it ran, and one pass of each nested component
  // loop's statement, whose further passes count themselves.
  uint64_t emit(const std::vector<SweepItem>& items, int indent, std::string& out) {
    const std::string pad(indent * 2, ' ');
    uint64_t pass = 0;
    for (const SweepItem& item : items) {
      if (item.block >= 0) {
        if (!part_.contains(item.block)) continue;
        loops_.iterations += block_loops_[item.block].iterations;
        loops_.statements += block_loops_[item.block].statements;
        pass += block_loops_[item.block].iterations + block_loops_[item.block].statements;
        // A lane out of step budget runs nothing more; the loop's top records its fault.
        out += fmt::format("{}if (AB_PC(lane) == {}u && AB_BUDGET_LEFT) block_{}(lane);\n", pad,
                           item.block, item.block);
        continue;
      }
      std::vector<bool> in = blocks_inside(item, static_cast<size_t>(hull_.end));
      for (int32_t b = hull_.first; b < hull_.end; ++b)
        in[b] = in[b] && part_.contains(b);
      if (std::find(in.begin() + hull_.first, in.end(), true) == in.end()) continue;
      const int component = components_++;
      loops_.statements += 1;
      pass += 1;
      for (uint32_t w = 0; w < words_; ++w) {
        uint32_t bits = 0;
        for (uint32_t i = 0; i < 32; ++i) {
          const int64_t b = int64_t{hull_.first} + w * 32 + i;
          if (b < hull_.end && in[b]) bits |= 1u << i;
        }
        members_.push_back(bits);
      }
      // A do-while with the test at its end: a while loop's test at its top would cost one more
      // (masked) pass over the body on devices that run every branch, such as lavapipe. Entering
      // does not test the budget, so every dispatch runs each live lane's block at least once,
      // however small the budget (one iteration more per nesting level at most).
      const std::string inside = words_ <= kInlineMemberWords
                                     ? fmt::format("ab_inside_{}()", component)
                                     : fmt::format("ab_inside({}u)", component);
      std::string body;
      const uint64_t body_pass = emit(item.children, indent + 3, body);
      out += fmt::format(
          "{}{{\n{}  bool go = {};\n{}  do {{\n{}    AB_COUNT_PASS({}u)\n{}    if (go) {{\n", pad,
          pad, inside, pad, pad, body_pass + 2, pad);
      out += pad + "      AB_ITERATION\n";
      out += body;
      out += fmt::format(
          "{}    }}\n{}    go = go && {} && AB_ROOM_LEFT && AB_BUDGET_LEFT;\n{}  }} while "
          "(AB_LOOP_CONTINUE(go));\n"
          "{}}}\n",
          pad, pad, inside, pad, pad);
    }
    return pass;
  }

  // The membership table and ab_inside, which the emitted loops call. A component's row has a
  // bit per block of the part's hull (set for the component's blocks in the part) and one more,
  // never set, for every PC outside it.
  std::string declarations() const {
    if (members_.empty()) return "";
    const std::string pc =
        "  const uint pc = min(AB_PC(gl_GlobalInvocationID.x) - AB_FIRST_BLOCK, "
        "AB_END_BLOCK - AB_FIRST_BLOCK);\n";
    if (words_ <= kInlineMemberWords) {
      // A function per component with its row as constants: a table indexed by the PC is a
      // gather of one load per SIMD lane on lavapipe, in every iteration of every loop.
      std::string out;
      for (size_t c = 0; c * words_ < members_.size(); ++c) {
        std::string row = "0u";
        for (uint32_t w = words_; w-- > 0;)
          row = fmt::format("w == {}u ? 0x{:08x}u : {}", w, members_[c * words_ + w], row);
        out += fmt::format(
            "bool ab_inside_{}() {{\n{}  const uint w = pc >> 5u;\n"
            "  return (({}) & (1u << (pc & 31u))) != 0u;\n}}\n",
            c, pc, row);
      }
      return out;
    }
    std::string table;
    for (size_t i = 0; i < members_.size(); ++i)
      table += fmt::format("{}0x{:08x}u", i ? ", " : "", members_[i]);
    return fmt::format(
        "const uint ab_members[{0}] = uint[]({1});\n"
        "bool ab_inside(uint component) {{\n{3}"
        "  return (ab_members[component * {2}u + (pc >> 5u)] & (1u << (pc & 31u))) != 0u;\n"
        "}}\n",
        members_.size(), table, words_, pc);
  }

  // The loops of one pass over the emitted items (each component loop once).
  const LoopCount& loops() const { return loops_; }

 private:
  BlockSet part_;
  BlockRange hull_;  // the membership rows' bits start at its first block
  uint32_t words_;   // per component
  const std::vector<LoopCount>& block_loops_;
  LoopCount loops_;
  int components_ = 0;
  std::vector<uint32_t> members_;
};

// The local schedule per lane: each lane runs its own PC loop, visiting the blocks in sweep order
// (passes/analysis/sweep_order.h) with a loop per component, so lanes of a subgroup at the same
// block still run it together, a lane follows its forward edges within one iteration, and only a
// cycle costs another. A step is one loop iteration of the subgroup (at any nesting level).
// `sweep_loops`: the loops of one pass over the sweep (SweepEmitter::loops).
std::string lane_entry_point(const LoweredProgram& program, const SourcePart& part,
                             const std::vector<LoopCount>& block_loops, LoopCount& sweep_loops) {
  SweepEmitter sweep(part.blocks, block_loops);
  std::string body;
  const uint64_t outer_pass = sweep.emit(sweep_order(program, part.copy_callees), 2, body);
  sweep_loops = sweep.loops();
  const std::string outer = fmt::format("#define AB_OUTER_PASS_LOOPS {}u\n", outer_pass + 2);
  return fill_in(kAbEntryLaneText, {{"//@members", outer + sweep.declarations()},
                                    {"//@blocks", body},
                                    {"AB_RS_STEPS", slot_register(AB_SLOT_STEPS)}});
}

}  // namespace

const char* kernel_macro(Kernel k) {
  switch (k) {
    case Kernel::GlobalMasked:
      return "AB_GLOBAL_MASKED";
    case Kernel::GlobalCompacted:
      return "AB_GLOBAL_COMPACTED";
    case Kernel::LocalSubgroup:
      return "AB_LOCAL_SUBGROUP";
    case Kernel::LocalWorkgroup:
      return "AB_LOCAL_WORKGROUP";
    case Kernel::LocalLane:
      return "AB_LOCAL_LANE";
    case Kernel::GlobalFused:
      return "AB_GLOBAL_FUSED";
  }
  return "";
}

Residency residency_of(Kernel k) {
  // Only the global kernels that run one block per dispatch read and write the state buffer.
  return k == Kernel::GlobalMasked || k == Kernel::GlobalCompacted ? Residency::Memory
                                                                   : Residency::Registers;
}

std::string generate_glsl(const LoweredProgram& program, const StateLayout& layout,
                          Residency residency, const GlslTarget& target, const SourcePart& part) {
  const BlockSet& blocks = part.blocks;
  std::string out;
  out += "#version 450\n";
  // Float controls (SPIR-V 1.4 core): capability and execution mode ids, for 32-bit floats.
  if (target.preserve_float_specials || target.preserve_denorms)
    out += "#extension GL_EXT_spirv_intrinsics : require\n";
  if (target.preserve_float_specials)  // SignedZeroInfNanPreserve
    out += "spirv_execution_mode(capabilities = [4466], 4461, 32);\n";
  if (target.preserve_denorms)  // DenormPreserve
    out += "spirv_execution_mode(capabilities = [4464], 4459, 32);\n";
  out +=
      "#if defined(AB_LOCAL_SUBGROUP) || defined(AB_LOCAL_LANE) || defined(AB_GLOBAL_FUSED)\n"
      "#extension GL_KHR_shader_subgroup_basic : require\n"
      "#extension GL_KHR_shader_subgroup_arithmetic : require\n#endif\n";
  // The lane sweep on a device with a loop cap keeps a row's lanes in each component loop with
  // subgroupAny (AB_LOOP_CONTINUE, ab_common.glsl).
  if (target.loop_limit > 0 && residency == Residency::Registers)
    out += "#ifdef AB_LOCAL_LANE\n#extension GL_KHR_shader_subgroup_vote : require\n#endif\n";
  if (target.subgroup_ballot)
    out +=
        "#define AB_SUBGROUP_BALLOT 1\n#extension GL_KHR_shader_subgroup_basic : require\n"
        "#extension GL_KHR_shader_subgroup_ballot : require\n";
  out += fmt::format("// Generated by autobatch from '{}': {} blocks, {} variables.\n",
                     program.source ? program.source->file : "", program.blocks.size(),
                     program.vars.size());
  // AB_FIRST_BLOCK and AB_END_BLOCK bound the part's blocks (the sweep's membership rows start
  // at the first); AB_IN_PART tests each of its ranges.
  const BlockRange hull = blocks.hull();
  std::string in_part = "(pc) >= AB_FIRST_BLOCK && (pc) < AB_END_BLOCK", listed;
  if (blocks.ranges.size() > 1) in_part.clear();
  for (const BlockRange& r : blocks.ranges) {
    if (blocks.ranges.size() > 1)
      in_part += fmt::format("{}((pc) >= {}u && (pc) < {}u)", in_part.empty() ? "" : " || ",
                             r.first, r.end);
    listed += fmt::format("{}[{}, {})", listed.empty() ? "" : " ", r.first, r.end);
  }
  out += fmt::format(
      "// The blocks of this source: {0}{1}.\n#define AB_FIRST_BLOCK {2}u\n"
      "#define AB_END_BLOCK {3}u\n#define AB_IN_PART(pc) ({4})\n",
      listed,
      hull.first == 0 && static_cast<size_t>(hull.end) == program.blocks.size() &&
              blocks.ranges.size() == 1
          ? ", the whole program"
          : ", one part of a split program",
      hull.first, hull.end, in_part);
  // The blocks first: a device with a loop limit needs their loops' bounds ahead of them.
  std::string block_functions;
  std::vector<LoopCount> block_loops(program.blocks.size());
  blocks.each([&](int32_t b) {
    BlockEmitter block(program, layout, b, residency, block_functions, part.slots_in_registers,
                       part.private_stack_depth > 0, part.register_words, part.banks);
    block.emit();
    block_loops[b] = block.loops();
  });
  // Only the kernels that run many blocks per dispatch count their loops (ab_common.glsl).
  const bool count_loops = target.loop_limit > 0 && residency == Residency::Registers;
  if (count_loops) out += "#define AB_LOOP_LIMITED 1\n";
  out += kAbLayoutText;
  std::string common = kAbCommonText;
  const std::string include_line = "#include \"ab_layout.h\"";
  if (auto at = common.find(include_line); at != std::string::npos)
    common.erase(at, include_line.size());
  out += common;
  out +=
      "layout(set = 0, binding = AB_BIND_UNIFORMS, std430) readonly buffer Uniforms { uint w[]; } "
      "uni;\n";
  for (uint32_t a = 0; a < layout.arenas; ++a)
    out += fmt::format(
        "layout(set = 0, binding = AB_BIND_ARENA0 + {0}, std430) buffer Arena{0} {{ uint w[]; }} "
        "arena{0};\n",
        a);
  out += BankAddress(part.banks).declarations(layout.arenas);
  if (program.source && program.source->emit_type != Types::kVoid)
    out +=
        "layout(set = 0, binding = AB_BIND_STREAM, std430) buffer Stream { uint w[]; } stream;\n";
  out += glsl_prelude();
  const bool registers = residency == Residency::Registers;
  const bool slots_in_registers = registers || part.slots_in_registers;
  if (slots_in_registers)
    out +=
        lane_registers(program, layout, blocks, registers, part.compact_moves,
                       registers ? part.private_stack_depth : 0, part.register_words, part.banks) +
        raise_in_registers();
  else
    out += kAbRaiseMemoryText;
  out += block_functions;
  out += run_block_function(slots_in_registers, blocks);
  if (!registers)
    out += slots_in_registers ? "#define AB_STEP(lane, b) { ab_load(lane); run_block(lane, b); "
                                "ab_store(lane); }\n"
                              : "#define AB_STEP(lane, b) run_block(lane, b)\n";
  LoopCount sweep_loops;
  const std::string lane_entry =
      registers ? lane_entry_point(program, part, block_loops, sweep_loops) : "";
  if (count_loops)
    out += loop_count_defines(target, layout, program, block_loops, sweep_loops,
                              part.private_stack_depth);
  out += registers ? kAbEntryRegistersText : kAbEntryMemoryText;
  return out + lane_entry;
}

uint32_t private_stack_depth(const StateLayout& layout, uint32_t depth, uint32_t limit_words) {
  uint64_t words = 0;
  for (const StackPlacement& s : layout.stacks)
    words += s.words;
  return words * depth <= limit_words ? depth : 0;
}

std::string generate_glsl(const LoweredProgram& program, const StateLayout& layout,
                          Residency residency, const GlslTarget& target) {
  return generate_glsl(
      program, layout, residency, target,
      SourcePart{BlockSet{{BlockRange{0, static_cast<int32_t>(program.blocks.size())}}}});
}

std::string generate_block_glsl(const LoweredProgram& program, const StateLayout& layout,
                                int32_t block) {
  std::string out;
  if (block >= 0 && static_cast<size_t>(block) < program.blocks.size())
    BlockEmitter(program, layout, block, Residency::Memory, out).emit();
  return out;
}

}  // namespace ab
