// The pieces of FitWriter (autobatch/sampler.h): the folder's lock, staging and commit
// (FitFiles) and draws.npy written at its place as the draws come (DrawsFile).
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "autobatch/expected.h"
#include "autobatch/sampler.h"

namespace ab::sample {

class FitFiles {
 public:
  // Creates DIR if needed, takes its lock, checks that `bytes` fit on its file system and
  // makes an empty staging folder.
  static Expected<std::unique_ptr<FitFiles>> open(const std::string& dir, uint64_t bytes);
  ~FitFiles();  // removes the staging folder unless committed; releases the lock
  FitFiles(const FitFiles&) = delete;
  FitFiles& operator=(const FitFiles&) = delete;

  // Where to write `name` before commit(); `name` becomes one of the set's files.
  std::string staged(const std::string& name);
  // The set's files so far, sorted: what summary.json lists as "files".
  std::vector<std::string> files() const { return {names_.begin(), names_.end()}; }
  // Where `name` lies after commit().
  std::string final_path(const std::string& name) const;
  // Syncs the staged files, renames them into DIR, removes the previous fit's files this set
  // lacks, renames summary.json last and removes the staging folder. Returns the first error.
  Status commit();

 private:
  FitFiles() = default;
  std::string dir_, staging_;
  std::set<std::string> names_;
  int lock_fd_ = -1;
  bool committed_ = false;
};

// `[chains, draws, dimension]` float32 draws written straight into a .npy file at their place,
// so memory holds no more than one draw, whatever the number of draws. Draws never written are
// NaN (fill_missing), so a chain that faulted or was stopped shows no invented values. The
// sampler writes into it as its DrawSink.
class DrawsFile : public DrawSink {
 public:
  Status open(const std::string& path, uint32_t chains, uint32_t draws, uint32_t dimension);
  ~DrawsFile() override;
  // Writes one draw; the first failure is kept (error()) and later writes are skipped.
  bool write(uint32_t chain, uint32_t draw, const float* q) override;
  // Writes NaN over draws [from, draws) of `chain`.
  bool fill_missing(uint32_t chain, uint32_t from) override;
  std::string error() const override { return error_; }
  // The first `used_draws` draws of parameter `j` of each chain in `used_chains`, chain after
  // chain, as doubles: read back from the file (mapped), so the draws never sit in memory twice.
  Expected<std::vector<double>> parameter(uint32_t j, uint32_t used_draws,
                                          const std::vector<uint32_t>& used_chains) override;

 private:
  bool fail(const char* what);
  std::string path_, error_;
  int fd_ = -1;
  uint64_t header_bytes_ = 0;
  uint32_t chains_ = 0, dimension_ = 0, draws_ = 0;
  void* map_ = nullptr;  // the whole file, mapped by parameter()
  uint64_t map_bytes_ = 0;
};

}  // namespace ab::sample
