// `--out DIR`: one .npy file per output column (result.npy or <field path>.npy) of shape
// (lanes,) or (lanes, dims...), dtype <i4, <u4, <f4 or |b1; faulted lanes hold zeros. Also
// faulted.npy (|b1, shape (lanes,)), always written, true for each lane that faulted.
#pragma once

#include <string>

#include "ir/ir.h"
#include "ir/run.h"
#include "tools/expected.h"

namespace ab::cli {

// Creates `dir` if needed and writes the files; returns the error of the first that fails.
Status write_output_files(const std::string& dir, const Program& program, int entry, uint32_t lanes,
                          const RunResult& result);

}  // namespace ab::cli
