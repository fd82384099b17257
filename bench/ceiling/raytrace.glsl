// raytrace.ab by hand (samples/raytrace), as shader authors write a Whitted tracer in a language
// without recursion: trace()'s calls become a loop over an explicit per-invocation stack of
// pending rays. Each frame holds a ray, its depth and its weight, the product of the tints and
// Fresnel shares on its path; the pixel's colour is the sum over the rays of weight x the colour
// the ray finds itself (the sky, a diffuse surface's shading). The geometry is raytrace.ab's,
// operation for operation (`precise`: no fused multiply-add), so every ray takes the path the
// recursion takes; the colour is summed in another order (weights multiplied down each path
// instead of colours up it), so it equals the interpreter's within float rounding, not bit for
// bit. One loop iteration follows one ray.
// Saved state (STATE_WORDS = 4 + 10 * STACK_DEPTH): the colour so far, the frame count, then the
// frames: origin, dir, weight (3 words each) and depth.

layout(set = 0, binding = 2, std430) readonly buffer ArgPixel { int w[]; } arg_pixel;
// raytrace.ab's uniforms, one binding each in declaration order.
layout(set = 0, binding = FIRST_UNIFORM_BINDING + 0, std430) readonly buffer UWidth { int v; } u_width;
layout(set = 0, binding = FIRST_UNIFORM_BINDING + 1, std430) readonly buffer UHeight { int v; } u_height;
layout(set = 0, binding = FIRST_UNIFORM_BINDING + 2, std430) readonly buffer UDepth { int v; } u_max_depth;
layout(set = 0, binding = FIRST_UNIFORM_BINDING + 3, std430) readonly buffer UCamera { float v[]; } u_camera;
layout(set = 0, binding = FIRST_UNIFORM_BINDING + 4, std430) readonly buffer ULight { float v[]; } u_light;
layout(set = 0, binding = FIRST_UNIFORM_BINDING + 5, std430) readonly buffer USky { float v[]; } u_sky;
layout(set = 0, binding = FIRST_UNIFORM_BINDING + 6, std430) readonly buffer USphereCount { int v; } u_sphere_count;
layout(set = 0, binding = FIRST_UNIFORM_BINDING + 7, std430) readonly buffer USpheres { float v[]; } u_spheres;
layout(set = 0, binding = FIRST_UNIFORM_BINDING + 8, std430) readonly buffer USphereMaterial { int v[]; } u_sphere_material;
layout(set = 0, binding = FIRST_UNIFORM_BINDING + 9, std430) readonly buffer UPlaneCount { int v; } u_plane_count;
layout(set = 0, binding = FIRST_UNIFORM_BINDING + 10, std430) readonly buffer UPlanes { float v[]; } u_planes;
layout(set = 0, binding = FIRST_UNIFORM_BINDING + 11, std430) readonly buffer UPlaneMaterial { int v[]; } u_plane_material;
layout(set = 0, binding = FIRST_UNIFORM_BINDING + 12, std430) readonly buffer UMaterialKind { int v[]; } u_material_kind;
layout(set = 0, binding = FIRST_UNIFORM_BINDING + 13, std430) readonly buffer UMaterials { float v[]; } u_materials;

const float EPS = 0.001;
const float FAR = 1.0e30;
const int DIFFUSE = 0, MIRROR = 1;

vec3 camera3(int k) { return vec3(u_camera.v[k], u_camera.v[k + 1], u_camera.v[k + 2]); }
vec3 light3(int k) { return vec3(u_light.v[k], u_light.v[k + 1], u_light.v[k + 2]); }
vec3 sky3(int k) { return vec3(u_sky.v[k], u_sky.v[k + 1], u_sky.v[k + 2]); }
vec3 sphere_centre(int s) { return vec3(u_spheres.v[4 * s], u_spheres.v[4 * s + 1], u_spheres.v[4 * s + 2]); }
vec3 plane_normal(int p) { return vec3(u_planes.v[4 * p], u_planes.v[4 * p + 1], u_planes.v[4 * p + 2]); }
vec3 material3(int m, int k) {
  return vec3(u_materials.v[8 * m + k], u_materials.v[8 * m + k + 1], u_materials.v[8 * m + k + 2]);
}

// The language's dot: from 0, adding a[i] * b[i] in order.
float dot3(vec3 a, vec3 b) {
  precise float acc = 0.0;
  acc = acc + a.x * b.x;
  acc = acc + a.y * b.y;
  acc = acc + a.z * b.z;
  return acc;
}

struct Hit {
  float t;
  vec3 normal;
  int material;
};

Hit intersect(vec3 origin, vec3 dir) {
  Hit best = Hit(FAR, vec3(0.0), -1);
  int best_sphere = -1;
  for (int s = 0; s < u_sphere_count.v; ++s) {
    const float r = u_spheres.v[4 * s + 3];
    precise vec3 oc = origin - sphere_centre(s);
    precise float b = dot3(oc, dir);
    precise float disc = b * b - (dot3(oc, oc) - r * r);
    if (disc >= 0.0) {
      precise float root = sqrt(disc);
      precise float t = -b - root;
      if (t <= EPS) t = -b + root;
      if (t > EPS && t < best.t) {
        best.t = t;
        best.material = u_sphere_material.v[s];
        best_sphere = s;
      }
    }
  }
  for (int p = 0; p < u_plane_count.v; ++p) {
    const vec3 n = plane_normal(p);
    precise float denom = dot3(n, dir);
    if (abs(denom) > 1.0e-6) {
      precise float t = (u_planes.v[4 * p + 3] - dot3(n, origin)) / denom;
      if (t > EPS && t < best.t) {
        best.t = t;
        best.material = u_plane_material.v[p];
        best.normal = n;
        best_sphere = -1;
      }
    }
  }
  if (best_sphere >= 0) {
    precise vec3 normal = (origin + dir * best.t - sphere_centre(best_sphere)) /
                          u_spheres.v[4 * best_sphere + 3];
    best.normal = normal;
  }
  return best;
}

vec3 sky_colour(vec3 dir) {
  const float up = ab_max(dir.y, 0.0);
  precise vec3 colour = sky3(0) * (1.0 - up) + sky3(3) * up;
  return colour;
}

vec3 shade_diffuse(vec3 point, vec3 n, int m) {
  vec3 albedo = material3(m, 0);
  const float size = u_materials.v[8 * m + 6];
  if (size > 0.0 &&
      ((ab_to_int(floor(point.x / size)) + ab_to_int(floor(point.z / size))) & 1) != 0)
    albedo = material3(m, 3);
  const vec3 light_colour = light3(3);
  precise vec3 colour = albedo * light_colour * u_light.v[6];
  precise vec3 to_light = light3(0) - point;
  precise float dist = sqrt(dot3(to_light, to_light));
  precise vec3 l = to_light / dist;
  precise float lambert = dot3(n, l);
  if (lambert > 0.0) {
    precise vec3 from = point + n * EPS;
    const Hit blocker = intersect(from, l);
    if (blocker.material < 0 || blocker.t >= dist) colour = colour + albedo * light_colour * lambert;
  }
  return colour;
}

// The stack of pending rays.
vec3 frame_origin[STACK_DEPTH];
vec3 frame_dir[STACK_DEPTH];
vec3 frame_weight[STACK_DEPTH];
int frame_depth[STACK_DEPTH];

void main() {
  const uint lane = gl_GlobalInvocationID.x;
  if (!ceiling_lane_runs(lane)) return;
  uint status = CEILING_NOT_FINISHED;
  int frames = 1;
  precise vec3 colour = vec3(0.0);
  if (ceiling_resuming(lane)) {
    colour = vec3(uintBitsToFloat(saved.w[saved_at(lane, 0u)]),
                  uintBitsToFloat(saved.w[saved_at(lane, 1u)]),
                  uintBitsToFloat(saved.w[saved_at(lane, 2u)]));
    frames = int(saved.w[saved_at(lane, 3u)]);
    for (int f = 0; f < frames; ++f) {
      const uint at = saved_at(lane, 4u + 10u * uint(f));
      for (uint k = 0u; k < 3u; ++k) {
        frame_origin[f][k] = uintBitsToFloat(saved.w[at + k]);
        frame_dir[f][k] = uintBitsToFloat(saved.w[at + 3u + k]);
        frame_weight[f][k] = uintBitsToFloat(saved.w[at + 6u + k]);
      }
      frame_depth[f] = int(saved.w[at + 9u]);
    }
  } else {
    // The primary ray, as raytrace.ab's main computes it.
    const int pixel = arg_pixel.w[lane];
    const int width = u_width.v;
    precise float u = 2.0 * (float(pixel % width) + 0.5) / float(width) - 1.0;
    precise float v = 1.0 - 2.0 * (float(pixel / width) + 0.5) / float(u_height.v);
    precise vec3 dir = camera3(3) + camera3(6) * u + camera3(9) * v;
    precise vec3 unit_dir = dir / sqrt(dot3(dir, dir));
    frame_origin[0] = camera3(0);
    frame_dir[0] = unit_dir;
    frame_weight[0] = vec3(1.0);
    frame_depth[0] = 0;
  }
  for (uint iteration = 0u;; ++iteration) {
    CEILING_LOOP_EXIT(frames == 0, iteration, status)
    --frames;
    const vec3 origin = frame_origin[frames], dir = frame_dir[frames];
    const vec3 weight = frame_weight[frames];
    const int depth = frame_depth[frames];
    const Hit hit = intersect(origin, dir);
    if (hit.material < 0) {
      colour = colour + weight * sky_colour(dir);
      continue;
    }
    const int m = hit.material;
    precise vec3 point = origin + dir * hit.t;
    precise float cos_in = -dot3(dir, hit.normal);
    const bool outside = cos_in > 0.0;
    precise vec3 n = hit.normal;
    precise float cosi = cos_in;
    if (!outside) {
      n = hit.normal * -1.0;
      cosi = -cos_in;
    }
    const int kind = u_material_kind.v[m];
    if (kind == DIFFUSE) {
      colour = colour + weight * shade_diffuse(point, n, m);
      continue;
    }
    if (depth >= u_max_depth.v) continue;  // black
    if (frames + 2 > STACK_DEPTH) {
      status = CEILING_STACK_OVERFLOW;
      break;
    }
    const vec3 tint = material3(m, 0);
    precise vec3 reflected_origin = point + n * EPS;
    precise vec3 reflected_dir = dir + n * (2.0 * cosi);
    precise float k = 1.0;
    precise float kr = 1.0;  // the reflected share: all of it for a mirror and inside glass
    const float ior = u_materials.v[8 * m + 7];
    if (kind != MIRROR) {
      float eta = ior;
      if (outside) eta = 1.0 / ior;
      k = 1.0 - eta * eta * (1.0 - cosi * cosi);
      if (k >= 0.0) {
        precise float cos_t = sqrt(k);
        precise vec3 refracted_dir = dir * eta + n * (eta * cosi - cos_t);
        precise float c = outside ? cosi : cos_t;
        precise float r0 = ((1.0 - ior) / (1.0 + ior)) * ((1.0 - ior) / (1.0 + ior));
        precise float x = 1.0 - c;
        kr = r0 + (1.0 - r0) * (x * x * x * x * x);
        frame_origin[frames] = point - n * EPS;
        frame_dir[frames] = refracted_dir / sqrt(dot3(refracted_dir, refracted_dir));
        frame_weight[frames] = weight * tint * (1.0 - kr);
        frame_depth[frames] = depth + 1;
        ++frames;
      }
    }
    frame_origin[frames] = reflected_origin;
    frame_dir[frames] = reflected_dir;
    frame_weight[frames] = weight * tint * kr;
    frame_depth[frames] = depth + 1;
    ++frames;
  }
  if (status == CEILING_SUSPENDED) {
    for (uint k = 0u; k < 3u; ++k) saved.w[saved_at(lane, k)] = floatBitsToUint(colour[k]);
    saved.w[saved_at(lane, 3u)] = uint(frames);
    for (int f = 0; f < frames; ++f) {
      const uint at = saved_at(lane, 4u + 10u * uint(f));
      for (uint k = 0u; k < 3u; ++k) {
        saved.w[at + k] = floatBitsToUint(frame_origin[f][k]);
        saved.w[at + 3u + k] = floatBitsToUint(frame_dir[f][k]);
        saved.w[at + 6u + k] = floatBitsToUint(frame_weight[f][k]);
      }
      saved.w[at + 9u] = uint(frame_depth[f]);
    }
    ceiling_suspend(lane);
    return;
  }
  if (status == CEILING_DONE)
    for (uint k = 0u; k < 3u; ++k) results.w[3u * lane + k] = floatBitsToUint(colour[k]);
  lane_status.w[lane] = status;
}
