// Rasterizes Dear ImGui draw data on the CPU into an RGBA image, for screenshots: the same
// triangles the window draws, without reading back the swapchain. Textures are looked up by
// ImTextureID through `find_texture` (the font atlas, the lane grid).
#pragma once

#include <imgui.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autobatch/expected.h"

namespace ab::debugger {

struct CpuTexture {
  const uint32_t* rgba = nullptr;  // R, G, B, A bytes per texel
  int width = 0, height = 0;
};

struct CpuImage {
  int width = 0, height = 0;
  std::vector<uint32_t> rgba;
};

CpuImage rasterize(const ImDrawData& data, int width, int height,
                   const std::function<CpuTexture(ImTextureID)>& find_texture);

// Writes a PNG.
Status write_png(const std::string& path, const CpuImage& image);

}  // namespace ab::debugger
