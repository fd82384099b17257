// The CLI's device options are the engine's own (ab::VulkanOptions), and schedule names have one
// parser, the engine's (parse_schedule, parse_global_mode, parse_local_scope), which reads back
// every name the engine spells and refuses others with the names it knows.
#include <doctest/doctest.h>

#include "autobatch/engine.h"
#include "tools/backends.h"

TEST_CASE("device options: the engine's schedule names read back, others are refused") {
  for (ab::Schedule s : {ab::Schedule::Global, ab::Schedule::Local})
    CHECK(*ab::parse_schedule(ab::schedule_name(s)) == s);
  for (ab::GlobalMode m : {ab::GlobalMode::Masked, ab::GlobalMode::Compacted})
    CHECK(*ab::parse_global_mode(ab::global_mode_name(m)) == m);
  for (ab::LocalScope l :
       {ab::LocalScope::Subgroup, ab::LocalScope::Workgroup, ab::LocalScope::Lane})
    CHECK(*ab::parse_local_scope(ab::local_scope_name(l)) == l);
  CHECK(ab::parse_schedule("Global").error() ==
        "schedule must be 'global' or 'local', not 'Global'");
  CHECK(ab::parse_global_mode("").error() == "global mode must be 'masked' or 'compacted', not ''");
  CHECK(ab::parse_local_scope("warp").error() ==
        "local scope must be 'subgroup', 'workgroup' or 'lane', not 'warp'");
}

TEST_CASE("device options: the engine's defaults unless given, and whether one was given") {
  ab::cli::DeviceOptions device;
  const ab::VulkanOptions engine;
  ab::VulkanOptions made = ab::cli::vulkan_options(device);
  CHECK(made.schedule == engine.schedule);
  CHECK(made.global_mode == engine.global_mode);
  CHECK(made.local_scope == engine.local_scope);
  CHECK(made.max_part_cost == engine.max_part_cost);
  CHECK_FALSE(ab::cli::vulkan_option_given(device));
  // A schedule option given as the engine's default still counts as given (sample's auto).
  device.schedule = engine.schedule;
  CHECK(ab::cli::vulkan_option_given(device));
  device = {};
  device.local_scope = ab::LocalScope::Workgroup;
  device.global_mode = ab::GlobalMode::Masked;
  made = ab::cli::vulkan_options(device);
  CHECK(made.local_scope == ab::LocalScope::Workgroup);
  CHECK(made.global_mode == ab::GlobalMode::Masked);
  CHECK(made.schedule == engine.schedule);
  device = {};
  device.vulkan.compile_threads = 3;
  CHECK(ab::cli::vulkan_option_given(device));
  CHECK(ab::cli::vulkan_options(device).compile_threads == 3);
}
