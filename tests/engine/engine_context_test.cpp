// The Vulkan context: device listing and selection, validation on, and clear error values (never
// a crash) when there is no loader, no driver or no such device.
#include <cstdlib>

#include "support/engine_test_support.h"

namespace ab::enginetest {
namespace {

// Sets an environment variable for the lifetime of the object, restoring it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty())
      unsetenv(name_);
    else
      setenv(name_, old_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string old_;
};

TEST_CASE("engine: the shared test context has validation on and a device") {
  auto ctx = context();
  CHECK(ctx->validation_enabled());
  CHECK(!ctx->device().name.empty());
  CHECK(ctx->device().subgroup_size >= 1);
  check_no_validation_messages();
}

TEST_CASE("engine: list_devices reports the device the context picked") {
  auto devices = list_devices();
  REQUIRE_MESSAGE(devices.ok(), devices.error());
  REQUIRE(!devices->empty());
  const DeviceInfo& picked = context()->device();
  REQUIRE(picked.index < devices->size());
  CHECK((*devices)[picked.index].name == picked.name);
  for (const DeviceInfo& d : *devices) {
    CHECK(!d.name.empty());
    CHECK((d.api_version >> 22) >= 1);  // the major version field of a Vulkan version
  }
}

TEST_CASE("engine: an explicit device index is honoured, a bad one is an error") {
  ContextOptions options;
  options.device_index = 0;
  auto ctx = VulkanContext::create(options);
  REQUIRE_MESSAGE(ctx.ok(), ctx.error());
  CHECK((*ctx)->device().index == 0);
  options.device_index = 99;
  auto bad = VulkanContext::create(options);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().find("no Vulkan device 99") != std::string::npos);
}

TEST_CASE("engine: no loader is a clear error") {
  ContextOptions options;
  options.loader_path = "/nonexistent/libvulkan.so.1";
  auto ctx = VulkanContext::create(options);
  REQUIRE_FALSE(ctx.ok());
  CHECK(ctx.error().find("Vulkan loader '/nonexistent/libvulkan.so.1' not found") !=
        std::string::npos);
  auto devices = list_devices(options);
  CHECK_FALSE(devices.ok());
  Batch batch;
  VulkanOptions vulkan;
  vulkan.context = options;
  LoweredProgram empty;
  auto run = run_vulkan(empty, batch, {}, vulkan);
  REQUIRE_FALSE(run.ok());
  CHECK(run.error().find("not found") != std::string::npos);
}

TEST_CASE("engine: no driver is a clear error naming what to install") {
  // The loader reads these when an instance is created; /nonexistent has no driver manifest.
  ScopedEnv icd("VK_ICD_FILENAMES", "/nonexistent/icd.json");
  ScopedEnv drivers("VK_DRIVER_FILES", "/nonexistent/icd.json");
  auto ctx = VulkanContext::create();
  REQUIRE_FALSE(ctx.ok());
  CHECK(ctx.error().find("no Vulkan device found: install mesa-vulkan-drivers") !=
        std::string::npos);
  auto devices = list_devices();
  REQUIRE_FALSE(devices.ok());
  CHECK(devices.error().find("no Vulkan device found") != std::string::npos);
}

}  // namespace
}  // namespace ab::enginetest
