// The disk caches fail safe: a SPIR-V entry or a saved pipeline cache that is damaged in any way
// (bit flips, truncation, an empty file, another program's entry, a well-sealed file with bad
// contents) is never handed to the driver. The next run recompiles, gives the interpreter's
// results, and leaves an entry that the run after it uses. Concurrent writers never expose a
// half-written entry. Every test has its own cache directory.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <latch>
#include <optional>
#include <thread>

#include "engine/device/cache_file.h"
#include "support/engine_test_support.h"
#include "support/read_bytes.h"

namespace ab::enginetest {
namespace {

namespace fs = std::filesystem;
using ab::testing::read_bytes;

const char* kGcd = R"(
fn gcd(a: int, b: int) -> int {
    if b == 0 { return a; }
    return gcd(b, a % b);
}
fn main(a: int, b: int) -> int { return gcd(abs(a), abs(b)); }
)";

// Same inputs and outputs as kGcd, other results: its kernel would run on kGcd's state without
// complaint, so only the cache's checks can tell the two entries apart.
const char* kGcdTimesThree = R"(
fn gcd(a: int, b: int) -> int {
    if b == 0 { return a; }
    return gcd(b, a % b);
}
fn main(a: int, b: int) -> int { return gcd(abs(a), abs(b)) * 3 + 1; }
)";

// A cache directory of the test's own, removed at the end.
class ScratchCacheDir {
 public:
  explicit ScratchCacheDir(const std::string& name)
      : path_(fs::temp_directory_path() / fmt::format("autobatch-{}-{}", name, getpid())) {
    fs::remove_all(path_);
  }
  ~ScratchCacheDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
}

// The files in `dir` whose names end with `suffix`.
std::vector<fs::path> files_ending(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().ends_with(suffix)) found.push_back(entry.path());
  std::sort(found.begin(), found.end());
  return found;
}

// Leftovers of an interrupted atomic write would be named ".<entry>.tmp-XXXXXX".
size_t temporary_files(const fs::path& dir) {
  size_t n = 0;
  for (const auto& entry : fs::directory_iterator(dir))
    n += entry.path().filename().string().find(".tmp-") != std::string::npos;
  return n;
}

Batch gcd_batch() {
  Batch batch;
  batch.lanes = 64;
  batch.inputs.resize(2);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane) {
    batch.inputs[0].push_back(static_cast<uint32_t>(static_cast<int32_t>(lane * 37 % 1000) - 300));
    batch.inputs[1].push_back(lane * 11 % 97);
  }
  return batch;
}

struct Outcome {
  RunResult result;
  VulkanStats stats;
};

// One run with the default configuration (local/lane: one generated kernel, so one .spv entry).
Expected<Outcome> run_cached(const Loaded& loaded, const Batch& batch, const fs::path& dir,
                             std::shared_ptr<VulkanContext> ctx) {
  VulkanOptions options;
  options.cache_dir = dir.string();
  Outcome outcome;
  auto result = run_vulkan(loaded.lowered, batch, {}, options, &outcome.stats, std::move(ctx));
  if (!result) return Error{result.error()};
  outcome.result = std::move(*result);
  return outcome;
}

Outcome run_cached(const Loaded& loaded, const Batch& batch, const fs::path& dir) {
  auto outcome = run_cached(loaded, batch, dir, context());
  REQUIRE_MESSAGE(outcome.ok(), outcome.error());
  return std::move(*outcome);
}

// `entry` with its payload replaced and the header's size and hash made to match it: a file
// only the payload's own checks can reject.
std::string reseal(const std::string& entry, const std::string& payload) {
  CacheFileHeader header;
  std::memcpy(&header, entry.data(), sizeof header);
  header.payload_size = payload.size();
  header.payload_hash = cache_payload_hash(payload.data(), payload.size());
  return std::string(reinterpret_cast<const char*>(&header), sizeof header) + payload;
}

// Damaged versions of a cache file, by name.
struct Damage {
  std::string name;
  std::string bytes;
};

std::vector<Damage> generic_damage(const std::string& good) {
  std::vector<Damage> damage;
  auto flip = [&](size_t offset) {
    std::string bytes = good;
    bytes[offset] = static_cast<char>(bytes[offset] ^ (1 << (offset % 8)));
    damage.push_back({fmt::format("bit {} of byte {} flipped", offset % 8, offset), bytes});
  };
  // Every header byte (each field is checked on its own), then every 97th byte of the rest.
  for (size_t offset = 0; offset < sizeof(CacheFileHeader); ++offset)
    flip(offset);
  for (size_t offset = sizeof(CacheFileHeader); offset < good.size(); offset += 97)
    flip(offset);
  flip(good.size() - 1);
  const size_t payload = good.size() - sizeof(CacheFileHeader);
  for (size_t length : {size_t{1}, size_t{7}, sizeof(CacheFileHeader) - 1, sizeof(CacheFileHeader),
                        sizeof(CacheFileHeader) + 3, sizeof(CacheFileHeader) + payload / 2,
                        good.size() - 4, good.size() - 1})
    damage.push_back(
        {fmt::format("truncated to {} of {} bytes", length, good.size()), good.substr(0, length)});
  damage.push_back({"zero-length file", ""});
  damage.push_back({"four bytes appended", good + std::string(4, '\0')});
  damage.push_back({"the bare payload (a cache written before the header)",
                    good.substr(sizeof(CacheFileHeader))});
  return damage;
}

// Writes `damaged` over `entry`, runs, and checks that the entry was not used (`used` reads
// that from the statistics), that the results are `expected`, and that the run left an entry
// the next run uses. `entry_after` is what the file must hold after the run if compilation is
// deterministic (empty: not checked); `run_again` runs once more to see the entry used.
void check_recovers(const Loaded& loaded, const Batch& batch, const RunResult& expected,
                    const fs::path& dir, const fs::path& entry, const Damage& damaged,
                    const std::function<bool(const VulkanStats&)>& used,
                    const std::string& entry_after, bool run_again) {
  CAPTURE(damaged.name);
  write_bytes(entry, damaged.bytes);
  const Outcome after = run_cached(loaded, batch, dir);
  CHECK_FALSE(used(after.stats));
  CHECK(compare_results(loaded.lowered, expected, after.result) == "");
  if (!entry_after.empty()) {
    const bool rewritten = read_bytes(entry) == entry_after;
    CHECK_MESSAGE(rewritten, "the entry was not replaced by a fresh one");
  }
  if (run_again) {
    const Outcome again = run_cached(loaded, batch, dir);
    CHECK(used(again.stats));
    CHECK(compare_results(loaded.lowered, expected, again.result) == "");
  }
  check_no_validation_messages();
}

TEST_CASE("engine cache: a damaged SPIR-V entry is recompiled and replaced") {
  ScratchCacheDir dir("spirv-damage");
  auto loaded = load_source(kGcd);
  const Batch batch = gcd_batch();
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, {});
  const Outcome first = run_cached(*loaded, batch, dir.path());
  CHECK_FALSE(first.stats.spirv_from_cache);
  CHECK(compare_results(loaded->lowered, expected, first.result) == "");
  const auto entries = files_ending(dir.path(), ".spv");
  REQUIRE(entries.size() == 1);
  const fs::path entry = entries[0];
  const std::string good = read_bytes(entry);
  REQUIRE(good.size() > sizeof(CacheFileHeader) + 20);
  CHECK(run_cached(*loaded, batch, dir.path()).stats.spirv_from_cache);

  auto from_cache = [](const VulkanStats& s) { return s.spirv_from_cache; };
  const std::vector<Damage> damage = generic_damage(good);
  MESSAGE(damage.size(), " damaged versions of a ", good.size(), "-byte SPIR-V entry");
  for (size_t i = 0; i < damage.size(); ++i)  // every run checks the replaced entry's bytes;
    check_recovers(*loaded, batch, expected, dir.path(), entry, damage[i], from_cache, good,
                   /*run_again=*/i % 16 == 0);  // some also run from it
  CHECK(temporary_files(dir.path()) == 0);
}

TEST_CASE("engine cache: a sealed entry that is not valid SPIR-V is recompiled") {
  ScratchCacheDir dir("spirv-invalid");
  auto loaded = load_source(kGcd);
  const Batch batch = gcd_batch();
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, {});
  run_cached(*loaded, batch, dir.path());
  const fs::path entry = files_ending(dir.path(), ".spv").at(0);
  const std::string good = read_bytes(entry);
  const std::string spirv = good.substr(sizeof(CacheFileHeader));

  // Header, size and hash all match; only the validator (or the magic check) can object.
  std::string bad_version = spirv;
  bad_version[6] = 0x7f;  // word 1, the SPIR-V version: 1.127
  std::string bad_magic = spirv;
  bad_magic[0] = 0x04;
  std::string no_functions = spirv.substr(0, spirv.size() / 8 * 4);
  std::string unaligned = spirv + "xyz";
  auto from_cache = [](const VulkanStats& s) { return s.spirv_from_cache; };
  for (const Damage& d :
       {Damage{"sealed with an unknown SPIR-V version", reseal(good, bad_version)},
        Damage{"sealed with a bad magic number", reseal(good, bad_magic)},
        Damage{"sealed after the first half of the module", reseal(good, no_functions)},
        Damage{"sealed with a size that is not whole words", reseal(good, unaligned)},
        Damage{"sealed with no module", reseal(good, "")}})
    check_recovers(*loaded, batch, expected, dir.path(), entry, d, from_cache, good, true);
}

TEST_CASE("engine cache: another program's entry copied over this one's is not used") {
  ScratchCacheDir dir("spirv-foreign");
  auto gcd = load_source(kGcd);
  auto other = load_source(kGcdTimesThree);
  const Batch batch = gcd_batch();
  const RunResult expected = run_interp(gcd->program, gcd->entry, batch, {});
  const RunResult other_expected = run_interp(other->program, other->entry, batch, {});
  REQUIRE(compare_results(gcd->lowered, expected, other_expected) != "");  // tellable apart

  run_cached(*gcd, batch, dir.path());
  const std::vector<fs::path> gcd_entries = files_ending(dir.path(), ".spv");
  REQUIRE(gcd_entries.size() == 1);
  const fs::path entry = gcd_entries[0];
  const std::string good = read_bytes(entry);
  run_cached(*other, batch, dir.path());
  std::vector<fs::path> both = files_ending(dir.path(), ".spv");
  REQUIRE(both.size() == 2);
  const fs::path other_entry = both[0] == entry ? both[1] : both[0];
  const std::string other_good = read_bytes(other_entry);

  auto from_cache = [](const VulkanStats& s) { return s.spirv_from_cache; };
  check_recovers(*gcd, batch, expected, dir.path(), entry,
                 {"the other program's entry", other_good}, from_cache, good, true);
  // Even with this program's key in the header, the other module's hash does not match.
  std::string key_swapped = other_good;
  std::memcpy(key_swapped.data(), good.data(), sizeof(CacheFileHeader));
  check_recovers(*gcd, batch, expected, dir.path(), entry,
                 {"the other program's module under this header", key_swapped}, from_cache, good,
                 true);
  // The other program's own entry was never touched.
  const Outcome other_run = run_cached(*other, batch, dir.path());
  CHECK(other_run.stats.spirv_from_cache);
  CHECK(compare_results(other->lowered, other_expected, other_run.result) == "");
  CHECK(read_bytes(other_entry) == other_good);
}

TEST_CASE("engine cache: a damaged pipeline cache is replaced by an empty one") {
  ScratchCacheDir dir("pipeline-damage");
  auto loaded = load_source(kGcd);
  const Batch batch = gcd_batch();
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, {});
  const Outcome first = run_cached(*loaded, batch, dir.path());
  CHECK_FALSE(first.stats.pipeline_cache_from_disk);
  const auto blobs = files_ending(dir.path(), ".bin");
  REQUIRE(blobs.size() == 1);
  const fs::path entry = blobs[0];
  CHECK(entry.filename().string().starts_with("pipelines-"));
  const std::string good = read_bytes(entry);
  const size_t vk_header = sizeof(CacheFileHeader);  // where Vulkan's own header starts
  REQUIRE(good.size() >= vk_header + 32);
  const Outcome second = run_cached(*loaded, batch, dir.path());
  CHECK(second.stats.pipeline_cache_from_disk);
  CHECK(second.stats.spirv_from_cache);

  std::vector<Damage> damage = generic_damage(good);
  // Well sealed, but VkPipelineCacheHeaderVersionOne does not describe this device.
  const std::string data = good.substr(vk_header);
  auto patched = [&](size_t offset, uint32_t value) {
    std::string bytes = data;
    for (int i = 0; i < 4; ++i)
      bytes[offset + i] = static_cast<char>(value >> (8 * i));  // little-endian, as the spec says
    return reseal(good, bytes);
  };
  auto field = [&](size_t offset) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
      v |= uint32_t{static_cast<uint8_t>(data[offset + i])} << (8 * i);
    return v;
  };
  damage.push_back({"sealed, headerSize 16", patched(0, 16)});
  damage.push_back(
      {"sealed, headerSize beyond the data", patched(0, static_cast<uint32_t>(data.size() + 1))});
  damage.push_back({"sealed, headerVersion 2", patched(4, 2)});
  damage.push_back({"sealed, another vendorID", patched(8, field(8) + 1)});
  damage.push_back({"sealed, another deviceID", patched(12, field(12) ^ 0x100)});
  std::string other_uuid = data;
  other_uuid[16 + 15] = static_cast<char>(other_uuid[16 + 15] ^ 0x01);
  damage.push_back({"sealed, another pipelineCacheUUID", reseal(good, other_uuid)});
  damage.push_back({"sealed, shorter than Vulkan's header", reseal(good, data.substr(0, 31))});

  auto from_disk = [](const VulkanStats& s) { return s.pipeline_cache_from_disk; };
  MESSAGE(damage.size(), " damaged versions of a ", good.size(), "-byte pipeline cache");
  for (const Damage& d : damage)  // the rewritten blob need not be byte-identical: run again
    check_recovers(*loaded, batch, expected, dir.path(), entry, d, from_disk, "", true);
  CHECK(temporary_files(dir.path()) == 0);
}

TEST_CASE("engine cache: concurrent writers never expose a half-written file") {
  ScratchCacheDir dir("atomic-writes");
  const std::string path = (dir.path() / "entry.spv").string();
  CacheKeyBuilder builder;
  const CacheKey key = builder.add("concurrent writers").finish();
  constexpr int kThreads = 4;
  constexpr int kRounds = 50;
  // Large, distinct payloads: a torn or interleaved write would mix them.
  std::vector<std::string> payloads;
  for (int t = 0; t < kThreads; ++t)
    payloads.emplace_back(size_t{1} << 20, static_cast<char>('a' + t));
  std::vector<int> bad_reads(kThreads, 0), failed_writes(kThreads, 0);
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int round = 0; round < kRounds; ++round) {
        failed_writes[t] += !write_cache_file(path, CacheFileKind::Spirv, key, payloads[t].data(),
                                              payloads[t].size());
        // At least this thread's write has landed, so there is always a complete entry.
        auto read = read_cache_file(path, CacheFileKind::Spirv, key);
        bad_reads[t] +=
            !read || std::find(payloads.begin(), payloads.end(),
                               std::string(read->begin(), read->end())) == payloads.end();
      }
    });
  for (auto& thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t) {
    CHECK(failed_writes[t] == 0);
    CHECK(bad_reads[t] == 0);
  }
  CHECK(temporary_files(dir.path()) == 0);
  // A reader expecting another key or kind sees nothing.
  CHECK_FALSE(read_cache_file(path, CacheFileKind::PipelineCache, key).has_value());
  CacheKeyBuilder other;
  CHECK_FALSE(read_cache_file(path, CacheFileKind::Spirv, other.add("other").finish()));
}

TEST_CASE("engine cache: two threads compiling one program into one empty cache") {
  // Each thread has its own context: a context's queue and command pool are not shared
  // between threads. The cache directory is shared.
  std::vector<std::shared_ptr<VulkanContext>> contexts;
  for (int t = 0; t < 2; ++t) {
    ContextOptions options;
    options.validation = true;
    auto created = VulkanContext::create(options);
    REQUIRE_MESSAGE(created.ok(), created.error());
    contexts.push_back(*created);
  }
  auto loaded = load_source(kGcd);
  const Batch batch = gcd_batch();
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, {});
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    ScratchCacheDir dir(fmt::format("concurrent-{}", round));
    std::vector<std::optional<Expected<Outcome>>> outcomes(2);
    std::latch start(2);
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t)
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        outcomes[t] = run_cached(*loaded, batch, dir.path(), contexts[t]);
      });
    for (auto& thread : threads)
      thread.join();
    for (int t = 0; t < 2; ++t) {
      REQUIRE_MESSAGE(outcomes[t]->ok(), outcomes[t]->error());
      CHECK(compare_results(loaded->lowered, expected, (*outcomes[t])->result) == "");
      for (const auto& m : contexts[t]->validation_messages())
        FAIL_CHECK(m);
      contexts[t]->clear_validation_messages();
    }
    CHECK(files_ending(dir.path(), ".spv").size() == 1);
    CHECK(temporary_files(dir.path()) == 0);
    // What the two left behind is complete: the next run uses both caches.
    const Outcome next = run_cached(*loaded, batch, dir.path());
    CHECK(next.stats.spirv_from_cache);
    CHECK(next.stats.pipeline_cache_from_disk);
    CHECK(compare_results(loaded->lowered, expected, next.result) == "");
  }
  check_no_validation_messages();
}

}  // namespace
}  // namespace ab::enginetest
