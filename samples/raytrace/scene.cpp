#include "scene.h"

// The writer's own copy, static: the debugger and the agents sample define theirs.
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include <stb_image_write.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <bit>
#include <cmath>

namespace ab::raytrace {
namespace {

Vec3 sub(const Vec3& a, const Vec3& b) {
  return {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
}
Vec3 scale(const Vec3& a, float s) {
  return {a[0] * s, a[1] * s, a[2] * s};
}
Vec3 cross(const Vec3& a, const Vec3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
Vec3 normalized(const Vec3& a) {
  return scale(a, 1.0f / std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]));
}

uint32_t word(float f) {
  return std::bit_cast<uint32_t>(f);
}
uint32_t word(int32_t i) {
  return static_cast<uint32_t>(i);
}

void append(std::vector<uint32_t>& words, const Vec3& v) {
  for (float f : v)
    words.push_back(word(f));
}

}  // namespace

Scene default_scene() {
  Scene s;
  s.camera = {{0.0f, 1.7f, -6.0f}, {0.0f, 0.8f, 0.5f}, 45.0f};
  s.light_position = {-4.0f, 7.0f, -5.0f};
  s.light_colour = {1.0f, 1.0f, 1.0f};
  s.ambient = 0.1f;
  s.sky_horizon = {0.75f, 0.85f, 1.0f};
  s.sky_zenith = {0.2f, 0.4f, 0.8f};
  s.materials = {
      {kDiffuse, {0.9f, 0.9f, 0.9f}, {0.2f, 0.2f, 0.25f}, 1.0f, 1.0f},  // 0: checkered floor
      {kGlass, {1.0f, 1.0f, 1.0f}, {}, 0.0f, 1.5f},                     // 1: glass
      {kMirror, {0.9f, 0.9f, 0.9f}, {}, 0.0f, 1.0f},                    // 2: mirror
      {kDiffuse, {0.8f, 0.15f, 0.1f}, {}, 0.0f, 1.0f},                  // 3: red
      {kDiffuse, {0.1f, 0.3f, 0.85f}, {}, 0.0f, 1.0f},                  // 4: blue
      {kDiffuse, {0.2f, 0.7f, 0.25f}, {}, 0.0f, 1.0f},                  // 5: green
  };
  s.spheres = {
      {{0.0f, 1.0f, 0.0f}, 1.0f, 1},     // glass, in the middle
      {{-2.3f, 1.0f, 1.5f}, 1.0f, 2},    // mirror, left
      {{2.3f, 0.8f, 1.2f}, 0.8f, 3},     // red, right
      {{0.9f, 0.35f, -1.7f}, 0.35f, 4},  // small blue, in front
      {{-0.4f, 0.6f, 3.0f}, 0.6f, 5},    // green, behind the glass
  };
  s.planes = {{{0.0f, 1.0f, 0.0f}, 0.0f, 0}};  // the floor, y = 0
  return s;
}

Camera orbit_camera(const Scene& scene, float angle) {
  Camera c = scene.camera;
  const Vec3 offset = sub(c.eye, c.target);
  const float cs = std::cos(angle), sn = std::sin(angle);
  c.eye = {c.target[0] + cs * offset[0] + sn * offset[2], c.eye[1],
           c.target[2] - sn * offset[0] + cs * offset[2]};
  return c;
}

std::array<float, 12> camera_basis(const Camera& camera, uint32_t width, uint32_t height) {
  const Vec3 forward = normalized(sub(camera.target, camera.eye));
  const Vec3 right_unit = normalized(cross({0.0f, 1.0f, 0.0f}, forward));
  const Vec3 up_unit = cross(forward, right_unit);
  const float half_height =
      static_cast<float>(std::tan(camera.vertical_fov_degrees * 3.14159265358979 / 360.0));
  const float half_width = half_height * static_cast<float>(width) / static_cast<float>(height);
  const Vec3 right = scale(right_unit, half_width), up = scale(up_unit, half_height);
  return {camera.eye[0], camera.eye[1], camera.eye[2], forward[0], forward[1], forward[2],
          right[0],      right[1],      right[2],      up[0],      up[1],      up[2]};
}

UniformData scene_uniforms(const Scene& scene, const View& view) {
  UniformData u;
  u.push_back({word(static_cast<int32_t>(view.width))});
  u.push_back({word(static_cast<int32_t>(view.height))});
  u.push_back({word(static_cast<int32_t>(view.depth))});
  std::vector<uint32_t> camera;
  for (float f : camera_basis(scene.camera, view.width, view.height))
    camera.push_back(word(f));
  u.push_back(camera);
  std::vector<uint32_t> light;
  append(light, scene.light_position);
  append(light, scene.light_colour);
  light.push_back(word(scene.ambient));
  u.push_back(light);
  std::vector<uint32_t> sky;
  append(sky, scene.sky_horizon);
  append(sky, scene.sky_zenith);
  u.push_back(sky);

  // Spheres and planes alike: the count, then 4 floats and a material per item, padded to the
  // capacity.
  auto shapes = [&u](const auto& items, uint32_t capacity, auto geometry) {
    u.push_back({word(static_cast<int32_t>(items.size()))});
    std::vector<uint32_t> floats(capacity * 4, 0), material(capacity, 0);
    for (size_t i = 0; i < items.size() && i < capacity; ++i) {
      const std::array<float, 4> g = geometry(items[i]);
      for (int k = 0; k < 4; ++k)
        floats[i * 4 + k] = word(g[k]);
      material[i] = word(items[i].material);
    }
    u.push_back(floats);
    u.push_back(material);
  };
  shapes(scene.spheres, kMaxSpheres, [](const Sphere& s) {
    return std::array<float, 4>{s.centre[0], s.centre[1], s.centre[2], s.radius};
  });
  shapes(scene.planes, kMaxPlanes, [](const Plane& p) {
    return std::array<float, 4>{p.normal[0], p.normal[1], p.normal[2], p.d};
  });

  std::vector<uint32_t> kinds(kMaxMaterials, 0), params(kMaxMaterials * 8, 0);
  for (size_t i = 0; i < scene.materials.size() && i < kMaxMaterials; ++i) {
    const Material& m = scene.materials[i];
    kinds[i] = word(m.kind);
    for (int k = 0; k < 3; ++k) {
      params[i * 8 + k] = word(m.colour[k]);
      params[i * 8 + 3 + k] = word(m.colour2[k]);
    }
    params[i * 8 + 6] = word(m.checker);
    params[i * 8 + 7] = word(m.ior);
  }
  u.push_back(kinds);
  u.push_back(params);
  return u;
}

Batch pixel_batch(const Scene& scene, const View& view) {
  return pixel_batch(scene, view, view.width * view.height);
}

Batch pixel_batch(const Scene& scene, const View& view, uint32_t lanes) {
  Batch batch;
  batch.lanes = std::min(lanes, view.width * view.height);
  batch.inputs.resize(1);
  batch.inputs[0].resize(batch.lanes);
  for (uint32_t i = 0; i < batch.lanes; ++i)
    batch.inputs[0][i] = i;
  batch.uniforms = scene_uniforms(scene, view);
  return batch;
}

View view_for_pixels(uint32_t pixels, uint32_t depth) {
  const auto width =
      std::max<uint32_t>(1, static_cast<uint32_t>(std::lround(std::sqrt(pixels * 4.0 / 3.0))));
  return {width, std::max<uint32_t>(1, (pixels + width - 1) / width), depth};
}

uint32_t stack_depth(const View& view) {
  return view.depth + 4;
}

uint8_t to_byte(float linear) {
  const double c = std::clamp(static_cast<double>(linear), 0.0, 1.0);
  return static_cast<uint8_t>(std::lround(255.0 * std::pow(c, 1.0 / 2.2)));
}

std::vector<uint8_t> to_rgb8(const std::vector<float>& colours) {
  std::vector<uint8_t> rgb(colours.size());
  std::transform(colours.begin(), colours.end(), rgb.begin(), to_byte);
  return rgb;
}

std::vector<uint8_t> to_rgb8(const std::vector<uint32_t>& colour_words) {
  std::vector<float> colours(colour_words.size());
  std::transform(colour_words.begin(), colour_words.end(), colours.begin(),
                 [](uint32_t w) { return std::bit_cast<float>(w); });
  return to_rgb8(colours);
}

bool write_png(const std::string& path, uint32_t width, uint32_t height,
               const std::vector<uint8_t>& rgb, std::string* error) {
  if (rgb.size() != size_t{width} * height * 3) {
    if (error) *error = "the image has the wrong number of bytes";
    return false;
  }
  if (stbi_write_png(path.c_str(), static_cast<int>(width), static_cast<int>(height), 3, rgb.data(),
                     static_cast<int>(width * 3)) == 0) {
    if (error) *error = "cannot write " + path;
    return false;
  }
  return true;
}

}  // namespace ab::raytrace
