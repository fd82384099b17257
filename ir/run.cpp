#include "ir/run.h"

#include <fmt/format.h>

namespace ab {

void deliver_emitted(const RunOptions& options, uint32_t record_words, uint32_t lane,
                     std::vector<uint32_t>& words, RunResult& result) {
  if (words.empty() || record_words == 0) return;
  result.records_emitted += words.size() / record_words;
  if (options.on_emit) {
    for (size_t at = 0; at + record_words <= words.size(); at += record_words)
      options.on_emit(lane, words.data() + at);
  } else {
    if (result.emitted.size() <= lane) result.emitted.resize(size_t{lane} + 1);
    result.emitted[lane].insert(result.emitted[lane].end(), words.begin(), words.end());
  }
  words.clear();
}

const char* heuristic_name(Heuristic h) {
  return h == Heuristic::MinPc ? "min-pc" : "most-lanes";
}

std::string check_batch(const Program& program, int entry, const Batch& batch) {
  if (entry < 0 || entry >= static_cast<int>(program.functions.size())) return "no entry function";
  const Function& fn = program.functions[entry];
  if (batch.lanes == 0) return "the batch has no lanes";
  if (batch.inputs.size() != fn.params.size())
    return fmt::format("function '{}' takes {} inputs but {} were given", fn.name, fn.params.size(),
                       batch.inputs.size());
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const Var& p = fn.vars[fn.params[i]];
    const size_t want = static_cast<size_t>(batch.lanes) * program.types.words(p.type);
    if (batch.inputs[i].size() != want)
      return fmt::format("input '{}' ({}) has {} words but {} lanes need {}", p.name,
                         program.types.to_string(p.type), batch.inputs[i].size(), batch.lanes,
                         want);
  }
  if (batch.uniforms.size() != program.uniforms.size())
    return fmt::format("the program declares {} uniforms but {} were bound",
                       program.uniforms.size(), batch.uniforms.size());
  for (size_t u = 0; u < program.uniforms.size(); ++u) {
    const Uniform& un = program.uniforms[u];
    if (batch.uniforms[u].size() != program.types.words(un.type))
      return fmt::format("uniform '{}' ({}) needs {} values but {} were bound", un.name,
                         program.types.to_string(un.type), program.types.words(un.type),
                         batch.uniforms[u].size());
  }
  return "";
}

}  // namespace ab
