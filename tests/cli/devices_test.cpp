// `run` and `sample` over several devices (--devices, docs/cli.md "Sharding"), on lavapipe opened
// as two and three logical devices: the lanes' outputs, faults, random draws and a fit's files are
// one device's bit for bit (lane counts that do not divide evenly included); a device that fails
// has its lanes reported faulted with the reason and the others come back; a bad list is one
// message. Vulkan runs with the validation layer on.
#include <doctest/doctest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "support/shard_check.h"

namespace {

namespace fs = std::filesystem;
using ab::testing::folder_files;
using ab::testing::run_in;
using ab::testing::TempDir;
using nlohmann::json;

std::string cli() {
  return fmt::format("'{}'", AB_CLI);
}

TEST_CASE(
    "devices: run over two and three logical devices gives one device's results bit for bit") {
  TempDir dir("ab_devices");
  dir.write("shard.ab", ab::testing::kShardProgram);
  const std::string common =
      "run shard.ab --backend vulkan --validation -i n=range:0:37 --seed 5 --format json";
  const auto one = run_in(dir, fmt::format("{} {} --out one", cli(), common));
  REQUIRE_MESSAGE(one.exit_code == 0, one.err);
  const json want = json::parse(one.out);
  CHECK(want["errors"].size() == 6);  // n = 0, 7, ..., 35
  for (const char* devices : {"0,0", "0,0,0"}) {
    CAPTURE(devices);
    const auto split =
        run_in(dir, fmt::format("{} {} --devices {} --out split", cli(), common, devices));
    REQUIRE_MESSAGE(split.exit_code == 0, split.err);
    CHECK(split.err.find("alidation") == std::string::npos);
    const json got = json::parse(split.out);
    CHECK(got["outputs"] == want["outputs"]);
    CHECK(got["errors"] == want["errors"]);
    CHECK(got["stats"]["lanes"] == 37);
    CHECK(got["stats"]["lane_steps"] == want["stats"]["lane_steps"]);
    CHECK(folder_files(dir.path / "split") == folder_files(dir.path / "one"));
  }
}

TEST_CASE("devices: --trace-steps gives each device's steps in turn, as --trace records them") {
  TempDir dir("ab_devices");
  dir.write("shard.ab", ab::testing::kShardProgram);
  const std::string common = fmt::format(
      "{} run shard.ab --backend vulkan -i n=range:0:37 --seed 5 --format json --trace-steps",
      cli());
  const auto one = run_in(dir, common);
  REQUIRE_MESSAGE(one.exit_code == 0, one.err);
  const auto split = run_in(dir, common + " --devices 0,0 --trace split.abtrace");
  REQUIRE_MESSAGE(split.exit_code == 0, split.err);
  const json want = json::parse(one.out), got = json::parse(split.out);
  CHECK(got["outputs"] == want["outputs"]);
  ab::testing::check_sharded_trace(got, dir.path / "split.abtrace", {19, 18});
  // Each lane ran the blocks it runs on one device; only the steps that gather them differ.
  CHECK(ab::testing::lanes_per_block(got) == ab::testing::lanes_per_block(want));
  CHECK(got["stats"]["steps"] > want["stats"]["steps"]);
  const auto local = run_in(dir, common + " --devices 0,0 --schedule local");
  CHECK(local.exit_code == 1);
  CHECK(local.err == "error: --trace-steps needs --schedule global\n");
}

TEST_CASE("devices: a failed device's lanes are faulted with the reason; the others come back") {
  TempDir dir("ab_devices");
  dir.write("shard.ab", ab::testing::kShardProgram);
  const std::string common =
      "run shard.ab --backend vulkan -i n=range:1:11 --seed 5 --format json --devices 0,0";
  const json want = json::parse(run_in(dir, fmt::format("{} {}", cli(), common)).out);
  const auto failed = run_in(dir, fmt::format("AB_TEST_FAIL_SHARD=1 {} {}", cli(), common));
  REQUIRE_MESSAGE(failed.exit_code == 0, failed.err);
  const json got = json::parse(failed.out);
  // Shards: lanes 0-4 and 5-9; lanes 6 (n = 7) faults on its own.
  for (int lane = 0; lane < 5; ++lane)
    CHECK(got["outputs"]["result"][lane] == want["outputs"]["result"][lane]);
  REQUIRE(got["errors"].size() == 5);
  for (int i = 0; i < 5; ++i) {
    CHECK(got["errors"][i]["lane"] == 5 + i);
    CHECK(got["errors"][i]["code"] == "shard_failed");
    CHECK(got["errors"][i]["detail"].get<std::string>().find("refused an allocation") !=
          std::string::npos);
  }
}

TEST_CASE("devices: a bad device list is one message and a non-zero exit") {
  TempDir dir("ab_devices");
  dir.write("shard.ab", ab::testing::kShardProgram);
  const std::string run = fmt::format("{} run shard.ab -i n=range:0:4", cli());
  const auto unknown = run_in(dir, run + " --devices 0,9");
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.err.find("there is no device 9") != std::string::npos);
  const auto malformed = run_in(dir, run + " --devices zero");
  CHECK(malformed.exit_code == 1);
  CHECK(malformed.err.find("expected 'all' or device indices") != std::string::npos);
  const auto vm = run_in(dir, run + " --backend vm --devices all");
  CHECK(vm.exit_code == 1);
  CHECK(vm.err.find("--devices needs the vulkan backend, not 'vm'") != std::string::npos);
  CHECK(run_in(dir, run + " --devices all --format json").exit_code == 0);
}

TEST_CASE("devices: sample over two logical devices writes one device's fit bit for bit") {
  TempDir dir("ab_devices");
  const std::string model =
      (fs::path(AB_SOURCE_DIR) / "tests" / "data" / "models" / "gaussian_iid.ab").string();
  const std::string common = fmt::format(
      "{} sample '{}' --backend vulkan --chains 5 --draws 30 --warmup 30 --seed 3 --csv --format "
      "json",
      cli(), model);
  const auto one = run_in(dir, common + " --out one");
  REQUIRE_MESSAGE(one.exit_code == 0, one.err);
  const auto split = run_in(dir, common + " --devices 0,0 --out split");
  REQUIRE_MESSAGE(split.exit_code == 0, split.err);
  auto want = folder_files(dir.path / "one"), got = folder_files(dir.path / "split");
  REQUIRE(want.size() == got.size());
  for (auto& [name, bytes] : want) {
    CAPTURE(name);
    if (name.ends_with(".csv"))
      CHECK(ab::testing::without_timing(got[name]) == ab::testing::without_timing(bytes));
    else
      CHECK(got[name] == bytes);
  }
  CHECK(json::parse(one.out)["parameters"] == json::parse(split.out)["parameters"]);
}

}  // namespace
