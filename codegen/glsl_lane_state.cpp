// Where the generated code finds a lane's words (glsl_codegen_parts.h): the registers of register
// residency, ab_load/ab_store moving a lane's state into them and back once per dispatch, and
// ab_raise writing the fault record from them.
#include <fmt/format.h>

#include "codegen/glsl_codegen_parts.h"
#include "codegen/shader_texts.h"
#include "shaders/ab_layout.h"

namespace ab {

std::string slot_register(uint32_t s) {
  return fmt::format("rs{}", s);
}
std::string var_register(VarId v) {
  return fmt::format("rv{}", v);
}
std::string private_stack(int k) {
  return fmt::format("ab_stack{}", k);
}

namespace {

// The fault record: the slots only ab_raise and ab_raise_index write.
constexpr uint32_t kFaultSlots[] = {AB_SLOT_FAULT,      AB_SLOT_FAULT_BLOCK, AB_SLOT_FAULT_OP,
                                    AB_SLOT_FAULT_STEP, AB_SLOT_FAULT_INDEX, AB_SLOT_FAULT_VALUE};

// ab_load and ab_store as they are put together: the registers' declarations, the words each
// moves one by one, and the statements so far.
struct LaneMoves {
  struct Word {
    std::string reg;  // the register holding it
    uint32_t slot;
    bool stored;  // the part may change it
  };
  std::vector<Word> words;
  std::string decls, load, store;

  void add_slot(uint32_t s) {
    decls += fmt::format("uint {};\n", slot_register(s));
    words.push_back({slot_register(s), s, true});
  }
};

// The fixed and stack-pointer slots the part uses.
void add_slots(const LoweredProgram& program, const StateLayout& layout, const PartUse& u,
               LaneMoves& m) {
  m.add_slot(AB_SLOT_PC);
  m.add_slot(AB_SLOT_STEPS);
  if (u.calls || u.returns) m.add_slot(AB_SLOT_PC_SP);
  if (u.random) m.add_slot(AB_SLOT_DRAWS);
  if (u.emits) {
    m.add_slot(AB_SLOT_EMITTED);
    m.add_slot(AB_SLOT_PARKED);
  }
  if (u.calls || u.tail_calls) m.add_slot(AB_SLOT_CALLS);  // a tail call counts as a call
  if (u.calls) m.add_slot(AB_SLOT_MAX_DEPTH);
  for (size_t v = 0; v < program.vars.size(); ++v)
    if (u.used[v] && layout.sp_slot[v] >= 0) m.add_slot(static_cast<uint32_t>(layout.sp_slot[v]));
}

// The Register and Stacked variables the part uses, of at most `register_words` words.
void add_vars(const LoweredProgram& program, const StateLayout& layout, const PartUse& u,
              bool compact, uint32_t register_words, const BankAddress& at, LaneMoves& m) {
  const Types& types = program.types();
  for (size_t v = 0; v < program.vars.size(); ++v) {
    if (!u.used[v] || layout.var_slot[v] < 0) continue;
    const uint32_t n = types.words(program.vars[v].type);
    if (n > register_words) continue;  // the blocks read and write it in the state buffer
    const uint32_t s = static_cast<uint32_t>(layout.var_slot[v]);
    const std::string reg = var_register(static_cast<VarId>(v));
    if (n == 1) {
      m.decls += fmt::format("uint {};\n", reg);
      m.words.push_back({reg, s, u.written[v]});
      continue;
    }
    m.decls += fmt::format("uint {}[{}];\n", reg, n);
    if (n <= kUnrollWords || !compact) {
      for (uint32_t i = 0; i < n; ++i)
        m.words.push_back({fmt::format("{}[{}]", reg, i), s + i, u.written[v]});
      continue;
    }
    // A longer array of a split program: one access per word, outside the switch (whose time
    // per dispatch is quadratic in its cases).
    for (uint32_t i = 0; i < n; ++i) {
      m.load += fmt::format("  {}[{}] = {};\n", reg, i, at.state(s + i));
      if (u.written[v]) m.store += fmt::format("  {} = {}[{}];\n", at.state(s + i), reg, i);
    }
  }
}

// The words' loads and stores, one access each or (compact) through a loop, and the fault record.
void move_words(const BankAddress& at, bool compact, LaneMoves& m) {
  std::vector<const LaneMoves::Word*> stored;
  for (const LaneMoves::Word& w : m.words)
    if (w.stored) stored.push_back(&w);
  // The fault record: stored only by a lane that faulted in this dispatch (another's may hold an
  // earlier fault's record, which these registers, never loaded, would overwrite).
  const std::string faulted = fmt::format("{} != 0u", slot_register(AB_SLOT_FAULT));
  for (uint32_t s : kFaultSlots)
    m.decls += fmt::format("uint {};\n", slot_register(s));
  m.load += fmt::format("  {} = 0u;\n", slot_register(AB_SLOT_FAULT));
  if (!compact || m.words.size() <= kUnrollWords) {
    for (const LaneMoves::Word& w : m.words)
      m.load += fmt::format("  {} = {};\n", w.reg, at.state(w.slot));
  } else {
    std::string slots, regs;
    for (size_t i = 0; i < m.words.size(); ++i) {
      slots += fmt::format("      case {}u: s = {}u; break;\n", i, m.words[i].slot);
      regs += fmt::format("      case {}u: {} = w; break;\n", i, m.words[i].reg);
    }
    m.load += fmt::format(
        "  for (uint i = 0u; i < {}u; ++i) {{\n    uint s = 0u;\n    switch (i) {{\n{}    }}\n"
        "    const uint w = {};\n    switch (i) {{\n{}    }}\n  }}\n",
        m.words.size(), slots, at.state_get("s"), regs);
  }
  if (!compact || stored.size() + std::size(kFaultSlots) <= kUnrollWords) {
    for (const LaneMoves::Word* w : stored)
      m.store += fmt::format("  {} = {};\n", at.state(w->slot), w->reg);
    m.store += fmt::format("  if ({}) {{\n", faulted);
    for (uint32_t s : kFaultSlots)
      m.store += fmt::format("    {} = {};\n", at.state(s), slot_register(s));
    m.store += "  }\n";
  } else {
    std::string cases;
    for (size_t i = 0; i < stored.size(); ++i)
      cases += fmt::format("      case {}u: w = {}; s = {}u; break;\n", i, stored[i]->reg,
                           stored[i]->slot);
    size_t i = stored.size();
    for (uint32_t s : kFaultSlots)
      cases += fmt::format("      case {}u: w = {}; s = {}u; keep = {}; break;\n", i++,
                           slot_register(s), s, faulted);
    m.store += fmt::format(
        "  for (uint i = 0u; i < {}u; ++i) {{\n    uint w = 0u, s = 0u;\n    bool keep = true;\n"
        "    switch (i) {{\n{}    }}\n    if (keep) {}\n  }}\n",
        i, cases, at.state_set("s", "w"));
  }
}

// The private copies of the stacks the part uses, `private_depth` entries each: the entries below
// each stack pointer are copied in and, at the end, back out.
void add_private_stacks(const LoweredProgram& program, const StateLayout& layout, const PartUse& u,
                        uint32_t private_depth, const BankAddress& at, LaneMoves& m) {
  std::vector<std::pair<int, uint32_t>> stacks;  // (stack, its stack-pointer slot)
  if (u.calls || u.returns) stacks.push_back({0, AB_SLOT_PC_SP});
  for (size_t v = 0; v < program.vars.size(); ++v)
    if (u.used[v] && layout.stack_of[v] >= 0)
      stacks.push_back({layout.stack_of[v], static_cast<uint32_t>(layout.sp_slot[v])});
  for (const auto& [k, sp] : stacks) {
    const StackPlacement& st = layout.stacks[k];
    const std::string entries =
        fmt::format("min({}, {}u) * {}u", slot_register(sp), private_depth, st.words);
    const std::string word = fmt::format("({}u * P.depth + i) * L + lane", st.base);
    m.decls += fmt::format("uint {}[{}];\n", private_stack(k), private_depth * st.words);
    m.load += fmt::format("  for (uint i = 0u; i < {}; ++i) {}[i] = {};\n", entries,
                          private_stack(k), at.arena_get(st.arena, word));
    m.store += fmt::format("  for (uint i = 0u; i < {}; ++i) {}\n", entries,
                           at.arena_set(st.arena, word, fmt::format("{}[i]", private_stack(k))));
  }
}

}  // namespace

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

// The registers and ab_load / ab_store (glsl_codegen_parts.h says what they move and why).
std::string lane_registers(const LoweredProgram& program, const StateLayout& layout,
                           const BlockSet& part, bool with_vars, bool compact,
                           uint32_t private_depth, uint32_t register_words, const Banks& banks) {
  const BankAddress at(banks);
  const PartUse u = part_use(program, part);
  LaneMoves m;
  add_slots(program, layout, u, m);
  if (with_vars) add_vars(program, layout, u, compact, register_words, at, m);
  move_words(at, compact, m);
  if (private_depth > 0) add_private_stacks(program, layout, u, private_depth, at, m);
  return m.decls + "void ab_load(uint lane) {\n  const uint L = P.lanes;\n" + m.load +
         "}\nvoid ab_store(uint lane) {\n  const uint L = P.lanes;\n" + m.store + "}\n";
}

}  // namespace ab
