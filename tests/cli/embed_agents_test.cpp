// The game sample (samples/embed/agents) under xvfb-run with the validation layer on: a fixed
// number of frames, no validation message, a screenshot with agents drawn all over it, a capture
// that `autobatch debug --script` opens, and the agents after the frames equal to the CPU
// interpreter chaining as many runs (--check). Also its command line: --help, and bad flags.
#include <doctest/doctest.h>

#include <stb_image.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include "support/read_bytes.h"
#include "support/xvfb.h"

#ifdef AB_AGENTS
namespace {
using ab::testing::read_bytes;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("ab_agents_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

int exit_status(int system_result) {
  return WIFEXITED(system_result) ? WEXITSTATUS(system_result) : -1;
}

}  // namespace

TEST_CASE("embed agents: frames under xvfb with validation, a screenshot, a capture, --check") {
  if (!ab::testing::have_xvfb()) return;
  const std::string png = temp_path("shot.png"), trace = temp_path("capture.abtrace"),
                    log = temp_path("log.txt"), script = temp_path("script.txt");
  const std::string command = std::string("xvfb-run -a -s '-screen 0 1280x800x24' ") + AB_AGENTS +
                              " --agents 1000 --frames 12 --validation --check --screenshot " +
                              png + " --capture " + trace + " > " + log + " 2>&1";
  const int status = exit_status(std::system(command.c_str()));
  const std::string out = read_bytes(log);
  INFO(out);
  REQUIRE(status == 0);
  CHECK(out.find("validation layer: on") != std::string::npos);
  CHECK(out.find("validation messages: 0") != std::string::npos);
  CHECK(out.find("check: ok: 1000 agents after 12 runs") != std::string::npos);

  // Agents drawn: pixels unlike the background in most cells of a 4x4 grid (the overlay covers
  // part of the top-left cell, which is left out).
  int w = 0, h = 0, channels = 0;
  unsigned char* pixels = stbi_load(png.c_str(), &w, &h, &channels, 4);
  REQUIRE(pixels != nullptr);
  CHECK(w == 1280);
  CHECK(h == 800);
  int cells_with_agents = 0;
  for (int cy = 0; cy < 4; ++cy)
    for (int cx = 0; cx < 4; ++cx) {
      if (cx == 0 && cy == 0) continue;
      int lit = 0;
      for (int y = cy * h / 4; y < (cy + 1) * h / 4; ++y)
        for (int x = cx * w / 4; x < (cx + 1) * w / 4; ++x) {
          const unsigned char* p = pixels + (size_t(y) * w + x) * 4;
          lit += p[0] + p[1] + p[2] > 120;
        }
      cells_with_agents += lit > 20;
    }
  CHECK(cells_with_agents >= 12);
  stbi_image_free(pixels);

  // The capture opens in the debugger and steps.
  {
    std::ofstream s(script);
    s << "step 3\ngroup block\nfilter depth < 2\nhistogram\nquit\n";
  }
  const std::string debug =
      std::string(AB_CLI) + " debug " + trace + " --script " + script + " > " + log + " 2>&1";
  const int debug_status = exit_status(std::system(debug.c_str()));
  const std::string debug_out = read_bytes(log);
  INFO(debug_out);
  CHECK(debug_status == 0);
  CHECK(debug_out.find("step 3: ran 3") != std::string::npos);
  // The views of a big batch work on a captured frame too (docs/debugger.md): the bands and the
  // depth histogram each account for all 1000 agents.
  CHECK(debug_out.find("group block: ") != std::string::npos);
  CHECK(debug_out.find("lanes match") != std::string::npos);
  const auto total_after = [&](const std::string& prefix) {
    const size_t at = debug_out.find(prefix);
    if (at == std::string::npos) return -1;
    const std::string line = debug_out.substr(at, debug_out.find('\n', at) - at);
    int total = 0;
    for (size_t colon = line.find(": ", prefix.size()); colon != std::string::npos;
         colon = line.find(": ", colon + 2))
      total += std::atoi(line.c_str() + colon + 2);
    return total;
  };
  CHECK(total_after("histogram: ") == 1000);
  for (const auto& p : {png, trace, log, script})
    std::filesystem::remove(p);
}

TEST_CASE("embed agents: --help exits 0; a bad flag gives one message and exit status 2") {
  const std::string log = temp_path("flags.txt");
  auto run = [&](const std::string& args) {
    const std::string command = std::string(AB_AGENTS) + " " + args + " > " + log + " 2>&1";
    return exit_status(std::system(command.c_str()));
  };
  CHECK(run("--help") == 0);
  CHECK(read_bytes(log).find("--agents N") != std::string::npos);
  for (const char* bad : {"--agents 0", "--agents many", "--frames", "--bogus",
                          "--screenshot x.png", "--validation --no-validation"}) {
    INFO(bad);
    CHECK(run(bad) == 2);
    const std::string out = read_bytes(log);
    CHECK(out.rfind("error: ", 0) == 0);
    CHECK(std::count(out.begin(), out.end(), '\n') == 1);
  }
  std::filesystem::remove(log);
}
#endif
