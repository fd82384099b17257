// VmSession (autobatch/vm.h) through the public API alone: stepping gives what Module::run_cpu's
// VM gives, the views and variables() agree with the batch, checkpoints restore exactly, and a
// state that does not fit is refused. No Vulkan.
#include <doctest/doctest.h>

#include "autobatch/module.h"
#include "autobatch/vm.h"
#include "support/compiled.h"

namespace ab {
namespace {

using testing::compiled;

const char* kFib = R"(fn fib(n: int) -> int {
    if n <= 1 { return 1; }
    return fib(n - 1) + fib(n - 2);
}

fn main(n: int) -> int {
    return fib(n);
}
)";

Batch fib_batch() {
  Batch batch;
  batch.lanes = 6;
  batch.inputs = {{0, 1, 5, 9, 3, 12}};
  return batch;
}

std::unique_ptr<VmSession> session(std::shared_ptr<const Module> module, Batch batch) {
  auto made = VmSession::create(std::move(module), std::move(batch));
  REQUIRE_MESSAGE(made.ok(), (made.ok() ? "" : made.error()));
  return std::move(*made);
}

TEST_CASE("vm session: stepping one step at a time ends where run_cpu's VM does") {
  const auto module = compiled(kFib);
  RunOptions traced;
  traced.record_trace = true;
  auto whole = module->run_cpu(fib_batch(), traced, CpuBackend::Vm);
  REQUIRE(whole.ok());

  auto vm = session(module, fib_batch());
  CHECK(vm->lanes() == 6);
  std::vector<int32_t> blocks;
  while (!vm->done()) {
    const int32_t next = vm->next_block();
    REQUIRE(next >= 0);
    REQUIRE(vm->step(1) == 1);
    blocks.push_back(next);
    CHECK(!vm->last_active().empty());
  }
  CHECK(vm->next_block() == -1);
  CHECK(vm->step(5) == 0);
  REQUIRE(blocks.size() == whole->trace.size());
  for (size_t i = 0; i < blocks.size(); ++i)
    CHECK(blocks[i] == whole->trace[i].block);
  const RunResult result = vm->result();
  CHECK(result.outputs == whole->outputs);
  CHECK(result.outputs == std::vector<uint32_t>{1, 1, 8, 55, 3, 233});
  CHECK(result.stats.steps == vm->steps());
  const auto exit_pc = static_cast<int32_t>(module->blocks().size());
  for (int32_t pc : vm->lane_pcs())
    CHECK(pc == exit_pc);
}

TEST_CASE("vm session: registers hold every variable at its variables() offset") {
  const auto module = compiled(kFib);
  const VariableInfo* main_n = nullptr;
  for (const VariableInfo& v : module->variables())
    if (v.name == "main.n") main_n = &v;
  REQUIRE(main_n);
  CHECK(main_n->from_source);
  CHECK(main_n->function == "main");
  CHECK(main_n->value_type.spelling() == "int");
  uint32_t words = 0;
  for (const VariableInfo& v : module->variables())
    words = std::max(words, v.offset + v.value_type.words);
  CHECK(words == module->register_words());
  bool stacked = false;
  for (const VariableInfo& v : module->variables())
    stacked |= v.storage == VariableInfo::Storage::Stacked;
  CHECK(stacked);  // fib's n lives across its first recursive call

  auto vm = session(module, fib_batch());
  const Batch batch = fib_batch();
  const uint32_t w = module->register_words();
  REQUIRE(vm->registers().size() == size_t{batch.lanes} * w);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane)
    CHECK(vm->registers()[lane * w + main_n->offset] == batch.inputs[0][lane]);
  const BatchSnapshot snap = vm->snapshot(2, 3);
  CHECK(snap.lanes == 3);
  CHECK(snap.registers.size() == size_t{3} * w);
  CHECK(snap.registers[main_n->offset] == 5);  // lane 2
}

TEST_CASE("vm session: a checkpoint restores the run exactly, any number of times") {
  const auto module = compiled(kFib);
  auto vm = session(module, fib_batch());
  vm->step(17);
  const auto state = vm->checkpoint();
  CHECK(state->step() == 17);
  CHECK(state->bytes() > 0);
  const std::vector<int32_t> pcs = vm->lane_pcs();
  std::vector<int32_t> first_run;
  while (!vm->done()) {
    first_run.push_back(vm->next_block());
    vm->step(1);
  }
  const RunResult first = vm->result();
  for (int again = 0; again < 2; ++again) {
    REQUIRE(vm->restore(*state).ok());
    CHECK(vm->steps() == 17);
    CHECK(vm->lane_pcs() == pcs);
    std::vector<int32_t> run;
    while (!vm->done()) {
      run.push_back(vm->next_block());
      vm->step(1);
    }
    CHECK(run == first_run);
    CHECK(vm->result().outputs == first.outputs);
    CHECK(vm->result().stats.lane_steps == first.stats.lane_steps);
  }
}

TEST_CASE("vm session: pick_next_block is the VM's choice among waiting blocks") {
  CHECK(pick_next_block(Heuristic::MinPc, {0, 3, 9, 1}) == 1);
  CHECK(pick_next_block(Heuristic::MostLanes, {0, 3, 9, 1}) == 2);
  CHECK(pick_next_block(Heuristic::MostLanes, {4, 0, 4}) == 0);
  const auto module = compiled(kFib);
  auto vm = session(module, fib_batch());
  while (!vm->done()) {
    std::vector<uint32_t> waiting(module->blocks().size(), 0);
    for (uint32_t lane = 0; lane < vm->lanes(); ++lane)
      if (vm->lane_pcs()[lane] < static_cast<int32_t>(waiting.size()) && !vm->lane_faulted()[lane])
        ++waiting[vm->lane_pcs()[lane]];
    REQUIRE(pick_next_block(Heuristic::MinPc, waiting) == vm->next_block());
    vm->step(1);
  }
}

TEST_CASE("vm session: a state that does not fit is refused and changes nothing") {
  const auto module = compiled(kFib);
  auto vm = session(module, fib_batch());
  Batch fewer = fib_batch();
  fewer.lanes = 2;
  fewer.inputs = {{3, 4}};
  auto other = session(module, fewer);
  other->step(3);
  vm->step(5);
  const Status refused = vm->restore(*other->checkpoint());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().find("does not fit") != std::string::npos);
  CHECK(vm->steps() == 5);
  CHECK_FALSE(vm->check(*other->checkpoint()).ok());
  CHECK(vm->check(*vm->checkpoint()).ok());

  // A move-only value moves out of a temporary Expected.
  std::unique_ptr<VmSession> moved = *VmSession::create(module, fib_batch());
  CHECK(moved->lanes() == 6);

  Batch wrong;
  wrong.lanes = 2;
  auto bad = VmSession::create(module, wrong);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error() == module->check(wrong).error());
}

}  // namespace
}  // namespace ab
