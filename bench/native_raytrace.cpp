// raytrace.ab by hand (samples/raytrace): the same Whitted tracer in plain C++, recursion and
// all, one pixel per lane. Every float operation is written in the order the .ab source states
// it (and the project builds with -ffp-contract=off), so the picture equals the interpreter's bit
// for bit. The scene is read from the batch's uniforms, in raytrace.ab's declaration order.
#include <bit>
#include <cmath>
#include <cstdint>

#include "bench/native.h"

namespace ab::bench {
namespace {

constexpr float kEps = 0.001f, kFar = 1.0e30f;
constexpr int32_t kDiffuse = 0, kMirror = 1;

struct V3 {
  float x[3];
};
V3 operator+(const V3& a, const V3& b) {
  return {{a.x[0] + b.x[0], a.x[1] + b.x[1], a.x[2] + b.x[2]}};
}
V3 operator-(const V3& a, const V3& b) {
  return {{a.x[0] - b.x[0], a.x[1] - b.x[1], a.x[2] - b.x[2]}};
}
V3 operator*(const V3& a, const V3& b) {
  return {{a.x[0] * b.x[0], a.x[1] * b.x[1], a.x[2] * b.x[2]}};
}
V3 operator*(const V3& a, float s) {
  return {{a.x[0] * s, a.x[1] * s, a.x[2] * s}};
}
V3 operator/(const V3& a, float s) {
  return {{a.x[0] / s, a.x[1] / s, a.x[2] / s}};
}
// The language's dot: from 0, adding x[i] * y[i] in index order.
float dot(const V3& a, const V3& b) {
  float acc = 0.0f;
  for (int i = 0; i < 3; ++i)
    acc = acc + a.x[i] * b.x[i];
  return acc;
}
// The language's max(a, b) (shaders/ab_ops.glsl: b < a ? a : b) and int(f) (saturating).
float max_of(float a, float b) {
  return b < a ? a : b;
}
int32_t to_int(float f) {
  if (std::isnan(f)) return 0;
  if (f >= 2147483648.0f) return INT32_MAX;
  if (f < -2147483648.0f) return INT32_MIN;
  return static_cast<int32_t>(f);
}

// raytrace.ab's uniforms, read in place from the batch.
struct SceneView {
  const UniformData& u;
  int32_t i(size_t uniform, size_t k = 0) const { return static_cast<int32_t>(u[uniform][k]); }
  float f(size_t uniform, size_t k) const { return std::bit_cast<float>(u[uniform][k]); }
  V3 v(size_t uniform, size_t k) const {
    return {{f(uniform, k), f(uniform, k + 1), f(uniform, k + 2)}};
  }
  // Uniform indices, in declaration order.
  enum : size_t {
    Width,
    Height,
    MaxDepth,
    Camera,
    Light,
    Sky,
    SphereCount,
    Spheres,
    SphereMaterial,
    PlaneCount,
    Planes,
    PlaneMaterial,
    MaterialKind,
    Materials
  };
};

struct Ray {
  V3 origin, dir;
};
struct Hit {
  float t;
  V3 normal;
  int32_t material;
};

Hit intersect(const SceneView& s, const Ray& ray) {
  Hit best{kFar, {{0.0f, 0.0f, 0.0f}}, -1};
  int32_t best_sphere = -1;
  for (int32_t k = 0; k < s.i(SceneView::SphereCount); ++k) {
    const V3 c = s.v(SceneView::Spheres, k * 4);
    const float r = s.f(SceneView::Spheres, k * 4 + 3);
    const V3 oc = ray.origin - c;
    const float b = dot(oc, ray.dir);
    const float disc = b * b - (dot(oc, oc) - r * r);
    if (disc >= 0.0f) {
      const float root = std::sqrt(disc);
      float t = -b - root;
      if (t <= kEps) t = -b + root;
      if (t > kEps && t < best.t) {
        best.t = t;
        best.material = s.i(SceneView::SphereMaterial, k);
        best_sphere = k;
      }
    }
  }
  for (int32_t p = 0; p < s.i(SceneView::PlaneCount); ++p) {
    const V3 n = s.v(SceneView::Planes, p * 4);
    const float denom = dot(n, ray.dir);
    if (std::fabs(denom) > 1.0e-6f) {
      const float t = (s.f(SceneView::Planes, p * 4 + 3) - dot(n, ray.origin)) / denom;
      if (t > kEps && t < best.t) {
        best.t = t;
        best.material = s.i(SceneView::PlaneMaterial, p);
        best.normal = n;
        best_sphere = -1;
      }
    }
  }
  if (best_sphere >= 0) {
    const V3 c = s.v(SceneView::Spheres, best_sphere * 4);
    best.normal =
        (ray.origin + ray.dir * best.t - c) / s.f(SceneView::Spheres, best_sphere * 4 + 3);
  }
  return best;
}

V3 sky_colour(const SceneView& s, const V3& dir) {
  const float up = max_of(dir.x[1], 0.0f);
  return s.v(SceneView::Sky, 0) * (1.0f - up) + s.v(SceneView::Sky, 3) * up;
}

V3 shade_diffuse(const SceneView& s, const V3& point, const V3& n, int32_t m) {
  V3 albedo = s.v(SceneView::Materials, m * 8);
  const float size = s.f(SceneView::Materials, m * 8 + 6);
  if (size > 0.0f &&
      ((to_int(std::floor(point.x[0] / size)) + to_int(std::floor(point.x[2] / size))) & 1) != 0)
    albedo = s.v(SceneView::Materials, m * 8 + 3);
  const V3 light_colour = s.v(SceneView::Light, 3);
  V3 colour = albedo * light_colour * s.f(SceneView::Light, 6);
  const V3 to_light = s.v(SceneView::Light, 0) - point;
  const float dist = std::sqrt(dot(to_light, to_light));
  const V3 l = to_light / dist;
  const float lambert = dot(n, l);
  if (lambert > 0.0f) {
    const Hit blocker = intersect(s, {point + n * kEps, l});
    if (blocker.material < 0 || blocker.t >= dist)
      colour = colour + albedo * light_colour * lambert;
  }
  return colour;
}

V3 trace(const SceneView& s, const Ray& ray, int32_t depth) {
  const Hit hit = intersect(s, ray);
  if (hit.material < 0) return sky_colour(s, ray.dir);
  const int32_t m = hit.material;
  const V3 point = ray.origin + ray.dir * hit.t;
  const float cos_in = -dot(ray.dir, hit.normal);
  const bool outside = cos_in > 0.0f;
  V3 n = hit.normal;
  float cosi = cos_in;
  if (!outside) {
    n = hit.normal * -1.0f;
    cosi = -cos_in;
  }
  const int32_t kind = s.i(SceneView::MaterialKind, m);
  if (kind == kDiffuse) return shade_diffuse(s, point, n, m);
  if (depth >= s.i(SceneView::MaxDepth)) return {{0.0f, 0.0f, 0.0f}};
  const V3 tint = s.v(SceneView::Materials, m * 8);
  const Ray reflected{point + n * kEps, ray.dir + n * (2.0f * cosi)};
  if (kind == kMirror) return tint * trace(s, reflected, depth + 1);

  const float ior = s.f(SceneView::Materials, m * 8 + 7);
  float eta = ior;
  if (outside) eta = 1.0f / ior;
  const float k = 1.0f - eta * eta * (1.0f - cosi * cosi);
  if (k < 0.0f) return tint * trace(s, reflected, depth + 1);
  const float cos_t = std::sqrt(k);
  const V3 refracted_dir = ray.dir * eta + n * (eta * cosi - cos_t);
  float c = cosi;
  if (!outside) c = cos_t;
  const float r0 = ((1.0f - ior) / (1.0f + ior)) * ((1.0f - ior) / (1.0f + ior));
  const float x = 1.0f - c;
  const float kr = r0 + (1.0f - r0) * (x * x * x * x * x);
  const Ray refracted{point - n * kEps,
                      refracted_dir / std::sqrt(dot(refracted_dir, refracted_dir))};
  const V3 reflected_colour = trace(s, reflected, depth + 1);
  const V3 refracted_colour = trace(s, refracted, depth + 1);
  return tint * (reflected_colour * kr + refracted_colour * (1.0f - kr));
}

}  // namespace

void native_raytrace(const Batch& batch, uint64_t, uint32_t lane, uint32_t* out) {
  const SceneView s{batch.uniforms};
  const int32_t pixel = static_cast<int32_t>(batch.inputs[0][lane]);
  const int32_t width = s.i(SceneView::Width), height = s.i(SceneView::Height);
  const float u =
      2.0f * (static_cast<float>(pixel % width) + 0.5f) / static_cast<float>(width) - 1.0f;
  const float v =
      1.0f - 2.0f * (static_cast<float>(pixel / width) + 0.5f) / static_cast<float>(height);
  const V3 dir =
      s.v(SceneView::Camera, 3) + s.v(SceneView::Camera, 6) * u + s.v(SceneView::Camera, 9) * v;
  const V3 colour = trace(s, {s.v(SceneView::Camera, 0), dir / std::sqrt(dot(dir, dir))}, 0);
  for (int i = 0; i < 3; ++i)
    out[i] = std::bit_cast<uint32_t>(colour.x[i]);
}

}  // namespace ab::bench
