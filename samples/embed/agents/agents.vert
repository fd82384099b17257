#version 450
// One small quad (two triangles, six vertices) per agent, read straight from the autobatch run's
// output region: structure of arrays, word k of lane l at base + k * lanes + l.
layout(std430, set = 0, binding = 0) readonly buffer State { uint words[]; };
layout(push_constant) uniform Push {
  uint base;   // the output region's first word within the bound range
  uint lanes;  // the run's lane count
  float size;  // half a quad's side, in clip units (y)
  float aspect;
} pc;
layout(location = 0) out vec4 color;

const vec2 kCorners[6] =
    vec2[](vec2(-1, -1), vec2(1, -1), vec2(1, 1), vec2(-1, -1), vec2(1, 1), vec2(-1, 1));
const vec3 kKinds[4] = vec3[](vec3(1.0, 0.55, 0.2), vec3(0.3, 0.8, 1.0), vec3(0.5, 1.0, 0.4),
                              vec3(1.0, 0.4, 0.9));

uint word(uint k, uint lane) { return words[pc.base + k * pc.lanes + lane]; }

void main() {
  uint lane = uint(gl_VertexIndex) / 6u;
  vec2 corner = kCorners[uint(gl_VertexIndex) % 6u];
  // Agent: x, y, vx, vy, kind, mood, energy, seed, t (agents.ab)
  float x = float(int(word(0u, lane))) / 65536.0;
  float y = float(int(word(1u, lane))) / 65536.0;
  int kind = clamp(int(word(4u, lane)), 0, 3);
  float energy = clamp(float(int(word(6u, lane))) / 1000.0, 0.0, 1.0);
  vec2 p = vec2(x, y) * 2.0 - 1.0;
  gl_Position = vec4(p + corner * vec2(pc.size / pc.aspect, pc.size), 0.0, 1.0);
  color = vec4(kKinds[kind] * (0.35 + 0.65 * energy), 1.0);
}
