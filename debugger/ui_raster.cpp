#include "debugger/ui_raster.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO_UNUSED
#include <stb_image_write.h>

namespace ab::debugger {
namespace {

struct Rgbaf {
  float r, g, b, a;
};

Rgbaf unpack(uint32_t c) {
  return {(c & 0xff) / 255.0f, ((c >> 8) & 0xff) / 255.0f, ((c >> 16) & 0xff) / 255.0f,
          ((c >> 24) & 0xff) / 255.0f};
}

uint32_t pack(const Rgbaf& c) {
  auto q = [](float v) { return static_cast<uint32_t>(std::clamp(v, 0.0f, 1.0f) * 255.0f + 0.5f); };
  return q(c.r) | q(c.g) << 8 | q(c.b) << 16 | q(c.a) << 24;
}

void draw_triangle(CpuImage& img, const ImDrawVert& v0, const ImDrawVert& v1, const ImDrawVert& v2,
                   const ImVec4& clip, const CpuTexture& tex) {
  const float area =
      (v1.pos.x - v0.pos.x) * (v2.pos.y - v0.pos.y) - (v2.pos.x - v0.pos.x) * (v1.pos.y - v0.pos.y);
  if (std::fabs(area) < 1e-6f) return;
  const int x0 =
      std::max({0, static_cast<int>(std::floor(std::min({v0.pos.x, v1.pos.x, v2.pos.x}))),
                static_cast<int>(clip.x)});
  const int y0 =
      std::max({0, static_cast<int>(std::floor(std::min({v0.pos.y, v1.pos.y, v2.pos.y}))),
                static_cast<int>(clip.y)});
  const int x1 =
      std::min({img.width, static_cast<int>(std::ceil(std::max({v0.pos.x, v1.pos.x, v2.pos.x}))),
                static_cast<int>(std::ceil(clip.z))});
  const int y1 =
      std::min({img.height, static_cast<int>(std::ceil(std::max({v0.pos.y, v1.pos.y, v2.pos.y}))),
                static_cast<int>(std::ceil(clip.w))});
  const Rgbaf c0 = unpack(v0.col), c1 = unpack(v1.col), c2 = unpack(v2.col);
  const bool flat = v0.col == v1.col && v1.col == v2.col;
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) {
      const float px = x + 0.5f, py = y + 0.5f;
      const float w0 =
          ((v1.pos.x - px) * (v2.pos.y - py) - (v2.pos.x - px) * (v1.pos.y - py)) / area;
      const float w1 =
          ((v2.pos.x - px) * (v0.pos.y - py) - (v0.pos.x - px) * (v2.pos.y - py)) / area;
      const float w2 = 1.0f - w0 - w1;
      if (w0 < 0 || w1 < 0 || w2 < 0) continue;
      Rgbaf c = flat ? c0
                     : Rgbaf{w0 * c0.r + w1 * c1.r + w2 * c2.r, w0 * c0.g + w1 * c1.g + w2 * c2.g,
                             w0 * c0.b + w1 * c1.b + w2 * c2.b, w0 * c0.a + w1 * c1.a + w2 * c2.a};
      if (tex.rgba) {
        const float u = w0 * v0.uv.x + w1 * v1.uv.x + w2 * v2.uv.x;
        const float v = w0 * v0.uv.y + w1 * v1.uv.y + w2 * v2.uv.y;
        const int tx = std::clamp(static_cast<int>(u * tex.width), 0, tex.width - 1);
        const int ty = std::clamp(static_cast<int>(v * tex.height), 0, tex.height - 1);
        const Rgbaf t = unpack(tex.rgba[size_t(ty) * tex.width + tx]);
        c = {c.r * t.r, c.g * t.g, c.b * t.b, c.a * t.a};
      }
      if (c.a <= 0) continue;
      uint32_t& dst = img.rgba[size_t(y) * img.width + x];
      const Rgbaf d = unpack(dst);
      dst = pack({c.r * c.a + d.r * (1 - c.a), c.g * c.a + d.g * (1 - c.a),
                  c.b * c.a + d.b * (1 - c.a), 1.0f});
    }
  }
}

}  // namespace

CpuImage rasterize(const ImDrawData& data, int width, int height,
                   const std::function<CpuTexture(ImTextureID)>& find_texture) {
  CpuImage img;
  img.width = width;
  img.height = height;
  img.rgba.assign(size_t(width) * height, 0xff000000u);
  const ImVec2 off = data.DisplayPos;
  for (int l = 0; l < data.CmdListsCount; ++l) {
    const ImDrawList& list = *data.CmdLists[l];
    for (const ImDrawCmd& cmd : list.CmdBuffer) {
      if (cmd.UserCallback) continue;
      const ImVec4 clip(cmd.ClipRect.x - off.x, cmd.ClipRect.y - off.y, cmd.ClipRect.z - off.x,
                        cmd.ClipRect.w - off.y);
      const CpuTexture tex = find_texture(cmd.TextureId);
      for (unsigned i = 0; i + 2 < cmd.ElemCount; i += 3) {
        const ImDrawIdx* idx = list.IdxBuffer.Data + cmd.IdxOffset + i;
        const ImDrawVert* vtx = list.VtxBuffer.Data + cmd.VtxOffset;
        ImDrawVert a = vtx[idx[0]], b = vtx[idx[1]], c = vtx[idx[2]];
        for (ImDrawVert* v : {&a, &b, &c}) {
          v->pos.x -= off.x;
          v->pos.y -= off.y;
        }
        draw_triangle(img, a, b, c, clip, tex);
      }
    }
  }
  return img;
}

Status write_png(const std::string& path, const CpuImage& image) {
  if (!stbi_write_png(path.c_str(), image.width, image.height, 4, image.rgba.data(),
                      image.width * 4))
    return Error{fmt::format("cannot write screenshot '{}'", path)};
  return Ok{};
}

}  // namespace ab::debugger
