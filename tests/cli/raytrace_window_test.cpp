// samples/raytrace/window (issue 47): the ray tracer's window under xvfb-run with the validation
// layer on: no validation message, the last picture equal to the interpreter's for its camera
// (--check), a screenshot showing the scene, and a captured frame that `autobatch debug` opens,
// its lanes at several call depths at once.
#include <doctest/doctest.h>

#include <stb_image.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/read_bytes.h"
#include "support/temp_dir.h"
#include "support/xvfb.h"

#ifdef AB_RAYTRACE_WINDOW
namespace {

int exit_status(int system_result) {
  return WIFEXITED(system_result) ? WEXITSTATUS(system_result) : -1;
}

}  // namespace

TEST_CASE("raytrace_window: frames under xvfb with validation, --check, a screenshot, a capture") {
  if (!ab::testing::have_xvfb()) return;
  const ab::testing::TempDir dir("ab_raytrace_window");
  const std::string png = dir.file("window.png"), trace = dir.file("frame.abtrace"),
                    log = dir.file("window.txt"), script = dir.file("script.txt");
  const std::string command = std::string("xvfb-run -a -s '-screen 0 1280x800x24' ") +
                              AB_RAYTRACE_WINDOW +
                              " --width 48 --height 27 --depth 5 --frames 5 --validation --check "
                              "--screenshot " +
                              png + " --capture " + trace + " > " + log + " 2>&1";
  const int status = exit_status(std::system(command.c_str()));
  const std::string out = ab::testing::read_bytes(log);
  INFO(out);
  REQUIRE(status == 0);
  CHECK(out.find("validation layer: on") != std::string::npos);
  CHECK(out.find("validation messages: 0") != std::string::npos);
  // The last picture (its camera turned four frames on) is the interpreter's, bit for bit.
  CHECK(out.find("check: ok: frame 4's picture, 0 words differ") != std::string::npos);

  // The window shows the picture: the sky (blue above red) at the top, something else below.
  int w = 0, h = 0, channels = 0;
  unsigned char* pixels = stbi_load(png.c_str(), &w, &h, &channels, 3);
  REQUIRE(pixels != nullptr);
  auto at = [&](int x, int y) { return pixels + (static_cast<size_t>(y) * w + x) * 3; };
  const unsigned char* sky = at(w - 20, h / 2 - h / 4);  // right of the overlay
  CHECK(sky[2] > sky[0]);
  CHECK(sky[2] > 200);
  const unsigned char* floor = at(w / 2, h - h / 8);
  CHECK(std::abs(floor[0] - floor[2]) < 40);  // the checker's grey or white, not the sky
  stbi_image_free(pixels);

  // The captured frame opens in the debugger, its lanes at two call depths or more after 200 steps.
  {
    std::ofstream s(script);
    s << "step 200\nhistogram\nquit\n";
  }
  const std::string debug =
      std::string(AB_CLI) + " debug " + trace + " --script " + script + " > " + log + " 2>&1";
  const int debug_status = exit_status(std::system(debug.c_str()));
  const std::string debug_out = ab::testing::read_bytes(log);
  INFO(debug_out);
  CHECK(debug_status == 0);
  CHECK(debug_out.find("step 200: ran 200") != std::string::npos);
  // Lanes at different recursion depths at the same time: the histogram lists several depths.
  const size_t histogram = debug_out.find("histogram: ");
  REQUIRE(histogram != std::string::npos);
  const std::string line = debug_out.substr(histogram, debug_out.find('\n', histogram) - histogram);
  // (Which depths depends on what inline_calls inlined: sky_colour's and shade_diffuse's calls
  // are no frames.)
  size_t depths = 0;
  for (size_t at = line.find("depth "); at != std::string::npos; at = line.find("depth ", at + 1))
    ++depths;
  CHECK(depths >= 2);
}
#endif
