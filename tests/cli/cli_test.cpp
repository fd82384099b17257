// End-to-end tests of the `autobatch` command-line tool: each test writes small programs and
// data files to a temp directory, runs the built binary (AB_CLI) there, and checks its exit
// code, stdout and stderr.
//
// Uses the library's .npy reader and writer (autobatch/npy.h).
#include <doctest/doctest.h>

#include <algorithm>

#include <sys/stat.h>
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

#include "autobatch/npy.h"
#include "ir/ops.h"
#include "support/program_gen.h"
#include "support/read_bytes.h"
#include "support/samples.h"

namespace {

namespace fs = std::filesystem;
using ab::testing::read_bytes;
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
    const std::string command =
        fmt::format("cd '{}' && {} '{}' {} > cli.out 2> cli.err", dir_.string(), env, AB_CLI, args);
    const int status = std::system(command.c_str());
    CliResult result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = read_bytes(dir_ / "cli.out");
    result.err = read_bytes(dir_ / "cli.err");
    return result;
  }

 private:
  fs::path dir_;
};

// samples/fib.ab, written into each test's workspace.
std::string fib_source() {
  return ab::testing::read_sample("fib.ab");
}

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

TEST_CASE("cli: check --explain lists each loop and each call, and why not when not") {
  Workspace ws;
  ws.write("loops.ab", R"(const N: int = 8;
uniform y: float[N];
fn sq(v: float) -> float { return v * v; }
fn main(a: float) -> float {
    var lp = 0.0;
    for i in 0..N { lp += (y[i] - a) * (y[i] - a); }
    for i in 0..N { lp += sq(y[i]); }
    var acc = a;
    for i in 0..N { acc = acc * 0.5 + y[i]; }
    for i in 1..N { if y[i] > y[i - 1] { lp += log(y[i]); } else { acc = max(acc, y[i]); } }
    return lp + acc;
}
)");
  // A loop of an inlined function is listed once, in the function it is written in; a function
  // with a loop called from two places stays a call.
  ws.write("inlined.ab", R"(fn halve(x: float) -> float {
    var v = x;
    while v > 1.0 { v = v * 0.5; }
    return v;
}
fn main(a: float) -> float { return halve(a) + 1.0; }
fn twice(a: float) -> float { return halve(a) + halve(a + 1.0); }
)");
  CHECK(ws.run("check --explain inlined.ab").out ==
        "inlined.ab: ok (3 functions)\n"
        "inlined.ab:3:11: loop in halve: not vectorised: not a 'for' loop\n"
        "inlined.ab:6:37: call of halve in main: not inlined: called from 3 places and not tiny "
        "(over 8 ops or a loop), in no loop\n"
        "inlined.ab:7:38: call of halve in twice: not inlined: called from 3 places and not tiny "
        "(over 8 ops or a loop), in no loop\n"
        "inlined.ab:7:49: call of halve in twice: not inlined: called from 3 places and not tiny "
        "(over 8 ops or a loop), in no loop\n");
  ws.write("once.ab", R"(fn halve(x: float) -> float {
    var v = x;
    while v > 1.0 { v = v * 0.5; }
    return v;
}
fn main(a: float) -> float { return halve(a) + 1.0; }
)");
  CHECK(ws.run("check --explain once.ab").out ==
        "once.ab: ok (2 functions)\n"
        "once.ab:3:11: loop in halve: not vectorised: not a 'for' loop\n"
        "once.ab:6:37: call of halve in main: inlined\n");
  const CliResult r = ws.run("check --explain loops.ab");
  CHECK(r.exit_code == 0);
  CHECK(r.out ==
        "loops.ab: ok (2 functions)\n"
        "loops.ab:6:5: loop in main: vectorised\n"
        "loops.ab:7:5: loop in main: vectorised\n"  // once sq is inlined
        "loops.ab:9:5: loop in main: not vectorised: it carries 'acc' from one iteration to the "
        "next (not a sum, max or min)\n"
        "loops.ab:10:5: loop in main: not vectorised: it updates 'acc' by max inside an if\n"
        "loops.ab:7:27: call of sq in main: inlined\n");
  CHECK(ws.run("check loops.ab").out == "loops.ab: ok (2 functions)\n");
}

TEST_CASE("cli: check reports ok, compile errors, and unreadable files") {
  Workspace ws;
  ws.write("fib.ab", fib_source());
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

TEST_CASE("cli: check --data compiles a model whose sizes are read from the data") {
  Workspace ws;
  ws.write("sized.ab",
           "const N: int = data;\nuniform y: float[N];\n"
           "fn main(a: float) -> float { return sum(y) * a; }\n");
  ws.write("sized.json", R"({"N": 3, "y": [1, 2, 3]})");
  const CliResult without = ws.run("check sized.ab");
  CHECK(without.exit_code == 1);
  CHECK(without.err.find("sized.ab:1:16: error: constant 'N' is read from the data") == 0);
  const CliResult with = ws.run("check sized.ab --data sized.json");
  CHECK(with.exit_code == 0);
  CHECK(with.out == "sized.ab: ok (1 function)\n");
  const CliResult missing = ws.run("check sized.ab --data none.json");
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("none.json") != std::string::npos);
}

// Issue 45: the transformed data computed from the data given, and listed by --explain; run
// binds the rest and computes them.
TEST_CASE("cli: check --data computes the transformed data; --explain lists them") {
  Workspace ws;
  ws.write("logs.ab",
           "const N: int = data;\nuniform y: float[N];\nuniform ly: float[N] = log(y);\n"
           "fn main(a: float) -> float { return sum(ly) * a; }\n");
  ws.write("logs.json", R"({"N": 3, "y": [1, 2, 3]})");
  ws.write("negative.json", R"({"N": 3, "y": [1, -2, 3]})");
  const CliResult ok = ws.run("check --explain logs.ab --data logs.json");
  CHECK(ok.exit_code == 0);
  CHECK(ok.out ==
        "logs.ab: ok (2 functions)\nlogs.ab:3:9: uniform ly: transformed data, computed "
        "once when the data are bound\n");
  const CliResult nan = ws.run("check logs.ab --data negative.json");
  CHECK(nan.exit_code == 1);
  CHECK(nan.err.find("logs.ab:3:9: transformed data 'ly' is NaN at element 1") !=
        std::string::npos);
  const CliResult run = ws.run("run logs.ab --backend vm --data logs.json -i a=1 --format json");
  CHECK(run.exit_code == 0);
  const CliResult by_hand = ws.run("run logs.ab --backend vm --data logs.json -u ly=0 -i a=1");
  CHECK(by_hand.exit_code != 0);
  CHECK(by_hand.err.find("'ly' is computed from the data (transformed data at logs.ab:3:9); it "
                         "cannot be bound") != std::string::npos);
}

TEST_CASE("cli: no Vulkan device gives one clear line and exit 1; the CPU backends still run") {
  Workspace ws;
  ws.write("fib.ab", fib_source());
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
  ws.write("fib.ab", fib_source());
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
       {"--backend",   "=vulkan",      "--schedule",    "--global-mode", "--local-scope",
        "--device",    "--validation", "--entry",       "=main",         "--batch",
        "--input",     "--uniform",    "--seed",        "--stack-depth", "=1024",
        "--max-steps", "=10000000",    "--heuristic",   "=min-pc",       "--format",
        "=table",      "--out",        "--trace-steps", "--threads"}) {
    CAPTURE(text);
    CHECK(help.out.find(text) != std::string::npos);
  }
  CHECK(ws.run("--help").exit_code == 0);
  CHECK(ws.run("ir --help").out.find("--lowered") != std::string::npos);
}

// --help tells the truth: every subcommand's help names its own exit codes and an example for
// that subcommand, and the examples run as printed (samples/ linked into the workspace).
TEST_CASE("cli: each subcommand's --help ends with its exit codes and an example that runs") {
  Workspace ws;
  fs::create_directory_symlink(fs::path(AB_SOURCE_DIR) / "samples", ws.dir() / "samples");
  for (const char* sub : {"check", "ir", "devices", "bench", "run", "sample", "debug"}) {
    CAPTURE(sub);
    const CliResult help = ws.run(fmt::format("{} --help", sub));
    REQUIRE(help.exit_code == 0);
    CHECK(help.out.find("Exit codes: 0 ") != std::string::npos);
    const size_t at = help.out.find(fmt::format("Example: autobatch {}", sub));
    REQUIRE(at != std::string::npos);
    CHECK(help.out.find("Example:", at + 1) == std::string::npos);  // not the app's as well
    const size_t start = at + std::string("Example: autobatch ").size();
    const std::string example = help.out.substr(start, help.out.find('\n', start) - start);
    // The debugger's needs a display: the rest run here.
    if (std::string(sub) == "debug") continue;
    const CliResult ran = ws.run(example);
    CHECK_MESSAGE(ran.exit_code == 0, example << ": " << ran.err);
  }
  CHECK(ws.run("sample --help").out.find("128+N") != std::string::npos);
  CHECK(fs::exists(ws.dir() / "fit" / "summary.json"));
}

TEST_CASE("cli: bad inputs exit 1 with one message naming the input") {
  Workspace ws;
  ws.write("fib.ab", fib_source());
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
  ws.write("fib.ab", fib_source());
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
    // fib(9) ... fib(1): main's `return fib(n)` is a tail call, so fib(9) took main's frame.
    CHECK(doc["stats"]["max_stack_depth"] == 9);
  }
  // Every schedule of the Vulkan engine gives the same values.
  for (const char* schedule :
       {"--schedule global --global-mode masked", "--schedule global --global-mode compacted",
        "--schedule local --local-scope subgroup", "--schedule local --local-scope workgroup"}) {
    CAPTURE(schedule);
    const CliResult result = ws.run(fmt::format(
        "run fib.ab --backend vulkan {} -i n=range:0:10 --format json --validation", schedule));
    REQUIRE(result.exit_code == 0);
    CHECK(result.document()["outputs"]["result"] ==
          json::array({1, 1, 2, 3, 5, 8, 13, 21, 34, 55}));
  }
  // The global schedule's step trace is the VM's, step for step.
  const json vm_trace = ws.run(
                              "run fib.ab --backend vm -i n=range:0:10 --format json "
                              "--trace-steps")
                            .document()["trace"];
  const json gpu_trace = ws.run(
                               "run fib.ab --backend vulkan --schedule global -i n=range:0:10 "
                               "--format json --trace-steps")
                             .document()["trace"];
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
  ws.write("fib.ab", fib_source());
  const std::string args = "-i n=range:0:12 --stack-depth 8 --format json";
  const json vm = ws.run("run fib.ab --backend vm " + args).document();
  const json interp = ws.run("run fib.ab --backend interp " + args).document();
  CHECK(vm["outputs"] == interp["outputs"]);
  CHECK(vm["errors"] == interp["errors"]);
  // With 8 frames (main's tail call hands its frame to fib(n)), fib(8) fits and fib(9) overflows.
  CHECK(vm["outputs"]["result"][8] == 34);
  CHECK(vm["outputs"]["result"][9].is_null());
  REQUIRE(vm["errors"].size() == 3);
  CHECK(vm["errors"][0]["lane"] == 9);
  CHECK(vm["errors"][0]["code"] == "stack_overflow");
  CHECK(vm["errors"][0]["function"] == "fib");
  // The table says what to do about an overflow, naming the option and the depth it allowed.
  const CliResult table = ws.run("run fib.ab --backend vm -i n=range:0:12 --stack-depth 8");
  CHECK(table.exit_code == 0);
  CHECK(table.out.find("the 8 frames --stack-depth allows; raise --stack-depth") !=
        std::string::npos);
  CHECK(ws.run("run fib.ab --backend vm -i n=range:0:8 --stack-depth 8")
            .out.find("raise --stack-depth") == std::string::npos);
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

TEST_CASE("cli: --data binds uniforms by name from JSON for run and sample; errors exit 1 and 2") {
  Workspace ws;
  ws.write("st.ab", kStruct);
  ws.write("d.json", R"({"N": 3, "weights": [1, 2, 0.25], "offset": 5})");
  const CliResult result = ws.run("run st.ab -i v=1 -i k=1 --data d.json --format json");
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(result.document()["outputs"]["sum"] == json::array({3.25}));
  CHECK(result.document()["outputs"]["inner.lo"] == json::array({-4}));
  // --uniform takes precedence over the file.
  const CliResult overridden =
      ws.run("run st.ab -i v=1 -i k=1 --data d.json -u offset=1 --format json");
  REQUIRE_MESSAGE(overridden.exit_code == 0, overridden.err);
  CHECK(overridden.document()["outputs"]["inner.lo"] == json::array({0}));
  ws.write("short.json", R"({"N": 2, "weights": [1, 2], "offset": 5})");
  const CliResult short_data = ws.run("run st.ab -i v=1 -i k=1 --data short.json");
  CHECK(short_data.exit_code == 1);
  CHECK(short_data.err.find("error: uniform 'weights' is float[3]: 'short.json' holds nested "
                            "lists of shape (2) for 'weights' (the data's N = 2") == 0);

  // sample: a model's data from JSON; a data error is refused before the chains start (exit 2).
  ws.write("m.ab",
           "const N: int = 3;\nuniform y: float[N];\nstruct Params { mu: float }\n"
           "fn log_density(p: Params) -> float { return normal_lpdf(y | p.mu, 1.0); }\n");
  ws.write("y.json", R"({"N": 3, "y": [1, 2, 3]})");
  const CliResult fit =
      ws.run("sample m.ab --data y.json --chains 2 --warmup 100 --draws 100 --format json");
  REQUIRE_MESSAGE(fit.exit_code == 0, fit.err);
  CHECK(std::abs(fit.document()["parameters"][0]["mean"].get<double>() - 2.0) < 0.5);
  const CliResult bad = ws.run("sample m.ab --data short.json");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("uniform 'y' (float[3]) is not bound") != std::string::npos);
}

// Stan's `int N;`: a model declares `const N: int = data;` and is compiled for the data's N.
TEST_CASE("cli: a size read from the data compiles the model for it; a missing size is one error") {
  Workspace ws;
  ws.write("m.ab",
           "const N: int = data;\nuniform y: float[N];\nstruct Params { mu: float }\n"
           "fn log_density(p: Params) -> float { return normal_lpdf(y | p.mu, 1.0); }\n");
  for (const char* data : {R"({"N": 3, "y": [1, 2, 3]})", R"({"N": 5, "y": [4, 5, 6, 7, 8]})"}) {
    CAPTURE(data);
    ws.write("y.json", data);
    const CliResult fit =
        ws.run("sample m.ab --data y.json --chains 2 --warmup 100 --draws 100 --format json");
    REQUIRE_MESSAGE(fit.exit_code == 0, fit.err);
    const std::vector<double> y = json::parse(data)["y"].get<std::vector<double>>();
    const double mean = (y.front() + y.back()) / 2;  // evenly spaced: the mean of all
    CHECK(std::abs(fit.document()["parameters"][0]["mean"].get<double>() - mean) < 0.6);
  }
  ws.write("no_n.json", R"({"y": [1, 2, 3]})");
  const CliResult missing = ws.run("sample m.ab --data no_n.json");
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("m.ab:1:16: error: constant 'N' is read from the data, which hold no "
                         "'N': give the data (--data FILE.json) with \"N\" in them") == 0);
  ws.write("wrong.json", R"({"N": 4, "y": [1, 2, 3]})");
  const CliResult wrong = ws.run("sample m.ab --data wrong.json");
  CHECK(wrong.exit_code == 2);
  CHECK(wrong.err.find("uniform 'y' is float[4]: 'wrong.json' holds nested lists of shape (3)") !=
        std::string::npos);
  // run too: a program's sizes from --data.
  ws.write("r.ab",
           "const N: int = data;\nuniform y: float[N];\nfn main() -> float { return sum(y); }\n");
  ws.write("r.json", R"({"N": 2, "y": [1.5, 2]})");
  const CliResult run = ws.run("run r.ab --data r.json --format json");
  REQUIRE_MESSAGE(run.exit_code == 0, run.err);
  CHECK(run.document()["outputs"]["result"] == json::array({3.5}));
}

TEST_CASE("cli: array inputs and uniforms from npy; shape mismatches are errors") {
  Workspace ws;
  ws.write("st.ab", kStruct);
  const std::vector<float> v{1, 2, 3, 0.5f, 0.5f, 0.5f};
  ws.write("v.npy", ab::encode_npy("<f4", {2, 3}, raw_bytes(v)));
  const std::vector<double> w{1, 2, 0.25};
  ws.write("w.npy", ab::encode_npy("<f8", {3}, raw_bytes(w)));
  const std::vector<int64_t> offset{5};
  ws.write("offset.npy", ab::encode_npy("<i8", {}, raw_bytes(offset)));
  const std::vector<int32_t> k{1, 2};
  ws.write("k.npy", ab::encode_npy("<i4", {2}, raw_bytes(k)));

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

TEST_CASE("cli: --out writes one npy per output plus faulted-lanes.npy") {
  Workspace ws;
  ws.write("st.ab", kStruct);
  ws.write("v.csv", "1,2,3\n0.5,0.5,0.5\n");
  ws.write("w.csv", "1,2,0.25\n");
  const CliResult result =
      ws.run("run st.ab -i v=@v.csv -i k=1,0 -u weights=@w.csv -u offset=5 --out results/run1");
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const fs::path out = ws.dir() / "results" / "run1";

  auto sum = ab::read_npy((out / "sum.npy").string());
  REQUIRE(sum.ok());
  CHECK(sum->type == ab::NpyType::Float32);
  CHECK(sum->shape == std::vector<uint64_t>{2});
  CHECK(std::get<double>(sum->at(0)) == 5.75);
  CHECK(std::get<double>(sum->at(1)) == 0.0);  // faulted lane holds 0

  auto flags = ab::read_npy((out / "flags.npy").string());
  REQUIRE(flags.ok());
  CHECK(flags->type == ab::NpyType::Bool);
  CHECK(flags->shape == std::vector<uint64_t>{2, 2});
  CHECK(std::get<bool>(flags->at(0)) == true);
  CHECK(std::get<bool>(flags->at(1)) == false);

  auto lo = ab::read_npy((out / "inner.lo.npy").string());
  REQUIRE(lo.ok());
  CHECK(lo->type == ab::NpyType::Int32);
  CHECK(std::get<int64_t>(lo->at(0)) == -4);

  auto faulted = ab::read_npy((out / "faulted-lanes.npy").string());
  REQUIRE(faulted.ok());
  CHECK(faulted->shape == std::vector<uint64_t>{2});
  CHECK(std::get<bool>(faulted->at(0)) == false);
  CHECK(std::get<bool>(faulted->at(1)) == true);
}

TEST_CASE("cli: --out keeps a field named like the fault mask apart from the mask") {
  Workspace ws;
  // Lane 0 divides by zero; a field may be called `faulted` (or anything else).
  ws.write("f.ab",
           "struct R { faulted: int, ok: bool }\n"
           "fn main(n: int) -> R { return R { faulted: 7 * n, ok: 10 / n > 0 }; }\n");
  const CliResult result = ws.run("run f.ab --backend vm -i n=range:0:3 --out out");
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  auto field = ab::read_npy((ws.dir() / "out" / "faulted.npy").string());
  REQUIRE(field.ok());
  CHECK(field->type == ab::NpyType::Int32);
  CHECK(std::get<int64_t>(field->at(1)) == 7);
  CHECK(std::get<int64_t>(field->at(2)) == 14);
  auto mask = ab::read_npy((ws.dir() / "out" / "faulted-lanes.npy").string());
  REQUIRE(mask.ok());
  CHECK(mask->type == ab::NpyType::Bool);
  CHECK(std::get<bool>(mask->at(0)) == true);
  CHECK(std::get<bool>(mask->at(1)) == false);
}

TEST_CASE("cli: empty output paths are refused, not taken as 'not given'") {
  Workspace ws;
  ws.write("fib.ab", fib_source());
  struct Case {
    const char* args;
    const char* message;
  };
  const Case cases[] = {
      {"run fib.ab --backend vm -i n=3 --out ''",
       "error: --out: expected a directory, got an empty path\n"},
      {"run fib.ab --backend vm -i n=3 --trace ''",
       "error: --trace: expected a trace file name, got an empty path\n"},
      {"debug fib.ab -i n=3 --script ''",
       "error: --script: expected a script file, got an empty path\n"},
      {"bench --json ''", "error: --json: expected a JSON file name, got an empty path\n"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const CliResult result = ws.run(c.args);
    CHECK(result.exit_code == 2);
    CHECK(result.err.rfind(c.message, 0) == 0);
    CHECK(result.out.empty());
  }
}

TEST_CASE("cli: every numeric option refuses values outside its range, naming both") {
  Workspace ws;
  ws.write("fib.ab", fib_source());
  const std::string run = "run fib.ab --backend vm -i n=3 ";
  const std::string debug = "debug fib.ab -i n=3 ";
  struct Case {
    std::string args;
    std::string message;
  };
  const std::string u32 = "from 1 to 4294967295, got '";
  const std::string u64 = "from 0 to 18446744073709551615, got '";
  const Case cases[] = {
      {run + "--max-steps -5", "--max-steps: expected a whole number " + u32 + "-5'"},
      {run + "--max-steps -1", "--max-steps: expected a whole number " + u32 + "-1'"},
      {run + "--max-steps 0", "--max-steps: expected a whole number " + u32 + "0'"},
      {run + "--max-steps 4294967296",
       "--max-steps: expected a whole number " + u32 + "4294967296'"},
      {run + "--seed -1", "--seed: expected a whole number " + u64 + "-1'"},
      {run + "--seed 99999999999999999999999",
       "--seed: expected a whole number " + u64 + "99999999999999999999999'"},
      {run + "--seed 1.5", "--seed: expected a whole number " + u64 + "1.5'"},
      {run + "--batch 0", "--batch: expected a whole number " + u32 + "0'"},
      {run + "--batch -1", "--batch: expected a whole number " + u32 + "-1'"},
      {run + "--stack-depth -1", "--stack-depth: expected a whole number " + u32 + "-1'"},
      {run + "--device -1", "--device: expected a whole number from 0 to 2147483647, got '-1'"},
      {debug + "--max-steps -1", "--max-steps: expected a whole number " + u32 + "-1'"},
      {debug + "--seed -1", "--seed: expected a whole number " + u64 + "-1'"},
      {debug + "--checkpoint-interval -5",
       "--checkpoint-interval: expected a whole number from 1 to 18446744073709551615, got '-5'"},
      {"bench --repeats -1", "--repeats: expected a whole number from 0 to 2147483647, got '-1'"},
      {"bench --batches 64,-1", "--batches: expected a whole number " + u32 + "-1'"},
      {"bench --device -2", "--device: expected a whole number from 0 to 2147483647, got '-2'"},
      {"bench --repeat-budget nan",
       "--repeat-budget: expected a number of seconds from 0 to 86400, got 'nan'"},
      {"bench --repeat-budget -1",
       "--repeat-budget: expected a number of seconds from 0 to 86400, got '-1'"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const CliResult result = ws.run(c.args);
    CHECK(result.exit_code == 2);
    CHECK(result.err == "error: " + c.message + "\nrun 'autobatch --help'\n");
    CHECK(result.out.empty());
  }
  // Values in range still work, in decimal or hex; a leading zero is decimal, not octal.
  const json decimal = ws.run(run + "--seed 16 --max-steps 010 --format json").document();
  const json hex = ws.run(run + "--seed 0x10 --max-steps 10 --format json").document();
  CHECK(decimal["outputs"] == hex["outputs"]);
  CHECK(decimal["errors"][0]["code"] == "step_budget");
  CHECK(decimal["errors"][0]["step"] == 10);
}

TEST_CASE("cli: a randint or range input is checked against its type before any value is drawn") {
  Workspace ws;
  ws.write("fib.ab", fib_source());
  // Whatever the seed, the spec is refused, and the message names the spec, not a drawn value.
  for (int seed = 0; seed < 4; ++seed) {
    CAPTURE(seed);
    const CliResult result = ws.run(
        fmt::format("run fib.ab --backend vm -i n=randint:0:4294967296 --batch 3 --seed {}", seed));
    CHECK(result.exit_code == 1);
    CHECK(result.err ==
          "error: input 'n': 'randint:0:4294967296' gives values from 0 to 4294967295, but 'n' "
          "is int (-2147483648 to 2147483647)\n");
  }
  ws.write("u.ab", "fn main(u: uint, b: bool) -> uint { return u; }\n");
  const CliResult negative = ws.run("run u.ab --backend vm -i u=randint:-1:5 -i b=0 --batch 2");
  CHECK(negative.exit_code == 1);
  CHECK(negative.err.find("'randint:-1:5' gives values from -1 to 4, but 'u' is uint (0 to "
                          "4294967295)") != std::string::npos);
  const CliResult range = ws.run("run u.ab --backend vm -i u=range:0:2 -i b=range:0:3");
  CHECK(range.exit_code == 1);
  CHECK(range.err.find("'range:0:3' gives values from 0 to 2, but 'b' is bool (0 to 1)") !=
        std::string::npos);
  // The full range of the type is fine.
  CHECK(ws.run("run fib.ab --backend vm -i n=randint:-2147483648:2147483648 --batch 2 "
               "--max-steps 1")
            .exit_code == 0);
}

TEST_CASE("cli: messages quote a short excerpt of a huge bad value, not all of it") {
  Workspace ws;
  ws.write("fib.ab", fib_source());
  ws.write("cell.csv", std::string(1'000'000, '7') + "x\n");
  const CliResult cell = ws.run("run fib.ab --backend vm -i n=@cell.csv");
  CHECK(cell.exit_code == 1);
  CHECK(cell.err.size() < 200);
  CHECK(cell.err.find("cell.csv") != std::string::npos);
  CHECK(cell.err.find(std::string(60, '7') + "…'") != std::string::npos);
  CHECK(cell.err.find("is not a valid int") != std::string::npos);

  // A header this long needs format version 2.0, whose length field has 4 bytes.
  const std::string header =
      "{'descr': '" + std::string(200'000, 'q') + "', 'fortran_order': False, 'shape': (1,)}\n";
  const uint32_t length = static_cast<uint32_t>(header.size());
  ws.write("dtype.npy", std::string("\x93NUMPY\x02\x00", 8) +
                            std::string(reinterpret_cast<const char*>(&length), 4) + header +
                            std::string(4, '\0'));
  const CliResult npy = ws.run("run fib.ab --backend vm -i n=@dtype.npy");
  CHECK(npy.exit_code == 1);
  CHECK(npy.err.size() < 300);
  CHECK(npy.err.find("has dtype '" + std::string(60, 'q') + "…'") != std::string::npos);
}

TEST_CASE("cli: files that are not regular files are refused at once, never read") {
  Workspace ws;
  ws.write("fib.ab", fib_source());
  fs::create_symlink("/dev/zero", ws.dir() / "zero.npy");
  fs::create_symlink("/dev/zero", ws.dir() / "zero.ab");
  REQUIRE(::mkfifo((ws.dir() / "fifo.csv").c_str(), 0600) == 0);
  REQUIRE(::mkfifo((ws.dir() / "fifo.ab").c_str(), 0600) == 0);
  fs::create_directory(ws.dir() / "dir.ab");
  struct Case {
    const char* args;
    const char* message;
  };
  const Case cases[] = {
      {"run fib.ab --backend vm -i n=@zero.npy",
       "error: cannot read 'zero.npy': it is not a regular file (a character device)\n"},
      {"run fib.ab --backend vm -i n=@fifo.csv",
       "error: cannot read 'fifo.csv': it is not a regular file (a FIFO)\n"},
      {"check zero.ab",
       "error: cannot read 'zero.ab': it is not a regular file (a character device)\n"},
      {"check fifo.ab", "error: cannot read 'fifo.ab': it is not a regular file (a FIFO)\n"},
      {"debug fifo.ab -i n=3 --script fib.ab",
       "error: cannot read 'fifo.ab': it is not a regular file (a FIFO)\n"},
      {"check dir.ab", "error: cannot read 'dir.ab': it is a directory\n"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    // A hang would be the bug: give up after a while instead of stalling the suite.
    const CliResult result = ws.run(c.args, "timeout 20");
    CHECK(result.exit_code == 1);
    CHECK(result.err == c.message);
  }
}

TEST_CASE("cli: an unknown subcommand is named, with the list of subcommands") {
  Workspace ws;
  const CliResult unknown = ws.run("frobnicate");
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err ==
        "error: unknown subcommand 'frobnicate'; the subcommands are check, ir, devices, bench, "
        "run, sample, debug\nrun 'autobatch --help'\n");
  const CliResult none = ws.run("");
  CHECK(none.exit_code == 2);
  CHECK(none.err.rfind("error: a subcommand is required: one of check, ir,", 0) == 0);
}

TEST_CASE("cli: the table shows the first 20 lanes and the statistics") {
  Workspace ws;
  ws.write("fib.ab", fib_source());
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
  // A ring (mutually recursive, so inline_calls keeps its calls): 400 functions in many parts.
  ws.write("chain.ab", ab::testing::call_ring_program(400));
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
  // Past a second of compiling, a progress line says what is happening. stderr is a file here,
  // so it is a whole line (a terminal gets one line redrawn in place), and no more than one per
  // 10 s, so a log is not flooded.
  if (compile_ms > 1500) {
    CHECK(result.err.find("compiling kernels (") != std::string::npos);
    CHECK(result.err.find('\r') == std::string::npos);
    const auto lines = std::count(result.err.begin(), result.err.end(), '\n');
    CHECK(lines <= 1 + static_cast<long>(compile_ms / 10000));
  }
  // On a CPU device (lavapipe here), a compile past 20 s points at the vm; a shorter one does not.
  const bool hinted = result.err.find("--backend vm needs no compile") != std::string::npos;
  if (compile_ms < 19000) CHECK_FALSE(hinted);
  if (compile_ms > 21000) CHECK(hinted);
}

TEST_CASE("cli: --trace-steps adds the VM's step trace") {
  Workspace ws;
  ws.write("fib.ab", fib_source());
  const CliResult result =
      ws.run("run fib.ab --backend vm -i n=range:0:6 --trace-steps --format json");
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

TEST_CASE("cli: --threads changes neither outputs nor trace nor statistics") {
  Workspace ws;
  // Array work in every loop step, enough for 2000 lanes to run on the vm's worker threads.
  ws.write("decay.ab", R"(
fn main(n: int) -> float {
    var a: float[64];
    var k = 0;
    while k < n % 17 {
        a = a * 0.5 + float(k);
        k += 1;
    }
    return sum(a) + a[n % 70];
}
)");
  const std::string args =
      "run decay.ab --backend vm -i n=range:0:2000 --trace-steps --format json";
  const CliResult one = ws.run(args + " --threads 1");
  const CliResult two = ws.run(args + " --threads 2");
  REQUIRE_MESSAGE(one.exit_code == 0, one.err);
  REQUIRE_MESSAGE(two.exit_code == 0, two.err);
  const json a = one.document(), b = two.document();
  CHECK(a["outputs"] == b["outputs"]);
  CHECK(a["errors"] == b["errors"]);
  CHECK(a["trace"] == b["trace"]);
  CHECK(a["errors"].size() > 0);  // n % 70 >= 64 indexes past the array
  for (const char* stat : {"steps", "lane_steps", "utilization", "calls"}) {
    CAPTURE(stat);
    CHECK(a["stats"][stat] == b["stats"][stat]);
  }
  // More threads than cores run as many as the cores, with a note once, and the same results.
  const CliResult crowded = ws.run(args + " --threads 1024");
  REQUIRE_MESSAGE(crowded.exit_code == 0, crowded.err);
  CHECK(crowded.document()["outputs"] == a["outputs"]);
  CHECK(crowded.document()["trace"] == a["trace"]);
  CHECK(crowded.err.find("note: --threads 1024 is more than the ") != std::string::npos);
  CHECK(one.err.find("note:") == std::string::npos);
  const CliResult zero = ws.run(args + " --threads 0");
  CHECK(zero.exit_code == 2);
  CHECK(zero.err.find("--threads: expected a whole number from 1 to 1024, got '0'") !=
        std::string::npos);
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
  ws.write("fib.ab", fib_source());
  const CliResult ir = ws.run("ir fib.ab");
  CHECK(ir.exit_code == 0);
  CHECK(ir.out.find("fib") != std::string::npos);
  const CliResult lowered = ws.run("ir fib.ab --lowered");
  CHECK(lowered.exit_code == 0);
  CHECK(lowered.out != ir.out);
  const CliResult no_entry = ws.run("ir fib.ab --lowered --entry nothere");
  CHECK(no_entry.exit_code == 1);
  CHECK(no_entry.err.find("'nothere'") != std::string::npos);
  // Without --lowered, an --entry that names no function is the same mistake.
  const CliResult unlowered = ws.run("ir fib.ab --entry nothere");
  CHECK(unlowered.exit_code == 1);
  CHECK(unlowered.err == no_entry.err);
  CHECK(unlowered.out.empty());
  CHECK(ws.run("ir fib.ab --entry fib").out == ir.out);
}
