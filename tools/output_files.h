// `--out DIR`: one .npy file per output column (result.npy or <field path>.npy) of shape
// (lanes,) or (lanes, dims...), dtype <i4, <u4, <f4 or |b1; faulted lanes hold zeros. Also
// faulted-lanes.npy (|b1, shape (lanes,)), always written, true for each lane that faulted.
//
// File names never collide: a column's name is made of identifiers joined by '.', and every
// file the tool adds on its own has a '-' in its name, which no identifier can contain.
#pragma once

#include <string>

#include "autobatch/batch.h"
#include "autobatch/expected.h"
#include "autobatch/module.h"

namespace ab::cli {

// The file, in DIR, of the per-lane fault mask.
inline constexpr const char* kFaultMaskFile = "faulted-lanes.npy";

// Creates `dir` if needed and writes the files; returns the error of the first that fails.
Status write_output_files(const std::string& dir, const Module& module, uint32_t lanes,
                          const RunResult& result);

}  // namespace ab::cli
