#version 450
// The picture, read straight from the autobatch run's output region: structure of arrays, word k
// (red, green, blue: linear floats) of lane l (pixel l, row-major from the top) at
// base + k * lanes + l. Scaled to fit the window, keeping its aspect; gamma 1/2.2 as
// samples/raytrace/scene.h's to_byte.
layout(std430, set = 0, binding = 0) readonly buffer State { uint words[]; };
layout(push_constant) uniform Push {
  uint base, lanes, width, height;  // the output's first word, the lanes, the picture's size
  vec2 origin;                      // the picture's top-left corner in the window, pixels
  float scale;                      // window pixels per picture pixel
} pc;
layout(location = 0) out vec4 out_color;

void main() {
  const vec2 p = (gl_FragCoord.xy - pc.origin) / pc.scale;
  if (p.x < 0.0 || p.y < 0.0 || p.x >= float(pc.width) || p.y >= float(pc.height)) {
    out_color = vec4(0.02, 0.02, 0.05, 1.0);
    return;
  }
  const uint lane = uint(p.y) * pc.width + uint(p.x);
  vec3 c;
  for (uint k = 0u; k < 3u; ++k) c[k] = uintBitsToFloat(words[pc.base + k * pc.lanes + lane]);
  out_color = vec4(pow(clamp(c, 0.0, 1.0), vec3(1.0 / 2.2)), 1.0);
}
