#include "passes/lower.h"

#include "passes/analysis/call_graph.h"
#include "passes/analysis/classify_storage.h"
#include "passes/merge_and_lower.h"
#include "passes/pop_push_to_update.h"
#include "passes/split_at_calls.h"

namespace ab {

LoweredProgram lower(const Program& program, int entry, const LowerOptions& options) {
  const Program split = split_at_calls(program);
  const StoragePlan plan = classify_storage(split, compute_call_graph(split, entry));
  LoweredProgram lowered = merge_and_lower(split, plan, entry, &program);
  if (options.pop_push_to_update) pop_push_to_update(lowered);
  return lowered;
}

}  // namespace ab
