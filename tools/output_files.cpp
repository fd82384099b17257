#include "tools/output_files.h"

#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "autobatch/npy.h"
#include "tools/outputs.h"

namespace ab::cli {

Status write_output_files(const std::string& dir, const Module& module, uint32_t lanes,
                          const RunResult& result) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{fmt::format("cannot create directory '{}': {}", dir, ec.message())};
  if (!std::filesystem::is_directory(dir, ec))
    return Error{fmt::format("cannot write into '{}': it is not a directory", dir)};

  const OutputLayout layout = output_layout(module.output().value_type);
  // The naming rule (output_files.h) keeps names apart; should it ever fail, refuse rather than
  // let one file silently replace another.
  std::set<std::string> names{kFaultMaskFile};
  for (const OutputColumn& column : layout.columns)
    if (!names.insert(column.key + ".npy").second)
      return Error{fmt::format("cannot write the outputs into '{}': two of them would be '{}.npy'",
                               dir, column.key)};

  for (const OutputColumn& column : layout.columns) {
    std::vector<uint32_t> words;
    words.reserve(uint64_t{lanes} * column.word_offsets.size());
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      // The backends zero a faulted lane's outputs already; zero them here too so the file
      // says what this tool documents whatever a backend leaves behind.
      const bool faulted = lane < result.faulted.size() && result.faulted[lane];
      for (uint32_t w : column_words(layout, column, result.outputs, lane))
        words.push_back(faulted ? 0u : w);
    }
    std::vector<uint64_t> shape{lanes};
    shape.insert(shape.end(), column.shape.dims.begin(), column.shape.dims.end());
    const std::string path = (std::filesystem::path(dir) / (column.key + ".npy")).string();
    if (auto status = write_npy(path, column.shape.leaf, shape, words); !status) return status;
  }

  // Emitted records, ragged per lane: emitted_<column>.npy holds every record in lane order
  // ([records, dims...]) and emitted_lane.npy the lane of each.
  if (!module.emit_record().value_type.is_void()) {
    const OutputLayout records = output_layout(module.emit_record().value_type);
    std::vector<uint32_t> lane_of;
    for (uint32_t lane = 0; lane < lanes && lane < result.emitted.size(); ++lane)
      lane_of.insert(lane_of.end(), result.emitted[lane].size() / records.lane_words, lane);
    for (const OutputColumn& column : records.columns) {
      std::vector<uint32_t> words;
      for (uint32_t lane = 0; lane < lanes && lane < result.emitted.size(); ++lane)
        for (uint32_t r = 0; r < result.emitted[lane].size() / records.lane_words; ++r)
          for (uint32_t w : column_words(records, column, result.emitted[lane], r))
            words.push_back(w);
      std::vector<uint64_t> shape{lane_of.size()};
      shape.insert(shape.end(), column.shape.dims.begin(), column.shape.dims.end());
      const std::string name = column.key == "result" ? "emitted" : "emitted_" + column.key;
      if (auto status = write_npy((std::filesystem::path(dir) / (name + ".npy")).string(),
                                  column.shape.leaf, shape, words);
          !status)
        return status;
    }
    if (auto status = write_npy((std::filesystem::path(dir) / "emitted_lane.npy").string(),
                                Scalar::UInt, {lane_of.size()}, lane_of);
        !status)
      return status;
  }

  std::vector<uint32_t> faulted(lanes, 0);
  for (uint32_t lane = 0; lane < lanes && lane < result.faulted.size(); ++lane)
    faulted[lane] = result.faulted[lane] ? 1 : 0;
  return write_npy((std::filesystem::path(dir) / kFaultMaskFile).string(), Scalar::Bool, {lanes},
                   faulted);
}

}  // namespace ab::cli
