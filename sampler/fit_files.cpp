#include "sampler/fit_files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autobatch/npy.h"
#include "autobatch/user_input.h"

namespace ab::sample {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLockName = ".autobatch-sample.lock";
constexpr const char* kStagingName = ".autobatch-sample.partial";
constexpr const char* kLastFile = "summary.json";  // renamed last: its presence means a whole set

std::string gib(uint64_t bytes) {
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

Error errno_error(const std::string& what, const std::string& path, int error) {
  return Error{fmt::format("{} '{}': {}", what, path, std::strerror(error))};
}

Status sync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_error("cannot open", path, errno);
  const int rc = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (rc != 0) return errno_error("cannot write", path, error);
  return Ok{};
}

// The files of the fit whose summary.json lies in `dir`: its "files", or for a summary.json
// written before it listed them, MODEL-k.csv for its model and chains where such a file is one of
// our CSVs (the draws and statistics have fixed names and are always replaced). Only plain names
// inside `dir` count; a summary.json that is not ours names nothing.
std::vector<std::string> previous_fit_files(const std::string& dir) {
  const fs::path summary = fs::path(dir) / kLastFile;
  std::error_code ec;
  if (!fs::is_regular_file(summary, ec)) return {};
  const FileContents text = read_regular_file(summary.string());
  if (!text.ok()) return {};
  const nlohmann::json doc = nlohmann::json::parse(text.bytes, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return {};
  std::vector<std::string> names;
  const auto plain = [](const std::string& name) {
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
           name.rfind(".autobatch-sample", 0) != 0;
  };
  if (const auto files = doc.find("files"); files != doc.end() && files->is_array()) {
    for (const nlohmann::json& name : *files)
      if (name.is_string() && plain(name.get<std::string>())) names.push_back(name);
    return names;
  }
  const auto model = doc.find("model"), chains = doc.find("chains");
  if (model == doc.end() || !model->is_string() || chains == doc.end() ||
      !chains->is_number_unsigned())
    return {};
  const std::string stem = fs::path(model->get<std::string>()).stem().string();
  for (uint64_t k = 1; k <= chains->get<uint64_t>(); ++k) {
    const std::string name = fmt::format("{}-{}.csv", stem, k);
    if (!plain(name)) break;
    std::ifstream in(fs::path(dir) / name, std::ios::binary);
    std::string head(4096, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(in.gcount()));
    if (head.rfind("# stan_version_major", 0) == 0 &&
        head.find("\n# autobatch: leaf_steps") != std::string::npos)
      names.push_back(name);
  }
  return names;
}

}  // namespace

Expected<std::unique_ptr<FitFiles>> FitFiles::open(const std::string& dir, uint64_t bytes) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    return Error{fmt::format("--out '{}' is a file; it names the folder for the fit's files", dir)};
  fs::create_directories(dir, ec);
  if (ec) return Error{fmt::format("cannot create the folder '{}': {}", dir, ec.message())};

  std::unique_ptr<FitFiles> files(new FitFiles);
  files->dir_ = dir;
  const std::string lock_path = (fs::path(dir) / kLockName).string();
  files->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (files->lock_fd_ < 0) return errno_error("cannot write into", dir, errno);
  if (::flock(files->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return errno_error("cannot lock", lock_path, errno);
    char pid[32] = {};
    const ssize_t n = ::pread(files->lock_fd_, pid, sizeof pid - 1, 0);
    const std::string holder = n > 0 ? fmt::format(" (process {})", std::string(pid, n)) : "";
    return Error{
        fmt::format("'{}' is in use by another `autobatch sample`{}: give each run its own --out",
                    dir, holder)};
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(files->lock_fd_, 0) != 0 ||
      ::pwrite(files->lock_fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    return errno_error("cannot write", lock_path, errno);

  struct statvfs disk = {};
  if (::statvfs(dir.c_str(), &disk) == 0) {
    const uint64_t free = uint64_t{disk.f_bavail} * disk.f_frsize;
    if (free < bytes)
      return Error{fmt::format("the fit's files need {} in '{}' but only {} is free", gib(bytes),
                               dir, gib(free))};
  }

  // We hold the lock, so a partial folder left here is a killed run's: it is removed.
  files->staging_ = (fs::path(dir) / kStagingName).string();
  fs::remove_all(files->staging_, ec);
  fs::create_directory(files->staging_, ec);
  if (ec)
    return Error{fmt::format("cannot create the folder '{}': {}", files->staging_, ec.message())};
  return files;
}

FitFiles::~FitFiles() {
  std::error_code ec;
  if (!committed_ && !staging_.empty()) fs::remove_all(staging_, ec);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

std::string FitFiles::staged(const std::string& name) {
  names_.insert(name);
  return (fs::path(staging_) / name).string();
}

std::string FitFiles::final_path(const std::string& name) const {
  return (fs::path(dir_) / name).string();
}

Status FitFiles::commit() {
  std::error_code ec;
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(staging_, ec))
    if (e.path().filename() != kLastFile) names.push_back(e.path().filename().string());
  if (ec) return Error{fmt::format("cannot list '{}': {}", staging_, ec.message())};
  const std::string last = (fs::path(staging_) / kLastFile).string();
  const bool has_last = fs::exists(last, ec);
  // Every file on disk before the first rename: a crash then leaves either set whole.
  for (const std::string& name : names)
    if (auto s = sync_file((fs::path(staging_) / name).string()); !s) return s;
  if (has_last)
    if (auto s = sync_file(last); !s) return s;
  const auto move_in = [&](const std::string& name) -> Status {
    if (::rename((fs::path(staging_) / name).c_str(), final_path(name).c_str()) != 0)
      return errno_error("cannot move the new file into place:", final_path(name), errno);
    return Ok{};
  };
  for (const std::string& name : names)
    if (auto s = move_in(name); !s) return s;
  // The previous summary.json still names the previous set: its files this set lacks go now,
  // before the new summary.json replaces it (a crash here leaves them named for the next run). A
  // set without a summary.json (CSVs alone) replaces files by name and removes none.
  for (const std::string& name : has_last ? previous_fit_files(dir_) : std::vector<std::string>{})
    if (name != kLastFile && std::find(names.begin(), names.end(), name) == names.end() &&
        fs::symlink_status(final_path(name), ec).type() == fs::file_type::regular)
      if (!fs::remove(final_path(name), ec) && ec)
        return Error{fmt::format("cannot remove the earlier fit's '{}': {}", final_path(name),
                                 ec.message())};
  if (has_last)
    if (auto s = move_in(kLastFile); !s) return s;
  committed_ = true;
  fs::remove(staging_, ec);
  if (const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
    ::fsync(fd);  // the renames themselves
    ::close(fd);
  }
  return Ok{};
}

Status DrawsFile::open(const std::string& path, uint32_t chains, uint32_t draws,
                       uint32_t dimension) {
  path_ = path;
  const std::string header = encode_npy("<f4", {chains, draws, dimension}, "");
  header_bytes_ = header.size();
  chains_ = chains;
  dimension_ = dimension;
  draws_ = draws;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) return errno_error("cannot write", path, errno);
  const uint64_t bytes = header_bytes_ + uint64_t{chains} * draws * dimension * 4;
  // posix_fallocate reserves the blocks now, so a full disk shows before the run, not during.
  if (const int rc = ::posix_fallocate(fd_, 0, static_cast<off_t>(bytes));
      rc != 0 && rc != EOPNOTSUPP && rc != EINVAL)
    return errno_error("cannot write", path, rc);
  if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0 ||
      ::pwrite(fd_, header.data(), header.size(), 0) != static_cast<ssize_t>(header.size()))
    return errno_error("cannot write", path, errno);
  return Ok{};
}

DrawsFile::~DrawsFile() {
  if (map_) ::munmap(map_, map_bytes_);
  if (fd_ >= 0) ::close(fd_);
}

bool DrawsFile::fail(const char* what) {
  if (error_.empty()) error_ = fmt::format("cannot {} '{}': {}", what, path_, std::strerror(errno));
  return false;
}

bool DrawsFile::write(uint32_t chain, uint32_t draw, const float* q) {
  if (!error_.empty()) return false;
  const uint64_t at = header_bytes_ + (uint64_t{chain} * draws_ + draw) * dimension_ * 4;
  const ssize_t n = ::pwrite(fd_, q, dimension_ * 4, static_cast<off_t>(at));
  if (n == static_cast<ssize_t>(dimension_ * 4)) return true;
  if (n >= 0) errno = ENOSPC;  // a short write: the file system is full
  return fail("write");
}

bool DrawsFile::fill_missing(uint32_t chain, uint32_t from) {
  if (from >= draws_) return true;
  const std::vector<float> nan(uint64_t{draws_ - from} * dimension_,
                               std::numeric_limits<float>::quiet_NaN());
  const uint64_t at = header_bytes_ + (uint64_t{chain} * draws_ + from) * dimension_ * 4;
  const ssize_t n = ::pwrite(fd_, nan.data(), nan.size() * 4, static_cast<off_t>(at));
  if (n == static_cast<ssize_t>(nan.size() * 4)) return true;
  if (n >= 0) errno = ENOSPC;
  return fail("write");
}

Expected<std::vector<double>> DrawsFile::parameter(uint32_t j, uint32_t used_draws,
                                                   const std::vector<uint32_t>& used_chains) {
  if (!map_) {
    const uint64_t bytes = header_bytes_ + uint64_t{chains_} * draws_ * dimension_ * 4;
    void* m = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd_, 0);
    if (m == MAP_FAILED) return errno_error("cannot read back", path_, errno);
    map_ = m;
    map_bytes_ = bytes;
  }
  const auto* values =
      reinterpret_cast<const float*>(static_cast<const char*>(map_) + header_bytes_);
  std::vector<double> out;
  out.reserve(uint64_t{used_draws} * used_chains.size());
  for (uint32_t chain : used_chains)
    for (uint32_t i = 0; i < used_draws; ++i)
      out.push_back(values[(uint64_t{chain} * draws_ + i) * dimension_ + j]);
  return out;
}

}  // namespace ab::sample
