// samples/raytrace (issue 47): raytrace.ab's picture on the interpreter equals the reference PNG
// in the repository; interp, vm and every Vulkan schedule give it bit for bit (validation on);
// pixels agree with what the scene's geometry says independently of any tracer (worked out here
// in double precision: the sky where a primary ray misses everything, ambient light alone in a
// shadow, Lambert's law where the light is seen, a mirror showing the sky it reflects); depth 16
// runs without a stack fault; raytrace_render's options.
#include <doctest/doctest.h>

#include <stb_image.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>

#include "samples/raytrace/render.h"
#include "support/read_bytes.h"
#include "support/temp_dir.h"

namespace {

using ab::raytrace::Scene;
using ab::raytrace::View;
using D3 = std::array<double, 3>;

std::shared_ptr<const ab::Module> raytrace_module() {
  static auto module = [] {
    auto loaded = ab::raytrace::load_program();
    REQUIRE_MESSAGE(loaded.ok(), loaded.error());
    return *loaded;
  }();
  return module;
}

ab::raytrace::Picture render(const View& view, const std::string& backend_name,
                             std::shared_ptr<ab::VulkanContext> context = nullptr) {
  auto backend = ab::raytrace::parse_backend(backend_name);
  REQUIRE_MESSAGE(backend.ok(), backend.error());
  auto picture = ab::raytrace::render(raytrace_module(), ab::raytrace::default_scene(), view,
                                      *backend, std::move(context));
  REQUIRE_MESSAGE(picture.ok(), picture.error());
  CHECK_MESSAGE(picture->faulted == 0, picture->first_error);
  return *picture;
}

float channel(const ab::raytrace::Picture& p, uint32_t pixel, int c) {
  return std::bit_cast<float>(p.colours[pixel * 3 + c]);
}

// --- The scene's geometry in double precision, written here and not shared with any tracer. ---

D3 d3(const ab::raytrace::Vec3& v) {
  return {v[0], v[1], v[2]};
}
D3 operator+(const D3& a, const D3& b) {
  return {a[0] + b[0], a[1] + b[1], a[2] + b[2]};
}
D3 operator-(const D3& a, const D3& b) {
  return {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
}
D3 operator*(const D3& a, double s) {
  return {a[0] * s, a[1] * s, a[2] * s};
}
D3 operator*(const D3& a, const D3& b) {
  return {a[0] * b[0], a[1] * b[1], a[2] * b[2]};
}
double dot(const D3& a, const D3& b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
D3 unit(const D3& a) {
  return a * (1.0 / std::sqrt(dot(a, a)));
}

constexpr double kMargin = 0.02;  // pixels this close to an edge (silhouette, shadow, checker) are
                                  // left out: float rounding may put them on either side
constexpr double kInf = std::numeric_limits<double>::infinity();

// How far the segment o + t d, 0 <= t <= t_max, stays from the sphere's surface (negative: it
// enters the sphere).
double clearance(const D3& o, const D3& d, const ab::raytrace::Sphere& s, double t_max) {
  const D3 c = d3(s.centre);
  const double t = std::clamp(dot(c - o, d), 0.0, t_max);
  const D3 closest = o + d * t - c;
  return std::sqrt(dot(closest, closest)) - s.radius;
}

// Where the ray first enters sphere s (kInf if it does not).
double entry(const D3& o, const D3& d, const ab::raytrace::Sphere& s) {
  const D3 oc = o - d3(s.centre);
  const double b = dot(oc, d), disc = b * b - (dot(oc, oc) - s.radius * s.radius);
  if (disc < 0) return kInf;
  const double t = -b - std::sqrt(disc);
  return t > 0 ? t : kInf;
}

// Whether the segment from o along d to t_max misses every sphere but `skip` by the margin
// (true), enters one by more than the margin (false), or is too close to call (nullopt).
std::optional<bool> clear_of_spheres(const Scene& scene, const D3& o, const D3& d, double t_max,
                                     int skip = -1) {
  bool clear = true;
  for (size_t s = 0; s < scene.spheres.size(); ++s) {
    if (static_cast<int>(s) == skip) continue;
    const double c = clearance(o, d, scene.spheres[s], t_max);
    if (std::abs(c) < kMargin) return std::nullopt;
    clear = clear && c > 0;
  }
  return clear;
}

D3 sky(const Scene& scene, const D3& d) {
  const double up = std::max(d[1], 0.0);
  return d3(scene.sky_horizon) * (1 - up) + d3(scene.sky_zenith) * up;
}

// A diffuse point's colour: ambient, plus Lambert's term when the light is seen.
struct Diffuse {
  std::optional<D3> colour;  // nullopt: too close to a shadow's edge
  bool shadowed = false;
};
Diffuse diffuse_colour(const Scene& scene, const D3& p, const D3& n, const D3& albedo, int self) {
  const D3 light = d3(scene.light_colour), to_light = d3(scene.light_position) - p;
  const double dist = std::sqrt(dot(to_light, to_light));
  const D3 l = to_light * (1 / dist);
  const double lambert = dot(n, l);
  const D3 ambient = albedo * light * scene.ambient;
  if (std::abs(lambert) < 0.05) return {};
  if (lambert < 0) return {ambient, true};
  const auto clear = clear_of_spheres(scene, p, l, dist, self);
  if (!clear) return {};
  if (!*clear) return {ambient, true};
  return {ambient + albedo * light * lambert, false};
}

// What a pixel's colour must be, where the geometry settles it; nullopt elsewhere (glass, edges).
struct Fact {
  enum Kind { Sky, Shadowed, Lit, MirroredSky } kind;
  D3 colour;
};
std::optional<Fact> expected_colour(const Scene& scene, const View& view, uint32_t pixel) {
  const auto basis = ab::raytrace::camera_basis(scene.camera, view.width, view.height);
  const D3 eye{basis[0], basis[1], basis[2]}, forward{basis[3], basis[4], basis[5]},
      right{basis[6], basis[7], basis[8]}, up{basis[9], basis[10], basis[11]};
  const double u = 2.0 * ((pixel % view.width) + 0.5) / view.width - 1.0;
  const double v = 1.0 - 2.0 * ((pixel / view.width) + 0.5) / view.height;
  const D3 d = unit(forward + right * u + up * v);
  double t_floor = d[1] < -1e-3 ? -eye[1] / d[1] : kInf;
  int sphere = -1;
  double t_sphere = kInf;
  for (size_t s = 0; s < scene.spheres.size(); ++s) {
    const double t = entry(eye, d, scene.spheres[s]);
    if (t < t_sphere) t_sphere = t, sphere = static_cast<int>(s);
  }
  if (t_floor < t_sphere) {
    // The floor, if no sphere's silhouette is near the ray before it.
    if (!clear_of_spheres(scene, eye, d, t_floor).value_or(false)) return std::nullopt;
    const D3 p = eye + d * t_floor;
    const double fx = p[0] - std::floor(p[0]), fz = p[2] - std::floor(p[2]);
    if (std::min({fx, 1 - fx, fz, 1 - fz}) < kMargin) return std::nullopt;
    const auto& floor = scene.materials[scene.planes[0].material];
    const bool odd =
        (static_cast<long>(std::floor(p[0])) + static_cast<long>(std::floor(p[2]))) & 1;
    const auto shade =
        diffuse_colour(scene, p, {0, 1, 0}, d3(odd ? floor.colour2 : floor.colour), -1);
    if (!shade.colour) return std::nullopt;
    return Fact{shade.shadowed ? Fact::Shadowed : Fact::Lit, *shade.colour};
  }
  if (sphere < 0) {
    if (d[1] < 0.02 || !clear_of_spheres(scene, eye, d, 1e3).value_or(false)) return std::nullopt;
    return Fact{Fact::Sky, sky(scene, d)};
  }
  // A sphere, away from the silhouettes of the others and its own.
  if (!clear_of_spheres(scene, eye, d, t_sphere, sphere).value_or(false)) return std::nullopt;
  if (clearance(eye, d, scene.spheres[sphere], kInf) > -kMargin) return std::nullopt;
  const auto& s = scene.spheres[sphere];
  const auto& m = scene.materials[s.material];
  const D3 p = eye + d * t_sphere, n = unit(p - d3(s.centre));
  if (m.kind == ab::raytrace::kDiffuse) {
    const auto shade = diffuse_colour(scene, p, n, d3(m.colour), sphere);
    if (!shade.colour) return std::nullopt;
    return Fact{shade.shadowed ? Fact::Shadowed : Fact::Lit, *shade.colour};
  }
  if (m.kind != ab::raytrace::kMirror || -dot(d, n) < 0.2) return std::nullopt;
  const D3 r = d - n * (2 * dot(d, n));
  if (r[1] < 0.02 || !clear_of_spheres(scene, p, r, 1e3, sphere).value_or(false))
    return std::nullopt;
  return Fact{Fact::MirroredSky, d3(m.colour) * sky(scene, r)};
}

int exit_status(int system_result) {
  return WIFEXITED(system_result) ? WEXITSTATUS(system_result) : -1;
}

}  // namespace

TEST_CASE("raytrace: the interpreter's picture is the reference PNG, byte for byte") {
  // samples/raytrace/reference_64x48.png: raytrace_render --backend interp --width 64
  // --height 48 --depth 5 (samples/README.md says when to renew it).
  const std::string reference =
      std::string(AB_SOURCE_DIR) + "/samples/raytrace/reference_64x48.png";
  int w = 0, h = 0, channels = 0;
  unsigned char* pixels = stbi_load(reference.c_str(), &w, &h, &channels, 3);
  REQUIRE(pixels != nullptr);
  REQUIRE(w == 64);
  REQUIRE(h == 48);
  const std::vector<uint8_t> expected(pixels, pixels + 64 * 48 * 3);
  stbi_image_free(pixels);
  const auto picture = render({64, 48, 5}, "interp");
  const auto rgb = ab::raytrace::to_rgb8(picture.colours);
  size_t differing = 0;
  for (size_t i = 0; i < rgb.size(); ++i)
    differing += rgb[i] != expected[i];
  CHECK(differing == 0);
}

TEST_CASE("raytrace: pixels agree with the scene's geometry worked out independently") {
  const View view{96, 72, 5};
  const Scene scene = ab::raytrace::default_scene();
  const auto picture = render(view, "interp");
  std::array<int, 4> checked{};
  for (uint32_t pixel = 0; pixel < view.width * view.height; ++pixel) {
    const auto expected = expected_colour(scene, view, pixel);
    if (!expected) continue;
    ++checked[expected->kind];
    for (int c = 0; c < 3; ++c) {
      CAPTURE(pixel);
      CAPTURE(expected->kind);
      CHECK(channel(picture, pixel, c) == doctest::Approx(expected->colour[c]).epsilon(2e-4));
    }
  }
  // Enough of each kind that the checks mean something.
  CHECK(checked[Fact::Sky] >= 50);
  CHECK(checked[Fact::Shadowed] >= 20);
  CHECK(checked[Fact::Lit] >= 200);
  CHECK(checked[Fact::MirroredSky] >= 5);
  MESSAGE("sky ", checked[0], ", shadowed ", checked[1], ", lit ", checked[2], ", mirrored sky ",
          checked[3]);
  // The top row sees the sky above everything: its colour is the sky's, darker blue overhead.
  CHECK(channel(picture, 0, 2) > channel(picture, 0, 0));
}

TEST_CASE("raytrace: interp, vm and every Vulkan schedule give the same picture bit for bit") {
  ab::ContextOptions options;
  options.validation = true;
  auto context = ab::VulkanContext::create(options);
  REQUIRE_MESSAGE(context.ok(), context.error());
  const View view{64, 48, 5};
  const auto reference = render(view, "interp");
  for (const auto& name : ab::raytrace::backend_names()) {
    if (name == "interp") continue;
    CAPTURE(name);
    const auto picture = render(view, name, *context);
    CHECK(picture.colours == reference.colours);
    CHECK(picture.stats.calls == reference.stats.calls);
    CHECK(picture.stats.max_stack_depth == reference.stats.max_stack_depth);
    for (const auto& m : (*context)->validation_messages())
      FAIL_CHECK(m);
    (*context)->clear_validation_messages();
  }
}

TEST_CASE("raytrace: depth 16 runs without a stack fault on interp and the default schedule") {
  const View view{32, 24, 16};
  const auto deep = render(view, "interp");
  // main, then trace at depths 0..16: the glass sphere's rays reach the limit.
  CHECK(deep.stats.max_stack_depth == 18);
  const auto on_vulkan = render(view, "vulkan");
  CHECK(on_vulkan.colours == deep.colours);
  // Deeper recursion changes what the glass shows: the picture differs from depth 2's.
  CHECK(render({32, 24, 2}, "interp").colours != deep.colours);
}

TEST_CASE("raytrace_render: writes the PNG; --help; bad options give one message") {
  const ab::testing::TempDir dir("ab_raytrace_render");
  const std::string png = dir.file("out.png"), log = dir.file("log.txt");
  auto run = [&](const std::string& args) {
    const std::string command =
        std::string(AB_RAYTRACE_RENDER) + " " + args + " > " + log + " 2>&1";
    return exit_status(std::system(command.c_str()));
  };
  REQUIRE(run("--backend interp --width 16 --height 12 --depth 3 -o " + png) == 0);
  CHECK(ab::testing::read_bytes(log).find("16x12, depth 3, interp") != std::string::npos);
  int w = 0, h = 0, channels = 0;
  unsigned char* pixels = stbi_load(png.c_str(), &w, &h, &channels, 3);
  REQUIRE(pixels != nullptr);
  const auto picture = render({16, 12, 3}, "interp");
  CHECK(std::vector<uint8_t>(pixels, pixels + 16 * 12 * 3) ==
        ab::raytrace::to_rgb8(picture.colours));
  stbi_image_free(pixels);
  CHECK(run("--help") == 0);
  CHECK(ab::testing::read_bytes(log).find("--depth") != std::string::npos);
  for (const char* bad : {"--backend nope", "--width 0", "--depth -1", "--bogus"}) {
    INFO(bad);
    CHECK(run(bad) == 2);
    const std::string out = ab::testing::read_bytes(log);
    CHECK(out.rfind("error: ", 0) == 0);
    CHECK(std::count(out.begin(), out.end(), '\n') == 1);
  }
  CHECK(run("--backend interp --program /nonexistent.ab") == 1);
  CHECK(ab::testing::read_bytes(log).find("/nonexistent.ab") != std::string::npos);
}
