// The scripted mode, headless: commands drive the model; stepping N ends in the VM's state after
// N steps (compared through the dumps); back then forward returns to the same state; bad
// commands stop with FILE:LINE messages. The window's screenshot test runs `autobatch debug` under
// xvfb-run; tests/debugger_cli_test.cpp covers the rest of the command line.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cpu/vm.h"
#include "debugger/script.h"
#include "debugger/trace_source.h"
#include "support/debugger_test_support.h"
#include "trace/trace_file.h"

#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>
#include "support/read_bytes.h"
#include "support/xvfb.h"

using namespace ab;
using namespace ab::debugger;
using ab::debugger::testing::fib_batch;
using ab::debugger::testing::Loaded;
using ab::debugger::testing::temp_path;
using ab::testing::read_bytes;

namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

struct Run {
  int code = 0;
  std::string log, errors;
};

Run script(DebuggerModel& m, const std::string& text, const ScriptHooks& hooks = {}) {
  std::ostringstream log, errors;
  Run r;
  r.code = run_script(m, text, "cmds.txt", hooks, log, errors);
  r.log = log.str();
  r.errors = errors.str();
  return r;
}

}  // namespace

TEST_CASE("script: step N then dump equals the VM's state after N steps") {
  const Loaded f = fib_batch(24);
  DebuggerModel m(f.source(), {.interval = 8});
  const std::string dump = temp_path("dump.json");
  const Run r = script(m, "# comment\n\nstep 5\nstep 32\ndump " + dump + "\nquit\nstep 1000\n");
  REQUIRE(r.code == 0);
  CHECK(r.log.find("now at step 37") != std::string::npos);
  VmRun vm(f.lowered, f.batch, f.options);
  vm.step(37);
  const nlohmann::json d = read_json(dump);
  CHECK(d["step"] == 37);
  CHECK(d["state"].dump() == nlohmann::json::parse(state_json(*f.module, vm.snapshot())).dump());
  CHECK(m.position() == 37);  // quit stopped the script
  std::filesystem::remove(dump);
}

TEST_CASE("script: back then forward returns to the same state") {
  const Loaded f = fib_batch(24);
  DebuggerModel m(f.source(), {.interval = 8});
  const std::string a = temp_path("a.json"), b = temp_path("b.json");
  REQUIRE(script(m, "step 60\ndump " + a + "\nback 13\nstep 13\ndump " + b + "\n").code == 0);
  CHECK(read_json(a) == read_json(b));
  std::filesystem::remove(a);
  std::filesystem::remove(b);
}

TEST_CASE("script: breakpoints, continue, selection and colouring") {
  const Loaded f = fib_batch(10);
  DebuggerModel m(f.source());
  const std::string dump = temp_path("bp.json");
  const Run r = script(
      m, "break lane 3 returns\nbreak depth > 100\ncontinue\nselect lane 3\ncolor var n\ndump " +
             dump + "\n");
  REQUIRE_MESSAGE(r.code == 0, r.errors);
  CHECK(r.log.find("continue: breakpoint 1 (lane 3 returns)") != std::string::npos);
  const nlohmann::json d = read_json(dump);
  CHECK(d["selected_lane"] == 3);
  CHECK(d["color"] == "var");
  CHECK(d["breakpoints"].size() == 2);
  CHECK(d["state"]["lanes"][3]["block"] == "finished");
  std::filesystem::remove(dump);
}

TEST_CASE("script: bad commands stop with the file and line") {
  const Loaded f = fib_batch(4);
  DebuggerModel m(f.source());
  Run r = script(m, "step 2\nfly 3\nstep 5\n");
  CHECK(r.code == 1);
  CHECK(r.errors.find("cmds.txt:2: unknown command 'fly'") != std::string::npos);
  CHECK(m.position() == 2);
  // A long bad word is quoted as a short excerpt.
  const std::string long_word = script(m, std::string(100'000, 'w') + "\n").errors;
  CHECK(long_word.find("unknown command '" + std::string(60, 'w') + "…'") != std::string::npos);
  CHECK(long_word.size() < 300);
  CHECK(script(m, "step x\n").errors.find("usage: step [N]") != std::string::npos);
  CHECK(script(m, "break line\n").errors.find("unknown breakpoint") != std::string::npos);
  CHECK(script(m, "select lane 99\n").errors.find("out of range") != std::string::npos);
  CHECK(script(m, "color var nosuch\n").errors.find("no variable 'nosuch'") != std::string::npos);
  CHECK(script(m, "screenshot x.png\n").errors.find("needs the window") != std::string::npos);
  CHECK(script_needs_window("step 1\nscreenshot a.png\n"));
  CHECK(!script_needs_window("step 1\ndump a.json\n"));
}

TEST_CASE("script: a # after a blank starts a comment, also after a command") {
  const Loaded f = fib_batch(24);
  DebuggerModel m(f.source(), {.interval = 8});
  const std::string dump = temp_path("run#1.json");  // a # inside a word is part of it
  const Run r = script(
      m, "step 5 # five\nstep\t# and one\n  # only a comment\ndump " + dump + "  # the state\n");
  REQUIRE_MESSAGE(r.code == 0, r.errors);
  CHECK(r.log.find("step 5: ran 5, now at step 5") != std::string::npos);
  CHECK(m.position() == 6);
  CHECK(read_json(dump)["step"] == 6);
  std::filesystem::remove(dump);
  CHECK(script_needs_window("step 1 # then\nscreenshot a.png # the picture\n"));
  CHECK(!script_needs_window("step 1 # screenshot a.png\n"));
}

TEST_CASE("script: a utilization threshold must be a finite number") {
  const Loaded f = fib_batch(4);
  DebuggerModel m(f.source());
  for (const char* threshold : {"nan", "NaN", "inf", "-infinity"}) {
    CAPTURE(threshold);
    const Run r = script(m, std::string("break utilization < ") + threshold + "\n");
    CHECK(r.code == 1);
    CHECK(r.errors.find("the utilization threshold must be a finite number") != std::string::npos);
  }
  CHECK(m.breakpoints().empty());
  CHECK(script(m, "break utilization < 0.5\n").code == 0);
}

TEST_CASE("script: a dump that cannot be written is an error, and nothing claims it was") {
  const Loaded f = fib_batch(4);
  DebuggerModel m(f.source());
  // /dev/full: every write fails with ENOSPC. Some containers have no /dev/full (writing there
  // would create a file): the missing folder below checks the same path without it.
  if (std::filesystem::is_character_file("/dev/full")) {
    const Run full = script(m, "dump /dev/full\n");
    CHECK(full.code == 1);
    CHECK(full.errors == "cmds.txt:1: cannot write '/dev/full': No space left on device\n");
    CHECK(full.log.empty());
    CHECK(std::filesystem::is_character_file("/dev/full"));  // a device is never removed
  }
  const Run missing = script(m, "dump /nonexistent-dir/state.json\n");
  CHECK(missing.code == 1);
  CHECK(missing.errors.find("No such file or directory") != std::string::npos);
  CHECK(missing.log.empty());
}

TEST_CASE("script: save writes a trace of a step range that replays") {
  const Loaded f = fib_batch(12);
  VmSource* raw = nullptr;
  auto source = f.source();
  raw = source.get();
  DebuggerModel m(std::move(source), {.interval = 8});
  ScriptHooks hooks;
  hooks.save_trace = [&](const std::string& path, uint64_t first, uint64_t last) -> Status {
    const uint64_t here = m.position();
    const Status saved = record_trace(m.timeline(), f.batch, f.options, {first, last, 8}, path);
    m.seek(here);
    return saved;
  };
  const std::string path = temp_path("saved.abtrace");
  const Run r = script(m, "step 50\nsave " + path + " 10 30\n", hooks);
  REQUIRE_MESSAGE(r.code == 0, r.errors);
  CHECK(m.position() == 50);
  (void)raw;
  auto read = read_trace(path);
  REQUIRE(read.ok());
  CHECK(read->first_step == 10);
  CHECK(read->end_step() == 30);
  std::filesystem::remove(path);
}

#ifdef AB_CLI
TEST_CASE("window: a scripted screenshot under xvfb-run shows the panels") {
  if (!ab::testing::have_xvfb()) return;
  const std::string cmds = temp_path("shot.txt"), png = temp_path("shot.png");
  {
    std::ofstream out(cmds);
    out << "step 12\nselect lane 5\ncolor depth\nscreenshot " << png << "\nquit\n";
  }
  const std::string command =
      std::string("xvfb-run -a -s '-screen 0 1600x1000x24' ") + AB_CLI + " debug " + AB_SOURCE_DIR +
      "/samples/fib.ab -i n=range:0:10 --script " + cmds + " > /dev/null 2>&1";
  REQUIRE(std::system(command.c_str()) == 0);
  int w = 0, h = 0, channels = 0;
  unsigned char* pixels = stbi_load(png.c_str(), &w, &h, &channels, 4);
  REQUIRE(pixels != nullptr);
  CHECK(w == 1600);
  CHECK(h == 1000);
  auto at = [&](int x, int y) { return pixels + (size_t(y) * w + x) * 4; };
  // Non-blank: many distinct colours and a good share of non-background pixels.
  size_t bright = 0;
  for (int y = 0; y < h; y += 2)
    for (int x = 0; x < w; x += 2)
      bright += at(x, y)[0] + at(x, y)[1] + at(x, y)[2] > 150;
  CHECK(bright > 800);
  // The lane grid (middle column, upper part) is filled with colour: depth colours are saturated.
  size_t coloured = 0, samples = 0;
  for (int y = 200; y < 600; y += 4)
    for (int x = 580; x < 1180; x += 4, ++samples) {
      const unsigned char* p = at(x, y);
      const int mx = std::max({p[0], p[1], p[2]}), mn = std::min({p[0], p[1], p[2]});
      coloured += mx - mn > 40;
    }
  CHECK(coloured > samples / 3);
  // The source view (left column) shows the highlighted line: a band of the highlight colour.
  size_t highlight = 0;
  for (int y = 100; y < 400; ++y)
    for (int x = 10; x < 500; x += 5) {
      const unsigned char* p = at(x, y);
      highlight += p[2] > p[0] + 50 && p[2] > 120;
    }
  CHECK(highlight > 50);
  stbi_image_free(pixels);
  std::filesystem::remove(cmds);
  std::filesystem::remove(png);
}

TEST_CASE("window: a Vulkan session runs on the window's device, with no validation message") {
  if (!ab::testing::have_xvfb()) return;
  const std::string cmds = temp_path("one_device.txt"), png = temp_path("one_device.png"),
                    dump = temp_path("one_device.json"), errors = temp_path("one_device.err");
  {
    std::ofstream out(cmds);
    out << "step 7\ndump " << dump << "\nscreenshot " << png << "\nquit\n";
  }
  const std::string run =
      std::string(AB_CLI) + " debug " + AB_SOURCE_DIR +
      "/samples/fib.ab -i n=range:0:10 --backend vulkan --validation --script " + cmds;
  // The window's instance has the validation layer: the window's own calls and the engine's, on
  // the one device, report to it, and any message fails the run.
  const int status = std::system(
      ("xvfb-run -a -s '-screen 0 1600x1000x24' " + run + " > /dev/null 2> " + errors).c_str());
  const std::string stderr_text = read_bytes(errors);
  CHECK_MESSAGE(status == 0, stderr_text);
  CHECK_MESSAGE(stderr_text.find("validation") == std::string::npos, stderr_text);
  // The engine's context is the window's device (VulkanContext::external()), not one beside it.
  const nlohmann::json windowed = read_json(dump);
  CHECK(windowed["source"].get<std::string>().find("(the window's device)") != std::string::npos);
  CHECK(windowed["step"] == 7);
  CHECK(std::filesystem::exists(png));

  // Without the window (a script with no screenshot) the engine creates its own device.
  {
    std::ofstream out(cmds);
    out << "step 7\ndump " << dump << "\nquit\n";
  }
  REQUIRE(std::system((run + " > /dev/null 2>&1").c_str()) == 0);
  const nlohmann::json headless = read_json(dump);
  CHECK(headless["source"].get<std::string>().find("window") == std::string::npos);
  CHECK(headless["state"] == windowed["state"]);  // the same run on either device
  for (const std::string& f : {cmds, png, dump, errors})
    std::filesystem::remove(f);
}

TEST_CASE(
    "window: grouped, filtered and zoomed lane grid screenshots, with no validation message") {
  if (!ab::testing::have_xvfb()) return;
  const std::string cmds = temp_path("views.txt"), plain = temp_path("plain.png"),
                    grouped = temp_path("grouped.png"), zoomed = temp_path("zoomed.png"),
                    log = temp_path("views.log"), errors = temp_path("views.err");
  {
    std::ofstream out(cmds);
    out << "step 24\nscreenshot " << plain << "\ngroup block\nfilter n > 5 && depth < 6\n"
        << "heatmap ran\nscreenshot " << grouped << "\nzoom lane 1234\ncolor var n\n"
        << "screenshot " << zoomed << "\nframes 3\nquit\n";
  }
  const std::string command = std::string("xvfb-run -a -s '-screen 0 1600x1000x24' ") + AB_CLI +
                              " debug " + AB_SOURCE_DIR +
                              "/samples/fib.ab -i n=randint:0:15 --batch 20000 --validation "
                              "--backend vm --script " +
                              cmds + " > " + log + " 2> " + errors;
  const int status = std::system(command.c_str());
  const std::string stderr_text = read_bytes(errors), log_text = read_bytes(log);
  REQUIRE_MESSAGE(status == 0, stderr_text);
  CHECK_MESSAGE(stderr_text.find("validation") == std::string::npos, stderr_text);
  CHECK(log_text.find("group block: ") != std::string::npos);
  CHECK(log_text.find(" lanes match") != std::string::npos);
  CHECK(log_text.find("frames 3: mean frame time") != std::string::npos);
  struct Image {
    int w = 0, h = 0;
    std::vector<unsigned char> px;
    const unsigned char* at(int x, int y) const { return px.data() + (size_t(y) * w + x) * 4; }
  };
  auto load = [](const std::string& path) {
    Image img;
    int channels = 0;
    unsigned char* p = stbi_load(path.c_str(), &img.w, &img.h, &channels, 4);
    REQUIRE(p != nullptr);
    img.px.assign(p, p + size_t(img.w) * img.h * 4);
    stbi_image_free(p);
    return img;
  };
  const Image a = load(plain), b = load(grouped), c = load(zoomed);
  CHECK(b.w == 1600);
  CHECK(b.h == 1000);
  // The lane grid (the middle column) changes when grouped and filtered, and again when zoomed.
  auto differing = [](const Image& x, const Image& y) {
    size_t n = 0;
    for (int py = 200; py < 560; py += 3)
      for (int px = 500; px < 1200; px += 3)
        n += std::memcmp(x.at(px, py), y.at(px, py), 3) != 0;
    return n;
  };
  CHECK(differing(a, b) > 2000);
  CHECK(differing(b, c) > 2000);
  // Zoomed to one lane per cell: the grid shows few, large cells, so long runs of one colour.
  size_t same = 0, total = 0;
  for (int py = 300; py < 500; py += 2)
    for (int px = 520; px < 1100; px += 2, ++total)
      same += std::memcmp(c.at(px, py), c.at(px + 2, py), 3) == 0;
  CHECK(same > total * 6 / 10);
  for (const std::string& f : {cmds, plain, grouped, zoomed, log, errors})
    std::filesystem::remove(f);
}
#endif
