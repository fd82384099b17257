// The sampler's library half (include/autobatch/sampler.h): the model contract checked, the
// sampler appended and compiled, the chains' batch built, the draws and statistics collected as
// they stream out, and the summary and Stan's warnings computed over the chains that finished.
#include "autobatch/sampler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <new>
#include <optional>
#include <random>
#include <regex>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "autobatch/transformed_data.h"
#include "autobatch/user_input.h"
#include "sampler/diagnostics.h"
#include "sampler/parameters.h"
#include "sampler/summary.h"

namespace ab::sample {

extern const char* const kNutsSource;  // sampler/nuts.ab (nuts_source.cpp.in)

namespace {

const char* const kContract =
    "a model defines fn log_density(q: float[D]) -> float over a flat vector, or fn "
    "log_density(p: Params) -> float over a struct of float and float-array fields (bounded as "
    "float<lower=A, upper=B>, or simplex[K], ordered[K], positive_ordered[K]), or with a "
    "hand-written gradient struct LogDensity { value: float, "
    "grad: float[D] } and fn log_density(q: float[D]) -> LogDensity (docs/nuts.md)";

// `text` compiled as `file` with `base`'s options; `entry` empty: only checked.
Expected<std::shared_ptr<const Module>> compile_text(const std::string& text,
                                                     const std::string& file,
                                                     const std::string& entry,
                                                     std::vector<std::string> first = {},
                                                     CompileOptions options = {}) {
  options.file = file;
  options.entry = entry;
  // Calls stay calls: the density is one callee that chains at different points of their trees
  // share, so they meet at every gradient (Radul et al. §4); inlined, each call site would have
  // its own copy and the chains at different sites would run it apart.
  options.inline_calls = false;
  options.functions_first = std::move(first);
  return Module::compile(text, options);
}

bool is_float_array(const ValueType& t) {
  return t.is_array() && t.elem().is_scalar() && t.elem().scalar == Scalar::Float;
}

// A declaration found in a model's text by a regex whose group 1 is the keyword and group 2 the
// name: the first match outside `//` comments, with the name's line and column.
struct TextDeclaration {
  int line = 1, col = 1;
  std::string keyword, name;
};
// `from_line`: the search starts there.
std::optional<TextDeclaration> find_in_text(const std::string& text, const std::regex& pattern,
                                            int from_line = 1) {
  int line = 1;
  for (size_t start = 0; start < text.size(); ++line) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string code = text.substr(start, end - start);
    code = code.substr(0, code.find("//"));
    if (std::smatch m; line >= from_line && std::regex_search(code, m, pattern))
      return TextDeclaration{line, static_cast<int>(m.position(2)) + 1, m[1].str(), m[2].str()};
    start = end + 1;
  }
  return std::nullopt;
}

// Names starting with nuts_ are the sampler's (sampler/nuts.ab): a model that declares one
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

// Where `name` is declared with `keyword` in the model's text, for messages about a declaration
// the compiler accepted but the sampler cannot use.
std::optional<TextDeclaration> find_declaration(const std::string& text, const std::string& name,
                                                const char* keyword = "struct") {
  return find_in_text(text, std::regex(fmt::format(R"(\b({})\s+({})\b)", keyword, name)));
}

// A parameter becomes a column of the CmdStan CSV under its own name, and Stan's own columns
// (lp__, stepsize__, ...) end in "__": a field named so would duplicate one, so it is refused
// at its declaration, as Stan refuses such identifiers.
Status check_parameter_names(const std::string& text, const std::string& model_path,
                             const ValueType& params) {
  for (const ValueField& f : params.fields) {
    if (f.name.size() < 2 || f.name.substr(f.name.size() - 2) != "__") continue;
    const int struct_line =
        find_declaration(text, params.struct_name).value_or(TextDeclaration{}).line;
    const TextDeclaration at =
        find_in_text(text, std::regex(fmt::format(R"(()\b({})\s*:)", f.name)), struct_line)
            .value_or(TextDeclaration{struct_line});
    return Error{fmt::format(
        "{}:{}:{}: parameter '{}': names ending in '__' are reserved for the sampler's own "
        "columns (lp__, stepsize__, ... in the CmdStan CSV), as in Stan; rename it",
        model_path, at.line, at.col, f.name)};
  }
  return Ok{};
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

// The model's `fn transformed(p: Params) -> T` and `fn generated(p: Params) -> G`, when it
// defines them: their results' fields become columns after the parameters' (docs/nuts.md).
Status add_model_quantities(const std::vector<FunctionInfo>& functions, const ValueType& param,
                            const std::string& model_path, ParameterLayout& layout) {
  for (const bool generated : {false, true}) {
    const char* name = generated ? "generated" : "transformed";
    const auto f = std::find_if(functions.begin(), functions.end(),
                                [&](const FunctionInfo& fn) { return fn.name == name; });
    if (f == functions.end()) continue;
    const auto refuse = [&](const std::string& why) {
      return Error{fmt::format("{}:{}:{}: '{}' {}; it is fn {}(p: {}) -> a struct (docs/nuts.md)",
                               model_path, f->line, f->col, name, why, name,
                               param.is_struct() ? param.struct_name : "Params")};
    };
    if (!param.is_struct())
      return refuse("needs a struct of parameters: log_density takes a flat float[D]");
    if (f->params.size() != 1 || f->params[0].value_type.spelling() != param.spelling())
      return refuse(fmt::format("takes the struct of parameters, {}, as log_density does",
                                param.struct_name));
    if (!f->result.value_type.is_struct()) return refuse("returns a struct");
    if (auto s = add_quantities(layout, f->result.value_type, generated); !s)
      return refuse(s.error());
  }
  return Ok{};
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

// The draws in memory, [chains, draws, D]: the DrawSink run() uses when the caller gives none.
class MemorySink : public DrawSink {
 public:
  MemorySink(std::vector<float>& data, uint32_t draws, uint32_t dimension)
      : data_(data), draws_(draws), dimension_(dimension) {}
  bool write(uint32_t chain, uint32_t draw, const float* q) override {
    std::copy(q, q + dimension_, data_.begin() + at(chain, draw));
    return true;
  }
  bool fill_missing(uint32_t chain, uint32_t from) override {
    std::fill(data_.begin() + at(chain, from), data_.begin() + at(chain, draws_), std::nanf(""));
    return true;
  }
  std::string error() const override { return ""; }
  Expected<std::vector<double>> parameter(uint32_t j, uint32_t used_draws,
                                          const std::vector<uint32_t>& used_chains) override {
    std::vector<double> out;
    out.reserve(uint64_t{used_draws} * used_chains.size());
    for (uint32_t chain : used_chains)
      for (uint32_t i = 0; i < used_draws; ++i)
        out.push_back(data_[at(chain, i) + j]);
    return out;
  }

 private:
  uint64_t at(uint32_t chain, uint32_t draw) const {
    return (uint64_t{chain} * draws_ + draw) * dimension_;
  }
  std::vector<float>& data_;
  uint32_t draws_, dimension_;
};

// What to do about a chain whose gradient's tape outgrew the stack depth `depth`: the loop
// (differentiate.cpp puts a tape's pushes at its loop's line) and the option; "" for any other
// fault.
std::string tape_advice(const LaneError& e, const std::string& file, const Options& o,
                        uint32_t depth) {
  const auto ends_with = [&](const std::string& suffix) {
    return e.function.size() > suffix.size() &&
           e.function.compare(e.function.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (e.code != Fault::StackOverflow || !(ends_with(".vjp") || ends_with(".value_and_grad")))
    return "";
  const std::string given = o.stack_depth
                                ? fmt::format("the stack depth given, {}", depth)
                                : fmt::format(
                                      "the stack depth {}, twice what the gradient needed at the "
                                      "initial points plus 8,",
                                      depth);
  return fmt::format(
      ": the gradient's tape for the loop at {}:{} (a value per iteration: a loop that is not a "
      "sum, docs/nuts.md \"Tapes\") outgrew {}; raise it with --stack-depth (Options::"
      "stack_depth), e.g. {}",
      file, e.line, given, std::min<uint64_t>(uint64_t{depth} * 4, UINT32_MAX));
}

// The model with nuts_init_bounds(x) as its entry (sampler/parameters.h, init_bounds_glue), or
// null when no bound depends on another parameter.
Expected<std::shared_ptr<const Module>> init_bounds_module(const std::string& model_and_glue,
                                                           const ParameterLayout& layout,
                                                           const std::string& model_path,
                                                           const CompileOptions& options) {
  const std::string bounds = init_bounds_glue(layout);
  if (bounds.empty()) return std::shared_ptr<const Module>();
  return compile_text(model_and_glue + bounds, model_path, "nuts_init_bounds", {}, options);
}

}  // namespace

// ---- the model ----

Expected<std::shared_ptr<const Model>> Model::load(
    const std::string& path, bool vectorize_loops,
    const std::map<std::string, double>& data_constants) {
  FileContents file = read_regular_file(path);
  if (!file.ok()) return Error{fmt::format("cannot read '{}': {}", path, file.error)};
  return compile(file.bytes, path, vectorize_loops, data_constants);
}

Expected<std::shared_ptr<const Model>> Model::compile(
    const std::string& text, const std::string& model_path, bool vectorize_loops,
    const std::map<std::string, double>& data_constants) {
  CompileOptions options;
  options.vectorize_loops = vectorize_loops;
  options.data_constants = data_constants;
  // The model alone first: its errors point at its own lines.
  auto model = compile_text(text, model_path, "", {}, options);
  if (!model) return model.failure();
  if (auto s = check_sampler_names(text, model_path); !s) return s.failure();
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

  ParameterLayout layout;
  std::shared_ptr<Model> out(new Model());
  if (param.is_struct()) {
    if (!derived)
      return off_contract(
          " (over a struct of parameters it returns float: the gradient is "
          "derived)");
    auto structured = struct_layout(param);
    if (!structured) {
      const TextDeclaration at =
          find_declaration(text, param.struct_name).value_or(TextDeclaration{});
      return Error{fmt::format("{}:{}:{}: {}; {}", model_path, at.line, at.col, structured.error(),
                               kContract)};
    }
    layout = std::move(*structured);
    if (auto s = check_parameter_names(text, model_path, param); !s) return s.failure();
    if (auto s = add_model_quantities(functions, param, model_path, layout); !s) return s.failure();
    for (const ValueField& f : param.fields) {
      Field field{f.name, {}, 1};
      for (const ValueType* t = &f.type; t->is_array(); t = &t->elem()) {
        field.shape.push_back(t->count);
        field.coordinates *= t->count;
      }
      out->fields_.push_back(std::move(field));
    }
  } else {
    bool fits = is_float_array(param) &&
                (derived || (result.is_struct() && result.struct_name == "LogDensity"));
    if (fits && !derived) {
      const ValueField *value = result.field("value"), *grad = result.field("grad");
      fits = result.fields.size() == 2 && value && grad && value->type.is_scalar() &&
             value->type.scalar == Scalar::Float && grad->type.spelling() == fn.params[0].type;
    }
    if (!fits) return off_contract("");
    layout = flat_layout(param.count);
    if (auto s = add_model_quantities(functions, param, model_path, layout); !s) return s.failure();
    if (auto s = check_dimension(text, model_path, param.count); !s) return s.failure();
    out->fields_.push_back(Field{"q", {param.count}, param.count});
  }

  const std::string glue = sampler_glue(layout, !derived);
  // Compiled with Stan's rejection: a density's domain error is a NaN density, which the
  // sampler takes for a divergence (docs/nuts.md, "A density's domain error").
  out->strict_options_ = options;
  options.reject_domain_errors = true;
  auto combined = compile_text(text + glue + kNutsSource, model_path + " + nuts.ab", "main",
                               kSamplerFirst, options);
  if (!combined) return combined.failure();
  auto probe = compile_text(text + glue, model_path, "nuts_density", {}, options);
  if (!probe) return probe.failure();
  auto init_bounds = init_bounds_module(text + glue, layout, model_path, options);
  if (!init_bounds) return init_bounds.failure();
  out->init_bounds_ = std::move(*init_bounds);
  out->module_ = std::move(*combined);
  out->density_ = std::move(*probe);
  out->density_source_ = text + glue;
  out->file_ = model_path;
  out->names_ = layout.names;
  out->names_.insert(out->names_.end(), layout.quantity_names.begin(), layout.quantity_names.end());
  out->bounds_ = layout.bounds;
  out->unconstrained_dimension_ = layout.unconstrained_dimension();
  out->layout_ = std::make_shared<const ParameterLayout>(std::move(layout));
  return std::shared_ptr<const Model>(std::move(out));
}

Expected<std::vector<float>> Model::unconstrain(
    std::span<const float> constrained, const std::vector<std::vector<uint32_t>>& data) const {
  std::vector<float> x(constrained.begin(), constrained.end());
  if (!init_bounds_ || x.size() != parameter_count()) return sample::unconstrain(*layout_, x);
  // The dependent bounds at x, on the interpreter (the oracle) as the chains compute them.
  Batch one;
  one.lanes = 1;
  one.inputs.emplace_back();
  for (float v : x)
    one.inputs[0].push_back(float_bits(v));
  one.uniforms = data;
  if (data.size() != init_bounds_->uniforms().size())
    return Error{"the bounds that depend on other parameters need the model's data"};
  auto r = init_bounds_->run_cpu(one, RunOptions{}, CpuBackend::Interpreter);
  if (!r) return r.failure();
  if (!r->errors.empty())
    return Error{fmt::format("the bounds that depend on other parameters fault at this point: {}",
                             fault_text(r->errors.front()))};
  std::vector<float> bounds;
  for (uint32_t w : r->outputs)
    bounds.push_back(bits_float(w));
  return sample::unconstrain(*layout_, x, &bounds);
}

std::vector<uint8_t> Model::structural_constants() const {
  return sample::structural_constants(*layout_);
}

Expected<uint32_t> Model::gradient_stack_depth(const std::vector<std::vector<uint32_t>>& data,
                                               std::span<const float> points, uint32_t threads,
                                               uint64_t max_steps) const {
  const uint32_t D = unconstrained_dimension();
  Batch probe;
  probe.lanes = static_cast<uint32_t>(points.size() / D);
  probe.uniforms = data;
  probe.inputs.emplace_back();
  for (float x : points)
    probe.inputs[0].push_back(float_bits(x));
  // Whether every point's evaluation fits in `depth`; any other fault (an index out of range,
  // a loop that never ends) is the run's to report, not the probe's. The run's own step budget
  // bounds each evaluation, so a log density that never returns costs the probe no more than it
  // costs a chain's first gradient.
  const auto fits = [&](uint32_t depth) -> Expected<bool> {
    RunOptions options;
    options.stack_depth = depth;
    options.threads = threads;
    options.max_steps = max_steps;
    auto ran = density_->run_cpu(probe, options, CpuBackend::Vm);
    if (!ran) return ran.failure();
    for (const LaneError& e : ran->errors)
      if (e.code == Fault::StackOverflow) return false;
    return true;
  };
  // Grow by 4 until it fits, then bisect: the exact need in O(log need) evaluations.
  constexpr uint32_t kLimit = 1u << 20;
  uint32_t fails = 0, passes = 16;
  for (;;) {
    auto ok = fits(passes);
    if (!ok) return ok.failure();
    if (*ok) break;
    if (passes >= kLimit) return 0u;
    fails = passes;
    passes *= 4;
  }
  while (passes - fails > 1) {
    const uint32_t mid = fails + (passes - fails) / 2;
    auto ok = fits(mid);
    if (!ok) return ok.failure();
    (*ok ? passes : fails) = mid;
  }
  return passes;
}

std::string Model::rejection_at(const std::vector<std::vector<uint32_t>>& data,
                                std::span<const float> point) const {
  // Compiled again without rejection, so the domain check faults and names itself; only for a
  // refused chain, so the compile costs nothing in a run that needs none.
  auto strict = compile_text(density_source_, file_, "nuts_density", {}, strict_options_);
  if (!strict) return "";
  Batch batch;
  batch.lanes = 1;
  batch.uniforms = data;
  batch.inputs.emplace_back();
  for (float x : point)
    batch.inputs[0].push_back(float_bits(x));
  RunOptions options;
  options.max_steps = kProbeMaxSteps;
  options.stack_depth = 1u << 16;
  auto ran = (*strict)->run_cpu(batch, options, CpuBackend::Interpreter);
  if (!ran || ran->errors.empty()) return "";
  const LaneError& e = ran->errors[0];
  return fmt::format("{} in {} at {}:{}", fault_text(e), e.function, file_, e.line);
}

// ---- a run ----

namespace {

// `name` (the header's spelling) as `names` spells it: leaf_steps or --leaf-steps.
std::string spelled(std::string name, OptionNames names) {
  if (names == OptionNames::Library) return name;
  std::replace(name.begin(), name.end(), '_', '-');
  return "--" + name;
}

// The options' ranges: check_options's, and the CLI's help (option_range).
struct Range {
  std::string_view name;
  double min, max;
};
constexpr Range kRanges[] = {{"chains", 1, 1u << 20},        {"draws", 1, 1u << 24},
                             {"warmup", 0, 1u << 24},        {"leaf_steps", 1, 1000},
                             {"max_depth", 1, 30},           {"max_steps", 1, UINT32_MAX},
                             {"target_accept", 0.05, 0.995}, {"step_size", 1e-8, 1e4},
                             {"step_jitter", 0, 1},          {"stack_depth", 0, 1u << 24}};

const Range& range_of(std::string_view name) {
  for (const Range& r : kRanges)
    if (r.name == name) return r;
  throw std::out_of_range(fmt::format("no option {}", name));  // a caller's bug
}

}  // namespace

Expected<uint32_t> stack_depth_for(const Model& model, const Batch& batch, const Options& o) {
  if (o.stack_depth) return o.stack_depth;
  const uint32_t D = model.unconstrained_dimension();
  std::vector<float> points;
  if (o.init.empty()) {
    std::mt19937_64 random(o.seed);
    std::uniform_real_distribution<float> coordinate(-2.0f, 2.0f);
    for (uint32_t k = 0; k < 8 * D; ++k)
      points.push_back(coordinate(random));
  } else {  // make_batch's unconstrained initial points, the first 64 chains'
    const std::vector<uint32_t>& init = batch.inputs.at(0);
    for (uint64_t k = 0; k < std::min<uint64_t>(init.size(), 64ull * D); ++k)
      points.push_back(bits_float(init[k]));
  }
  auto need = model.gradient_stack_depth(batch.uniforms, points, o.threads,
                                         std::min(o.max_steps, Model::kProbeMaxSteps));
  if (!need) return need.failure();
  // Twice the need: a loop whose trip count depends on the parameters may run longer elsewhere.
  const uint64_t measured = 2 * uint64_t{*need} + 8;
  return static_cast<uint32_t>(
      std::max<uint64_t>(recursion_depth(o), std::min<uint64_t>(measured, UINT32_MAX)));
}

std::string option_range(std::string_view name) {
  const Range& r = range_of(name);
  return fmt::format("{} to {}", r.min, r.max);
}

Status check_options(const Options& o, OptionNames names) {
  const auto not_in = [&](std::string_view name, double value, double min, double max) {
    return Error{fmt::format("{} {} is not in [{}, {}]", spelled(std::string(name), names), value,
                             min, max)};
  };
  const std::pair<std::string_view, double> values[] = {
      {"chains", o.chains},
      {"draws", o.draws},
      {"warmup", o.warmup},
      {"leaf_steps", o.leaf_steps},
      {"max_depth", o.max_depth},
      {"max_steps", static_cast<double>(o.max_steps)},
      {"target_accept", o.target_accept},
      {"step_size", o.step_size},
      {"step_jitter", o.step_jitter}};
  for (const auto& [name, value] : values)
    if (const Range& r = range_of(name); !(value >= r.min && value <= r.max))  // NaN too
      return not_in(name, value, r.min, r.max);
  if (o.stack_depth && o.stack_depth < recursion_depth(o))
    return Error{fmt::format("{} {} is less than the tree's recursion needs ({} {} + 8 = {})",
                             spelled("stack_depth", names), o.stack_depth,
                             spelled("max_depth", names), o.max_depth, recursion_depth(o))};
  if (o.stack_depth > range_of("stack_depth").max)
    return not_in("stack_depth", o.stack_depth, recursion_depth(o), range_of("stack_depth").max);
  return Ok{};
}

uint32_t field_offset(const ValueType& t, const std::string& name) {
  const ValueField* field = t.field(name);
  if (!field) throw std::out_of_range("no field " + name);  // the sampler's own types: a bug
  return field->offset;
}

Expected<Batch> make_batch(const Model& model, std::vector<std::vector<uint32_t>> data,
                           const Options& o) {
  const Module& module = *model.module();
  const uint32_t P = model.parameter_count(), D = model.unconstrained_dimension();
  if (auto s = check_options(o); !s) return s.failure();
  // The model's transformed data, computed from the rest of its data (theirs may come empty).
  if (data.size() == module.uniforms().size())
    if (Status computed = compute_transformed_uniforms(model.data_module(), data); !computed)
      return computed.failure();
  if (data.size() != module.uniforms().size())
    return Error{fmt::format("the model has {} uniforms but {} were given",
                             module.uniforms().size(), data.size())};
  for (size_t u = 0; u < data.size(); ++u)
    if (data[u].size() != module.uniforms()[u].words)
      return Error{fmt::format("uniform '{}' needs {} words, got {}", module.uniforms()[u].name,
                               module.uniforms()[u].words, data[u].size())};
  Batch batch;
  batch.lanes = o.chains;
  batch.uniforms = std::move(data);
  // main(init: float[D], random_init: bool, settings: nuts_Settings)
  std::vector<uint32_t> init(uint64_t{o.chains} * D, 0u);
  const bool random_init = o.init.empty();
  if (!random_init) {
    if (o.init.size() != uint64_t{o.chains} * P)
      return Error{fmt::format("init holds {} values: {} chains x {} parameters are needed",
                               o.init.size(), o.chains, P)};
    for (uint32_t chain = 0; chain < o.chains; ++chain) {
      // A chain started at NaN, infinity or on a bound never moves: every proposal diverges.
      auto u = model.unconstrain(std::span(o.init).subspan(uint64_t{chain} * P, P), batch.uniforms);
      if (!u) return Error{fmt::format("chain {}: {}", chain, u.error())};
      for (uint32_t j = 0; j < D; ++j)
        init[uint64_t{chain} * D + j] = float_bits((*u)[j]);
    }
  }
  const ValueType& settings_type = module.inputs().at(2).value_type;
  std::vector<uint32_t> settings(settings_type.words, 0u);
  auto set = [&](const char* field, uint32_t word) {
    settings[field_offset(settings_type, field)] = word;
  };
  set("warmup", o.warmup);
  set("draws", o.draws);
  set("leaf_steps", o.leaf_steps);
  set("max_depth", o.max_depth);
  set("target_accept", float_bits(static_cast<float>(o.target_accept)));
  set("step_size", float_bits(static_cast<float>(o.step_size)));
  set("adapt_metric", o.adapt_metric ? 1u : 0u);
  set("search_step", o.search_step ? 1u : 0u);
  set("step_jitter", float_bits(static_cast<float>(o.step_jitter)));
  batch.inputs.push_back(init);
  batch.inputs.emplace_back(o.chains, random_init ? 1u : 0u);
  batch.inputs.emplace_back();
  for (uint32_t chain = 0; chain < o.chains; ++chain)
    batch.inputs.back().insert(batch.inputs.back().end(), settings.begin(), settings.end());
  return batch;
}

Runner cpu_runner(CpuBackend backend) {
  return [backend](const std::shared_ptr<const Module>& module, const Batch& batch,
                   const RunOptions& options) { return module->run_cpu(batch, options, backend); };
}

Runner vulkan_runner(std::shared_ptr<VulkanContext> context, VulkanOptions vulkan) {
  return vulkan_runner(std::vector<std::shared_ptr<VulkanContext>>{std::move(context)}, vulkan);
}

Runner vulkan_runner(std::vector<std::shared_ptr<VulkanContext>> contexts, VulkanOptions vulkan) {
  return [contexts, vulkan](const std::shared_ptr<const Module>& module, const Batch& batch,
                            const RunOptions& options) {
    return run_on_contexts(contexts, module, batch, options, vulkan);
  };
}

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// What a fit of `o` keeps in memory: the per-draw statistics (25 bytes a draw) and, without the
// caller's sink, the draws (4 bytes a coordinate).
double fit_bytes(const Options& o, uint32_t dimension, bool draws_in_memory) {
  const double cells = static_cast<double>(o.chains) * o.draws;
  return cells * (4.0 * 4 + 4 * 2 + 1) + (draws_in_memory ? cells * dimension * 4.0 : 0.0);
}

// The refusal of a fit too big for memory: how much it asks for, and what to reduce.
Error too_big(const Options& o, uint32_t dimension, bool draws_in_memory, const std::string& why) {
  return Error{fmt::format(
      "{} chains x {} draws{} need {:.1f} GiB of memory for the draws and their statistics, {}: "
      "use fewer chains or draws",
      o.chains, o.draws,
      draws_in_memory ? fmt::format(" x {} parameters", dimension) : std::string(),
      fit_bytes(o, dimension, draws_in_memory) / kGiB, why)};
}

Expected<Fit> run_fit(const Model& model, std::vector<std::vector<uint32_t>> data, const Options& o,
                      const Runner& runner, DrawSink* sink);

}  // namespace

Expected<Fit> run(const Model& model, std::vector<std::vector<uint32_t>> data, const Options& o,
                  const Runner& runner, DrawSink* sink) {
  if (auto s = check_options(o); !s) return s.failure();
  // Checked before anything is allocated: a fit larger than the machine's memory cannot be held,
  // and on Linux an allocation that big may succeed, only for the process to be killed later.
  const bool draws_in_memory = sink == nullptr;
  const double physical = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
  if (fit_bytes(o, model.dimension(), draws_in_memory) > physical)
    return too_big(o, model.dimension(), draws_in_memory,
                   fmt::format("more than this machine's {:.1f} GiB", physical / kGiB));
  try {
    return run_fit(model, std::move(data), o, runner, sink);
  } catch (const std::bad_alloc&) {
    return too_big(o, model.dimension(), draws_in_memory, "and the allocation failed");
  }
}

namespace {

// A fit before its run: the options as run (callbacks dropped), every draw and statistic missing.
Fit empty_fit(const Model& model, const Options& o, bool draws_in_memory) {
  const uint64_t cells = uint64_t{o.chains} * o.draws;
  Fit fit;
  fit.options = o;
  fit.options.on_draw = nullptr;
  fit.options.should_stop = nullptr;
  fit.chains = o.chains;
  fit.draws = o.draws;
  fit.dimension = model.dimension();
  fit.parameter_names = model.parameter_names();
  if (draws_in_memory) fit.draws_data.assign(cells * fit.dimension, std::nanf(""));
  DrawStatistics& s = fit.stats;
  s.lp.assign(cells, std::nanf(""));
  s.accept_stat.assign(cells, std::nanf(""));
  s.step_size.assign(cells, std::nanf(""));
  s.energy.assign(cells, std::nanf(""));
  s.tree_depth.assign(cells, -1);
  s.n_leapfrog.assign(cells, -1);
  s.divergent.assign(cells, 0);
  return fit;
}

// The emitted draws into the sink and the fit's statistics, as they come.
class DrawCollector {
 public:
  DrawCollector(const Module& module, const Options& o, Fit& fit, DrawSink& sink)
      : o_(o), fit_(fit), sink_(sink), next_draw_(o.chains, 0), q_(fit.dimension) {
    const ValueType& record = module.emit_record().value_type;
    at_q_ = field_offset(record, "q");
    at_lp_ = field_offset(record, "lp");
    at_accept_ = field_offset(record, "accept");
    at_step_ = field_offset(record, "step_size");
    at_energy_ = field_offset(record, "energy");
    at_depth_ = field_offset(record, "depth");
    at_grads_ = field_offset(record, "grads");
    at_divergent_ = field_offset(record, "divergent");
  }
  void emit(uint32_t chain, const uint32_t* r) {
    const uint32_t i = next_draw_[chain]++;
    if (i >= o_.draws) return;
    for (uint32_t j = 0; j < fit_.dimension; ++j)
      q_[j] = bits_float(r[at_q_ + j]);
    sink_.write(chain, i, q_.data());
    const uint64_t k = uint64_t{chain} * o_.draws + i;
    DrawStatistics& s = fit_.stats;
    s.lp[k] = bits_float(r[at_lp_]);
    s.accept_stat[k] = bits_float(r[at_accept_]);
    s.step_size[k] = bits_float(r[at_step_]);
    s.energy[k] = bits_float(r[at_energy_]);
    s.tree_depth[k] = static_cast<int32_t>(r[at_depth_]);
    s.n_leapfrog[k] = static_cast<int32_t>(r[at_grads_]);
    s.divergent[k] = r[at_divergent_] != 0;
    ++fit_.received;
    if (o_.on_draw) o_.on_draw(chain, i, fit_.received);
  }
  // The draws chain `chain` emitted (more than `draws` only if the sampler misbehaved).
  uint32_t next_draw(uint32_t chain) const { return next_draw_[chain]; }

 private:
  const Options& o_;
  Fit& fit_;
  DrawSink& sink_;
  std::vector<uint32_t> next_draw_;
  std::vector<float> q_;
  uint32_t at_q_ = 0, at_lp_ = 0, at_accept_ = 0, at_step_ = 0, at_energy_ = 0, at_depth_ = 0,
           at_grads_ = 0, at_divergent_ = 0;
};

// Which chains the summary leaves out (1): those that faulted, and those with no finite starting
// point (they returned without sampling, nuts.ab's main), each with its message.
std::vector<uint8_t> exclude_chains(const Model& model, const Batch& batch, const Options& o,
                                    const RunResult& result, const DrawCollector& draws, Fit& fit) {
  std::vector<uint8_t> excluded(o.chains, 0);
  for (const LaneError& e : result.errors) {
    excluded[e.lane] = 1;
    fit.chain_messages.push_back(
        fmt::format("chain {} faulted: {} in {} at line {} after {} of {} draws{}", e.lane,
                    fault_text(e), e.function, e.line, std::min(draws.next_draw(e.lane), o.draws),
                    o.draws, tape_advice(e, model.file(), o, fit.stack_depth)));
  }
  const Module& module = *model.module();
  const ValueType& chain_type = module.output().value_type;
  const auto chain_word = [&](uint32_t chain, const char* field) {
    return result.outputs[uint64_t{chain} * chain_type.words + field_offset(chain_type, field)];
  };
  for (uint32_t chain = 0; chain < o.chains && !result.stopped; ++chain) {
    if (excluded[chain] || chain_word(chain, "init_ok")) continue;
    excluded[chain] = 1;
    RefusedChain refused{chain, chain_word(chain, "init_tries"),
                         bits_float(chain_word(chain, "init_logp"))};
    const uint32_t at_q = field_offset(chain_type, "init_q");
    std::vector<float> last(model.unconstrained_dimension());
    for (size_t i = 0; i < last.size(); ++i)
      last[i] = bits_float(result.outputs[uint64_t{chain} * chain_type.words + at_q + i]);
    refused.fault = model.rejection_at(batch.uniforms, last);
    const std::string why = refused.fault.empty() ? "" : ", rejected there by " + refused.fault;
    const std::string where =
        o.init.empty()
            ? fmt::format(
                  "at {} random initial points (uniform in [-2, 2] on the "
                  "unconstrained scale; the last had log density {}{})",
                  refused.init_tries, refused.log_density, why)
            : fmt::format("at its initial point (log density {}{})", refused.log_density, why);
    fit.chain_messages.push_back(
        fmt::format("chain {} refused: the log density or its gradient is not finite {}{}", chain,
                    where, non_finite_data(module, batch)));
    fit.refused.push_back(refused);
  }
  return excluded;
}

// The summary over the chains that were not excluded, over the draws all of them have (fewer
// than `draws` only when the run was stopped), and Stan's checks of it.
Status summarize_fit(const Model& model, const std::vector<uint8_t>& excluded,
                     const DrawCollector& draws, DrawSink& sink, Fit& fit) {
  const Options& o = fit.options;
  fit.summary_draws = o.draws;
  for (uint32_t chain = 0; chain < o.chains; ++chain)
    if (!excluded[chain]) {
      fit.summary_chains.push_back(chain);
      fit.summary_draws = std::min(fit.summary_draws, draws.next_draw(chain));
    }
  if (fit.summary_chains.empty()) fit.summary_draws = 0;
  for (uint32_t j = 0; j < fit.dimension; ++j) {
    auto values = sink.parameter(j, fit.summary_draws, fit.summary_chains);
    if (!values) return values.failure();
    auto summary = summarize(*values, fit.summary_chains.size(), fit.summary_draws);
    if (!summary) return summary.failure();
    fit.summary.push_back({fit.parameter_names[j], *summary});
  }
  FitStatistics checked;
  checked.chains = static_cast<uint32_t>(fit.summary_chains.size());
  checked.draws = fit.summary_draws;
  checked.max_depth = o.max_depth;
  for (uint32_t chain : fit.summary_chains)
    for (uint32_t i = 0; i < fit.summary_draws; ++i) {
      const uint64_t k = uint64_t{chain} * o.draws + i;
      checked.divergent.push_back(fit.stats.divergent[k]);
      checked.tree_depth.push_back(fit.stats.tree_depth[k]);
      checked.energy.push_back(fit.stats.energy[k]);
    }
  // A coordinate its type fixes (a correlation factor's zeros) never changes by design.
  const std::vector<uint8_t> fixed = model.structural_constants();
  std::vector<NamedSummary> checked_columns;
  for (size_t j = 0; j < fit.summary.size(); ++j)
    if (j >= fixed.size() || !fixed[j]) checked_columns.push_back(fit.summary[j]);
  fit.warnings = fit_warnings(checked, checked_columns);
  return Ok{};
}

// Chain totals from main's result (a chain that did not finish has none).
void add_chain_totals(const Model& model, const RunResult& result,
                      const std::vector<uint8_t>& excluded, Fit& fit) {
  const Module& module = *model.module();
  const uint32_t unconstrained_dimension = model.unconstrained_dimension();
  const ValueType& chain_type = module.output().value_type;
  const DrawStatistics& s = fit.stats;
  for (uint32_t chain = 0; chain < fit.chains; ++chain) {
    if (excluded[chain] || result.stopped) {
      // A chain that did not finish counts the gradients of its draws (its warm-up's are lost)
      // and the divergences among them, as divergent.npy holds them.
      for (uint32_t i = 0; i < fit.draws_per_chain[chain]; ++i) {
        fit.gradient_evaluations += s.n_leapfrog[uint64_t{chain} * fit.draws + i];
        fit.divergences += s.divergent[uint64_t{chain} * fit.draws + i];
      }
      fit.step_sizes.push_back(std::nan(""));
      fit.inv_metrics.emplace_back();
      continue;
    }
    const uint32_t* w = result.outputs.data() + uint64_t{chain} * chain_type.words;
    fit.gradient_evaluations += w[field_offset(chain_type, "grads")];
    fit.divergences += w[field_offset(chain_type, "divergences")];
    fit.step_sizes.push_back(bits_float(w[field_offset(chain_type, "step_size")]));
    const uint32_t at_metric = field_offset(chain_type, "inv_metric");
    std::vector<float> metric(unconstrained_dimension);
    for (uint32_t j = 0; j < unconstrained_dimension; ++j)
      metric[j] = bits_float(w[at_metric + j]);
    fit.inv_metrics.push_back(std::move(metric));
  }
}

Expected<Fit> run_fit(const Model& model, std::vector<std::vector<uint32_t>> data, const Options& o,
                      const Runner& runner, DrawSink* sink) {
  auto built = make_batch(model, std::move(data), o);
  if (!built) return built.failure();
  const Batch& batch = *built;
  Fit fit = empty_fit(model, o, sink == nullptr);
  std::optional<MemorySink> memory;
  if (!sink) sink = &memory.emplace(fit.draws_data, o.draws, fit.dimension);
  DrawCollector draws(*model.module(), o, fit, *sink);

  RunOptions options;
  options.seed = o.seed;
  options.threads = o.threads;
  auto depth = stack_depth_for(model, batch, o);
  if (!depth) return depth.failure();
  fit.stack_depth = options.stack_depth = *depth;
  options.max_steps = o.max_steps;
  options.on_emit = [&](uint32_t chain, const uint32_t* r) { draws.emit(chain, r); };
  // A failed write stops the run as the caller's own stop does.
  options.should_stop = [&] {
    return !sink->error().empty() || (o.should_stop && o.should_stop());
  };
  auto ran = runner(model.module(), batch, options);
  if (!sink->error().empty()) return Error{sink->error()};
  // Memory for the stacks ran out (the backends say "reduce the batch size or the stack
  // depth"): in the sampler's words, with the depth that was measured.
  if (!ran && ran.error().find("stack depth") != std::string::npos)
    return Error{
        fmt::format("{} (here: fewer chains, or a --stack-depth (Options::stack_depth) "
                    "below this run's {}{})",
                    ran.error(), fit.stack_depth,
                    o.stack_depth ? "" : ", measured from the model's gradient's tape")};
  if (!ran) return ran.failure();
  const RunResult& result = *ran;
  fit.stopped = result.stopped;
  fit.run_stats = result.stats;
  fit.faults = result.errors;

  // Which chains finished; what the others left. A missing draw is NaN, never a placeholder.
  const std::vector<uint8_t> excluded = exclude_chains(model, batch, o, result, draws, fit);
  for (uint32_t chain = 0; chain < o.chains; ++chain) {
    fit.draws_per_chain.push_back(std::min(draws.next_draw(chain), o.draws));
    if (!sink->fill_missing(chain, fit.draws_per_chain.back())) return Error{sink->error()};
  }
  if (fit.received == 0) return fit;
  if (auto s = summarize_fit(model, excluded, draws, *sink, fit); !s) return s.failure();
  add_chain_totals(model, result, excluded, fit);
  return fit;
}

}  // namespace

}  // namespace ab::sample
