// autobatch._core: the C++ half of the Python module (python/autobatch/__init__.py is the other,
// docs/python.md). It converts between numpy arrays and the engine's words (batch.h: every value
// a flat run of 32-bit words, lane-major) and calls the public API only: Module::compile,
// Module::run_cpu, VulkanProgram/VulkanRun on one context per process, and the sampler library
// (autobatch/sampler.h).
//
// Every run releases the GIL; its should_stop callback takes it back at most every 50 ms to run
// Python's signal handlers (PyErr_CheckSignals), so Ctrl-C stops a run at its next step boundary
// and raises KeyboardInterrupt once the run has returned and its device state is freed. A Vulkan
// run's compile polls nothing (the driver's, for minutes on lavapipe): it runs on a worker thread
// while the caller polls, and a Ctrl-C during it returns at once (run_vulkan). The interpreter's
// exit stops the runs under way and waits for them (EngineCalls).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "autobatch/autobatch.h"
#include "autobatch/sampler.h"
#include "autobatch/transformed_data.h"

namespace py = pybind11;

namespace {

// A compile error: its message has file:line:col and the caret, as the CLI prints it.
struct CompileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- numpy <-> words ----

// A value's scalar leaves: an array of scalars is one leaf (its dims), a struct one leaf per
// field, recursively ("pos", "pos.x"); a field of structs in an array takes the array's dims
// first ("agents.pos" of agents: Agent[8] is [8, ...]), as the CLI's JSON lays them out.
struct Leaf {
  std::string name;
  uint32_t offset = 0;            // words from the value's start to element 0
  std::vector<uint32_t> dims;     // the leaf's array dimensions, outermost first
  std::vector<uint32_t> strides;  // words between neighbours along each of dims
  ab::Scalar scalar = ab::Scalar::Int;
  uint32_t elements() const {
    uint32_t n = 1;
    for (uint32_t d : dims)
      n *= d;
    return n;
  }
  // The word offset of element k (row-major over dims) from the value's start.
  uint32_t word(uint32_t k) const {
    uint32_t at = offset;
    for (size_t d = dims.size(); d-- > 0; k /= dims[d])
      at += (k % dims[d]) * strides[d];
    return at;
  }
};

void collect_leaves(const ab::ValueType& t, const std::string& name, uint32_t offset,
                    std::vector<uint32_t> dims, std::vector<uint32_t> strides,
                    std::vector<Leaf>& out) {
  if (t.is_struct()) {
    for (const ab::ValueField& f : t.fields)
      collect_leaves(f.type, name.empty() ? f.name : name + "." + f.name, offset + f.offset, dims,
                     strides, out);
    return;
  }
  if (t.is_array()) {
    dims.push_back(t.count);
    strides.push_back(t.elem().words);
    collect_leaves(t.elem(), name, offset, std::move(dims), std::move(strides), out);
    return;
  }
  if (t.is_void()) return;
  out.push_back(Leaf{name, offset, std::move(dims), std::move(strides), t.scalar});
}

std::vector<Leaf> leaves_of(const ab::ValueType& t) {
  std::vector<Leaf> out;
  collect_leaves(t, "", 0, {}, {}, out);
  return out;
}

py::dtype dtype_of(ab::Scalar s) {
  switch (s) {
    case ab::Scalar::Float:
      return py::dtype::of<float>();
    case ab::Scalar::Int:
      return py::dtype::of<int32_t>();
    case ab::Scalar::UInt:
      return py::dtype::of<uint32_t>();
    case ab::Scalar::Bool:
      return py::dtype::of<bool>();
  }
  return py::dtype::of<int32_t>();
}

std::string shape_text(const std::vector<py::ssize_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    out += std::to_string(shape[i]) + (shape.size() == 1 ? "," : i + 1 < shape.size() ? ", " : "");
  return out + ")";
}

// `value` as the leaf's words into `words` (lane-major, `stride` words a lane). `lead` is the
// leading dimensions (lanes for an input, none for a uniform). A wrong kind of dtype, a shape
// other than lead + dims, or an integer out of int32/uint32 range is a ValueError naming `what`.
void pack_leaf(const py::handle& value, const Leaf& leaf, const std::string& what,
               const std::vector<py::ssize_t>& lead, uint32_t stride,
               std::vector<uint32_t>& words) {
  py::array array = py::array::ensure(value);
  if (!array) throw py::value_error(what + " is not an array");
  std::vector<py::ssize_t> want = lead;
  for (uint32_t d : leaf.dims)
    want.push_back(d);
  const std::string expected = "expected " + std::string(ab::scalar_name(leaf.scalar)) + " (" +
                               std::string(py::str(dtype_of(leaf.scalar))) + ") with shape " +
                               shape_text(want);
  std::vector<py::ssize_t> got(array.shape(), array.shape() + array.ndim());
  if (got != want) throw py::value_error(what + " has shape " + shape_text(got) + ": " + expected);
  const char kind = array.dtype().kind();
  const bool integer = kind == 'i' || kind == 'u';
  const bool fits = leaf.scalar == ab::Scalar::Float  ? (kind == 'f' || integer)
                    : leaf.scalar == ab::Scalar::Bool ? kind == 'b'
                                                      : integer || kind == 'b';
  if (!fits)
    throw py::value_error(what + " has dtype " + std::string(py::str(array.dtype())) + ": " +
                          expected);
  const uint32_t n = leaf.elements();
  const uint64_t count = static_cast<uint64_t>(array.size());
  const uint64_t rows = n ? count / n : 0;
  auto put = [&](uint64_t k, uint32_t word) {
    words[(k / n) * stride + leaf.word(static_cast<uint32_t>(k % n))] = word;
  };
  (void)rows;
  if (leaf.scalar == ab::Scalar::Float) {
    if (kind == 'f' && array.itemsize() > 4) {
      // A finite value beyond float's range would round to infinity: refused, as the CLI does.
      auto wide = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(array);
      for (uint64_t k = 0; k < count; ++k)
        if (std::isfinite(wide.data()[k]) &&
            std::fabs(wide.data()[k]) > std::numeric_limits<float>::max()) {
          char shown[40];
          std::snprintf(shown, sizeof shown, "%.9g", wide.data()[k]);
          throw py::value_error(what + " holds " + shown + ", out of range for float");
        }
    }
    auto f = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(array);
    const float* p = f.data();
    for (uint64_t k = 0; k < count; ++k)
      put(k, ab::float_bits(p[k]));
    return;
  }
  auto i = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(array);
  if (kind == 'u' && array.itemsize() == 8) {
    // uint64 beyond int64's range would wrap in the cast: check the original values.
    auto u = py::array_t<uint64_t, py::array::c_style>::ensure(array);
    for (uint64_t k = 0; k < count; ++k)
      if (u.data()[k] > UINT32_MAX)
        throw py::value_error(what + " holds " + std::to_string(u.data()[k]) +
                              ", out of range for " + ab::scalar_name(leaf.scalar));
  }
  const int64_t* p = i.data();
  const int64_t lo = leaf.scalar == ab::Scalar::Int ? INT32_MIN : 0;
  const int64_t hi = leaf.scalar == ab::Scalar::Int ? INT32_MAX : UINT32_MAX;
  for (uint64_t k = 0; k < count; ++k) {
    if (p[k] < lo || p[k] > hi)
      throw py::value_error(what + " holds " + std::to_string(p[k]) + ", out of range for " +
                            ab::scalar_name(leaf.scalar));
    put(k, static_cast<uint32_t>(p[k]));
  }
}

// The leaf's values out of lane-major words as an array [lanes, *dims].
py::array unpack_leaf(const Leaf& leaf, const std::vector<uint32_t>& words, uint32_t lanes,
                      uint32_t stride) {
  std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(lanes)};
  for (uint32_t d : leaf.dims)
    shape.push_back(d);
  py::array out(dtype_of(leaf.scalar), shape);
  const uint32_t n = leaf.elements();
  auto* bytes = static_cast<char*>(out.mutable_data());
  for (uint64_t lane = 0; lane < lanes; ++lane)
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t w = words[lane * stride + leaf.word(k)];
      const uint64_t at = lane * n + k;
      if (leaf.scalar == ab::Scalar::Bool)
        reinterpret_cast<bool*>(bytes)[at] = w != 0;
      else
        std::memcpy(bytes + at * 4, &w, 4);
    }
  return out;
}

// A dict given for a struct of type `t` (or an array of them; nested dicts for nested structs)
// names only its fields: a misspelt one is refused, not left out.
void check_field_names(const py::handle& value, const ab::ValueType& t, const std::string& what) {
  const ab::ValueType* type = &t;
  while (type->is_array())
    type = &type->elem();
  if (!type->is_struct() || !py::isinstance<py::dict>(value)) return;
  for (const auto& item : py::reinterpret_borrow<py::dict>(value)) {
    const std::string name = py::str(item.first);
    const ab::ValueField* field = type->field(name);
    if (!field) {
      std::string known;
      for (const ab::ValueField& f : type->fields)
        known += (known.empty() ? "" : ", ") + f.name;
      throw py::value_error(what + " has an unknown field '" + name + "' (" + type->struct_name +
                            "'s fields: " + known + ")");
    }
    check_field_names(item.second, field->type, what + " field '" + name + "'");
  }
}

// The value `value` of type `info` (an ndarray, or a dict of fields for a struct) as words.
void pack_value(const py::handle& value, const ab::ValueInfo& info, const std::string& kind,
                const std::vector<py::ssize_t>& lead, uint64_t copies,
                std::vector<uint32_t>& words) {
  const std::vector<Leaf> leaves = leaves_of(info.value_type);
  words.assign(copies * info.words, 0u);
  // Structs (and arrays of them) are dicts of their fields.
  const bool is_struct = leaves.size() != 1 || !leaves[0].name.empty();
  check_field_names(value, info.value_type, kind + " '" + info.name + "'");
  for (const Leaf& leaf : leaves) {
    py::object part = py::reinterpret_borrow<py::object>(value);
    std::string what = kind + " '" + info.name + "'";
    if (is_struct) {
      // A struct: a dict of its fields, nested dicts for nested structs ("pos.x").
      size_t start = 0;
      while (true) {
        const size_t dot = leaf.name.find('.', start);
        const std::string key = leaf.name.substr(start, dot - start);
        if (!py::isinstance<py::dict>(part))
          throw py::value_error(what + " is a struct (" + info.type +
                                "): pass a dict of its fields");
        py::dict d = part.cast<py::dict>();
        if (!d.contains(key)) throw py::value_error(what + " has no field '" + leaf.name + "'");
        part = d[py::str(key)];
        if (dot == std::string::npos) break;
        start = dot + 1;
      }
      what += " field '" + leaf.name + "'";
    }
    pack_leaf(part, leaf, what, lead, info.words, words);
  }
}

// ---- running ----

// The engine's options with `schedule` (empty: the engine's default) read by its parser.
ab::VulkanOptions vulkan_options(const std::string& schedule) {
  ab::VulkanOptions vulkan;
  if (schedule.empty()) return vulkan;
  auto parsed = ab::parse_schedule(schedule);
  if (!parsed) throw py::value_error(parsed.error());
  vulkan.schedule = *parsed;
  return vulkan;
}

// One Vulkan context per process, made at the first Vulkan run and shared by every run after
// (the engine serialises its own use of it).
std::shared_ptr<ab::VulkanContext> shared_context() {
  static std::mutex mutex;
  static std::shared_ptr<ab::VulkanContext> context;
  std::lock_guard<std::mutex> lock(mutex);
  if (!context) {
    ab::ContextOptions options;
    options.validation = std::getenv("AB_PYTHON_VALIDATION") != nullptr;
    auto made = ab::VulkanContext::create(options);
    if (!made) throw std::runtime_error(made.error());
    context = *made;
  }
  return context;
}

// ---- the interpreter's exit ----

// The calls into the engine under way (a run, a fit, a Vulkan compile a Ctrl-C left running) and
// whether the interpreter is exiting. Python's exit waits (atexit) until none is under way: a
// thread of ours that took the GIL while Python finalizes would be ended by pthread_exit inside
// C++ frames (std::terminate, "terminate called without an active exception", exit 134), and one
// still in the engine would run on while the process's statics are destroyed. Never destroyed,
// so that it outlives the statics.
struct EngineCalls {
  std::mutex mutex;
  std::condition_variable idle;
  uint32_t under_way = 0;
  uint32_t left_compiling = 0;  // of them, Vulkan compiles a stop left running (run_vulkan)
  std::atomic<bool> exiting{false};
};
EngineCalls& engine_calls() {
  static auto* calls = new EngineCalls;
  return *calls;
}

// Counts one call under way; made with the GIL held. Refused once the interpreter is exiting (a
// daemon thread that calls again after its run was stopped).
void begin_engine_call() {
  EngineCalls& calls = engine_calls();
  std::lock_guard lock(calls.mutex);
  if (calls.exiting) throw std::runtime_error("autobatch: the interpreter is exiting");
  ++calls.under_way;
}
void end_engine_call(bool left_compiling = false) {
  EngineCalls& calls = engine_calls();
  std::lock_guard lock(calls.mutex);
  calls.left_compiling -= left_compiling ? 1 : 0;
  if (--calls.under_way == 0) calls.idle.notify_all();
}
struct EngineCall {
  EngineCall() { begin_engine_call(); }
  ~EngineCall() { end_engine_call(); }
  EngineCall(const EngineCall&) = delete;
  EngineCall& operator=(const EngineCall&) = delete;
};

// Python's atexit (after the non-daemon threads were joined, before finalizing): the runs under
// way stop at their next poll without taking the GIL (Interrupts), and the exit waits for them.
void wait_for_engine_calls() {
  EngineCalls& calls = engine_calls();
  {
    std::lock_guard lock(calls.mutex);
    calls.exiting = true;
  }
  py::gil_scoped_release release;
  std::unique_lock lock(calls.mutex);
  const auto idle = [&] { return calls.under_way == 0; };
  // A run stops within a poll; a driver's compile cannot be stopped, so say why the exit waits.
  if (!calls.idle.wait_for(lock, std::chrono::milliseconds(500), idle) && calls.left_compiling) {
    std::fprintf(stderr,
                 "autobatch: the exit waits for %u interrupted Vulkan compile%s to end (the "
                 "driver's compile cannot be stopped)\n",
                 calls.left_compiling, calls.left_compiling == 1 ? "" : "s");
    std::fflush(stderr);
  }
  calls.idle.wait(lock, idle);
}

// The should_stop of a run with the GIL released: every 50 ms it takes the GIL and runs Python's
// signal handlers; a handler that raised (Ctrl-C: KeyboardInterrupt) stops the run, and the
// exception stays set for raise_if_interrupted() once the run is over. Once the interpreter is
// exiting it stops the run without the GIL.
class Interrupts {
 public:
  bool poll() {
    if (interrupted_) return true;
    if (engine_calls().exiting) {
      exiting_ = true;
      return interrupted_ = true;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(50)) return false;
    last_ = now;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) interrupted_ = true;
    return interrupted_;
  }
  // With the GIL held.
  void raise_if_interrupted() const {
    if (exiting_)
      throw std::runtime_error("autobatch: the run was stopped: the interpreter is exiting");
    if (interrupted_ && PyErr_Occurred()) throw py::error_already_set();
  }
  bool interrupted() const { return interrupted_; }

 private:
  std::atomic<bool> interrupted_{false}, exiting_{false};
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// A progress line on stderr for long work, as the CLI's: from the first second on, redrawn in
// place on a terminal (at most twice a second), a whole line every 10 s otherwise (a notebook or
// a log gets lines, not a flood). Called on the running thread, without the GIL.
class ProgressLine {
 public:
  explicit ProgressLine(bool on) : on_(on), terminal_(::isatty(STDERR_FILENO) == 1) {}
  ~ProgressLine() {
    if (shown_ && terminal_) std::fprintf(stderr, "\n");
  }
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  }
  // Whether a line is due now; `text` makes it.
  template <typename Text>
  void tick(Text text) {
    if (!on_) return;
    const double now = elapsed();
    if (now < 1.0 || now - last_ < (terminal_ ? 0.5 : 10.0)) return;
    last_ = now;
    shown_ = true;
    std::fprintf(stderr, terminal_ ? "\r%-100s" : "%s\n", text(now).c_str());
    std::fflush(stderr);
  }

 private:
  bool on_, terminal_, shown_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  double last_ = -10.0;
};

// A Vulkan run on a worker thread while this thread waits. Until the run takes its first step
// (the compile: seconds to minutes on a CPU device, and the driver's part polls nothing) this
// thread polls `interrupts`; a stop then returns a stopped run at once, and the worker finishes
// the compile alone, calls none of the caller's callbacks again and ends at its first step (the
// interpreter's exit waits for it). From the first step on, the run polls through
// options.should_stop as any run does. The mutex is held while a callback of the caller runs on
// either thread, so they never run at once; it is taken before the GIL, never after.
ab::Expected<ab::RunResult> run_vulkan(const std::shared_ptr<const ab::Module>& module,
                                       const ab::Batch& batch, const ab::RunOptions& options,
                                       const ab::VulkanOptions& vulkan, Interrupts& interrupts,
                                       const std::string& devices = "") {
  // One device: the process's shared context. `devices` ("all", "0,1"): one context each, the
  // lanes cut over them (ab::run_on_contexts).
  std::vector<std::shared_ptr<ab::VulkanContext>> contexts;
  try {
    if (devices.empty()) contexts.push_back(shared_context());
  } catch (const std::runtime_error& e) {
    return ab::Error{e.what()};
  }
  if (!devices.empty()) {
    ab::ContextOptions context_options;
    context_options.validation = std::getenv("AB_PYTHON_VALIDATION") != nullptr;
    auto list = ab::parse_device_list(devices, context_options);
    if (!list) return list.failure();
    for (int index : *list) {
      context_options.device_index = index;
      auto made = ab::VulkanContext::create(context_options);
      if (!made) return made.failure();
      contexts.push_back(*made);
    }
  }
  struct Handoff {
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false, stepping = false, abandoned = false;
    ab::Expected<ab::RunResult> result = ab::Error{""};
  };
  auto handoff = std::make_shared<Handoff>();
  ab::RunOptions worker_options = options;
  worker_options.should_stop = [handoff, inner = options.should_stop] {
    std::lock_guard lock(handoff->mutex);
    handoff->stepping = true;
    return handoff->abandoned || (inner && inner());
  };
  if (options.on_emit)
    worker_options.on_emit = [handoff, inner = options.on_emit](uint32_t lane,
                                                                const uint32_t* record) {
      std::lock_guard lock(handoff->mutex);
      if (!handoff->abandoned) inner(lane, record);
    };
  begin_engine_call();  // the worker's own, ended by the worker
  std::thread worker([handoff, module, batch, worker_options,
                      runner = ab::sample::vulkan_runner(contexts, vulkan)] {
    ab::Expected<ab::RunResult> result = ab::Error{""};
    try {
      result = runner(module, batch, worker_options);
    } catch (const std::exception& e) {
      result = ab::Error{e.what()};
    }
    bool abandoned = false;
    {
      std::lock_guard lock(handoff->mutex);
      handoff->result = std::move(result);
      handoff->done = true;
      abandoned = handoff->abandoned;
    }
    handoff->finished.notify_all();
    end_engine_call(abandoned);
  });
  std::unique_lock lock(handoff->mutex);
  while (!handoff->done) {
    handoff->finished.wait_for(lock, std::chrono::milliseconds(50));
    if (handoff->done || handoff->stepping || !interrupts.poll()) continue;
    handoff->abandoned = true;
    {
      std::lock_guard calls_lock(engine_calls().mutex);
      ++engine_calls().left_compiling;
    }
    worker.detach();
    ab::RunResult stopped;
    stopped.stopped = true;
    stopped.stats.lanes = batch.lanes;
    return stopped;
  }
  lock.unlock();
  worker.join();
  return std::move(handoff->result);
}

struct PyModule {
  std::shared_ptr<const ab::Module> module;
};

py::dict describe(const ab::ValueInfo& info) {
  py::dict d;
  d["name"] = info.name;
  d["type"] = info.type;
  const std::vector<Leaf> leaves = leaves_of(info.value_type);
  if (leaves.size() == 1 && leaves[0].name.empty()) {
    d["dtype"] = dtype_of(leaves[0].scalar);
    d["shape"] = py::tuple(py::cast(leaves[0].dims));
  } else {
    py::dict fields;
    for (const Leaf& leaf : leaves)
      fields[py::str(leaf.name)] =
          py::make_tuple(dtype_of(leaf.scalar), py::tuple(py::cast(leaf.dims)));
    d["dtype"] = py::none();
    d["shape"] = py::none();
    d["fields"] = fields;
  }
  return d;
}

PyModule compile_module(const std::string& source, const std::string& entry,
                        const std::optional<std::string>& file,
                        const std::map<std::string, double>& constants) {
  ab::CompileOptions options;
  options.entry = entry;
  if (file) options.file = *file;
  options.data_constants = constants;
  auto module = ab::Module::compile(source, options);
  if (!module) throw CompileError(module.error());
  return PyModule{*module};
}

// uniforms: dict name -> array shaped as the uniform (no lane dimension).
// The module's transformed data are computed from the others (autobatch/transformed_data.h).
ab::UniformData pack_uniforms(const ab::Module& module, const py::dict& given) {
  const std::vector<ab::ValueInfo>& declared = module.uniforms();
  const std::vector<ab::TransformedUniform> computed = ab::transformed_uniforms(module);
  ab::UniformData out(declared.size());
  for (const auto& item : given) {
    const std::string name = py::str(item.first);
    if (const ab::TransformedUniform* t = ab::find_transformed_uniform(computed, name))
      throw py::value_error(ab::transformed_uniform_refusal(module, *t));
    bool known = false;
    for (const ab::ValueInfo& u : declared)
      known = known || u.name == name;
    if (!known) {
      std::string names;
      for (const ab::ValueInfo& u : declared)
        names += (names.empty() ? "" : ", ") + u.name;
      throw py::value_error("unknown uniform '" + name +
                            "' (the program's: " + (names.empty() ? "none" : names) + ")");
    }
  }
  for (size_t u = 0; u < declared.size(); ++u) {
    if (ab::find_transformed_uniform(computed, declared[u].name)) continue;
    if (!given.contains(declared[u].name))
      throw py::value_error("uniform '" + declared[u].name + "' (" + declared[u].type +
                            ") has no value");
    pack_value(given[py::str(declared[u].name)], declared[u], "uniform", {}, 1, out[u]);
  }
  if (ab::Status s = ab::compute_transformed_uniforms(module, out); !s)
    throw py::value_error(s.error());
  return out;
}

// `backend` checked, "auto" chosen as the CLI's `sample` chooses: Vulkan on a GPU or when a
// schedule is given, else the vm (which outruns Vulkan on a CPU device such as lavapipe).
std::string choose_backend(const std::string& backend, const std::string& schedule) {
  if (backend == "auto") return !schedule.empty() || ab::has_gpu() ? "vulkan" : "vm";
  if (backend != "vulkan" && backend != "vm" && backend != "interp")
    throw py::value_error("backend must be 'auto', 'vulkan', 'vm' or 'interp', not '" + backend +
                          "'");
  return backend;
}

// The batch of `module`'s entry: `inputs` (name -> array with a leading lane dimension) and
// `uniforms`; the lanes are `batch`, or the leading dimension of the first input given.
ab::Batch pack_batch(const ab::Module& module, const py::dict& inputs, const py::dict& uniforms,
                     std::optional<uint32_t> batch) {
  for (const auto& item : inputs) {
    const std::string name = py::str(item.first);
    bool known = false;
    for (const ab::ValueInfo& in : module.inputs())
      known = known || in.name == name;
    if (!known) throw py::value_error("unknown input '" + name + "'");
  }
  std::optional<uint32_t> lanes = batch;
  for (const ab::ValueInfo& in : module.inputs()) {
    if (!inputs.contains(in.name))
      throw py::value_error("input '" + in.name + "' (" + in.type + ") has no value");
    if (lanes) break;
    py::object v = inputs[py::str(in.name)];
    while (py::isinstance<py::dict>(v) && py::len(v) > 0)
      v = v.cast<py::dict>().begin()->second.cast<py::object>();
    py::array a = py::array::ensure(v);
    if (!a || a.ndim() == 0)
      throw py::value_error("input '" + in.name + "' needs a leading dimension: one row per lane");
    lanes = static_cast<uint32_t>(a.shape(0));
  }
  if (!lanes) throw py::value_error("the program has no inputs: give batch=N");
  ab::Batch b;
  b.lanes = *lanes;
  for (const ab::ValueInfo& in : module.inputs()) {
    b.inputs.emplace_back();
    pack_value(inputs[py::str(in.name)], in, "input", {static_cast<py::ssize_t>(*lanes)}, *lanes,
               b.inputs.back());
  }
  b.uniforms = pack_uniforms(module, uniforms);
  return b;
}

// The records each lane emitted, per field as the outputs: key -> one array per lane,
// [records, ...].
py::dict emitted_dict(const ab::Module& module, const ab::RunResult& result, uint32_t lanes) {
  py::dict emitted;
  const ab::ValueInfo& record = module.emit_record();
  if (record.words == 0) return emitted;
  for (const Leaf& leaf : leaves_of(record.value_type)) {
    py::list per_lane;
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      static const std::vector<uint32_t> none;
      const std::vector<uint32_t>& words =
          lane < result.emitted.size() ? result.emitted[lane] : none;
      per_lane.append(unpack_leaf(leaf, words, static_cast<uint32_t>(words.size() / record.words),
                                  record.words));
    }
    emitted[py::str(leaf.name.empty() ? std::string("result") : leaf.name)] = per_lane;
  }
  return emitted;
}

// A run's result as Module.run returns it: outputs, emitted records, faults and statistics.
py::dict result_dict(const ab::Module& module, const ab::RunResult& result, uint32_t lanes,
                     const std::string& backend) {
  py::dict out;
  py::dict outputs;
  const ab::ValueInfo& output = module.output();
  for (const Leaf& leaf : leaves_of(output.value_type))
    outputs[py::str(leaf.name.empty() ? std::string("result") : leaf.name)] =
        unpack_leaf(leaf, result.outputs, lanes, output.words);
  out["outputs"] = outputs;
  out["emitted"] = emitted_dict(module, result, lanes);
  py::list faults;
  for (const ab::LaneError& e : result.errors) {
    py::dict f;
    f["lane"] = e.lane;
    f["code"] = ab::fault_name(e.code);
    f["function"] = e.function;
    f["line"] = e.line;
    f["step"] = e.step;
    f["detail"] = e.detail;
    faults.append(f);
  }
  out["faults"] = faults;
  py::dict stats;
  const ab::RunStats& s = result.stats;
  stats["lanes"] = s.lanes;
  stats["steps"] = s.steps;
  stats["lane_steps"] = s.lane_steps;
  stats["calls"] = s.calls;
  stats["utilization"] = s.utilization;
  stats["max_stack_depth"] = s.max_stack_depth;
  stats["wall_seconds"] = s.wall_seconds;
  stats["threads"] = s.threads;
  stats["backend"] = backend;
  out["statistics"] = stats;
  return out;
}

py::dict run_module(const PyModule& m, const py::dict& inputs, const py::dict& uniforms,
                    const std::string& requested_backend, std::optional<uint32_t> batch,
                    uint64_t seed, const std::string& schedule, uint32_t threads,
                    uint64_t max_steps, std::optional<uint32_t> stack_depth, bool progress) {
  const EngineCall call;
  const ab::Module& module = *m.module;
  const std::string backend = choose_backend(requested_backend, schedule);
  const ab::Batch b = pack_batch(module, inputs, uniforms, batch);
  const ab::VulkanOptions vulkan = vulkan_options(schedule);
  ab::RunOptions options;
  options.seed = seed;
  options.threads = threads;
  options.max_steps = max_steps;
  if (stack_depth) options.stack_depth = *stack_depth;
  Interrupts interrupts;
  ProgressLine line(progress);
  options.should_stop = [&] {
    line.tick([&](double seconds) {
      return "autobatch: running " + std::to_string(b.lanes) + " lanes on " + backend + ", " +
             std::to_string(static_cast<int>(seconds)) + " s";
    });
    return interrupts.poll();
  };
  ab::Expected<ab::RunResult> result = ab::Error{""};
  {
    py::gil_scoped_release release;
    if (backend == "vulkan")
      result = run_vulkan(m.module, b, options, vulkan, interrupts);
    else
      result = module.run_cpu(b, options,
                              backend == "vm" ? ab::CpuBackend::Vm : ab::CpuBackend::Interpreter);
  }
  interrupts.raise_if_interrupted();
  if (!result) throw std::runtime_error(result.error());
  return result_dict(module, *result, b.lanes, backend);
}

// ---- sampling ----

struct PyFit {
  std::shared_ptr<const ab::sample::Model> model;
  ab::sample::Fit fit;
  std::string backend;  // the one that ran ("vm", "vulkan", "interp")
};

template <typename T>
py::array_t<T> chain_draw_array(const std::vector<T>& v, uint32_t chains, uint32_t draws) {
  py::array_t<T> out({static_cast<py::ssize_t>(chains), static_cast<py::ssize_t>(draws)});
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

struct PyModel {
  std::shared_ptr<const ab::sample::Model> model;
};

PyModel compile_model(const std::string& source, const std::string& file,
                      const std::map<std::string, double>& constants) {
  auto model = ab::sample::Model::compile(source, file, /*vectorize_loops=*/true, constants);
  if (!model) throw CompileError(model.error());
  return PyModel{*model};
}

PyFit sample_model(const PyModel& py_model, const py::dict& data, const ab::sample::Options& given,
                   std::string backend, const std::string& schedule,
                   std::optional<py::array_t<float>> init, bool progress,
                   const std::string& devices) {
  const EngineCall call;
  const std::shared_ptr<const ab::sample::Model>* model = &py_model.model;
  ab::sample::Options options = given;
  if (init) {
    const auto want = std::vector<py::ssize_t>{options.chains, (*model)->parameter_count()};
    const std::vector<py::ssize_t> got(init->shape(), init->shape() + init->ndim());
    if (got != want)
      throw py::value_error("init has shape " + shape_text(got) + ": expected " + shape_text(want) +
                            " (chains, parameters)");
    auto c = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(*init);
    options.init.assign(c.data(), c.data() + c.size());
  }
  ab::UniformData uniforms = pack_uniforms((*model)->data_module(), data);
  Interrupts interrupts;
  ab::sample::Runner runner;
  backend = choose_backend(backend, devices.empty() ? schedule : "given");
  if (!devices.empty() && backend != "vulkan")
    throw py::value_error("devices needs the vulkan backend, not '" + backend + "'");
  if (backend == "vulkan") {
    const ab::VulkanOptions vulkan = vulkan_options(schedule);
    runner = [vulkan, &interrupts, devices](const std::shared_ptr<const ab::Module>& m,
                                            const ab::Batch& b, const ab::RunOptions& o) {
      return run_vulkan(m, b, o, vulkan, interrupts, devices);
    };
  } else {
    runner =
        ab::sample::cpu_runner(backend == "vm" ? ab::CpuBackend::Vm : ab::CpuBackend::Interpreter);
  }
  ProgressLine line(progress);
  std::atomic<uint64_t> received{0};
  const uint64_t cells = uint64_t{options.chains} * options.draws;
  const auto report = [&] {
    line.tick([&](double seconds) {
      const uint64_t r = received.load();
      char text[120];
      if (r == 0)
        std::snprintf(text, sizeof text, "sampling: warming up, %.0f s", seconds);
      else
        std::snprintf(text, sizeof text, "sampling: %llu of %llu draws (%.0f%%)",
                      static_cast<unsigned long long>(r), static_cast<unsigned long long>(cells),
                      100.0 * static_cast<double>(r) / static_cast<double>(cells));
      return std::string(text);
    });
  };
  options.on_draw = [&](uint32_t, uint32_t, uint64_t in_all) {
    received = in_all;
    report();
  };
  options.should_stop = [&] {
    report();
    return interrupts.poll();
  };
  ab::Expected<ab::sample::Fit> fit = ab::Error{""};
  {
    py::gil_scoped_release release;
    fit = ab::sample::run(**model, std::move(uniforms), options, runner);
  }
  interrupts.raise_if_interrupted();
  if (!fit) throw py::value_error(fit.error());
  return PyFit{*model, std::move(*fit), backend};
}

// The fit's files as `autobatch sample --out` writes them, by the library's one writer
// (ab::sample::write_fit): `npy` the draws, statistics and summary.json, `csv` one CmdStan CSV
// per chain. A failure (a folder in use, a full disk) is an OSError; the folder is then as it was.
void write_fit_files(const PyFit& f, const std::string& folder, const std::string& model,
                     const std::string& model_name, bool npy, bool csv) {
  ab::sample::FitFileOptions files;
  files.model = model;
  files.model_name = model_name;
  files.npy = npy;
  files.csv = csv;
  ab::sample::RunFacts facts;
  facts.backend = f.backend;
  facts.run_seconds = f.fit.run_stats.wall_seconds;
  ab::Status written = ab::Error{""};
  {
    py::gil_scoped_release release;
    written = ab::sample::write_fit(f.fit, folder, files, facts);
  }
  if (!written) {
    PyErr_SetString(PyExc_OSError, written.error().c_str());
    throw py::error_already_set();
  }
}

}  // namespace

namespace {

// Module: compile a program, describe its interface, run it.
void bind_module(py::module_& m) {
  py::class_<PyModule>(m, "Module")
      .def_static("compile", &compile_module, py::arg("source"), py::arg("entry") = "main",
                  py::arg("file") = std::nullopt,
                  py::arg("constants") = std::map<std::string, double>{})
      .def_property_readonly("inputs",
                             [](const PyModule& p) {
                               py::list l;
                               for (const ab::ValueInfo& v : p.module->inputs())
                                 l.append(describe(v));
                               return l;
                             })
      .def_property_readonly("output",
                             [](const PyModule& p) { return describe(p.module->output()); })
      .def_property_readonly("uniforms",
                             [](const PyModule& p) {
                               py::list l;
                               for (const ab::ValueInfo& v : p.module->uniforms())
                                 l.append(describe(v));
                               return l;
                             })
      .def("run", &run_module, py::arg("inputs"), py::arg("uniforms"), py::arg("backend"),
           py::arg("batch"), py::arg("seed"), py::arg("schedule"), py::arg("threads"),
           py::arg("max_steps"), py::arg("stack_depth"), py::arg("progress"));
}

// The sampler's options and model.
void bind_sampler_model(py::module_& m) {
  py::class_<ab::sample::Options>(m, "SampleOptions")
      .def(py::init<>())
      .def_readwrite("chains", &ab::sample::Options::chains)
      .def_readwrite("draws", &ab::sample::Options::draws)
      .def_readwrite("warmup", &ab::sample::Options::warmup)
      .def_readwrite("leaf_steps", &ab::sample::Options::leaf_steps)
      .def_readwrite("max_depth", &ab::sample::Options::max_depth)
      .def_readwrite("target_accept", &ab::sample::Options::target_accept)
      .def_readwrite("step_size", &ab::sample::Options::step_size)
      .def_readwrite("adapt_metric", &ab::sample::Options::adapt_metric)
      .def_readwrite("search_step", &ab::sample::Options::search_step)
      .def_readwrite("step_jitter", &ab::sample::Options::step_jitter)
      .def_readwrite("seed", &ab::sample::Options::seed)
      .def_readwrite("threads", &ab::sample::Options::threads)
      .def_readwrite("max_steps", &ab::sample::Options::max_steps)
      .def_readwrite("stack_depth", &ab::sample::Options::stack_depth);

  py::class_<PyModel>(m, "SamplerModel")
      .def_static("compile", &compile_model, py::arg("source"), py::arg("file"),
                  py::arg("constants") = std::map<std::string, double>{})
      .def_property_readonly("parameter_names",
                             [](const PyModel& p) { return p.model->parameter_names(); })
      .def_property_readonly(
          "fields",
          [](const PyModel& p) {
            py::list l;
            for (const auto& field : p.model->fields())
              l.append(py::make_tuple(field.name, py::tuple(py::cast(field.shape))));
            return l;
          })
      .def_property_readonly("data", [](const PyModel& p) {
        py::list l;
        for (const ab::ValueInfo& v : p.model->data())
          l.append(describe(v));
        return l;
      });
}

// Fit: the draws and statistics as arrays, the summary, the adaptation, the files.
void bind_fit(py::module_& m) {
  auto fit = py::class_<PyFit>(m, "Fit")
                 .def_property_readonly("parameter_names",
                                        [](const PyFit& f) { return f.fit.parameter_names; })
                 .def_property_readonly(
                     "draws",
                     [](const PyFit& f) {
                       const ab::sample::Fit& x = f.fit;
                       py::array_t<float> out({static_cast<py::ssize_t>(x.chains),
                                               static_cast<py::ssize_t>(x.draws),
                                               static_cast<py::ssize_t>(x.dimension)});
                       std::copy(x.draws_data.begin(), x.draws_data.end(), out.mutable_data());
                       return out;
                     })
                 .def_property_readonly("stats", [](const PyFit& f) {
                   const ab::sample::Fit& x = f.fit;
                   const ab::sample::DrawStatistics& s = x.stats;
                   py::dict d;
                   d["lp"] = chain_draw_array(s.lp, x.chains, x.draws);
                   d["accept_stat"] = chain_draw_array(s.accept_stat, x.chains, x.draws);
                   d["step_size"] = chain_draw_array(s.step_size, x.chains, x.draws);
                   d["tree_depth"] = chain_draw_array(s.tree_depth, x.chains, x.draws);
                   d["n_leapfrog"] = chain_draw_array(s.n_leapfrog, x.chains, x.draws);
                   d["n_grad"] = d["n_leapfrog"];
                   std::vector<bool> div(s.divergent.begin(), s.divergent.end());
                   py::array_t<bool> dv(
                       {static_cast<py::ssize_t>(x.chains), static_cast<py::ssize_t>(x.draws)});
                   for (size_t k = 0; k < div.size(); ++k)
                     dv.mutable_data()[k] = div[k];
                   d["divergent"] = dv;
                   d["energy"] = chain_draw_array(s.energy, x.chains, x.draws);
                   return d;
                 });

  fit.def_property_readonly(
         "summary_rows",
         [](const PyFit& f) {
           py::list rows;
           for (const ab::sample::NamedSummary& p : f.fit.summary) {
             const ab::sample::ParameterSummary& s = p.summary;
             rows.append(py::make_tuple(p.name, s.mean, s.sd, s.mcse_mean, s.q5, s.q50, s.q95,
                                        s.rhat, s.ess_bulk, s.ess_tail));
           }
           return rows;
         })
      .def_property_readonly(
          "summary_table",
          [](const PyFit& f) { return ab::sample::format_summary_table(f.fit.summary); })
      .def_property_readonly("warnings",
                             [](const PyFit& f) {
                               py::list l;
                               for (const auto& w : f.fit.warnings)
                                 l.append(py::make_tuple(w.kind, w.message));
                               return l;
                             })
      .def_property_readonly("chain_messages", [](const PyFit& f) { return f.fit.chain_messages; })
      .def_property_readonly("draws_per_chain",
                             [](const PyFit& f) { return f.fit.draws_per_chain; })
      .def_property_readonly("step_sizes", [](const PyFit& f) { return f.fit.step_sizes; })
      .def_property_readonly("inv_metrics", [](const PyFit& f) { return f.fit.inv_metrics; })
      .def_property_readonly("gradient_evaluations",
                             [](const PyFit& f) { return f.fit.gradient_evaluations; })
      .def_property_readonly("divergences", [](const PyFit& f) { return f.fit.divergences; })
      .def_property_readonly("stopped", [](const PyFit& f) { return f.fit.stopped; })
      .def("cmdstan_csv",
           [](const PyFit& f, const std::string& model_name, uint32_t chain) {
             const ab::sample::Fit& x = f.fit;
             // A chain the fit does not have: cmdstan_csv's std::out_of_range, an IndexError.
             const uint64_t per = uint64_t{x.draws} * x.dimension;
             const std::span<const float> all(x.draws_data);
             return ab::sample::cmdstan_csv(x, model_name, chain,
                                            chain < x.chains ? all.subspan(chain * per, per) : all);
           })
      .def("write_files", &write_fit_files, py::arg("folder"), py::arg("model"),
           py::arg("model_name"), py::arg("npy"), py::arg("csv"));
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "autobatch's C++ core (docs/python.md); use the autobatch package.";
  py::register_exception<CompileError>(m, "CompileError", PyExc_ValueError);
  py::module_::import("atexit").attr("register")(py::cpp_function(&wait_for_engine_calls));

  bind_module(m);
  bind_sampler_model(m);
  bind_fit(m);

  m.def("sample", &sample_model, py::arg("model"), py::arg("data"), py::arg("options"),
        py::arg("backend"), py::arg("schedule"), py::arg("init"), py::arg("progress"),
        py::arg("devices") = "");
  m.def("cmdstan_name", &ab::sample::cmdstan_name);
  // What the validation layer reported on the shared context (AB_PYTHON_VALIDATION=1 before the
  // first Vulkan run turns it on; the tests do).
  m.def("validation_messages", [] { return shared_context()->validation_messages(); });
}
