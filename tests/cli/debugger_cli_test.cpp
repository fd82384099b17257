// `autobatch debug` and `autobatch run --trace` end to end, through the built binary (AB_CLI):
// a trace recorded by `run --trace` replays to the live run's per-step states (compared through
// the scripted dumps, also after going back), `show glsl` prints the block's generated function,
// the Vulkan backend's local schedule shows a group, and bad input gives one message and exit 1.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/debugger_test_support.h"

using ab::debugger::testing::temp_path;

namespace {

const std::string kFib = std::string(AB_SOURCE_DIR) + "/samples/fib.ab";

struct Outcome {
  int status = -1;
  std::string output;  // stdout and stderr together
};

// Runs `autobatch ARGS` with `env` (e.g. "DISPLAY=") in front.
Outcome autobatch(const std::string& args, const std::string& env = "") {
  const std::string out = temp_path("cli.out");
  const int status = std::system((env + " " + AB_CLI + " " + args + " > " + out + " 2>&1").c_str());
  std::ifstream in(out);
  Outcome o;
  o.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  o.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::filesystem::remove(out);
  return o;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Runs the same script that dumps at several steps (going back in between) and returns the
// dumped states.
std::vector<nlohmann::json> dumped_states(const std::string& target, const std::string& tag) {
  std::vector<std::string> dumps;
  std::string script;
  for (const char* moves : {"step 3", "step 25", "back 11", "step 40", "seek 7"}) {
    dumps.push_back(temp_path(tag + std::to_string(dumps.size()) + ".json"));
    script += std::string(moves) + "\ndump " + dumps.back() + "\n";
  }
  const std::string cmds = write_temp(tag + ".txt", script);
  const Outcome o = autobatch("debug " + target + " --checkpoint-interval 4 --script " + cmds);
  CHECK_MESSAGE(o.status == 0, o.output);
  std::vector<nlohmann::json> states;
  for (const std::string& d : dumps) {
    std::ifstream in(d);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    REQUIRE_MESSAGE(!j.is_discarded(), o.output);
    states.push_back({j["step"], j["next_block"], j["live_lanes"], j["state"]});
    std::filesystem::remove(d);
  }
  std::filesystem::remove(cmds);
  return states;
}

}  // namespace

TEST_CASE("cli: run --trace records a trace that replays to the live run's states") {
  const std::string trace = temp_path("run.abtrace");
  const std::string run_args = kFib + " --input n=range:0:12 --seed 3";
  const Outcome run = autobatch("run " + run_args + " --backend vm --trace " + trace);
  REQUIRE_MESSAGE(run.status == 0, run.output);
  CHECK(run.output.find("trace written to " + trace) != std::string::npos);
  CHECK(run.output.find("lanes") != std::string::npos);  // the normal report is still printed
  CHECK(std::filesystem::file_size(trace) > 0);

  const auto live = dumped_states(run_args, "live");
  const auto replayed = dumped_states(trace, "replay");
  REQUIRE(live.size() == replayed.size());
  for (size_t i = 0; i < live.size(); ++i) {
    CAPTURE(i);
    CHECK(live[i] == replayed[i]);
  }
  CHECK(live[2][0] == 17);  // step 3, 25, back 11 -> 17
  std::filesystem::remove(trace);
}

TEST_CASE("cli: dumps of the VM and of the Vulkan global schedule at the same step are equal") {
  const std::string args = kFib + " --input n=range:0:12 --seed 3";
  const auto vm = dumped_states(args + " --backend vm", "vm");
  const auto vulkan = dumped_states(args + " --backend vulkan --schedule global", "vk");
  REQUIRE(vm.size() == vulkan.size());
  for (size_t i = 0; i < vm.size(); ++i) {
    CAPTURE(i);
    CHECK(vm[i] == vulkan[i]);  // registers included: temporaries dump as 0 on both
  }
}

TEST_CASE("cli: debug --script shows a block's IR and generated GLSL") {
  const std::string cmds = write_temp("glsl.txt", "show ir fib.b0\nshow glsl 1\n");
  const Outcome o = autobatch("debug " + kFib + " -i n=4 --script " + cmds);
  REQUIRE_MESSAGE(o.status == 0, o.output);
  CHECK(o.output.find("ir of fib.b0:\nfib.b0 (pc") != std::string::npos);
  const size_t glsl = o.output.find("glsl of ");
  REQUIRE(glsl != std::string::npos);
  CHECK(o.output.find("void block_1(uint lane) {", glsl) != std::string::npos);
  const Outcome bad = autobatch("debug " + kFib + " -i n=4 --script " +
                                write_temp("glsl_bad.txt", "show glsl nosuch\n"));
  CHECK(bad.status == 1);
  CHECK(bad.output.find("glsl_bad.txt:1: no block 'nosuch'") != std::string::npos);
  std::filesystem::remove(cmds);
}

TEST_CASE("cli: debug --backend vulkan --schedule local shows the selected lane's group") {
  const std::string dump = temp_path("local.json");
  const std::string cmds =
      write_temp("local.txt", "step 2\nselect lane 5\nshow group\ndump " + dump + "\n");
  const Outcome o = autobatch(
      "debug " + kFib + " -i n=range:0:20 --backend vulkan --schedule local --script " + cmds);
  REQUIRE_MESSAGE(o.status == 0, o.output);
  CHECK(o.output.find("group ") != std::string::npos);
  std::ifstream in(dump);
  const nlohmann::json d = nlohmann::json::parse(in);
  CHECK(d["source"].get<std::string>().find("local/subgroup") != std::string::npos);
  const nlohmann::json g = d["selected_group"];
  const uint32_t first = g["first_lane"], count = static_cast<uint32_t>(g["pcs"].size());
  CHECK(first <= 5);
  CHECK(5 < first + count);
  CHECK(d["step"] == 2);
  std::filesystem::remove(dump);
  std::filesystem::remove(cmds);
}

TEST_CASE("cli: debug rejects bad input with one message and exit status 1") {
  const std::string script = write_temp("ok.txt", "step 1\n");
  Outcome o = autobatch("debug nosuch.ab --script " + script);
  CHECK(o.status == 1);
  CHECK(o.output.find("cannot read 'nosuch.ab'") != std::string::npos);

  const std::string corrupt = write_temp("corrupt.abtrace", std::string("ABTRACE\0garbage", 15));
  o = autobatch("debug " + corrupt + " --script " + script);
  CHECK(o.status == 1);
  CHECK(o.output.find(corrupt) != std::string::npos);

  // A trace of fib.ab opened against a changed program.
  const std::string trace = temp_path("other.abtrace");
  REQUIRE(autobatch("run " + kFib + " -i n=3 --backend vm --trace " + trace).status == 0);
  std::ifstream fib(kFib);
  const std::string changed =
      write_temp("changed.ab", std::string(std::istreambuf_iterator<char>(fib), {}) + "\n// v2\n");
  o = autobatch("debug " + trace + " --source " + changed + " --script " + script);
  CHECK(o.status == 1);
  CHECK(o.output.find("different version of the program") != std::string::npos);
  o = autobatch("debug " + trace + " --input n=4 --script " + script);
  CHECK(o.status == 1);
  CHECK(o.output.find("is a trace") != std::string::npos);

  // A directory is neither a script nor a program: said so, not run as an empty script or
  // compared as a changed source.
  const std::string dir = temp_path("a_directory");
  std::filesystem::create_directories(dir);
  o = autobatch("debug " + kFib + " -i n=3 --script " + dir);
  CHECK(o.status == 1);
  CHECK(o.output == "error: cannot read script '" + dir + "': it is a directory\n");
  o = autobatch("debug " + trace + " --source " + dir + " --script " + script);
  CHECK(o.status == 1);
  CHECK(o.output == "error: cannot read '" + dir + "', the program of trace '" + trace +
                        "': it is a directory\n");
  std::filesystem::remove(dir);

  // No display and no script: the window cannot open.
  o = autobatch("debug " + kFib + " -i n=3", "DISPLAY= WAYLAND_DISPLAY=");
  CHECK(o.status == 1);
  CHECK(o.output.find("no display") != std::string::npos);
  CHECK(o.output.find("error: ") == 0);

  // A backend the debugger cannot step is a usage error.
  CHECK(autobatch("debug " + kFib + " -i n=3 --backend interp").status == 2);
  const Outcome help = autobatch("debug --help");
  CHECK(help.status == 0);
  CHECK(help.output.find("--checkpoint-interval") != std::string::npos);
  CHECK(help.output.find("--schedule") != std::string::npos);
  for (const std::string& f : {script, corrupt, trace, changed})
    std::filesystem::remove(f);
}
