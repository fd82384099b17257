// samples/raytrace: the default scene of raytrace.ab and what every tracer of it shares (the
// .ab on interp, vm and Vulkan; bench's hand-written GLSL tracer; its native C++ tracer): the
// scene as data, the camera as the 12 floats raytrace.ab reads, the uniforms in raytrace.ab's
// declaration order, the batch (one lane per pixel, lane i = pixel i, row-major from the top),
// and the picture: linear colours to 8-bit sRGB-like bytes and a PNG.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "autobatch/batch.h"

namespace ab::raytrace {

using Vec3 = std::array<float, 3>;

// raytrace.ab's capacities (MAX_SPHERES, MAX_PLANES, MAX_MATERIALS) and material kinds.
inline constexpr uint32_t kMaxSpheres = 8, kMaxPlanes = 4, kMaxMaterials = 8;
enum MaterialKind : int32_t { kDiffuse = 0, kMirror = 1, kGlass = 2 };

struct Material {
  int32_t kind = kDiffuse;
  Vec3 colour{};      // albedo (diffuse) or tint (mirror, glass)
  Vec3 colour2{};     // the checker's second colour
  float checker = 0;  // checker square size in x and z; 0: plain
  float ior = 1;      // glass: index of refraction
};
struct Sphere {
  Vec3 centre{};
  float radius = 1;
  int32_t material = 0;
};
struct Plane {
  Vec3 normal{};  // unit length
  float d = 0;    // the points p with dot(normal, p) = d
  int32_t material = 0;
};
struct Camera {
  Vec3 eye{}, target{};
  float vertical_fov_degrees = 45;
};

struct Scene {
  Camera camera;
  Vec3 light_position{}, light_colour{};
  float ambient = 0.1f;
  Vec3 sky_horizon{}, sky_zenith{};
  std::vector<Sphere> spheres;
  std::vector<Plane> planes;
  std::vector<Material> materials;
};

// What to render: the image's size and the recursion limit (trace(_, depth) recurses no further).
struct View {
  uint32_t width = 64, height = 48, depth = 5;
};

// A checkered floor and five spheres (glass, mirror, three diffuse) under one light and a sky.
Scene default_scene();
// The default scene's camera turned `angle` radians about the vertical axis through its target
// (the window app's moving camera).
Camera orbit_camera(const Scene& scene, float angle);

// camera: eye, forward (unit), right (half the image's width at distance 1), up (half its height).
std::array<float, 12> camera_basis(const Camera& camera, uint32_t width, uint32_t height);

// raytrace.ab's uniforms, in its declaration order.
UniformData scene_uniforms(const Scene& scene, const View& view);
// One lane per pixel, lane i tracing pixel i, with the scene's uniforms: every pixel of the
// view, or its first `lanes` (at most width x height).
Batch pixel_batch(const Scene& scene, const View& view);
Batch pixel_batch(const Scene& scene, const View& view, uint32_t lanes);
// A view of about 4:3 with at least `pixels` pixels, the last row possibly part-filled: the
// bench's picture for a batch of `pixels` lanes.
View view_for_pixels(uint32_t pixels, uint32_t depth);
// RunOptions::stack_depth a view needs: main, trace at depths 0..depth, intersect below them.
uint32_t stack_depth(const View& view);

// A linear colour (one float per channel) as a byte: clamped to [0, 1], then gamma 1/2.2.
uint8_t to_byte(float linear);
// Result words (3 floats per pixel) as RGB bytes.
std::vector<uint8_t> to_rgb8(const std::vector<uint32_t>& colour_words);
std::vector<uint8_t> to_rgb8(const std::vector<float>& colours);
// Writes an RGB PNG; false (and `error` says why) on failure.
bool write_png(const std::string& path, uint32_t width, uint32_t height,
               const std::vector<uint8_t>& rgb, std::string* error);

}  // namespace ab::raytrace
