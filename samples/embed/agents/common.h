// What every file of the game sample shares: its failures (thrown, caught by main), the agents'
// size in words and the window's.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace agents {

constexpr uint32_t kAgentWords = 9;  // struct Agent in agents.ab
constexpr int kWidth = 1280, kHeight = 800;

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
inline void vk_check(VkResult r, const char* what) {
  if (r != VK_SUCCESS)
    throw Failure(std::string(what) + " failed (VkResult " + std::to_string(r) + ")");
}

}  // namespace agents
