// Fuzz target: the bytes of a .npy file -> parse_npy, then what DataFile does with an array that
// parses: read each element and convert it to every scalar type of the language.
//
// Contract checked: no crash, hang or unbounded allocation on any bytes; an array that parses
// holds exactly elements() * item size data bytes, so every index below elements() can be read.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "autobatch/npy.h"
#include "fuzz/fuzz_support.h"
#include "tools/values.h"

namespace {

// Reading every element of a huge (mostly zero-sized) array is not more coverage, only time.
constexpr uint64_t kMaxElements = 4096;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ab;
  using namespace ab::cli;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto array = parse_npy(bytes, "fuzz.npy");
  if (!array) return 0;
  const uint64_t elements = array->elements();
  if (array->data.size() != elements * npy_item_size(array->type))
    ab::fuzz::contract_failed("the data size does not match the shape");
  for (uint64_t i = 0; i < elements && i < kMaxElements; ++i) {
    const Number number = array->at(i);
    (void)number_to_string(number);
    for (ab::Scalar type : {ab::Scalar::Bool, ab::Scalar::Int, ab::Scalar::UInt, ab::Scalar::Float})
      (void)encode_number(number, type);
  }
  return 0;
}
