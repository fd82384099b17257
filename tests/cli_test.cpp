// End-to-end tests of the `autobatch` command-line tool: each test writes small programs and
// data files to a temp directory, runs the built binary (AB_CLI) there, and checks its exit
// code, stdout and stderr.
//
// Uses tools/npy.h, whose definitions inputs_test.cpp compiles into this test binary.
#include <doctest/doctest.h>

#include <algorithm>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/ops.h"
#include "support/program_gen.h"
#include "tools/npy.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
  json document() const {
    json parsed = json::parse(out, nullptr, false);
    REQUIRE_MESSAGE(!parsed.is_discarded(), "stdout is not one JSON document: " << out << err);
    return parsed;
  }
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A scratch directory in which the CLI runs; removed at scope exit.
class Workspace {
 public:
  Workspace() {
    static int counter = 0;
    dir_ = fs::temp_directory_path() / fmt::format("ab_cli_test_{}_{}", ::getpid(), counter++);
    fs::create_directories(dir_);
  }
  ~Workspace() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  const fs::path& dir() const { return dir_; }

  void write(const std::string& name, const std::string& bytes) const {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }

  // Runs `autobatch ARGS` in the workspace. Arguments are passed through the shell, so tests
  // use only plain words.
  // `env` is prepended to the command line (e.g. "VK_ICD_FILENAMES=/nonexistent").
  CliResult run(const std::string& args, const std::string& env = "") const {
    const std::string command = fmt::format("cd '{}' && {} '{}' {} > cli.out 2> cli.err",
                                            dir_.string(), env, AB_CLI, args);
    const int status = std::system(command.c_str());
    CliResult result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = slurp(dir_ / "cli.out");
    result.err = slurp(dir_ / "cli.err");
    return result;
  }

 private:
  fs::path dir_;
};

const char* kFib = R"(fn fib(n: int) -> int {
    if n <= 1 { return 1; }
    return fib(n - 1) + fib(n - 2);
}

fn main(n: int) -> int { return fib(n); }
)";

// Two lanes' worth of everything: a struct result with a nested struct and an array field,
// an array input, two uniforms, and a division that faults when k == 0 (line 9).
const char* kStruct = R"(struct Inner { lo: int, hi: int }
struct Out { sum: float, flags: bool[2], inner: Inner }
uniform weights: float[3];
uniform offset: int;

fn main(v: float[3], k: int) -> Out {
    var s = 0.0;
    for i in 0..3 { s += v[i] * weights[i]; }
    return Out { sum: s, flags: [k > 0, k > 1], inner: Inner { lo: k - offset, hi: 10 / k } };
}
)";

template <class T>
std::string raw_bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

}  // namespace

TEST_CASE("cli: check reports ok, compile errors, and unreadable files") {
  Workspace ws;
  ws.write("fib.ab", kFib);
  ws.write("bad.ab", "fn main(n: int) -> int { return m + 1; }\n");

  const CliResult ok = ws.run("check fib.ab");
  CHECK(ok.exit_code == 0);
  CHECK(ok.out == "fib.ab: ok (2 functions)\n");

  const CliResult bad = ws.run("check bad.ab");
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("bad.ab:1:") == 0);
  CHECK(bad.err.find("'m'") != std::string::npos);

  const CliResult missing = ws.run("check nope.ab");
  CHECK(missing.exit_code == 1);
  CHECK(missing.err == "error: cannot read 'nope.ab': No such file or directory\n");

  const CliResult run_missing = ws.run("run nope.ab -i n=1");
  CHECK(run_missing.exit_code == 1);
  CHECK(run_missing.err == "error: cannot read 'nope.ab': No such file or directory\n");
}

TEST_CASE("cli: no Vulkan device gives one clear line and exit 1; the CPU backends still run") {
  Workspace ws;
  ws.write("fib.ab", kFib);
  const std::string no_driver =
      "VK_ICD_FILENAMES=/nonexistent/icd.json VK_DRIVER_FILES=/nonexistent/icd.json";
  const CliResult run = ws.run("run fib.ab -i n=3", no_driver);
  CHECK(run.exit_code == 1);
  CHECK(run.err.rfind("error: no Vulkan device found", 0) == 0);
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  CHECK(ws.run("devices", no_driver).exit_code == 1);
  CHECK(ws.run("run fib.ab --backend vm -i n=3", no_driver).exit_code == 0);
  // With a device, `devices` lists at least one.
  const CliResult devices = ws.run("devices");
  CHECK(devices.exit_code == 0);
  CHECK(devices.out.rfind("0  ", 0) == 0);
}

TEST_CASE("cli: usage errors exit 2 with a pointer to --help") {
  Workspace ws;
  ws.write("fib.ab", kFib);
  for (const char* args : {"", "run fib.ab --bogus", "run", "run fib.ab --batch 0",
                           "run fib.ab --backend nope", "run fib.ab --format xml"}) {
    CAPTURE(args);
    const CliResult result = ws.run(args);
    CHECK(result.exit_code == 2);
    CHECK(result.err.find("error: ") == 0);
    CHECK(result.err.find("run 'autobatch --help'") != std::string::npos);
  }
  const CliResult trace_interp = ws.run("run fib.ab -i n=1 --backend interp --trace-steps");
  CHECK(trace_interp.exit_code == 2);
}

TEST_CASE("cli: --help lists every option with its default") {
  Workspace ws;
  const CliResult help = ws.run("run --help");
  CHECK(help.exit_code == 0);
  for (const char* text :
       {"--backend", "=vulkan", "--schedule", "--global-mode", "--local-scope", "--device",
        "--validation", "--entry", "=main", "--batch", "--input", "--uniform", "--seed",
        "--stack-depth", "=1024", "--max-steps", "=10000000", "--heuristic", "=min-pc", "--format",
        "=table", "--out", "--trace-steps"}) {
    CAPTURE(text);
    CHECK(help.out.find(text) != std::string::npos);
  }
  CHECK(ws.run("--help").exit_code == 0);
  CHECK(ws.run("ir --help").out.find("--lowered") != std::string::npos);
}

TEST_CASE("cli: bad inputs exit 1 with one message naming the input") {
  Workspace ws;
  ws.write("fib.ab", kFib);
  struct Case {
    const char* args;
    const char* message;
  };
  const Case cases[] = {
      {"run fib.ab -i n=range:5:2",
       "error: input 'n': 'range:5:2' is empty: A must be less than B\n"},
      {"run fib.ab -i n=1,2,3 --batch 5",
       "error: input 'n' has 3 values but the batch has 5 lanes\n"},
      {"run fib.ab -i n=1 -i m=2", "error: unknown input 'm': main takes n\n"},
      {"run fib.ab -i n=1 -i n=2", "error: input 'n' is given twice\n"},
      {"run fib.ab", "error: missing input 'n' (int): give --input n=SPEC\n"},
      {"run fib.ab -i n=1.5", "error: input 'n': '1.5' is not a valid int\n"},
      {"run fib.ab -i n=randint:0:9", "error: input 'n' uses randint, which needs --batch\n"},
      {"run fib.ab -i n=1 -u w=@w.npy",
       "error: unknown uniform 'w': the program declares no uniforms\n"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const CliResult result = ws.run(c.args);
    CHECK(result.exit_code == 1);
    CHECK(result.err == c.message);
    CHECK(result.out.empty());
  }
  const CliResult no_entry = ws.run("run fib.ab --entry start -i n=1");
  CHECK(no_entry.exit_code == 1);
  CHECK(no_entry.err.find("'start'") != std::string::npos);
  CHECK(no_entry.err.find("fib, main") != std::string::npos);
}

TEST_CASE("cli: fib over ten lanes gives the hand-computed values as JSON") {
  Workspace ws;
  ws.write("fib.ab", kFib);
  for (const char* backend : {"vm", "interp", "vulkan"}) {
    CAPTURE(backend);
    const CliResult result = ws.run(
        fmt::format("run fib.ab --backend {} -i n=range:0:10 --format json --validation", backend));
    REQUIRE(result.exit_code == 0);
    const json doc = result.document();
    // fib(0) = fib(1) = 1, fib(n) = fib(n-1) + fib(n-2).
    CHECK(doc["outputs"]["result"] == json::array({1, 1, 2, 3, 5, 8, 13, 21, 34, 55}));
    CHECK(doc["errors"] == json::array());
    CHECK(doc["stats"]["backend"] == backend);
    CHECK(doc["stats"]["lanes"] == 10);
    // main's call of fib(n) makes C(n) calls, C(n) = 1 + C(n-1) + C(n-2), C(0) = C(1) = 1:
    // 1 1 3 5 9 15 25 41 67 109 for n = 0..9, 276 in all (the entry itself is not a call).
    CHECK(doc["stats"]["calls"] == 276);
    CHECK(doc["stats"]["max_stack_depth"] == 10);  // main + fib(9) ... fib(1)
  }
  // Every schedule of the Vulkan engine gives the same values.
  for (const char* schedule : {"--schedule global --global-mode masked",
                               "--schedule global --global-mode compacted",
                               "--schedule local --local-scope subgroup",
                               "--schedule local --local-scope workgroup"}) {
    CAPTURE(schedule);
    const CliResult result = ws.run(fmt::format(
        "run fib.ab --backend vulkan {} -i n=range:0:10 --format json --validation", schedule));
    REQUIRE(result.exit_code == 0);
    CHECK(result.document()["outputs"]["result"] ==
          json::array({1, 1, 2, 3, 5, 8, 13, 21, 34, 55}));
  }
  // The global schedule's step trace is the VM's, step for step.
  const json vm_trace = ws.run("run fib.ab --backend vm -i n=range:0:10 --format json "
                               "--trace-steps").document()["trace"];
  const json gpu_trace = ws.run("run fib.ab --backend vulkan --schedule global -i n=range:0:10 "
                                "--format json --trace-steps").document()["trace"];
  CHECK(vm_trace.size() > 10);
  CHECK(gpu_trace == vm_trace);
  // Asking for the trace without naming a schedule selects the global one.
  const json default_trace =
      ws.run("run fib.ab -i n=range:0:10 --format json --trace-steps").document()["trace"];
  CHECK(default_trace == vm_trace);
  // The local schedule has no single step trace.
  CHECK(ws.run("run fib.ab --backend vulkan --schedule local -i n=1 --trace-steps").exit_code == 1);
  // A list input gives the same values, one per lane.
  const json listed = ws.run("run fib.ab -i n=3,4,5 --format json").document();
  CHECK(listed["outputs"]["result"] == json::array({3, 5, 8}));
}

TEST_CASE("cli: interp and vm agree on outputs and faults") {
  Workspace ws;
  ws.write("fib.ab", kFib);
  const std::string args = "-i n=range:0:12 --stack-depth 8 --format json";
  const json vm = ws.run("run fib.ab --backend vm " + args).document();
  const json interp = ws.run("run fib.ab --backend interp " + args).document();
  CHECK(vm["outputs"] == interp["outputs"]);
  CHECK(vm["errors"] == interp["errors"]);
  // With 8 frames (main + 7 fib), fib(7) fits and fib(8) overflows.
  CHECK(vm["outputs"]["result"][7] == 21);
  CHECK(vm["outputs"]["result"][8].is_null());
  REQUIRE(vm["errors"].size() == 4);
  CHECK(vm["errors"][0]["lane"] == 8);
  CHECK(vm["errors"][0]["code"] == "stack_overflow");
  CHECK(vm["errors"][0]["function"] == "fib");
}

TEST_CASE("cli: struct results, array inputs from csv, uniforms from csv") {
  Workspace ws;
  ws.write("st.ab", kStruct);
  ws.write("v.csv", "1,2,3\n0.5,0.5,0.5\n");
  ws.write("w.csv", "1\n2\n0.25\n");
  const CliResult result =
      ws.run("run st.ab -i v=@v.csv -i k=1,0 -u weights=@w.csv -u offset=5 --format json");
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json doc = result.document();
  const json& outputs = doc["outputs"];
  // Lane 0: 1*1 + 2*2 + 3*0.25 = 5.75; k=1: flags [true, false], lo 1-5 = -4, hi 10/1 = 10.
  CHECK(outputs["sum"] == json::array({5.75, nullptr}));
  CHECK(outputs["flags"] == json::parse("[[true, false], null]"));
  CHECK(outputs["inner.lo"] == json::array({-4, nullptr}));
  CHECK(outputs["inner.hi"] == json::array({10, nullptr}));
  CHECK_FALSE(outputs.contains("result"));
  // Lane 1: k=0 divides by zero on line 9.
  REQUIRE(doc["errors"].size() == 1);
  CHECK(doc["errors"][0]["lane"] == 1);
  CHECK(doc["errors"][0]["code"] == "division_by_zero");
  CHECK(doc["errors"][0]["function"] == "main");
  CHECK(doc["errors"][0]["line"] == 9);

  const CliResult table = ws.run("run st.ab -i v=@v.csv -i k=1,0 -u weights=@w.csv -u offset=5");
  CHECK(table.exit_code == 0);
  CHECK(table.out.find("inner.lo") != std::string::npos);
  CHECK(table.out.find("division_by_zero") != std::string::npos);
  CHECK(table.out.find("statistics") != std::string::npos);
}

TEST_CASE("cli: array inputs and uniforms from npy; shape mismatches are errors") {
  Workspace ws;
  ws.write("st.ab", kStruct);
  const std::vector<float> v{1, 2, 3, 0.5f, 0.5f, 0.5f};
  ws.write("v.npy", ab::cli::encode_npy("<f4", {2, 3}, raw_bytes(v)));
  const std::vector<double> w{1, 2, 0.25};
  ws.write("w.npy", ab::cli::encode_npy("<f8", {3}, raw_bytes(w)));
  const std::vector<int64_t> offset{5};
  ws.write("offset.npy", ab::cli::encode_npy("<i8", {}, raw_bytes(offset)));
  const std::vector<int32_t> k{1, 2};
  ws.write("k.npy", ab::cli::encode_npy("<i4", {2}, raw_bytes(k)));

  const CliResult result = ws.run(
      "run st.ab -i v=@v.npy -i k=@k.npy -u weights=@w.npy -u offset=@offset.npy --format json");
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json doc = result.document();
  // Lane 1: 0.5 * (1 + 2 + 0.25) = 1.625; k=2: flags [true, true], lo -3, hi 5.
  CHECK(doc["outputs"]["sum"] == json::array({5.75, 1.625}));
  CHECK(doc["outputs"]["flags"] == json::parse("[[true, false], [true, true]]"));
  CHECK(doc["outputs"]["inner.hi"] == json::array({10, 5}));

  const CliResult bad_uniform =
      ws.run("run st.ab -i v=@v.npy -i k=@k.npy -u weights=@v.npy -u offset=5");
  CHECK(bad_uniform.exit_code == 1);
  CHECK(bad_uniform.err ==
        "error: uniform 'weights' is float[3]: expected .npy shape (3,), got (2, 3)\n");

  const CliResult bad_input = ws.run("run st.ab -i v=@w.npy -i k=1 -u weights=@w.npy -u offset=5");
  CHECK(bad_input.exit_code == 1);
  CHECK(bad_input.err ==
        "error: input 'v' is float[3]: expected .npy shape (lanes, 3), got (3,)\n");

  const CliResult unbound = ws.run("run st.ab -i v=@v.npy -i k=@k.npy -u weights=@w.npy");
  CHECK(unbound.exit_code == 1);
  CHECK(unbound.err ==
        "error: uniform 'offset' (int) is not bound: give --uniform offset=@file.npy\n");

  const CliResult batch_mismatch =
      ws.run("run st.ab -i v=@v.npy -i k=1,2,3 -u weights=@w.npy -u offset=5");
  CHECK(batch_mismatch.exit_code == 1);
  CHECK(batch_mismatch.err == "error: input 'k' has 3 values but the batch has 2 lanes\n");
}

TEST_CASE("cli: --out writes one npy per output plus faulted.npy") {
  Workspace ws;
  ws.write("st.ab", kStruct);
  ws.write("v.csv", "1,2,3\n0.5,0.5,0.5\n");
  ws.write("w.csv", "1,2,0.25\n");
  const CliResult result =
      ws.run("run st.ab -i v=@v.csv -i k=1,0 -u weights=@w.csv -u offset=5 --out results/run1");
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const fs::path out = ws.dir() / "results" / "run1";

  auto sum = ab::cli::read_npy((out / "sum.npy").string());
  REQUIRE(sum.ok());
  CHECK(sum->type == ab::cli::NpyType::Float32);
  CHECK(sum->shape == std::vector<uint64_t>{2});
  CHECK(std::get<double>(sum->at(0)) == 5.75);
  CHECK(std::get<double>(sum->at(1)) == 0.0);  // faulted lane holds 0

  auto flags = ab::cli::read_npy((out / "flags.npy").string());
  REQUIRE(flags.ok());
  CHECK(flags->type == ab::cli::NpyType::Bool);
  CHECK(flags->shape == std::vector<uint64_t>{2, 2});
  CHECK(std::get<bool>(flags->at(0)) == true);
  CHECK(std::get<bool>(flags->at(1)) == false);

  auto lo = ab::cli::read_npy((out / "inner.lo.npy").string());
  REQUIRE(lo.ok());
  CHECK(lo->type == ab::cli::NpyType::Int32);
  CHECK(std::get<int64_t>(lo->at(0)) == -4);

  auto faulted = ab::cli::read_npy((out / "faulted.npy").string());
  REQUIRE(faulted.ok());
  CHECK(faulted->shape == std::vector<uint64_t>{2});
  CHECK(std::get<bool>(faulted->at(0)) == false);
  CHECK(std::get<bool>(faulted->at(1)) == true);
}

TEST_CASE("cli: the table shows the first 20 lanes and the statistics") {
  Workspace ws;
  ws.write("fib.ab", kFib);
  const CliResult result = ws.run("run fib.ab -i n=range:0:25");
  REQUIRE(result.exit_code == 0);
  CHECK(result.out.find("lane") == result.out.find_first_not_of(' '));
  CHECK(result.out.find("... 5 more lanes") != std::string::npos);
  // Lane 19 (fib(19) = 6765) is shown, lane 20 (10946) is not.
  CHECK(result.out.find("6765") != std::string::npos);
  CHECK(result.out.find("10946") == std::string::npos);
  for (const char* stat : {"backend", "lanes", "steps", "lane steps", "calls", "utilization",
                           "max stack depth", "wall time"}) {
    CAPTURE(stat);
    CHECK(result.out.find(stat) != std::string::npos);
  }
}

// The number after `label` in the statistics table ("compile seconds  4102.118 ms"), in ms.
double table_ms(const std::string& out, const std::string& label) {
  const size_t at = out.find(label);
  REQUIRE_MESSAGE(at != std::string::npos, label, " not in ", out);
  return std::stod(out.substr(at + label.size()));
}

TEST_CASE("cli: compiling a large program shows progress and counts as compile seconds") {
  Workspace ws;
  ws.write("chain.ab", ab::testing::call_chain_program(400));
  // A fresh cache (SPIR-V, pipelines and the driver's own) makes the compile real.
  const CliResult result =
      ws.run("run chain.ab -i n=range:0:8",
             fmt::format("XDG_CACHE_HOME='{}'", (ws.dir() / "cache").string()));
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const double compile_ms = table_ms(result.out, "compile seconds");
  const double run_ms = table_ms(result.out, "run seconds");
  // The driver compiles at a pipeline's first dispatch; that is compile time, not run time.
  CHECK(compile_ms > run_ms);
  CHECK(result.out.find("kernel parts") != std::string::npos);
  // Past a second of compiling, a progress line (then erased) says what is happening.
  if (compile_ms > 1500) {
    CHECK(result.err.find("compiling kernels (") != std::string::npos);
    CHECK(result.err.find('\r') != std::string::npos);
  }
}

TEST_CASE("cli: --trace-steps adds the VM's step trace") {
  Workspace ws;
  ws.write("fib.ab", kFib);
  const CliResult result = ws.run("run fib.ab --backend vm -i n=range:0:6 --trace-steps --format json");
  REQUIRE(result.exit_code == 0);
  const json doc = result.document();
  REQUIRE(doc["trace"].is_array());
  CHECK(doc["trace"].size() == doc["stats"]["steps"]);
  // Each step runs one block for its active lanes, so the actives add up to the lane steps.
  uint64_t active = 0;
  for (const json& step : doc["trace"]) {
    CHECK(step[0].get<int>() >= 0);
    CHECK(step[0].get<int>() < doc["stats"]["blocks"].get<int>());
    active += step[1].get<uint64_t>();
  }
  CHECK(active == doc["stats"]["lane_steps"].get<uint64_t>());
  CHECK_FALSE(ws.run("run fib.ab -i n=1 --format json").document().contains("trace"));
}

TEST_CASE("cli: randint inputs are reproducible from --seed") {
  Workspace ws;
  ws.write("id.ab", "fn main(n: int) -> int { return n; }\n");
  const json first =
      ws.run("run id.ab -i n=randint:0:1000 --batch 50 --seed 3 --format json").document();
  const json again =
      ws.run("run id.ab -i n=randint:0:1000 --batch 50 --seed 3 --format json").document();
  const json other =
      ws.run("run id.ab -i n=randint:0:1000 --batch 50 --seed 4 --format json").document();
  CHECK(first["outputs"] == again["outputs"]);
  CHECK(first["outputs"] != other["outputs"]);
  for (const json& v : first["outputs"]["result"])
    CHECK((v.get<int>() >= 0 && v.get<int>() < 1000));
}

TEST_CASE("cli: ir prints the program and its lowered form") {
  Workspace ws;
  ws.write("fib.ab", kFib);
  const CliResult ir = ws.run("ir fib.ab");
  CHECK(ir.exit_code == 0);
  CHECK(ir.out.find("fib") != std::string::npos);
  const CliResult lowered = ws.run("ir fib.ab --lowered");
  CHECK(lowered.exit_code == 0);
  CHECK(lowered.out != ir.out);
  const CliResult no_entry = ws.run("ir fib.ab --lowered --entry nothere");
  CHECK(no_entry.exit_code == 1);
  CHECK(no_entry.err.find("'nothere'") != std::string::npos);
}
