// The batch and result types every backend shares (public: autobatch/batch.h) and the helpers
// the backends use on them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autobatch/batch.h"
#include "ir/exec.h"
#include "ir/ir.h"

namespace ab {

// Hands `words` (whole records of `record_words` words that `lane` emitted) to options.on_emit,
// or appends them to result.emitted[lane]; then clears `words`.
void deliver_emitted(const RunOptions& options, uint32_t record_words, uint32_t lane,
                     std::vector<uint32_t>& words, RunResult& result);

// Checks the batch against the entry function's signature and the program's uniforms; returns
// an empty string if it fits, else a message naming the first input or uniform that does not.
std::string check_batch(const Program& program, int entry, const Batch& batch);

}  // namespace ab
