// Writes one frame's batch of the agents program as an .abtrace that `autobatch debug` opens.
#pragma once

#include <autobatch/autobatch.h>

#include <string>

// Records the VM's run of `batch` (every step, from the entry to the end) to `out_path`. Returns
// "" or a message.
std::string write_capture(const ab::Module& module, const std::string& source_path,
                          const std::string& source_text, const ab::Batch& batch,
                          const ab::RunOptions& options, const std::string& out_path);
