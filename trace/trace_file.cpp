#include "trace/trace_file.h"

#include <fmt/format.h>
#include <zstd.h>
#include <algorithm>
#include <cstring>
#include <iterator>

#include "ir/read_file.h"

namespace ab {

uint64_t source_hash(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

namespace {

constexpr char kMagic[8] = {'A', 'B', 'T', 'R', 'A', 'C', 'E', '\0'};

class Writer {
 public:
  std::vector<uint8_t> bytes;
  template <typename T>
  void fixed(T v) {
    const size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &v, sizeof(T));
  }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      bytes.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    bytes.push_back(static_cast<uint8_t>(v));
  }
  void string(const std::string& s) {
    varint(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  template <typename T>
  void array(const std::vector<T>& v) {
    varint(v.size());
    const size_t at = bytes.size();
    bytes.resize(at + v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(bytes.data() + at, v.data(), v.size() * sizeof(T));
  }
  // The field interface of checkpoint_fields: a value as `fixed`, a vector as `array`, a string,
  // and a list of records (a count, then each record's fields).
  template <typename T>
  void field(const T& v) {
    fixed(v);
  }
  template <typename T>
  void field(const std::vector<T>& v) {
    array(v);
  }
  void field(const std::string& s) { string(s); }
  template <typename T, typename Fields>
  void list(const std::vector<T>& items, Fields fields) {
    varint(items.size());
    for (const T& item : items)
      fields(item);
  }
};

// Reads with bounds checks; after any overrun `ok` is false and every read returns zeros.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool ok = true;
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  template <typename T>
  T fixed() {
    T v{};
    if (!need(sizeof(T))) return v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (!need(1)) return 0;
      const uint8_t b = *p_++;
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
    ok = false;
    return 0;
  }
  std::string string() {
    const uint64_t n = varint();
    if (!need(n)) return {};
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  template <typename T>
  std::vector<T> array() {
    const uint64_t n = varint();
    if (n > left() / sizeof(T) || !need(n * sizeof(T))) {
      ok = false;
      return {};
    }
    std::vector<T> v(n);
    if (n) std::memcpy(v.data(), p_, n * sizeof(T));
    p_ += n * sizeof(T);
    return v;
  }
  // Writer's field interface, reading into the fields.
  template <typename T>
  void field(T& v) {
    v = fixed<T>();
  }
  template <typename T>
  void field(std::vector<T>& v) {
    v = array<T>();
  }
  void field(std::string& s) { s = string(); }
  template <typename T, typename Fields>
  void list(std::vector<T>& items, Fields fields) {
    const uint64_t n = varint();
    for (uint64_t i = 0; i < n && ok; ++i) {
      T item;
      fields(item);
      items.push_back(std::move(item));
    }
  }

 private:
  bool need(uint64_t n) {
    if (ok && n <= left()) return true;
    ok = false;
    return false;
  }
  const uint8_t* p_;
  const uint8_t* end_;
};

// A checkpoint's fields in file order: the one list that both writes (Io = Writer, a const
// checkpoint) and reads (Io = Reader). Each field takes the bytes of its type.
static_assert(sizeof(Fault) == 1 && sizeof(LaneError::line) == 4, "the trace format's widths");
template <typename Io, typename Checkpoint>
void checkpoint_fields(Io& io, Checkpoint& c, uint32_t version) {
  io.field(c.step);
  io.field(c.pc);
  io.field(c.pc_depth);
  io.field(c.pc_stack);
  io.field(c.registers);
  io.list(c.stacks, [&](auto& s) {
    io.field(s.depth);
    io.field(s.words);
  });
  io.field(c.lane_steps);
  io.field(c.random_draws);
  io.field(c.faulted);
  io.list(c.errors, [&](auto& e) {
    io.field(e.lane);
    io.field(e.code);
    io.field(e.function);
    io.field(e.line);
    io.field(e.step);
    io.field(e.detail);
  });
  io.field(c.calls);
  io.field(c.block_executions);
  io.field(c.max_stack_depth);
  io.field(c.utilization_sum);
  if (version >= 4) io.field(c.shard_steps);
}

void write_checkpoint(Writer& w, const VmCheckpoint& c, uint32_t version) {
  checkpoint_fields(w, c, version);
}

VmCheckpoint read_checkpoint(Reader& r, uint32_t version) {
  VmCheckpoint c;
  checkpoint_fields(r, c, version);
  return c;
}

std::string read_file(const std::string& path, std::string& out) {
  FileContents file = read_regular_file(path);
  if (!file.ok()) return fmt::format("cannot read trace '{}': {}", path, file.error);
  out = std::move(file.bytes);
  return "";
}

std::string truncated_header(const std::string& path) {
  return fmt::format("trace '{}' is truncated (its header is incomplete)", path);
}

const uint8_t* byte_data(std::string_view bytes) {
  return reinterpret_cast<const uint8_t*>(bytes.data());
}

std::string parse_header(Reader& r, const std::string& path, TraceHeader& h) {
  if (r.left() == 0) return fmt::format("trace '{}' is empty", path);
  // A file that stops inside the magic is a truncated trace if what is there matches it.
  const size_t magic_bytes = std::min(r.left(), sizeof kMagic);
  char magic[8] = {};
  for (size_t i = 0; i < magic_bytes; ++i)
    magic[i] = static_cast<char>(r.fixed<uint8_t>());
  if (std::memcmp(magic, kMagic, magic_bytes) != 0)
    return fmt::format("'{}' is not an autobatch trace (.abtrace)", path);
  if (magic_bytes < sizeof kMagic) return truncated_header(path);
  h.version = r.fixed<uint32_t>();
  // Checked before comparing: a version cut off reads as 0, which would be reported as one.
  if (!r.ok) return truncated_header(path);
  if (h.version != kTraceFormatVersion && h.version != kUnshardedTraceFormatVersion)
    return fmt::format(
        "trace '{}' has format version {}; this autobatch reads versions {} and {}: record the "
        "trace again with this autobatch",
        path, h.version, kUnshardedTraceFormatVersion, kTraceFormatVersion);
  h.source_hash = r.fixed<uint64_t>();
  h.source_path = r.string();
  h.entry = r.string();
  if (!r.ok) return truncated_header(path);
  return "";
}

// Decompresses the body's zstd frame into `body`, which must come out exactly `body_size` bytes.
// The header's size is only a claim (a few corrupt bytes can say a terabyte), so the buffer grows
// with what the frame really produces: memory stays within twice the actual body.
std::string inflate(const uint8_t* packed, size_t packed_size, uint64_t body_size,
                    std::vector<uint8_t>& body) {
  constexpr uint64_t kFirstChunk = 1 << 20;
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  ZSTD_inBuffer in{packed, packed_size, 0};
  body.resize(std::min(body_size, kFirstChunk));
  size_t produced = 0;
  std::string error;
  while (true) {
    ZSTD_outBuffer out{body.data(), body.size(), produced};
    const size_t consumed_before = in.pos;
    const size_t left = ZSTD_decompressStream(dctx, &out, &in);
    const bool progress = in.pos != consumed_before || out.pos != produced;
    produced = out.pos;
    if (ZSTD_isError(left)) {
      error = ZSTD_getErrorName(left);
      break;
    }
    if (left == 0) break;  // the frame is complete
    if (produced < body.size()) {
      // Room left for output, so it stopped for want of input.
      if (in.pos == in.size || !progress) {
        error = "the compressed body ends early";
        break;
      }
      continue;
    }
    if (body.size() == body_size) {
      error = "wrong body size";  // more body than the header says
      break;
    }
    body.resize(std::min<uint64_t>(body_size, body.size() * 2));
  }
  ZSTD_freeDCtx(dctx);
  if (error.empty() && (produced != body_size || in.pos != in.size)) error = "wrong body size";
  return error;
}

// Whether step `i`'s encoded lane set (whose byte range is valid) is exactly its `active` count
// of distinct lanes, all inside the batch, so active_lanes() returns what the step ran and
// indexing per-lane data by its lanes stays in bounds. Costs one pass over the encoded runs.
bool lane_set_fits(const Trace& t, size_t i) {
  Reader r(t.active_sets.data() + t.active_set_start[i],
           t.active_set_start[i + 1] - t.active_set_start[i]);
  uint64_t end = 0, count = 0;  // one past the last lane so far; lanes so far
  while (r.left() > 0) {
    const uint64_t gap = r.varint();
    const uint64_t n = r.varint();
    if (!r.ok || n == 0 || gap > t.batch.lanes - end || n > t.batch.lanes - end - gap) return false;
    end += gap + n;
    count += n;
  }
  return count == t.steps[i].active;
}

}  // namespace

void Trace::add_step(int32_t block, std::vector<uint32_t> lanes) {
  std::sort(lanes.begin(), lanes.end());
  if (active_set_start.empty()) active_set_start.push_back(0);
  steps.push_back({block, static_cast<uint32_t>(lanes.size())});
  // Runs of consecutive lanes as (gap from the previous run's end, length) varint pairs.
  Writer w;
  uint32_t prev_end = 0;
  for (size_t i = 0; i < lanes.size();) {
    size_t j = i + 1;
    while (j < lanes.size() && lanes[j] == lanes[j - 1] + 1)
      ++j;
    w.varint(lanes[i] - prev_end);
    w.varint(j - i);
    prev_end = lanes[j - 1] + 1;
    i = j;
  }
  active_sets.insert(active_sets.end(), w.bytes.begin(), w.bytes.end());
  active_set_start.push_back(active_sets.size());
}

std::vector<uint32_t> Trace::active_lanes(uint64_t step) const {
  std::vector<uint32_t> lanes;
  if (step < first_step || step >= end_step()) return lanes;
  const uint64_t i = step - first_step;
  Reader r(active_sets.data() + active_set_start[i], active_set_start[i + 1] - active_set_start[i]);
  uint32_t at = 0;
  while (lanes.size() < steps[i].active && r.ok) {
    at += static_cast<uint32_t>(r.varint());
    const uint64_t n = r.varint();
    for (uint64_t k = 0; k < n && r.ok; ++k)
      lanes.push_back(at++);
  }
  return lanes;
}

Status write_trace(const std::string& path, const Trace& t) {
  const uint32_t version =
      t.shard_lanes.empty() ? kUnshardedTraceFormatVersion : kTraceFormatVersion;
  Writer body;
  body.fixed(t.options.seed);
  body.fixed(t.options.stack_depth);
  body.fixed(t.options.max_steps);
  body.fixed(static_cast<uint8_t>(t.options.heuristic));
  if (version >= 4) body.array(t.shard_lanes);
  body.fixed(t.batch.lanes);
  body.varint(t.batch.inputs.size());
  for (const auto& column : t.batch.inputs)
    body.array(column);
  body.varint(t.batch.uniforms.size());
  for (const auto& u : t.batch.uniforms)
    body.array(u);
  body.fixed(t.first_step);
  body.varint(t.steps.size());
  for (const TraceStep& s : t.steps) {
    body.fixed(s.block);
    body.fixed(s.active);
  }
  body.array(t.active_sets);
  body.array(t.active_set_start);
  body.varint(t.checkpoints.size());
  for (const VmCheckpoint& c : t.checkpoints)
    write_checkpoint(body, c, version);
  body.fixed(static_cast<uint8_t>(t.finished));

  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  std::vector<uint8_t> packed(ZSTD_compressBound(body.bytes.size()));
  const size_t packed_size =
      ZSTD_compress2(cctx, packed.data(), packed.size(), body.bytes.data(), body.bytes.size());
  ZSTD_freeCCtx(cctx);
  if (ZSTD_isError(packed_size))
    return Error{fmt::format("cannot compress trace: {}", ZSTD_getErrorName(packed_size))};

  Writer head;
  for (char c : kMagic)
    head.fixed(static_cast<uint8_t>(c));
  head.fixed(version);
  head.fixed(t.source_hash);
  head.string(t.source_path);
  head.string(t.entry);
  head.fixed(static_cast<uint64_t>(body.bytes.size()));
  head.fixed(static_cast<uint64_t>(packed_size));
  const std::string failure =
      write_whole_file(path, {{reinterpret_cast<const char*>(head.bytes.data()), head.bytes.size()},
                              {reinterpret_cast<const char*>(packed.data()), packed_size}});
  if (!failure.empty()) return Error{fmt::format("cannot write trace '{}': {}", path, failure)};
  return Ok{};
}

Expected<TraceHeader> parse_trace_header(std::string_view bytes, const std::string& path) {
  Reader r(byte_data(bytes), bytes.size());
  TraceHeader h;
  if (std::string e = parse_header(r, path, h); !e.empty()) return Error{e};
  return h;
}

Expected<TraceHeader> read_trace_header(const std::string& path) {
  std::string bytes;
  if (std::string e = read_file(path, bytes); !e.empty()) return Error{e};
  return parse_trace_header(bytes, path);
}

Expected<Trace> read_trace(const std::string& path) {
  std::string bytes;
  if (std::string e = read_file(path, bytes); !e.empty()) return Error{e};
  return parse_trace(bytes, path);
}

Expected<Trace> parse_trace(std::string_view bytes, const std::string& path) {
  Reader r(byte_data(bytes), bytes.size());
  TraceHeader h;
  if (std::string e = parse_header(r, path, h); !e.empty()) return Error{e};
  const uint64_t body_size = r.fixed<uint64_t>();
  const uint64_t packed_size = r.fixed<uint64_t>();
  if (!r.ok) return Error{truncated_header(path)};
  if (packed_size > r.left())
    return Error{fmt::format("trace '{}' is truncated ({} of its bytes are missing)", path,
                             packed_size - r.left())};
  if (body_size > (uint64_t{1} << 40))
    return Error{fmt::format("trace '{}' is corrupt (bad body size)", path)};
  std::vector<uint8_t> body;
  const uint8_t* packed = byte_data(bytes) + (bytes.size() - r.left());
  if (std::string e = inflate(packed, packed_size, body_size, body); !e.empty())
    return Error{fmt::format("trace '{}' is corrupt: {}", path, e)};

  Reader b(body.data(), body.size());
  Trace t;
  t.version = h.version;
  t.source_hash = h.source_hash;
  t.source_path = h.source_path;
  t.entry = h.entry;
  t.options.seed = b.fixed<uint64_t>();
  t.options.stack_depth = b.fixed<uint32_t>();
  t.options.max_steps = b.fixed<uint64_t>();
  t.options.heuristic = static_cast<Heuristic>(b.fixed<uint8_t>());
  if (h.version >= 4) t.shard_lanes = b.array<uint32_t>();
  t.batch.lanes = b.fixed<uint32_t>();
  const uint64_t inputs = b.varint();
  for (uint64_t i = 0; i < inputs && b.ok; ++i)
    t.batch.inputs.push_back(b.array<uint32_t>());
  const uint64_t uniforms = b.varint();
  for (uint64_t i = 0; i < uniforms && b.ok; ++i)
    t.batch.uniforms.push_back(b.array<uint32_t>());
  t.first_step = b.fixed<uint64_t>();
  const uint64_t steps = b.varint();
  if (steps > b.left() / 8)
    return Error{fmt::format("trace '{}' is corrupt (bad step count)", path)};
  t.steps.resize(steps);
  for (TraceStep& s : t.steps) {
    s.block = b.fixed<int32_t>();
    s.active = b.fixed<uint32_t>();
  }
  t.active_sets = b.array<uint8_t>();
  t.active_set_start = b.array<uint64_t>();
  const uint64_t checkpoints = b.varint();
  for (uint64_t i = 0; i < checkpoints && b.ok; ++i)
    t.checkpoints.push_back(read_checkpoint(b, h.version));
  t.finished = b.fixed<uint8_t>() != 0;
  if (!b.ok || b.left() != 0)
    return Error{fmt::format("trace '{}' is corrupt (its body does not parse)", path)};
  // Cross-checks, so that later code can index without bounds checks.
  bool sane = !t.checkpoints.empty() && t.checkpoints.front().step == t.first_step &&
              t.active_set_start.size() == t.steps.size() + 1 &&
              t.active_set_start.back() == t.active_sets.size();
  for (size_t i = 0; sane && i < t.steps.size(); ++i)
    sane = t.active_set_start[i] <= t.active_set_start[i + 1] && t.steps[i].active <= t.batch.lanes;
  // Only now is every step's byte range known to lie inside active_sets.
  for (size_t i = 0; sane && i < t.steps.size(); ++i)
    sane = lane_set_fits(t, i);
  uint64_t shard_lanes = 0;
  for (uint32_t n : t.shard_lanes)
    shard_lanes += n;
  sane = sane && (t.shard_lanes.empty() || shard_lanes == t.batch.lanes);
  for (const VmCheckpoint& c : t.checkpoints)
    sane = sane && c.shard_steps.size() == t.shard_lanes.size() && c.pc.size() == t.batch.lanes &&
           c.pc_depth.size() == t.batch.lanes && c.lane_steps.size() == t.batch.lanes &&
           c.random_draws.size() == t.batch.lanes && c.faulted.size() == t.batch.lanes;
  if (!sane) return Error{fmt::format("trace '{}' is corrupt (inconsistent sections)", path)};
  return t;
}

Status check_trace_source(const TraceHeader& header, const std::string& trace_path,
                          const std::string& source_path, const std::string& source_text) {
  if (source_hash(source_text) == header.source_hash) return Ok{};
  return Error{fmt::format(
      "trace '{}' was recorded from a different version of the program: '{}' has changed since "
      "(source hash {:016x}, the trace expects {:016x}); record the trace again",
      trace_path, source_path, source_hash(source_text), header.source_hash)};
}

}  // namespace ab
