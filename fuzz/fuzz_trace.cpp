// Fuzz target: the bytes of an .abtrace file -> parse_trace_header / parse_trace, then the
// debugger's use of what parses: active_lanes of every step, and TraceSource::open against
// fib.ab (the program of the seed trace) with a bounded replay. A custom mutator mutates the
// decompressed body and recompresses it, since random bytes almost never pass zstd's checksum.
//
// Contract checked: no crash, hang or unbounded allocation on any bytes; the header parse agrees
// with the full parse; a trace that parses keeps the invariants read_trace promises (one
// active-set range per step, the first checkpoint at first_step), and active_lanes gives each
// step exactly its active count of distinct, sorted lanes inside the batch; whatever open()
// accepts can be replayed, restored and inspected.
#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>

#include "autobatch/module.h"
#include "autobatch/trace.h"
#include "debugger/trace_source.h"
#include "fuzz/fuzz_support.h"
#include "trace/trace_file.h"

namespace {

using ab::fuzz::contract_failed;

// The code of samples/fib.ab, which the seed traces were recorded from (comments differ; blocks
// do not).
constexpr const char* kFibSource = R"(fn fib(n: int) -> int {
    if n <= 1 { return 1; }
    return fib(n - 1) + fib(n - 2);
}
fn main(n: int) -> int {
    return fib(n);
}
)";

struct Fib {
  std::shared_ptr<const ab::Module> module;
  Fib() {
    auto compiled = ab::Module::compile(kFibSource, {"fib.ab", "main"});
    if (!compiled) contract_failed("fib.ab does not compile: " + compiled.error());
    module = *compiled;
  }
};

// Enough steps to leave the first checkpoint and reach the next ones, few enough to stay fast.
constexpr uint64_t kReplaySteps = 64;

// The debugger's use of the bytes: the public reader (TraceFile::parse), then its replay.
void replay(std::string_view bytes) {
  static const Fib fib;
  auto parsed = ab::TraceFile::parse(bytes, "fuzz.abtrace");
  if (!parsed) contract_failed("the trace parses, but not through TraceFile::parse");
  const ab::TraceFile& trace = **parsed;
  auto opened = ab::debugger::TraceSource::open(*parsed, {"fib.ab", kFibSource, fib.module});
  if (!opened) return;
  ab::debugger::TraceSource& source = **opened;
  const auto start = source.checkpoint();
  source.step(kReplaySteps);
  (void)source.snapshot(0, source.lanes());
  (void)source.result();
  for (uint64_t s = trace.first_step(); s < trace.end_step() && s < kReplaySteps; ++s)
    (void)source.recorded_block(s), (void)source.recorded_active(s);
  source.restore(*start);
  source.step(1);
}

// ---- the custom mutator ----------------------------------------------------------------------

// Bodies the mutator decompresses and grows: larger ones are skipped (raw mutation only), so a
// mutation stays fast.
constexpr size_t kMaxBody = 1 << 16;

// The file cut at its body: the header up to the two size fields, and the decompressed body.
struct Framed {
  std::string head;
  std::string body;
};

// Walks the header of write_trace's layout (trace_file.h); false if `bytes` does not follow it
// or its body does not decompress.
bool split(std::string_view bytes, Framed& f) {
  size_t at = 8 + 4 + 8;         // magic, version, source hash
  for (int s = 0; s < 2; ++s) {  // source path, entry: varint length, then the bytes
    uint64_t n = 0;
    for (int shift = 0;; shift += 7) {
      if (at >= bytes.size() || shift > 63) return false;
      const uint8_t b = static_cast<uint8_t>(bytes[at++]);
      n |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) break;
    }
    if (n > bytes.size() - at) return false;
    at += n;
  }
  if (bytes.size() - at < 16) return false;
  f.head.assign(bytes.substr(0, at));
  const std::string_view packed = bytes.substr(at + 16);
  const unsigned long long size = ZSTD_getFrameContentSize(packed.data(), packed.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > kMaxBody)
    return false;
  f.body.resize(size);
  const size_t got = ZSTD_decompress(f.body.data(), f.body.size(), packed.data(), packed.size());
  return !ZSTD_isError(got) && got == size;
}

template <class T>
void append_fixed(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

// Three mutations in four change the body and reframe it as write_trace does (zstd frame with
// checksum, sizes in the header); the rest change the raw bytes, header and framing included.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned seed) {
  std::minstd_rand rng(seed);
  Framed f;
  if (rng() % 4 == 0 || !split({reinterpret_cast<const char*>(data), size}, f))
    return LLVMFuzzerMutate(data, size, max_size);
  const size_t body_size = f.body.size();
  if (body_size == 0) return LLVMFuzzerMutate(data, size, max_size);
  f.body.resize(std::min(kMaxBody, std::max<size_t>(64, body_size * 2)));
  f.body.resize(
      LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(f.body.data()), body_size, f.body.size()));
  std::string packed(ZSTD_compressBound(f.body.size()), '\0');
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  const size_t packed_size =
      ZSTD_compress2(cctx, packed.data(), packed.size(), f.body.data(), f.body.size());
  ZSTD_freeCCtx(cctx);
  if (ZSTD_isError(packed_size)) return LLVMFuzzerMutate(data, size, max_size);
  std::string out = f.head;
  append_fixed<uint64_t>(out, f.body.size());
  append_fixed<uint64_t>(out, packed_size);
  out.append(packed, 0, packed_size);
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto header = ab::parse_trace_header(bytes, "fuzz.abtrace");
  auto parsed = ab::parse_trace(bytes, "fuzz.abtrace");
  if (!parsed) return 0;
  auto trace = std::make_shared<const ab::Trace>(std::move(*parsed));
  if (!header) contract_failed("the trace parses but its header does not");
  const auto& h = *header;
  if (h.source_hash != trace->source_hash || h.entry != trace->entry ||
      h.source_path != trace->source_path)
    contract_failed("the header parse and the full parse disagree");
  if (trace->active_set_start.size() != trace->steps.size() + 1 || trace->checkpoints.empty() ||
      trace->checkpoints.front().step != trace->first_step)
    contract_failed("a parsed trace breaks read_trace's invariants");
  for (uint64_t s = trace->first_step; s < trace->end_step(); ++s) {
    const std::vector<uint32_t> lanes = trace->active_lanes(s);
    if (lanes.size() != trace->steps[s - trace->first_step].active)
      contract_failed("active_lanes disagrees with the step's active count");
    for (size_t k = 0; k < lanes.size(); ++k)
      if (lanes[k] >= trace->batch.lanes || (k > 0 && lanes[k] <= lanes[k - 1]))
        contract_failed("active_lanes returns a lane outside the batch, or out of order");
  }
  replay(bytes);
  return 0;
}
