// What a Module says about itself through the public API alone (autobatch/module.h,
// value_type.h, user_input.h): the interface's types as trees, the functions, the lowered blocks
// and their IR text, checked-only modules, the functions_first block order, and the helpers the
// tools quote and read user input with. No Vulkan: everything here runs on the CPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "autobatch/engine.h"
#include "autobatch/module.h"
#include "autobatch/user_input.h"
#include "autobatch/value_type.h"
#include "support/compiled.h"

namespace ab {
namespace {

using testing::compiled;

const char* kProgram = R"(struct Inner { lo: int, hi: bool }
struct Out { sum: float, grid: int[2][3], inner: Inner }
uniform scale: float[4];

fn fib(n: int) -> int {
    if n <= 1 { return 1; }
    return fib(n - 1) + fib(n - 2);
}

fn main(n: int, weights: float[3]) -> Out {
    var row = [n, n, n];
    return Out { sum: weights[0] * scale[1], grid: [row, row], inner: Inner { lo: fib(n), hi: n > 2 } };
}
)";

TEST_CASE("module api: the interface's types are trees with words, dimensions and fields") {
  const auto module = compiled(kProgram, {"prog.ab", "main"});
  REQUIRE(module->inputs().size() == 2);
  const ValueType& n = module->inputs()[0].value_type;
  CHECK(n.is_scalar());
  CHECK(n.scalar == Scalar::Int);
  CHECK(n.words == 1);
  const ValueType& weights = module->inputs()[1].value_type;
  REQUIRE(weights.is_array());
  CHECK(weights.count == 3);
  CHECK(weights.elem().scalar == Scalar::Float);
  CHECK(weights.spelling() == "float[3]");

  const ValueType& out = module->output().value_type;
  REQUIRE(out.is_struct());
  CHECK(out.struct_name == "Out");
  CHECK(out.words == 1 + 6 + 2);
  CHECK(out.spelling() == module->output().type);
  REQUIRE(out.fields.size() == 3);
  const ValueField* grid = out.field("grid");
  REQUIRE(grid);
  CHECK(grid->offset == 1);
  CHECK(grid->type.spelling() == "int[2][3]");
  CHECK(grid->type.count == 2);
  CHECK(grid->type.elem().count == 3);
  const ValueField* inner = out.field("inner");
  REQUIRE(inner);
  CHECK(inner->offset == 7);
  CHECK(inner->type.field("hi")->offset == 1);
  CHECK(inner->type.field("hi")->type.scalar == Scalar::Bool);
  CHECK(out.field("missing") == nullptr);

  REQUIRE(module->uniforms().size() == 1);
  CHECK(module->uniforms()[0].value_type.spelling() == "float[4]");
  CHECK(module->emit_record().value_type.is_void());
  CHECK(module->emit_record().value_type.spelling() == "void");
  CHECK(scalar_name(Scalar::UInt) == std::string("uint"));
  CHECK(bits_float(float_bits(1.5f)) == 1.5f);
}

TEST_CASE("module api: functions in source order, with their signatures and places") {
  const auto module = compiled(kProgram, {"prog.ab", "main"});
  const auto& functions = module->functions();
  REQUIRE(functions.size() == 2);
  CHECK(functions[0].name == "fib");
  CHECK(functions[0].line == 5);
  REQUIRE(functions[0].params.size() == 1);
  CHECK(functions[0].params[0].name == "n");
  CHECK(functions[0].result.type == "int");
  CHECK(functions[1].name == "main");
  CHECK(functions[1].params[1].type == "float[3]");
  CHECK(module->has_entry());
}

TEST_CASE("module api: the lowered blocks name the PCs the VM runs, with their IR text") {
  const auto module = compiled(kProgram, {"prog.ab", "main"});
  const auto& blocks = module->blocks();
  REQUIRE(!blocks.empty());
  CHECK(blocks[0].name == "fib.b0");
  CHECK(blocks[0].function == "fib");
  CHECK(blocks[0].line > 0);
  // Every block's text is a piece of the whole lowered program's, in order.
  const std::string lowered = module->lowered_ir_text();
  size_t at = 0;
  for (int32_t b = 0; b < static_cast<int32_t>(blocks.size()); ++b) {
    const std::string text = module->block_ir_text(b);
    REQUIRE(!text.empty());
    CHECK(text.find(blocks[b].name) != std::string::npos);
    const size_t found = lowered.find(text, at);
    REQUIRE(found != std::string::npos);
    at = found + text.size();
  }
  // Lines and calls: fib's blocks hold the recursive calls (line 7), main's the call of fib.
  bool calls_fib = false;
  for (const BlockInfo& b : blocks) {
    CHECK(std::is_sorted(b.lines.begin(), b.lines.end()));
    if (b.call_entry < 0) {
      CHECK(b.call_return == -1);
      continue;
    }
    CHECK(blocks[b.call_entry].function == "fib");
    CHECK(blocks[b.call_entry].name == "fib.b0");
    REQUIRE(b.call_return >= 0);
    CHECK(blocks[b.call_return].function == b.function);
    calls_fib |= b.function == "main";
  }
  CHECK(calls_fib);
  CHECK(std::find(blocks[0].lines.begin(), blocks[0].lines.end(), 6) != blocks[0].lines.end());
  CHECK(module->source_text() == kProgram);
  CHECK(std::string(VariableInfo::storage_name(VariableInfo::Storage::Stacked)) == "stacked");
  const std::string glsl = block_glsl(*module, 0);
  CHECK(!glsl.empty());
  CHECK(block_glsl(*module, static_cast<int32_t>(blocks.size())).empty());
  CHECK(module->block_ir_text(-1).empty());
  CHECK(module->block_ir_text(static_cast<int32_t>(blocks.size())).empty());
  CHECK(module->ir_text().find("fn fib(") != std::string::npos);

  // The VM's per-block counters and trace index these blocks.
  Batch batch;
  batch.lanes = 3;
  batch.inputs = {{0, 4, 7}, std::vector<uint32_t>(9, float_bits(2.0f))};
  batch.uniforms = {std::vector<uint32_t>(4, float_bits(0.5f))};
  RunOptions options;
  options.record_trace = true;
  auto result = module->run_cpu(batch, options, CpuBackend::Vm);
  REQUIRE(result.ok());
  CHECK(result->stats.block_executions.size() == blocks.size());
  for (const TraceStep& step : result->trace)
    CHECK(static_cast<size_t>(step.block) < blocks.size());
}

TEST_CASE("module api: with no entry the source is only checked") {
  CompileOptions options;
  options.file = "lib.ab";
  options.entry = "";
  const auto module = compiled(kProgram, options);
  CHECK_FALSE(module->has_entry());
  CHECK(module->functions().size() == 2);
  CHECK(module->inputs().empty());
  CHECK(module->output().value_type.is_void());
  CHECK(module->blocks().empty());
  CHECK(module->lowered_ir_text().empty());
  CHECK(module->ir_text() == compiled(kProgram, {"lib.ab", "main"})->ir_text());
  Batch batch;
  batch.lanes = 1;
  const Status fits = module->check(batch);
  REQUIRE_FALSE(fits.ok());
  CHECK(fits.error() == "'lib.ab' was compiled without an entry function: it cannot run");
  CHECK_FALSE(module->run_cpu(batch).ok());
}

TEST_CASE("module api: functions_first puts the named functions' blocks first, same results") {
  CompileOptions options;
  options.entry = "main";
  options.functions_first = {"ma*"};
  const auto reordered = compiled(kProgram, options);
  const auto plain = compiled(kProgram);
  CHECK(reordered->functions()[0].name == "main");
  CHECK(reordered->blocks()[0].name == "main.b0");
  CHECK(plain->blocks()[0].name == "fib.b0");
  Batch batch;
  batch.lanes = 4;
  batch.inputs = {{0, 3, 6, 9}, std::vector<uint32_t>(12, float_bits(1.0f))};
  batch.uniforms = {std::vector<uint32_t>(4, float_bits(3.0f))};
  auto a = reordered->run_cpu(batch);
  auto b = plain->run_cpu(batch);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->outputs == b->outputs);
}

TEST_CASE("module api: errors are formatted diagnostics or name the missing entry, excerpted") {
  auto broken = Module::compile("fn main() -> int { return x; }", {"bad.ab", "main"});
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.failure().formatted);
  CHECK(broken.error().find("bad.ab:1:") == 0);

  const std::string long_name(100, 'q');
  auto missing = Module::compile("fn f() -> int { return 1; }", {"one.ab", long_name});
  REQUIRE_FALSE(missing.ok());
  CHECK_FALSE(missing.failure().formatted);
  CHECK(missing.error() == "no function '" + std::string(kExcerptChars, 'q') +
                               "…' in 'one.ab' to use as the entry; its functions are: f");
}

TEST_CASE("module api: user input is read from regular files only and quoted short") {
  CHECK(excerpt("abc") == "abc");
  CHECK(excerpt("a\nb") == "a\\x0ab");
  CHECK(excerpt(std::string(70, 'z'), 5) == "zzzzz…");
  CHECK(excerpt("é", 1) == "é");

  const auto dir = std::filesystem::temp_directory_path() / "ab_module_api_test";
  std::filesystem::create_directories(dir);
  const auto file = dir / "x.txt";
  std::ofstream(file) << "text";
  const FileContents read = read_regular_file(file.string());
  CHECK(read.ok());
  CHECK(read.bytes == "text");
  CHECK(read_regular_file(dir.string()).error == "it is a directory");
  CHECK_FALSE(read_regular_file((dir / "none").string()).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ab
