#include "tools/sample/sample_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <regex>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "tools/commands.h"
#include "tools/file_io.h"
#include "tools/interrupts.h"
#include "tools/npy.h"
#include "tools/sample/diagnostics.h"
#include "tools/sample/fit_files.h"
#include "tools/sample/parameters.h"
#include "tools/sample/summary.h"
#include "tools/uniforms.h"

namespace ab::cli {
namespace {

const char* const kContract =
    "a model defines fn log_density(q: float[D]) -> float over a flat vector, or fn "
    "log_density(p: Params) -> float over a struct of float and float-array fields (bounded as "
    "float<lower=A, upper=B>), or with a hand-written gradient struct LogDensity { value: float, "
    "grad: float[D] } and fn log_density(q: float[D]) -> LogDensity (docs/nuts.md)";

// `text` compiled as `file`; `entry` empty: only checked.
Expected<std::shared_ptr<const Module>> compile_text(const std::string& text,
                                                     const std::string& file,
                                                     const std::string& entry,
                                                     std::vector<std::string> first = {}) {
  CompileOptions options;
  options.file = file;
  options.entry = entry;
  options.functions_first = std::move(first);
  return Module::compile(text, options);
}

bool is_float_array(const ValueType& t) {
  return t.is_array() && t.elem().is_scalar() && t.elem().scalar == Scalar::Float;
}

// The per-draw statistics `sample` writes beside draws.npy: the nuts_Draw field each comes
// from, its file, its type, and the value a missing draw (a faulted or stopped chain) holds.
struct DrawStatistic {
  const char* field;
  const char* file;
  Scalar type;
  uint32_t missing;
};
constexpr uint32_t kNanBits = 0x7fc00000u;
constexpr uint32_t kMissingInt = 0xffffffffu;  // -1
std::vector<DrawStatistic> draw_statistics() {
  return {{"accept", "accept_stat.npy", Scalar::Float, kNanBits},
          {"step_size", "step_size.npy", Scalar::Float, kNanBits},
          {"energy", "energy.npy", Scalar::Float, kNanBits},
          {"depth", "tree_depth.npy", Scalar::Int, kMissingInt},
          {"grads", "n_grad.npy", Scalar::Int, kMissingInt},
          {"divergent", "divergent.npy", Scalar::Bool, 0u},
          {"lp", "lp.npy", Scalar::Float, kNanBits}};
}
// The index of the statistic read from nuts_Draw's `field`.
size_t statistic_index(const char* field) {
  const std::vector<DrawStatistic> all = draw_statistics();
  for (size_t i = 0; i < all.size(); ++i)
    if (std::strcmp(all[i].field, field) == 0) return i;
  throw std::out_of_range(field);  // the sampler's own table: a bug
}
constexpr uint64_t kNpyHeaderAllowance = 4096;

// Stan's windowed adaptation needs 150 warm-up iterations (75 + 25 + 50) to adapt the metric,
// and the step size's dual averaging a few dozen to settle: fewer is allowed but said.
constexpr uint32_t kWarmupToAdapt = 150;
void warn_about_short_warmup(const SampleCommand& c) {
  if (c.warmup == 0 || c.warmup >= kWarmupToAdapt) return;
  fmt::print(stderr,
             "warning: --warmup {} is too short to adapt: the metric needs {} iterations{} and "
             "the step size may not settle (expect divergences or a poor step size)\n",
             c.warmup, kWarmupToAdapt, c.adapt_metric ? " (it stays the unit metric)" : "");
}

// A run stopped by a signal before any draw: nothing is written, the previous fit stays.
int interrupted_without_draws(int signal, const FitFiles& fit) {
  fmt::print(stderr, "stopped by {} before any draw; the files in '{}' are unchanged\n",
             ::strsignal(signal), fit.final_path(""));
  return 128 + signal;
}

// The progress line on stderr: draws so far, and, when no draw has come for a while, which
// chains are still silent (a log density that never returns shows here, not as a hang).
class SampleProgress {
 public:
  SampleProgress(const SampleCommand& c, std::chrono::steady_clock::time_point started)
      : c_(c), started_(started), last_draw_(started) {}
  void drew(uint64_t received, const std::vector<uint32_t>& next_draw) {
    last_draw_ = std::chrono::steady_clock::now();
    tick(received, next_draw);
  }
  void tick(uint64_t received, const std::vector<uint32_t>& next_draw) {
    if (c_.format != "table") return;
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - started_).count();
    if (elapsed < 1.0 || now - last_shown_at_ < std::chrono::milliseconds(500) ||
        !progress_due(elapsed, last_shown_))
      return;
    last_shown_at_ = now;
    shown_ = true;
    const uint64_t cells = uint64_t{c_.chains} * c_.draws;
    std::string line = received == 0
                           ? fmt::format("sampling: warming up, {:.0f} s", elapsed)
                           : fmt::format("sampling: {} of {} draws ({:.0f}%)", received, cells,
                                         100.0 * static_cast<double>(received) / cells);
    const double silent = std::chrono::duration<double>(now - last_draw_).count();
    if (received > 0 && silent >= kSilentSeconds) {
      std::vector<uint32_t> waiting;
      for (uint32_t chain = 0; chain < c_.chains; ++chain)
        if (next_draw[chain] < c_.draws) waiting.push_back(chain);
      const size_t shown = std::min<size_t>(waiting.size(), 8);
      line += fmt::format(
          "; no draw for {:.0f} s from chain{} {}{}{}", silent, waiting.size() == 1 ? "" : "s",
          fmt::join(waiting.begin(), waiting.begin() + shown, ", "),
          waiting.size() > shown ? ", ..." : "", " (--max-steps bounds a chain's work)");
    }
    fmt::print(stderr, "{}{:<110}{}", progress_start(), line, progress_end());
    std::fflush(stderr);
  }
  void finish() {
    if (shown_ && stderr_is_terminal()) fmt::print(stderr, "\n");
  }

 private:
  static constexpr double kSilentSeconds = 10;
  const SampleCommand& c_;
  std::chrono::steady_clock::time_point started_, last_draw_, last_shown_at_{};
  double last_shown_ = -1e9;
  bool shown_ = false;
};

std::string format_seconds(double s) {
  return s < 1 ? fmt::format("{:.0f} ms", s * 1000) : fmt::format("{:.2f} s", s);
}

// A declaration found in a model's text by a regex whose group 1 is the keyword and group 2 the
// name: the first match outside `//` comments, with the name's line and column.
struct TextDeclaration {
  int line = 1, col = 1;
  std::string keyword, name;
};
std::optional<TextDeclaration> find_in_text(const std::string& text, const std::regex& pattern) {
  int line = 1;
  for (size_t start = 0; start < text.size(); ++line) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string code = text.substr(start, end - start);
    code = code.substr(0, code.find("//"));
    if (std::smatch m; std::regex_search(code, m, pattern))
      return TextDeclaration{line, static_cast<int>(m.position(2)) + 1, m[1].str(), m[2].str()};
    start = end + 1;
  }
  return std::nullopt;
}

// Names starting with nuts_ are the sampler's (tools/sample/nuts.ab): a model that declares one
// (a function, a struct, a const or a uniform) is refused at the declaration, before the two are
// compiled together and the clash would be reported inside nuts.ab.
Status check_sampler_names(const std::string& text, const std::string& model_path) {
  static const std::regex declaration(R"(\b(fn|struct|const|uniform)\s+(nuts_\w*))");
  if (auto d = find_in_text(text, declaration))
    return Error{fmt::format("{}:{}:{}: {} '{}': names starting with 'nuts_' are the sampler's",
                             model_path, d->line, d->col, d->keyword, d->name)};
  return Ok{};
}

// The sampler's functions (main, then every nuts_ function in source order) ahead of the model's
// (CompileOptions::functions_first). Blocks are numbered in function order and the schedulers run
// the earliest block with lanes waiting (Radul et al. 2020, Algorithm 1), so with the log density
// last a chain between gradients always runs on until it reaches the next one: the gradient then
// runs for every live chain at once, whichever trajectory each is in (Figure 7). With the model
// first, a chain that finished its trajectory would wait at main's blocks until every chain had
// finished theirs: synchronised on trajectory boundaries, no better than local static batching.
const std::vector<std::string> kSamplerFirst = {"main", "nuts_*"};

// A refusal before anything runs (a model off the contract, data of the wrong shape, a bad
// option): one message and exit code 2, as for any bad usage of `sample`.
int refuse(const Error& error) {
  report_error(error);
  return 2;
}

// Where `name` is declared with `keyword` in the model's text, for messages about a declaration
// the compiler accepted but the sampler cannot use.
std::optional<TextDeclaration> find_declaration(const std::string& text, const std::string& name,
                                                const char* keyword = "struct") {
  return find_in_text(text, std::regex(fmt::format(R"(\b({})\s+({})\b)", keyword, name)));
}

// The flat contract's `const D`, when the model declares one, must be q's length: a D one too
// large would otherwise be a coordinate the density never reads, and one too small an index
// fault inside the density.
Status check_dimension(const std::string& text, const std::string& model_path, uint32_t length) {
  const std::optional<TextDeclaration> at = find_declaration(text, "D", "const");
  if (!at) return Ok{};
  auto probe = compile_text(text + "\nfn nuts_dimension() -> int { return D; }\n", model_path,
                            "nuts_dimension");
  if (!probe) return Ok{};  // D is not an int constant: not the dimension
  Batch one;
  one.lanes = 1;
  for (const ValueInfo& u : (*probe)->uniforms())
    one.uniforms.emplace_back(u.words, 0u);
  auto d = (*probe)->run_cpu(one, RunOptions{}, CpuBackend::Interpreter);
  if (!d) return d.failure();
  const auto dimension = static_cast<int32_t>(d->outputs.at(0));
  if (dimension < 0 || static_cast<uint32_t>(dimension) != length)
    return Error{fmt::format("{}:{}:{}: const D is {} but log_density takes q: float[{}]; {}",
                             model_path, at->line, at->col, dimension, length, kContract)};
  return Ok{};
}

// --init: the chains' initial points in the model's space. FILE.npy holds [chains, D];
// FILE.json one object of parameters by name for every chain or a list of one per chain, as
// CmdStan's init files (a field's value a number or nested lists in its shape).
Expected<std::vector<float>> read_init(const std::string& path,
                                       const sample::ParameterLayout& layout, uint32_t chains) {
  const uint32_t D = layout.dimension();
  std::vector<float> out;
  if (path.size() < 5 || path.substr(path.size() - 5) != ".json") {
    auto array = read_npy(path);
    if (!array) return array.failure();
    if (array->shape != std::vector<uint64_t>{chains, D})
      return Error{fmt::format("--init '{}' must have shape ({}, {}) for {} chains of dimension {}",
                               path, chains, D, chains, D)};
    for (uint64_t k = 0; k < array->elements(); ++k) {
      auto word = encode_number(array->at(k), Scalar::Float);
      if (!word) return Error{fmt::format("--init '{}': {}", path, word.error())};
      out.push_back(bits_float(*word));
    }
    return out;
  }
  auto text = read_file(path);
  if (!text) return text.failure();
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error{fmt::format("--init '{}': not valid JSON", path)};
  if (doc.is_object()) doc = nlohmann::json(std::vector<nlohmann::json>(chains, doc));
  if (!doc.is_array() || doc.size() != chains)
    return Error{
        fmt::format("--init '{}': expected an object of parameters by name, or a list "
                    "of {} such objects (one per chain)",
                    path, chains)};
  // The fields in declaration order, each with its coordinates' count.
  std::vector<std::pair<std::string, uint32_t>> fields;
  for (const std::string& name : layout.names) {
    const std::string field = name.substr(0, name.find('['));
    if (fields.empty() || fields.back().first != field) fields.emplace_back(field, 0);
    ++fields.back().second;
  }
  std::string known;
  for (const auto& [name, count] : fields)
    known += (known.empty() ? "" : ", ") + name;
  for (uint32_t chain = 0; chain < chains; ++chain) {
    const nlohmann::json& object = doc[chain];
    if (!object.is_object())
      return Error{fmt::format("--init '{}': entry {} is not an object", path, chain)};
    for (const auto& [key, value] : object.items())
      if (std::none_of(fields.begin(), fields.end(), [&](const auto& f) { return f.first == key; }))
        return Error{
            fmt::format("--init '{}': unknown parameter '{}' (the model's: {})", path, key, known)};
    for (const auto& [name, count] : fields) {
      if (!object.contains(name))
        return Error{
            fmt::format("--init '{}': chain {} has no '{}' (every parameter needs a "
                        "value: {})",
                        path, chain, name, known)};
      std::vector<float> flat;
      std::function<bool(const nlohmann::json&)> flatten = [&](const nlohmann::json& v) {
        if (v.is_number()) {
          flat.push_back(v.get<float>());
          return true;
        }
        if (!v.is_array()) return false;
        for (const nlohmann::json& e : v)
          if (!flatten(e)) return false;
        return true;
      };
      if (!flatten(object[name]) || flat.size() != count)
        return Error{fmt::format("--init '{}': '{}' must be {} number{}", path, name, count,
                                 count == 1 ? "" : "s (nested lists in the field's shape)")};
      out.insert(out.end(), flat.begin(), flat.end());
    }
  }
  return out;
}

// The first value that is NaN or infinite in each float uniform (the model's data), as
// "; the data hold y[17] = nan", or nothing: the likely cause when no starting point works.
std::string non_finite_data(const Module& module, const Batch& batch) {
  std::vector<std::string> found;
  for (size_t u = 0; u < module.uniforms().size() && u < batch.uniforms.size(); ++u) {
    const ValueInfo& info = module.uniforms()[u];
    std::vector<uint32_t> dims;
    const ValueType* leaf = &info.value_type;
    while (leaf->is_array()) {
      dims.push_back(leaf->count);
      leaf = &leaf->elem();
    }
    if (!leaf->is_scalar() || leaf->scalar != Scalar::Float) continue;
    const std::vector<uint32_t>& words = batch.uniforms[u];
    for (uint64_t k = 0; k < words.size(); ++k) {
      const float v = bits_float(words[k]);
      if (std::isfinite(v)) continue;
      std::string index;
      for (size_t d = dims.size(), rest = k; d-- > 0; rest /= dims[d])
        index = fmt::format("[{}]", rest % dims[d]) + index;
      found.push_back(fmt::format("{}{} = {}", info.name, index, v));
      break;
    }
  }
  if (found.empty()) return "";
  return fmt::format("; the data hold {}", fmt::join(found, ", "));
}

}  // namespace

uint32_t field_offset(const ValueType& t, const std::string& name) {
  const ValueField* field = t.field(name);
  if (!field) throw std::out_of_range("no field " + name);  // the sampler's own types: a bug
  return field->offset;
}

double local_static_utilization(const std::vector<uint32_t>& grads, uint32_t chains,
                                uint32_t draws) {
  uint64_t done = 0, slots = 0;
  for (uint32_t t = 0; t < draws; ++t) {
    uint32_t longest = 0;
    for (uint32_t chain = 0; chain < chains; ++chain) {
      const uint32_t g = grads[uint64_t{chain} * draws + t];
      done += g;
      longest = std::max(longest, g);
    }
    slots += uint64_t{longest} * chains;
  }
  return slots ? static_cast<double>(done) / static_cast<double>(slots) : 0.0;
}

GradientUtilization gradient_utilization(const BackendRun& run, uint32_t chains) {
  const RunStats& stats = run.result.stats;
  for (size_t b = 0; b < run.block_names.size(); ++b)
    if ((run.block_names[b] == "log_density.b0" ||
         run.block_names[b] == "log_density.value_and_grad.b0") &&
        b < stats.block_utilization.size() && b < stats.block_lanes.size() &&
        stats.block_executions[b] > 0)
      return {true, stats.block_utilization[b],
              static_cast<double>(stats.block_lanes[b]) /
                  (static_cast<double>(chains) * static_cast<double>(stats.block_executions[b]))};
  return {};
}

Expected<SampleProgram> load_sample_program(const std::string& model_path) {
  auto text = read_file(model_path);
  if (!text) return text.failure();
  // The model alone first: its errors point at its own lines.
  auto model = compile_text(*text, model_path, "");
  if (!model) return model.failure();
  if (auto s = check_sampler_names(*text, model_path); !s) return s.failure();
  for (const FunctionInfo& f : (*model)->functions())
    if (f.name == "main")
      return Error{fmt::format("{}:{}:{}: a model has no 'main' (the sampler's entry); {}",
                               model_path, f.line, f.col, kContract)};
  if ((*model)->emit_record().words > 0)
    return Error{
        fmt::format("{}: a model does not emit records (the sampler's draws are its "
                    "records); {}",
                    model_path, kContract)};
  const auto& functions = (*model)->functions();
  const auto density = std::find_if(functions.begin(), functions.end(),
                                    [](const FunctionInfo& f) { return f.name == "log_density"; });
  if (density == functions.end())
    return Error{fmt::format("{}: no function 'log_density'; {}", model_path, kContract)};
  const FunctionInfo& fn = *density;
  const auto off_contract = [&](const std::string& why) {
    return Error{fmt::format("{}:{}:{}: 'log_density' does not fit the model contract{}: {}",
                             model_path, fn.line, fn.col, why, kContract)};
  };
  if (fn.params.size() != 1) return off_contract(" (it takes one parameter)");
  const ValueType& param = fn.params[0].value_type;
  const ValueType& result = fn.result.value_type;
  const bool derived = result.is_scalar() && result.scalar == Scalar::Float;

  SampleProgram out;
  if (param.is_struct()) {
    if (!derived)
      return off_contract(
          " (over a struct of parameters it returns float: the gradient is "
          "derived)");
    auto layout = sample::struct_layout(param);
    if (!layout) {
      const TextDeclaration at =
          find_declaration(*text, param.struct_name).value_or(TextDeclaration{});
      return Error{
          fmt::format("{}:{}:{}: {}; {}", model_path, at.line, at.col, layout.error(), kContract)};
    }
    out.layout = std::move(*layout);
  } else {
    bool fits = is_float_array(param) &&
                (derived || (result.is_struct() && result.struct_name == "LogDensity"));
    if (fits && !derived) {
      const ValueField *value = result.field("value"), *grad = result.field("grad");
      fits = result.fields.size() == 2 && value && grad && value->type.is_scalar() &&
             value->type.scalar == Scalar::Float && grad->type.spelling() == fn.params[0].type;
    }
    if (!fits) return off_contract("");
    out.layout = sample::flat_layout(param.count);
    if (auto s = check_dimension(*text, model_path, param.count); !s) return s.failure();
  }

  auto combined = compile_text(*text + sample::sampler_glue(out.layout, !derived) + kNutsSource,
                               model_path + " + nuts.ab", "main", kSamplerFirst);
  if (!combined) return combined.failure();
  out.module = std::move(*combined);
  out.dimension = out.layout.dimension();
  return out;
}

Expected<Batch> sampler_batch(const SampleProgram& loaded, const SampleCommand& c) {
  const Module& module = *loaded.module;
  const uint32_t D = loaded.dimension;
  Batch batch;
  batch.lanes = c.chains;
  std::vector<Rounding> rounded;
  auto uniforms = bind_uniforms(module.uniforms(), c.uniforms, &rounded);
  if (!uniforms) return uniforms.failure();
  // The model computes in float32: say once how much that changed the data.
  for (const Rounding& r : rounded)
    fmt::print(stderr,
               "note: uniform '{}' was rounded from float64 to float32 (largest relative change "
               "{:.2g}, at element {})\n",
               r.uniform, r.relative_change, r.element);
  batch.uniforms = std::move(*uniforms);
  // main(init: float[D], random_init: bool, settings: nuts_Settings)
  std::vector<uint32_t> init(uint64_t{c.chains} * D, 0u);
  const bool random_init = c.init.empty();
  if (!random_init) {
    auto values = read_init(c.init, loaded.layout, c.chains);
    if (!values) return values.failure();
    for (uint32_t chain = 0; chain < c.chains; ++chain) {
      const std::vector<float> row(values->begin() + uint64_t{chain} * D,
                                   values->begin() + uint64_t{chain + 1} * D);
      // A chain started at NaN, infinity or on a bound never moves: every proposal diverges.
      auto u = sample::unconstrain(loaded.layout, row);
      if (!u) return Error{fmt::format("--init '{}', chain {}: {}", c.init, chain, u.error())};
      for (uint32_t j = 0; j < D; ++j)
        init[uint64_t{chain} * D + j] = float_bits((*u)[j]);
    }
  }
  const ValueType& settings_type = module.inputs().at(2).value_type;
  std::vector<uint32_t> settings(settings_type.words, 0u);
  auto set = [&](const char* field, uint32_t word) {
    settings[field_offset(settings_type, field)] = word;
  };
  set("warmup", c.warmup);
  set("draws", c.draws);
  set("leaf_steps", c.leaf_steps);
  set("max_depth", c.max_depth);
  set("target_accept", float_bits(static_cast<float>(c.target_accept)));
  set("step_size", float_bits(static_cast<float>(c.step_size)));
  set("adapt_metric", c.adapt_metric ? 1u : 0u);
  set("search_step", c.search_step ? 1u : 0u);
  batch.inputs.push_back(init);
  batch.inputs.emplace_back(c.chains, random_init ? 1u : 0u);
  batch.inputs.emplace_back();
  for (uint32_t chain = 0; chain < c.chains; ++chain)
    batch.inputs.back().insert(batch.inputs.back().end(), settings.begin(), settings.end());
  return batch;
}

int sample_command(const SampleCommand& c) {
  const auto started = std::chrono::steady_clock::now();
  catch_interrupts();  // a Ctrl-C while the kernels compile is kept for the first step boundary
  if (c.chains == 0) {
    fmt::print(stderr, "error: --chains must be at least 1\n");
    return 2;
  }
  // The trajectory's recursion takes max_depth frames, main and the leaf a few more.
  const uint32_t recursion_depth = c.max_depth + 8;
  if (c.stack_depth && c.stack_depth < recursion_depth)
    return refuse(Error{fmt::format(
        "--stack-depth {} is less than the tree's recursion needs (--max-depth {} + 8 = {})",
        c.stack_depth, c.max_depth, recursion_depth)});
  const Backend* backend = find_backend(c.backend);
  if (!backend) return refuse(Error{fmt::format("unknown backend '{}'", c.backend)});
  auto loaded = load_sample_program(c.model);
  if (!loaded) return refuse(loaded.failure());
  const Module& module = *loaded->module;
  const uint32_t D = loaded->dimension;

  auto built = sampler_batch(*loaded, c);
  if (!built) return refuse(built.failure());
  const Batch& batch = *built;

  // Per-draw statistics, [chains, draws] each, kept in memory until the end: check they fit
  // before anything runs or any file is touched.
  const uint64_t cells = uint64_t{c.chains} * c.draws;
  const std::vector<DrawStatistic> stat_files = draw_statistics();
  const uint64_t stats_bytes = cells * 4 * stat_files.size();
  const uint64_t available = uint64_t(::sysconf(_SC_AVPHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
  if (stats_bytes > available)
    return refuse(Error{fmt::format(
        "{} chains x {} draws keep {:.1f} GiB of per-draw statistics in memory, more than the "
        "{:.1f} GiB available: use fewer draws or chains",
        c.chains, c.draws, static_cast<double>(stats_bytes) / (1u << 30),
        static_cast<double>(available) / (1u << 30))});
  const uint64_t file_bytes = kNpyHeaderAllowance * (stat_files.size() + 2) +
                              cells * (uint64_t{D} * 4 + stat_files.size() * 4);
  auto files = FitFiles::open(c.out_dir.empty() ? "." : c.out_dir, file_bytes);
  if (!files) return refuse(files.failure());
  FitFiles& fit = **files;
  warn_about_short_warmup(c);

  DrawsFile draws_file;
  if (auto s = draws_file.open(fit.staged("draws.npy"), c.chains, c.draws, D); !s)
    return refuse(s.failure());

  const ValueType& record = module.emit_record().value_type;
  const uint32_t at_q = field_offset(record, "q");
  std::vector<std::vector<uint32_t>> stats;
  std::vector<uint32_t> at_stat;
  for (const DrawStatistic& f : stat_files) {
    stats.emplace_back(cells, f.missing);
    at_stat.push_back(field_offset(record, f.field));
  }
  std::vector<uint32_t> next_draw(c.chains, 0);
  uint64_t received = 0;
  SampleProgress progress(c, started);

  RunOptions options;
  options.seed = c.seed;
  options.threads = c.threads;
  options.stack_depth = c.stack_depth ? c.stack_depth : recursion_depth;
  options.max_steps = c.max_steps;
  options.on_emit = [&](uint32_t chain, const uint32_t* r) {
    const uint32_t i = next_draw[chain]++;
    if (i >= c.draws) return;
    draws_file.write(chain, i, r + at_q);
    const uint64_t k = uint64_t{chain} * c.draws + i;
    for (size_t f = 0; f < stats.size(); ++f)
      stats[f][k] = r[at_stat[f]];
    ++received;
    progress.drew(received, next_draw);
  };
  // Polled at step boundaries: Ctrl-C, a failed write and the progress line while no draw comes.
  options.should_stop = [&] {
    progress.tick(received, next_draw);
    return interrupt_signal() != 0 || !draws_file.error().empty();
  };
  DeviceOptions device = c.device;
  device.progress = c.format == "table";
  const BackendRun run = backend->run(loaded->module, batch, options, device);
  progress.finish();
  const int signal = interrupt_signal();
  if (!draws_file.error().empty()) return report_error(Error{draws_file.error()});
  if (!run.error.empty()) {
    if (signal) return interrupted_without_draws(signal, fit);
    return report_error(Error{run.error});
  }

  // Which chains finished; what the others left. A missing draw is NaN, never a placeholder.
  std::vector<uint8_t> faulted(c.chains, 0);
  for (const LaneError& e : run.result.errors) {
    faulted[e.lane] = 1;
    fmt::print(stderr, "chain {} faulted: {} in {} at line {} after {} of {} draws\n", e.lane,
               fault_text(e), e.function, e.line, std::min(next_draw[e.lane], c.draws), c.draws);
  }
  // A chain with no finite starting point returned without sampling (nuts.ab's main).
  const ValueType& chain_type = module.output().value_type;
  const uint32_t chain_words = chain_type.words;
  const auto chain_result = [&](uint32_t chain, const char* field) {
    return run.result.outputs[uint64_t{chain} * chain_words + field_offset(chain_type, field)];
  };
  nlohmann::ordered_json refused = nlohmann::ordered_json::array();
  for (uint32_t chain = 0; chain < c.chains && !run.result.stopped; ++chain) {
    if (faulted[chain] || chain_result(chain, "init_ok")) continue;
    faulted[chain] = 1;
    const uint32_t tries = chain_result(chain, "init_tries");
    const float logp = bits_float(chain_result(chain, "init_logp"));
    const std::string where = c.init.empty()
                                  ? fmt::format(
                                        "at {} random initial points (uniform in [-2, 2] on the "
                                        "unconstrained scale; the last had log density {})",
                                        tries, logp)
                                  : fmt::format("at its --init point (log density {})", logp);
    fmt::print(stderr, "chain {} refused: the log density or its gradient is not finite {}{}\n",
               chain, where, non_finite_data(module, batch));
    refused.push_back({{"chain", chain}, {"init_tries", tries}, {"log_density", logp}});
  }
  for (uint32_t chain = 0; chain < c.chains; ++chain)
    if (!draws_file.fill_missing(chain, std::min(next_draw[chain], c.draws)))
      return report_error(Error{draws_file.error()});
  if (received == 0) {
    if (signal) return interrupted_without_draws(signal, fit);
    return report_error(Error{fmt::format(
        "no chain produced a draw (every chain faulted or was refused); the files in '{}' are "
        "unchanged",
        c.out_dir.empty() ? "." : c.out_dir)});
  }
  // The summary uses the chains that did not fault, over the draws all of them have (fewer than
  // --draws only when the run was stopped).
  std::vector<uint32_t> used_chains;
  uint32_t used_draws = c.draws;
  for (uint32_t chain = 0; chain < c.chains; ++chain)
    if (!faulted[chain]) {
      used_chains.push_back(chain);
      used_draws = std::min(used_draws, next_draw[chain]);
    }
  if (used_chains.empty()) used_draws = 0;
  std::vector<sample::NamedSummary> parameters;
  for (uint32_t j = 0; j < D; ++j) {
    auto values = draws_file.parameter(j, used_draws, used_chains);
    if (!values) return report_error(values.failure());
    auto summary = sample::summarize(*values, used_chains.size(), used_draws);
    if (!summary) return report_error(summary.failure());
    parameters.push_back({loaded->layout.names[j], *summary});
  }

  // Stan's checks of the fit, over the chains and draws the summary uses.
  sample::FitStatistics fit_stats;
  fit_stats.chains = static_cast<uint32_t>(used_chains.size());
  fit_stats.draws = used_draws;
  fit_stats.max_depth = c.max_depth;
  const std::vector<uint32_t>& divergent = stats[statistic_index("divergent")];
  const std::vector<uint32_t>& depth = stats[statistic_index("depth")];
  const std::vector<uint32_t>& energy = stats[statistic_index("energy")];
  for (uint32_t chain : used_chains)
    for (uint32_t i = 0; i < used_draws; ++i) {
      const uint64_t k = uint64_t{chain} * c.draws + i;
      fit_stats.divergent.push_back(divergent[k] != 0);
      fit_stats.tree_depth.push_back(static_cast<int32_t>(depth[k]));
      fit_stats.energy.push_back(bits_float(energy[k]));
    }
  const std::vector<sample::FitWarning> warnings = sample::fit_warnings(fit_stats, parameters);

  // Chain totals from main's result (a chain that did not finish has none).
  const size_t grads_statistic = statistic_index("grads");
  uint64_t total_grads = 0, divergences = 0;
  std::vector<double> step_sizes;
  for (uint32_t chain = 0; chain < c.chains; ++chain) {
    if (faulted[chain] || run.result.stopped) {
      // A chain that did not finish counts the gradients of its draws (its warm-up's are lost).
      for (uint32_t i = 0; i < std::min(next_draw[chain], c.draws); ++i)
        total_grads += stats[grads_statistic][uint64_t{chain} * c.draws + i];
      step_sizes.push_back(std::nan(""));
      continue;
    }
    const uint32_t* w = run.result.outputs.data() + uint64_t{chain} * chain_words;
    total_grads += w[field_offset(chain_type, "grads")];
    divergences += w[field_offset(chain_type, "divergences")];
    step_sizes.push_back(bits_float(w[field_offset(chain_type, "step_size")]));
  }
  for (size_t f = 0; f < stat_files.size(); ++f)
    if (auto s = write_npy(fit.staged(stat_files[f].file), stat_files[f].type, {c.chains, c.draws},
                           stats[f]);
        !s)
      return report_error(s.failure());
  const std::vector<uint32_t>& grads = stats[grads_statistic];

  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double run_seconds = cli::run_seconds(run);
  const auto num = [](double v) {
    return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
  };
  nlohmann::ordered_json doc;
  doc["model"] = c.model;
  doc["backend"] = backend->name;
  doc["chains"] = c.chains;
  doc["draws"] = c.draws;
  doc["warmup"] = c.warmup;
  doc["seed"] = c.seed;
  doc["complete"] = !signal && !run.result.stopped && used_chains.size() == c.chains;
  doc["interrupted_by"] = signal ? nlohmann::ordered_json(::strsignal(signal)) : nullptr;
  std::vector<uint32_t> draws_per_chain(c.chains);
  for (uint32_t chain = 0; chain < c.chains; ++chain)
    draws_per_chain[chain] = std::min(next_draw[chain], c.draws);
  doc["draws_per_chain"] = draws_per_chain;
  doc["summary_chains"] = used_chains;
  doc["summary_draws_per_chain"] = used_draws;
  nlohmann::ordered_json params = nlohmann::ordered_json::array();
  for (const auto& [name, s] : parameters) {
    params.push_back({{"name", name},
                      {"mean", num(s.mean)},
                      {"sd", num(s.sd)},
                      {"mcse_mean", num(s.mcse_mean)},
                      {"q5", num(s.q5)},
                      {"q50", num(s.q50)},
                      {"q95", num(s.q95)},
                      {"rhat", num(s.rhat)},
                      {"ess_bulk", num(s.ess_bulk)},
                      {"ess_tail", num(s.ess_tail)}});
  }
  doc["parameters"] = std::move(params);
  nlohmann::ordered_json warned = nlohmann::ordered_json::array();
  for (const sample::FitWarning& w : warnings)
    warned.push_back({{"kind", w.kind}, {"message", w.message}});
  doc["warnings"] = std::move(warned);
  doc["gradient_evaluations"] = total_grads;
  doc["gradients_per_second"] = run_seconds > 0 ? total_grads / run_seconds : 0.0;
  doc["utilization"] = run.result.stats.utilization;
  const GradientUtilization grad_utilization = gradient_utilization(run, c.chains);
  const double static_utilization = local_static_utilization(grads, c.chains, c.draws);
  doc["gradient_utilization"] =
      grad_utilization.known ? nlohmann::ordered_json(grad_utilization.all) : nullptr;
  doc["gradient_utilization_live"] =
      grad_utilization.known ? nlohmann::ordered_json(grad_utilization.live) : nullptr;
  doc["local_static_utilization"] = static_utilization;
  doc["divergences"] = divergences;
  doc["faulted_chains"] = run.result.errors.size();
  nlohmann::ordered_json faults = nlohmann::ordered_json::array();
  for (const LaneError& e : run.result.errors)
    faults.push_back({{"chain", e.lane},
                      {"fault", fault_name(e.code)},
                      {"detail", e.detail},
                      {"function", e.function},
                      {"line", e.line},
                      {"draws", std::min(next_draw[e.lane], c.draws)}});
  doc["faults"] = std::move(faults);
  doc["refused_chains"] = std::move(refused);
  nlohmann::ordered_json sizes = nlohmann::ordered_json::array();
  for (double v : step_sizes)
    sizes.push_back(num(v));
  doc["step_sizes"] = std::move(sizes);
  doc["run_seconds"] = run_seconds;
  doc["wall_seconds"] = wall;
  if (auto s = write_file(fit.staged("summary.json"), doc.dump(2) + "\n"); !s)
    return report_error(s.failure());
  if (auto s = fit.commit(); !s) return report_error(s.failure());

  const int exit_code = signal ? 128 + signal : used_chains.empty() ? 1 : 0;
  if (signal)
    fmt::print(stderr,
               "stopped by {}: {} of {} draws written (per chain: {}); the missing draws are NaN\n",
               ::strsignal(signal), received, cells, fmt::join(draws_per_chain, " "));
  if (used_chains.empty())
    fmt::print(stderr, "error: every chain faulted or was refused: there is no summary\n");
  for (const sample::FitWarning& w : warnings)
    fmt::print(stderr, "warning: {}\n", w.message);
  if (c.format == "json") {
    fmt::print("{}\n", doc.dump());
    return exit_code;
  }
  fmt::print("{}", sample::format_summary_table(parameters));
  fmt::print("\n{} chains x {} draws ({} warm-up) on {}\n", c.chains, c.draws, c.warmup,
             backend->name);
  if (used_chains.size() < c.chains || used_draws < c.draws)
    fmt::print("  summary over          {} of {} chains, {} draws each\n", used_chains.size(),
               c.chains, used_draws);
  fmt::print("  gradient evaluations  {} ({:.3g} per second)\n", total_grads,
             run_seconds > 0 ? total_grads / run_seconds : 0.0);
  fmt::print("  batch utilization     {:.1f}%\n", run.result.stats.utilization * 100);
  if (grad_utilization.known)
    fmt::print(
        "  gradient utilization  {:.1f}% of chains, {:.1f}% of live chains (local static "
        "batching: {:.1f}%)\n",
        grad_utilization.all * 100, grad_utilization.live * 100, static_utilization * 100);
  fmt::print("  divergences           {}\n", divergences);
  if (!run.result.errors.empty())
    fmt::print("  faulted chains        {}\n", run.result.errors.size());
  fmt::print("  run time              {}, wall {}\n", format_seconds(run_seconds),
             format_seconds(wall));
  fmt::print("  written               {}, summary.json and per-draw statistics\n",
             fit.final_path("draws.npy"));
  return exit_code;
}

}  // namespace ab::cli
