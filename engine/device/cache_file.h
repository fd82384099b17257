// Self-verifying files for the on-disk caches (compiled SPIR-V, VkPipelineCache blobs).
//
// A cache file is a fixed header followed by the payload. The header holds a format magic, the
// kind of payload, a 128-bit XXH3 hash of the inputs the payload was made from (the *key*), the
// payload size and a 64-bit XXH3 hash of the payload. A reader that expects key K accepts a file
// only if every header field is exactly what it expects, the file is exactly header + payload
// long and the payload hashes to the stored hash; anything else (missing, empty, truncated,
// bit-flipped, another key's entry) reads as "no entry". Files are written to a unique temporary
// file in the same directory and renamed into place, so concurrent processes and threads sharing
// one cache never see a half-written file under the final name. The hashes only catch accidents
// (disk corruption, torn or copied files), not a deliberate forgery: the payload's own checks
// (spirv-val, the pipeline cache header) stay in place for that.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ab {

struct CacheKey {
  uint64_t low = 0;
  uint64_t high = 0;
  bool operator==(const CacheKey&) const = default;
  std::string hex() const;  // 32 hex digits, for file names
};

// Hashes a sequence of fields; each is length-prefixed, so ("ab", "c") and ("a", "bc") differ.
class CacheKeyBuilder {
 public:
  CacheKeyBuilder();
  ~CacheKeyBuilder();
  CacheKeyBuilder(const CacheKeyBuilder&) = delete;
  CacheKeyBuilder& operator=(const CacheKeyBuilder&) = delete;
  CacheKeyBuilder& add(std::string_view field);
  CacheKeyBuilder& add(const void* data, size_t size);
  CacheKey finish() const;

 private:
  struct State;
  State* state_;
};

// What a cache file holds; part of the header, so a SPIR-V entry can never be read as a pipeline
// cache or the other way round.
enum class CacheFileKind : uint32_t {
  Spirv = 0x20767073,          // "spv "
  PipelineCache = 0x65706970,  // "pipe"
};

// The file's first bytes, in native byte order (a cache belongs to one machine). Every field is
// compared exactly on read, so a flipped header bit is caught without a hash of the header.
struct CacheFileHeader {
  char magic[8];
  uint32_t format;  // bumped whenever this layout or a payload's meaning changes
  uint32_t kind;    // CacheFileKind
  uint64_t key_low;
  uint64_t key_high;
  uint64_t payload_size;
  uint64_t payload_hash;  // cache_payload_hash of the payload
};
static_assert(sizeof(CacheFileHeader) == 48, "no padding: every header byte is checked");

// XXH3-64 of a payload, as stored in the header.
uint64_t cache_payload_hash(const void* payload, size_t size);

// The payload of the file at `path` if it is a complete, intact entry of `kind` made for `key`;
// nullopt otherwise (including a missing or unreadable file).
std::optional<std::vector<char>> read_cache_file(const std::string& path, CacheFileKind kind,
                                                 const CacheKey& key);

// Writes header + payload to `path` atomically (creating the directory). False if it could not
// (the cache only saves time, so callers ignore it).
bool write_cache_file(const std::string& path, CacheFileKind kind, const CacheKey& key,
                      const void* payload, size_t size);

}  // namespace ab
