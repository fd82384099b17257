// ComputeKernel (autobatch/compute.h): a custom kernel reads and writes its buffers through one
// run, push constants arrive, the op prelude compiles into a kernel and draws the interpreter's
// random numbers, and misuse (GLSL that does not compile, wrong buffer or push-constant counts,
// zero workgroups) comes back as a clear error — all with the validation layer on.
#include <bit>

#include "autobatch/compute.h"
#include "ir/random.h"
#include "support/engine_test_support.h"

namespace ab::enginetest {
namespace {

// out[i] = a[i] * scale + b[i] for i < count; a and b are read back unchanged.
constexpr const char* kMultiplyAdd = R"(#version 450
layout(local_size_x = 32) in;
layout(set = 0, binding = 0, std430) buffer A { uint w[]; } a;
layout(set = 0, binding = 1, std430) buffer B { uint w[]; } b;
layout(set = 0, binding = 2, std430) buffer Out { uint w[]; } result;
layout(push_constant) uniform Params { uint count; uint scale; } P;
void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= P.count) return;
  result.w[i] = a.w[i] * P.scale + b.w[i];
}
)";

TEST_CASE("compute: a custom kernel runs over its buffers and reads them back") {
  ComputeKernelOptions options;
  options.push_constant_words = 2;
  options.disk_cache = false;
  auto kernel = ComputeKernel::create(context(), kMultiplyAdd, 3, options);
  REQUIRE_MESSAGE(kernel.ok(), kernel.error());
  CHECK((*kernel)->buffer_count() == 3);

  const uint32_t count = 100;  // not a multiple of the local size: the tail group is partial
  std::vector<std::vector<uint32_t>> buffers(3);
  for (uint32_t i = 0; i < count; ++i) {
    buffers[0].push_back(i);
    buffers[1].push_back(1000 + i);
  }
  buffers[2].assign(count + 1, 0xdeadbeefu);  // one word past `count` the kernel must not touch
  Status run = (*kernel)->run(buffers, (count + 31) / 32, {count, 3});
  REQUIRE_MESSAGE(run.ok(), run.error());
  REQUIRE(buffers[2].size() == count + 1);
  for (uint32_t i = 0; i < count; ++i) {
    CHECK(buffers[0][i] == i);
    CHECK(buffers[2][i] == 3 * i + 1000 + i);
  }
  CHECK(buffers[2][count] == 0xdeadbeefu);

  // A second run on the same kernel: fresh buffers, same results.
  buffers[2].assign(count + 1, 0u);
  run = (*kernel)->run(buffers, 4, {count, 5});
  REQUIRE_MESSAGE(run.ok(), run.error());
  CHECK(buffers[2][7] == 5 * 7 + 1007);
  check_no_validation_messages();
}

TEST_CASE("compute: the op prelude gives a kernel the interpreter's random stream") {
  const std::string glsl =
      std::string("#version 450\n") +
      "layout(local_size_x = 16) in;\n"
      "layout(set = 0, binding = 0, std430) buffer Out { uint w[]; } result;\n"
      "layout(push_constant) uniform Params { uint seed_lo; uint seed_hi; } P;\n" +
      op_prelude_glsl() +
      "void main() {\n"
      "  const uint lane = gl_GlobalInvocationID.x;\n"
      "  result.w[2u * lane] = floatBitsToUint(ab_rand_uniform(lane, 3u));\n"
      "  result.w[2u * lane + 1u] = uint(ab_div(int(lane) - 7, 2));\n"
      "}\n";
  ComputeKernelOptions options;
  options.push_constant_words = 2;
  options.disk_cache = false;
  auto kernel = ComputeKernel::create(context(), glsl, 1, options);
  REQUIRE_MESSAGE(kernel.ok(), kernel.error());
  const uint64_t seed = 0x0000000500000009ull;
  std::vector<std::vector<uint32_t>> buffers{std::vector<uint32_t>(32, 0u)};
  Status run = (*kernel)->run(buffers, 1, {static_cast<uint32_t>(seed), uint32_t(seed >> 32)});
  REQUIRE_MESSAGE(run.ok(), run.error());
  for (uint32_t lane = 0; lane < 16; ++lane) {
    CHECK(std::bit_cast<float>(buffers[0][2 * lane]) == random_uniform(seed, lane, 3));
    CHECK(static_cast<int32_t>(buffers[0][2 * lane + 1]) == (static_cast<int32_t>(lane) - 7) / 2);
  }
  check_no_validation_messages();
}

TEST_CASE("compute: GLSL that does not compile is an error naming the problem") {
  const std::string bad =
      "#version 450\nlayout(local_size_x = 1) in;\n"
      "void main() { undeclared_thing = 1; }\n";
  ComputeKernelOptions options;
  options.disk_cache = false;
  auto kernel = ComputeKernel::create(context(), bad, 0, options);
  REQUIRE_FALSE(kernel.ok());
  CHECK(kernel.error().starts_with("compute kernel does not compile: "));
  CHECK(kernel.error().find("undeclared_thing") != std::string::npos);
  check_no_validation_messages();
}

TEST_CASE("compute: wrong buffer or push-constant counts and zero groups are refused") {
  ComputeKernelOptions options;
  options.push_constant_words = 2;
  options.disk_cache = false;
  auto kernel = ComputeKernel::create(context(), kMultiplyAdd, 3, options);
  REQUIRE_MESSAGE(kernel.ok(), kernel.error());
  std::vector<std::vector<uint32_t>> two(2, std::vector<uint32_t>(4, 0u));
  Status s = (*kernel)->run(two, 1, {4, 1});
  REQUIRE_FALSE(s.ok());
  CHECK(s.error() == "compute kernel run with 2 buffers, the kernel binds 3");

  std::vector<std::vector<uint32_t>> three(3, std::vector<uint32_t>(4, 0u));
  s = (*kernel)->run(three, 1, {4});
  REQUIRE_FALSE(s.ok());
  CHECK(s.error() == "compute kernel run with 1 push-constant words, the kernel takes 2");
  s = (*kernel)->run(three, 0, {4, 1});
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().starts_with("compute kernel run with 0 workgroups"));
  CHECK_FALSE(ComputeKernel::create(nullptr, kMultiplyAdd, 3, options).ok());
  check_no_validation_messages();
}

TEST_CASE("compute: a kernel with no buffers and no push constants runs") {
  ComputeKernelOptions options;
  options.disk_cache = false;
  auto kernel = ComputeKernel::create(
      context(), "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n", 0, options);
  REQUIRE_MESSAGE(kernel.ok(), kernel.error());
  std::vector<std::vector<uint32_t>> none;
  Status run = (*kernel)->run(none, 2);
  CHECK_MESSAGE(run.ok(), run.error());
  check_no_validation_messages();
}

}  // namespace
}  // namespace ab::enginetest
