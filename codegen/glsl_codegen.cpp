// A block's GLSL function (BlockEmitter) and the op spellings it uses; the rest of the code
// generator is in the files glsl_codegen_parts.h names.
#include "codegen/glsl_codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>
#include <utility>

#include "codegen/glsl_codegen_parts.h"
#include "shaders/ab_layout.h"

namespace ab {
namespace {

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

// An index for uint arithmetic: a literal gets its `u` (GLSL does not mix int and uint).
std::string as_uint(const std::string& index) {
  return !index.empty() && std::isdigit(static_cast<unsigned char>(index[0])) ? index + "u" : index;
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

// The loops of the prelude's helper behind `code` for one scalar of kind `in`
// (shaders/ab_math.glsl, ab_ops.glsl): the op's row says (ir/ops.cpp).
LoopCount helper_loops(OpCode code, Scalar in) {
  const LoopCost cost = helper_cost(code, in);
  return {cost.iterations, cost.statements};
}

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
               const Banks& banks = {}, const LoweredBlock* body = nullptr,
               bool unroll_long_loops = false)
      : p_(p),
        L_(layout),
        T_(p.types()),
        b_(index),
        block_(body ? *body : p.blocks[index]),
        registers_(residency == Residency::Registers),
        slots_in_registers_(registers_ || slots_in_registers),
        private_stacks_(registers_ && private_stacks),
        register_words_(register_words),
        at_(banks),
        unroll_long_loops_(unroll_long_loops),
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
  // The same over a loop variable of another name (for loops inside loops). A loop whose body
  // runs kLongLoopWords times or more, counting the loops around it, takes kLongLoopUnroll words
  // an iteration: a device that ends a shader's loops after so many iterations (lavapipe) then
  // counts that many times fewer (docs/engine.md, "lavapipe's loop cap"), and the words are still
  // visited in order, so every value and sum is the same.
  template <class F>
  void for_index(int indent, const std::string& var, uint32_t n, F body, uint32_t first = 0) {
    if (n <= kUnrollWords) {
      for (uint32_t i = first; i < first + n; ++i)
        body(indent, std::to_string(i));
      return;
    }
    const uint64_t outer_trips = trips_;
    const uint32_t step =
        unroll_long_loops_ && outer_trips * n >= kLongLoopWords ? kLongLoopUnroll : 1;
    const uint32_t looped = n / step * step;
    trips_ = outer_trips * n;
    const uint64_t before = loops_.iterations;
    const std::string next = step > 1 ? fmt::format("{} += {}u", var, step) : "++" + var;
    line(indent, fmt::format("for (uint {0} = {1}u; {0} < {2}u; {3}) {{", var, first,
                             first + looped, next));
    for (uint32_t k = 0; k < step; ++k) {
      if (step > 1) line(indent + 1, "{");
      body(indent + 1 + (step > 1), k == 0 ? var : fmt::format("({} + {}u)", var, k));
      if (step > 1) line(indent + 1, "}");
    }
    line(indent, "}");
    // looped / step iterations and the final test, each with the body's own loops.
    loops_.iterations = before + uint64_t{looped / step} * (1 + loops_.iterations - before) + 1;
    loops_.statements += 1;
    trips_ = outer_trips;
    for (uint32_t i = first + looped; i < first + n; ++i)  // the rest, fewer than `step`
      body(indent, std::to_string(i));
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
    const bool from_minus_zero = sum_start(op.code, in) != 0;  // ir/ops.h
    line(2, fmt::format("{} acc = {};", type,
                        from_minus_zero ? "uintBitsToFloat(0x80000000u)" : zero_of(in)));
    const std::string add = op_info(OpCode::Add).glsl;
    // Adds the terms of words [first, first + count) to `into`; `first` a GLSL uint expression.
    const auto add_terms = [&](int indent, const std::string& into, const std::string& first,
                               uint32_t count) {
      for_words(indent, count, [&](int ind, const std::string& i) {
        const std::string k = first == "0u" ? i : fmt::format("{} + {}", first, as_uint(i));
        std::string term = typed(in, word(op.args[0], k));
        if (op.code == OpCode::Dot)
          term = fmt::format(fmt::runtime(op_info(OpCode::Mul).glsl), term,
                             typed(in, word(op.args[1], k)));
        line(ind, fmt::format("{{ {} term = {}; {} = {}; }}", type, term, into,
                              fmt::format(fmt::runtime(add), into, "term")));
      });
    };
    if (op.code == OpCode::Dot && in == Scalar::Float && n > kProductBlock) {
      // a product's element (product_element, autobatch/numerics.h): a partial per block, added to
      // acc from +0
      const auto block = [&](int ind, const std::string& first, uint32_t count) {
        line(ind, "{");
        line(ind + 1, "precise float partial = 0.0;");
        add_terms(ind + 1, "partial", first, count);
        line(ind + 1, fmt::format("acc = {};", fmt::format(fmt::runtime(add), "acc", "partial")));
        line(ind, "}");
      };
      const uint32_t full = n / kProductBlock, rest = n % kProductBlock;
      for_index(2, "b", full, [&](int ind, const std::string& b) {
        block(ind, fmt::format("{} * {}u", as_uint(b), kProductBlock), kProductBlock);
      });
      if (rest > 0) block(2, fmt::format("{}u", n - rest), rest);
    } else {
      add_terms(2, "acc", "0u", n);
    }
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
    with_matrix_result(op, [&](const auto& out) { emit_matrix_body(op, out); });
  }

  // A matrix op's scope, in which body(out) writes the result's word idx at out(idx): a scratch
  // array when the result aliases an operand, copied into the result at the end.
  template <class F>
  void with_matrix_result(const Op& op, F body) {
    const bool aliases = std::find(op.args.begin(), op.args.end(), op.dst) != op.args.end();
    line(1, "{");
    if (aliases) line(2, fmt::format("uint res[{}];", words(op.dst)));
    body([&](const std::string& idx) {
      return aliases ? fmt::format("res[{}]", idx) : word(op.dst, idx);
    });
    if (aliases)
      for_words(2, words(op.dst), [&](int ind, const std::string& i) {
        line(ind, fmt::format("{} = res[{}];", word(op.dst, i), i));
      });
    line(1, "}");
  }

  template <class Out>
  void emit_matrix_body(const Op& op, const Out& out) {
    const VarId a = op.args[0], b = op.args.size() > 1 ? op.args[1] : -1;
    const MatrixShape s =
        matrix_shape(T_, op.code, p_.vars[a].type, b >= 0 ? p_.vars[b].type : Types::kVoid);
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
  }

  // cholesky_decompose, mdivide_left_tri_low and its transpose: the chains of rounded operations
  // of triangular_words (ir/linear_algebra.h), as loops over the triangle, counted for lavapipe.
  void emit_triangular(const Op& op) {
    const VarId a = op.args[0], b = op.args.size() > 1 ? op.args[1] : -1;
    const MatrixShape s =
        matrix_shape(T_, op.code, p_.vars[a].type, b >= 0 ? p_.vars[b].type : Types::kVoid);
    const uint32_t n = s.m;
    auto f = [](const std::string& w) { return typed(Scalar::Float, w); };
    auto at = [](const char* row, uint32_t stride, const char* col) {
      return fmt::format("{} * {}u + {}", row, stride, col);
    };
    const std::string divide = fmt::format(fmt::runtime(op_info(OpCode::Div).glsl), "s", "{}");
    with_matrix_result(op, [&](const auto& out) {
      // s = s - x * y: a rounded product, then a rounded subtraction
      auto minus = [&](int ind, const std::string& x, const std::string& y) {
        line(ind, fmt::format("{{ precise float t = {} * {}; s = s - t; }}", x, y));
      };
      auto store = [&](int ind, const std::string& idx, const std::string& value) {
        line(ind,
             fmt::format("{{ precise float r = {}; {} = floatBitsToUint(r); }}", value, out(idx)));
      };
      if (op.code == OpCode::Cholesky) {
        line(2, fmt::format("for (uint i = 0u; i < {}u; ++i) {} = 0u;", n * n, out("i")));
        line(2, fmt::format("for (uint j = 0u; j < {}u; ++j) {{", n));
        line(3, fmt::format("for (uint i = j; i < {}u; ++i) {{", n));
        line(4, fmt::format("precise float s = {};", f(word(a, at("i", n, "j")))));
        line(4, "for (uint k = 0u; k < j; ++k)");
        minus(5, f(out(at("i", n, "k"))), f(out(at("j", n, "k"))));
        store(4, at("i", n, "j"),
              fmt::format("i == j ? {} : {}",
                          fmt::format(fmt::runtime(op_info(OpCode::Sqrt).glsl), "s"),
                          fmt::format(fmt::runtime(divide), f(out(at("j", n, "j"))))));
        line(3, "}");
        line(2, "}");
        uint64_t iterations = uint64_t{n} * n + 1 + n + 1;
        for (uint64_t j = 0; j < n; ++j)
          iterations += (n - j + 1) + (n - j) * (j + 1);
        return add(LoopCount{iterations, 4});
      }
      const uint32_t p = s.p;
      const bool back = op.code == OpCode::TriSolveT;
      line(2, fmt::format("for (uint c = 0u; c < {}u; ++c) {{", p));
      line(3, fmt::format("for (uint step = 0u; step < {}u; ++step) {{", n));
      line(4, back ? fmt::format("uint i = {}u - step;", n - 1) : "uint i = step;");
      line(4, fmt::format("precise float s = {};", f(word(b, at("i", p, "c")))));
      if (back) {
        line(4, fmt::format("for (uint k = i + 1u; k < {}u; ++k)", n));
        minus(5, f(word(a, at("k", n, "i"))), f(out(at("k", p, "c"))));
      } else {
        line(4, "for (uint k = 0u; k < i; ++k)");
        minus(5, f(word(a, at("i", n, "k"))), f(out(at("k", p, "c"))));
      }
      store(4, at("i", p, "c"), fmt::format(fmt::runtime(divide), f(word(a, at("i", n, "i")))));
      line(3, "}");
      line(2, "}");
      // per column: n steps and a test, each step's inner loop its length and a test
      add(LoopCount{p + 1 + uint64_t{p} * (n + 1 + uint64_t{n} * (n + 1) / 2), 3});
    });
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
      case OpCode::Cholesky:
      case OpCode::TriSolve:
      case OpCode::TriSolveT:
        return emit_triangular(op);
      case OpCode::RandUniform:
      case OpCode::RandNormal:
        // The stream of the lane's place in the whole batch (ab_ops.glsl's Philox).
        line(1, fmt::format("{} = floatBitsToUint({}(P.first_lane + lane, draws));", name(op.dst),
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
  bool unroll_long_loops_;   // a device that caps loops: long loops take kLongLoopUnroll words
  std::string& out_;
  std::vector<VarId> referenced_, written_;
  std::set<VarId> read_first_;
  bool uses_random_ = false;
  LoopCount loops_;     // of for_words and the helpers
  uint64_t trips_ = 1;  // how many times for_index's current body runs, the loops around it counted
  // The block holds an Emit (at most one: the front end starts a block at each).
  bool emits_ = false;
};

}  // namespace

PartUse part_use(const LoweredProgram& program, const BlockSet& part) {
  PartUse u{std::vector<bool>(program.vars.size(), false),
            std::vector<bool>(program.vars.size(), false)};
  part.each([&](int32_t b) {
    const LoweredBlock& block = program.blocks[b];
    for (const Op& op : block.ops) {
      for (VarId a : op.args)
        u.used[a] = true;
      if (op.dst >= 0) u.used[op.dst] = u.written[op.dst] = true;
      if (op.code == OpCode::Pop || op.code == OpCode::Update) u.written[op.args[0]] = true;
      u.random = u.random || op.code == OpCode::RandUniform || op.code == OpCode::RandNormal;
      u.emits = u.emits || op.code == OpCode::Emit;
    }
    if (block.term.kind == Terminator::Kind::Branch) u.used[block.term.cond] = true;
    u.calls = u.calls || block.term.kind == Terminator::Kind::PushJump;
    u.tail_calls = u.tail_calls || block.term.kind == Terminator::Kind::TailJump;
    u.returns = u.returns || block.term.kind == Terminator::Kind::Return;
  });
  return u;
}

LoopCount emit_block(const LoweredProgram& program, const StateLayout& layout, int32_t b,
                     Residency residency, const SourcePart& part, std::string& out,
                     bool unroll_long_loops) {
  // A block whose ops run apart keeps its name, location and terminator.
  const bool apart =
      std::find(part.ops_apart.begin(), part.ops_apart.end(), b) != part.ops_apart.end();
  LoweredBlock jump_only;
  if (apart) {
    jump_only = program.blocks[b];
    jump_only.ops.clear();
  }
  BlockEmitter block(program, layout, b, residency, out, part.slots_in_registers,
                     part.private_stack_depth > 0, part.register_words, part.banks,
                     apart ? &jump_only : nullptr, unroll_long_loops);
  block.emit();
  return block.loops();
}

std::string generate_block_glsl(const LoweredProgram& program, const StateLayout& layout,
                                int32_t block) {
  std::string out;
  if (block >= 0 && static_cast<size_t>(block) < program.blocks.size())
    BlockEmitter(program, layout, block, Residency::Memory, out).emit();
  return out;
}

}  // namespace ab
