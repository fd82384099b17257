// See cache_file.h: the header layout, the checks on read and the atomic write.
#include "engine/device/cache_file.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <unistd.h>

namespace ab {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'a', 'b', 'c', 'a', 'c', 'h', 'e', '\n'};
constexpr uint32_t kFormat = 1;
// Far above any SPIR-V module or pipeline cache this engine makes; keeps a corrupt size from
// turning into a huge allocation.
constexpr uint64_t kMaxPayload = uint64_t{1} << 30;

CacheFileHeader make_header(CacheFileKind kind, const CacheKey& key, const void* payload,
                            size_t size) {
  CacheFileHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.format = kFormat;
  h.kind = static_cast<uint32_t>(kind);
  h.key_low = key.low;
  h.key_high = key.high;
  h.payload_size = size;
  h.payload_hash = cache_payload_hash(payload, size);
  return h;
}

bool write_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

uint64_t cache_payload_hash(const void* payload, size_t size) {
  return XXH3_64bits(payload, size);
}

struct CacheKeyBuilder::State {
  XXH3_state_t* xxh = XXH3_createState();
};

CacheKeyBuilder::CacheKeyBuilder() : state_(new State) {
  XXH3_128bits_reset(state_->xxh);
}

CacheKeyBuilder::~CacheKeyBuilder() {
  XXH3_freeState(state_->xxh);
  delete state_;
}

CacheKeyBuilder& CacheKeyBuilder::add(const void* data, size_t size) {
  const uint64_t length = size;
  XXH3_128bits_update(state_->xxh, &length, sizeof length);
  XXH3_128bits_update(state_->xxh, data, size);
  return *this;
}

CacheKeyBuilder& CacheKeyBuilder::add(std::string_view field) {
  return add(field.data(), field.size());
}

CacheKey CacheKeyBuilder::finish() const {
  const XXH128_hash_t h = XXH3_128bits_digest(state_->xxh);
  return {h.low64, h.high64};
}

std::string CacheKey::hex() const {
  return fmt::format("{:016x}{:016x}", high, low);
}

std::optional<std::vector<char>> read_cache_file(const std::string& path, CacheFileKind kind,
                                                 const CacheKey& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  in.seekg(0, std::ios::end);
  const std::streamoff file_size = in.tellg();
  if (file_size < static_cast<std::streamoff>(sizeof(CacheFileHeader))) return std::nullopt;
  in.seekg(0);
  CacheFileHeader h;
  if (!in.read(reinterpret_cast<char*>(&h), sizeof h)) return std::nullopt;
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.format != kFormat ||
      h.kind != static_cast<uint32_t>(kind) || h.key_low != key.low || h.key_high != key.high ||
      h.payload_size > kMaxPayload ||
      h.payload_size != static_cast<uint64_t>(file_size) - sizeof(CacheFileHeader))
    return std::nullopt;
  std::vector<char> payload(h.payload_size);
  if (!in.read(payload.data(), static_cast<std::streamsize>(payload.size()))) return std::nullopt;
  if (cache_payload_hash(payload.data(), payload.size()) != h.payload_hash) return std::nullopt;
  return payload;
}

bool write_cache_file(const std::string& path, CacheFileKind kind, const CacheKey& key,
                      const void* payload, size_t size) {
  const fs::path target(path);
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  // A name no other thread (counter) or process (pid) on this machine uses, in the target's
  // directory so that the rename below is atomic (same filesystem); O_EXCL settles the rest (a
  // shared network directory). Mode 0666 less the umask, like any other file the user creates.
  // The leading dot keeps it out of the entry names.
  static std::atomic<uint64_t> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = (target.parent_path() / fmt::format(".{}.tmp-{}-{}", target.filename().string(),
                                              static_cast<long>(::getpid()), counter++))
              .string();
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) return false;
  }
  if (fd < 0) return false;
  const CacheFileHeader h = make_header(kind, key, payload, size);
  // No fsync: a file torn by a crash fails the size or hash check and is simply recompiled.
  const bool written = write_all(fd, &h, sizeof h) && write_all(fd, payload, size);
  const bool closed = ::close(fd) == 0;
  if (written && closed && ::rename(tmp.c_str(), path.c_str()) == 0) return true;
  ::unlink(tmp.c_str());
  return false;
}

}  // namespace ab
