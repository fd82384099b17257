// Unit tests of the command-line tool's input side: scalar parsing, input specs, batch
// assembly, uniform binding, CSV and .npy reading/writing, and output column layout.
//
// The tool's sources are compiled into the `autobatch` executable only, so this file compiles
// the ones it tests into the test binary directly.
#include <doctest/doctest.h>

#include <unistd.h>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <fmt/format.h>

#include "autobatch/module.h"
#include "autobatch/npy.h"
#include "autobatch/value_type.h"
#include "support/compiled.h"
#include "support/temp_dir.h"
#include "tools/csv.h"
#include "tools/data_file.h"
#include "tools/file_io.h"
#include "tools/inputs.h"
#include "tools/outputs.h"
#include "tools/shape.h"
#include "tools/uniforms.h"
#include "tools/values.h"

namespace {

using namespace ab;
using namespace ab::cli;

using ab::testing::compiled;
using ab::testing::TempDir;

template <class T>
std::string raw_bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

uint32_t word_of(const Expected<uint32_t>& result) {
  REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error()));
  return *result;
}

// The type spelled `spelling`, after the declarations `decls`.
ValueType type_of(const std::string& spelling, const std::string& decls = "") {
  return compiled(decls + "\nfn main(v: " + spelling + ") -> int { return 0; }\n")
      ->inputs()
      .at(0)
      .value_type;
}

}  // namespace

TEST_CASE("inputs: scalar text parsing follows each type's rules") {
  CHECK(word_of(parse_scalar("true", Scalar::Bool)) == 1);
  CHECK(word_of(parse_scalar("0", Scalar::Bool)) == 0);
  CHECK(word_of(parse_scalar(" 1 ", Scalar::Bool)) == 1);
  CHECK_FALSE(parse_scalar("2", Scalar::Bool).ok());
  CHECK_FALSE(parse_scalar("yes", Scalar::Bool).ok());

  CHECK(word_of(parse_scalar("2147483647", Scalar::Int)) == 0x7fffffffu);
  CHECK(word_of(parse_scalar("-2147483648", Scalar::Int)) == 0x80000000u);
  CHECK(word_of(parse_scalar("-1", Scalar::Int)) == 0xffffffffu);
  CHECK(word_of(parse_scalar("0x10", Scalar::Int)) == 16);
  auto too_big = parse_scalar("2147483648", Scalar::Int);
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.error() == "'2147483648' is out of range for int");
  CHECK_FALSE(parse_scalar("1.5", Scalar::Int).ok());
  CHECK_FALSE(parse_scalar("99999999999999999999999", Scalar::Int).ok());
  CHECK_FALSE(parse_scalar("", Scalar::Int).ok());
  // Digits that overflow and then stop being digits are no number, not a number out of range.
  auto not_a_number = parse_scalar("99999999999999999999999x", Scalar::Int);
  REQUIRE_FALSE(not_a_number.ok());
  CHECK(not_a_number.error() == "'99999999999999999999999x' is not a valid int");
  auto huge_bound = parse_int64("99999999999999999999");
  REQUIRE_FALSE(huge_bound.ok());
  CHECK(huge_bound.error() ==
        "'99999999999999999999' is out of range (-9223372036854775808 to 9223372036854775807)");
  CHECK(parse_int64("12x").error() == "'12x' is not a whole number");
  // A long value is quoted as a short excerpt.
  auto long_value = parse_scalar(std::string(100'000, 'z'), Scalar::Int);
  REQUIRE_FALSE(long_value.ok());
  CHECK(long_value.error() == "'" + std::string(60, 'z') + "…' is not a valid int");

  CHECK(word_of(parse_scalar("4294967295", Scalar::UInt)) == 0xffffffffu);
  auto negative = parse_scalar("-3", Scalar::UInt);
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.error() == "'-3' is negative but the type is uint");
  CHECK_FALSE(parse_scalar("4294967296", Scalar::UInt).ok());

  CHECK(word_of(parse_scalar("0.5", Scalar::Float)) == float_bits(0.5f));
  CHECK(word_of(parse_scalar("-1.5e3", Scalar::Float)) == float_bits(-1500.0f));
  CHECK(word_of(parse_scalar("7", Scalar::Float)) == float_bits(7.0f));
  CHECK(word_of(parse_scalar("0.1", Scalar::Float)) == float_bits(0.1f));
  CHECK(std::isinf(bits_float(word_of(parse_scalar("inf", Scalar::Float)))));
  CHECK_FALSE(parse_scalar("1e39", Scalar::Float).ok());
  CHECK_FALSE(parse_scalar("1.5x", Scalar::Float).ok());
}

// Found by fuzz/fuzz_csv.cpp (seeds fuzz/corpus/csv/crash-float-*.csv): whole numbers beyond 64
// bits parsed as float gave 2^64, and decimals beyond double's range gave +inf whatever their sign
// or size (1e-400 too).
TEST_CASE("inputs: float text beyond 64 bits or beyond double's range keeps its value") {
  CHECK(word_of(parse_scalar("100000000000000000000000", Scalar::Float)) == float_bits(1e23f));
  CHECK(word_of(parse_scalar("-100000000000000000000000", Scalar::Float)) == float_bits(-1e23f));
  auto huge_whole = parse_scalar("1" + std::string(40, '0'), Scalar::Float);
  REQUIRE_FALSE(huge_whole.ok());
  CHECK(huge_whole.error().ends_with("is out of range for float"));
  CHECK_FALSE(parse_scalar("100000000000000000000000", Scalar::Int).ok());

  for (const char* text : {"1e400", "-1e400"}) {
    auto overflow = parse_scalar(text, Scalar::Float);
    REQUIRE_FALSE(overflow.ok());
    CHECK(overflow.error() == fmt::format("'{}' is out of range for float", text));
  }
  CHECK(word_of(parse_scalar("1e-400", Scalar::Float)) == float_bits(0.0f));
  CHECK(word_of(parse_scalar("-1e-400", Scalar::Float)) == float_bits(-0.0f));
}

TEST_CASE("inputs: numbers from files convert only when they fit") {
  CHECK(word_of(encode_number(Number{1.0}, Scalar::Int)) == 1);
  CHECK_FALSE(encode_number(Number{1.5}, Scalar::Int).ok());
  CHECK_FALSE(encode_number(Number{int64_t{3'000'000'000}}, Scalar::Int).ok());
  CHECK(word_of(encode_number(Number{int64_t{3'000'000'000}}, Scalar::UInt)) == 3'000'000'000u);
  CHECK_FALSE(encode_number(Number{int64_t{-1}}, Scalar::UInt).ok());
  CHECK(word_of(encode_number(Number{true}, Scalar::Float)) == float_bits(1.0f));
  // float64 -> float rounds to nearest.
  CHECK(word_of(encode_number(Number{0.1}, Scalar::Float)) == float_bits(0.1f));
  CHECK_FALSE(encode_number(Number{int64_t{2}}, Scalar::Bool).ok());
  CHECK(word_of(encode_number(Number{uint64_t{1}}, Scalar::Bool)) == 1);
}

TEST_CASE("inputs: values print and serialize so floats round-trip") {
  CHECK(format_scalar(0xffffffffu, Scalar::Int) == "-1");
  CHECK(format_scalar(0xffffffffu, Scalar::UInt) == "4294967295");
  CHECK(format_scalar(1, Scalar::Bool) == "true");
  CHECK(format_scalar(float_bits(0.1f), Scalar::Float) == "0.1");
  CHECK(scalar_json(float_bits(0.1f), Scalar::Float).dump() == "0.1");
  // The JSON number is the float's shortest decimal; read back and rounded to float it is the
  // same float.
  const double third = scalar_json(float_bits(1.0f / 3.0f), Scalar::Float).get<double>();
  CHECK(third == std::strtod("0.33333334", nullptr));
  CHECK(static_cast<float>(third) == 1.0f / 3.0f);
  CHECK(scalar_json(float_bits(NAN), Scalar::Float) == "NaN");
  CHECK(scalar_json(0xfffffffeu, Scalar::Int).dump() == "-2");
}

TEST_CASE("inputs: spec forms parse") {
  auto constant = parse_input_spec("5");
  REQUIRE(constant.ok());
  CHECK(std::get<ConstantSpec>(*constant).text == "5");

  auto list = parse_input_spec("1,2,3");
  REQUIRE(list.ok());
  CHECK(std::get<ListSpec>(*list).items == std::vector<std::string>{"1", "2", "3"});

  auto range = parse_input_spec("range:-2:3");
  REQUIRE(range.ok());
  CHECK(std::get<RangeSpec>(*range).begin == -2);
  CHECK(std::get<RangeSpec>(*range).end == 3);

  auto randint = parse_input_spec("randint:0:10");
  REQUIRE(randint.ok());
  CHECK(std::get<RandIntSpec>(*randint).high == 10);

  auto file = parse_input_spec("@data/x.npy");
  REQUIRE(file.ok());
  CHECK(std::get<FileSpec>(*file).path == "data/x.npy");

  CHECK_FALSE(parse_input_spec("range:5:5").ok());
  CHECK_FALSE(parse_input_spec("range:5:2").ok());
  CHECK_FALSE(parse_input_spec("range:a:b").ok());
  CHECK_FALSE(parse_input_spec("range:5").ok());
  CHECK_FALSE(parse_input_spec("randint:3:").ok());
  CHECK_FALSE(parse_input_spec("@").ok());
  CHECK_FALSE(parse_input_spec("").ok());

  auto binding = parse_binding("n=a=b", "NAME=SPEC");
  REQUIRE(binding.ok());
  CHECK(binding->name == "n");
  CHECK(binding->value == "a=b");
  CHECK_FALSE(parse_binding("n", "NAME=SPEC").ok());
  CHECK_FALSE(parse_binding("=5", "NAME=SPEC").ok());
  CHECK_FALSE(parse_binding("n=", "NAME=SPEC").ok());
}

TEST_CASE("inputs: randint follows its documented rule") {
  RandIntSource source(42);
  std::mt19937_64 engine(42);
  for (int i = 0; i < 100; ++i) {
    // span 10 does not divide 2^64, but a skipped output has probability ~1e-18.
    const uint64_t x = engine();
    CHECK(source.next(-5, 5) == -5 + static_cast<int64_t>(x % 10));
  }
  // A power-of-two span never skips.
  RandIntSource bits(7);
  std::mt19937_64 bits_engine(7);
  for (int i = 0; i < 10; ++i)
    CHECK(bits.next(0, 8) == static_cast<int64_t>(bits_engine() % 8));
}

TEST_CASE("inputs: batch size comes from list inputs, --batch, or defaults to 1") {
  const auto module = compiled("fn main(n: int, x: float, v: float[3]) -> int { return n; }");
  const auto build_inputs = [&](const InputOptions& options) {
    return cli::build_inputs(module->entry(), module->inputs(), options);
  };

  SUBCASE("constants alone give one lane") {
    auto built = build_inputs({{"n=4", "x=0.5", "v=2"}, std::nullopt, 0});
    REQUIRE_MESSAGE(built.ok(), (built.ok() ? "" : built.error()));
    CHECK(built->lanes == 1);
    CHECK(built->columns[0] == std::vector<uint32_t>{4});
    CHECK(built->columns[1] == std::vector<uint32_t>{float_bits(0.5f)});
    CHECK(built->columns[2] == std::vector<uint32_t>(3, float_bits(2.0f)));
  }
  SUBCASE("a list sets the batch and constants broadcast") {
    auto built = build_inputs({{"v=0", "x=1.5", "n=7,8,9"}, std::nullopt, 0});
    REQUIRE(built.ok());
    CHECK(built->lanes == 3);
    CHECK(built->columns[0] == std::vector<uint32_t>{7, 8, 9});
    CHECK(built->columns[1] == std::vector<uint32_t>(3, float_bits(1.5f)));
    CHECK(built->columns[2].size() == 9);
  }
  SUBCASE("range gives A..B-1 converted to the parameter type") {
    auto built = build_inputs({{"n=range:3:6", "x=range:0:3", "v=1"}, std::nullopt, 0});
    REQUIRE(built.ok());
    CHECK(built->columns[0] == std::vector<uint32_t>{3, 4, 5});
    CHECK(built->columns[1] ==
          std::vector<uint32_t>{float_bits(0.0f), float_bits(1.0f), float_bits(2.0f)});
  }
  SUBCASE("--batch with constants") {
    auto built = build_inputs({{"n=1", "x=1", "v=1"}, 5u, 0});
    REQUIRE(built.ok());
    CHECK(built->lanes == 5);
  }
  SUBCASE("randint draws in [A, B) and needs --batch") {
    auto built = build_inputs({{"n=randint:10:13", "x=1", "v=1"}, 50u, 9});
    REQUIRE(built.ok());
    for (uint32_t w : built->columns[0])
      CHECK((w >= 10 && w < 13));
    auto again = build_inputs({{"n=randint:10:13", "x=1", "v=1"}, 50u, 9});
    CHECK(again->columns[0] == built->columns[0]);
    auto missing_batch = build_inputs({{"n=randint:0:3", "x=1", "v=1"}, std::nullopt, 0});
    REQUIRE_FALSE(missing_batch.ok());
    CHECK(missing_batch.error() == "input 'n' uses randint, which needs --batch");
  }
  SUBCASE("mismatched list lengths name the input") {
    auto built = build_inputs({{"n=1,2,3,4,5", "x=1,2,3", "v=1"}, std::nullopt, 0});
    REQUIRE_FALSE(built.ok());
    CHECK(built.error() == "input 'x' has 3 values but the batch has 5 lanes");
    auto against_batch = build_inputs({{"n=1,2,3", "x=1", "v=1"}, 5u, 0});
    REQUIRE_FALSE(against_batch.ok());
    CHECK(against_batch.error() == "input 'n' has 3 values but the batch has 5 lanes");
  }
  SUBCASE("unknown, duplicate and missing inputs are named") {
    auto unknown = build_inputs({{"n=1", "x=1", "v=1", "q=2"}, std::nullopt, 0});
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error() == "unknown input 'q': main takes n, x, v");
    auto twice = build_inputs({{"n=1", "n=2", "x=1", "v=1"}, std::nullopt, 0});
    REQUIRE_FALSE(twice.ok());
    CHECK(twice.error() == "input 'n' is given twice");
    auto missing = build_inputs({{"n=1", "v=1"}, std::nullopt, 0});
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error() == "missing input 'x' (float): give --input x=SPEC");
  }
  SUBCASE("values are checked against the parameter type") {
    auto bad = build_inputs({{"n=1,2.5", "x=1", "v=1"}, std::nullopt, 0});
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error() == "input 'n': value 2: '2.5' is not a valid int");
    auto list_for_array = build_inputs({{"n=1", "x=1", "v=1,2,3"}, std::nullopt, 0});
    CHECK_FALSE(list_for_array.ok());
  }
}

TEST_CASE("inputs: struct parameters are refused by name") {
  const auto module =
      compiled("struct Pair { a: int, b: int }\nfn main(p: Pair) -> int { return p.a; }");
  auto built = build_inputs(module->entry(), module->inputs(), {{"p=1"}, std::nullopt, 0});
  REQUIRE_FALSE(built.ok());
  CHECK(built.error() == "parameter 'p' of struct type cannot be given on the command line");
}

TEST_CASE("inputs: csv parsing") {
  auto table = parse_csv("# comment\n1, 2,3\r\n\n4,5,6\n", "t.csv");
  REQUIRE(table.ok());
  REQUIRE(table->rows.size() == 2);
  CHECK(table->rows[0] == std::vector<std::string>{"1", "2", "3"});
  CHECK(table->rows[1] == std::vector<std::string>{"4", "5", "6"});
  CHECK(table->line_numbers == std::vector<uint32_t>{2, 4});

  auto ragged = parse_csv("1,2\n3\n", "r.csv");
  REQUIRE_FALSE(ragged.ok());
  CHECK(ragged.error() == "'r.csv' line 2 has 1 values but line 1 has 2");
  CHECK_FALSE(parse_csv("1,,2\n", "e.csv").ok());
  auto empty = parse_csv("", "empty.csv");
  REQUIRE(empty.ok());
  CHECK(empty->rows.empty());
}

TEST_CASE("inputs: npy files round-trip and bad headers are clear errors") {
  const std::vector<uint32_t> words{1, 2, 3, 4, 5, 6};
  const std::string bytes = encode_npy("<i4", {2, 3}, raw_bytes(words));
  // The data starts on a 64-byte boundary, as numpy writes it.
  CHECK((bytes.size() - words.size() * 4) % 64 == 0);
  CHECK(bytes.substr(0, 6) == "\x93NUMPY");

  auto array = parse_npy(bytes, "a.npy");
  REQUIRE(array.ok());
  CHECK(array->type == NpyType::Int32);
  CHECK(array->shape == std::vector<uint64_t>{2, 3});
  CHECK(std::get<int64_t>(array->at(4)) == 5);

  const std::vector<double> doubles{0.25, -1.5};
  auto f8 = parse_npy(encode_npy("<f8", {2}, raw_bytes(doubles)), "d.npy");
  REQUIRE(f8.ok());
  CHECK(std::get<double>(f8->at(1)) == -1.5);

  const std::vector<int64_t> longs{-7};
  auto scalar = parse_npy(encode_npy("<i8", {}, raw_bytes(longs)), "s.npy");
  REQUIRE(scalar.ok());
  CHECK(scalar->shape.empty());
  CHECK(std::get<int64_t>(scalar->at(0)) == -7);

  auto fortran = parse_npy(std::string("\x93NUMPY\x01\x00", 8) + std::string("\x46\x00", 2) +
                               "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }" +
                               std::string(11, ' ') + "\n" + std::string(16, '\0'),
                           "f.npy");
  REQUIRE_FALSE(fortran.ok());
  CHECK(fortran.error().find("Fortran order") != std::string::npos);

  auto big_endian = parse_npy(encode_npy(">f4", {1}, std::string(4, '\0')), "b.npy");
  REQUIRE_FALSE(big_endian.ok());
  CHECK(big_endian.error().find("big-endian") != std::string::npos);

  auto half = parse_npy(encode_npy("<f2", {1}, std::string(2, '\0')), "h.npy");
  REQUIRE_FALSE(half.ok());
  CHECK(half.error().find("'<f2'") != std::string::npos);

  auto truncated = parse_npy(encode_npy("<f4", {4}, std::string(8, '\0')), "t.npy");
  REQUIRE_FALSE(truncated.ok());
  CHECK(truncated.error().find("truncated") != std::string::npos);

  CHECK_FALSE(parse_npy("not numpy", "x.npy").ok());
  CHECK_FALSE(parse_npy(std::string("\x93NUMPY\x01\x00\xff\xff", 10), "x.npy").ok());
}

// A version 1.0 file with exactly this header text (no padding added) and data.
std::string npy_with_header(const std::string& header, const std::string& data) {
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes.push_back(static_cast<char>(header.size() & 0xff));
  bytes.push_back(static_cast<char>(header.size() >> 8));
  return bytes + header + data;
}

TEST_CASE("inputs: npy files whose header does not describe them exactly are refused") {
  const std::string two_ints = raw_bytes(std::vector<int32_t>{1, 2});
  const std::string good = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n";
  REQUIRE(parse_npy(npy_with_header(good, two_ints), "g.npy").ok());

  auto trailing = parse_npy(npy_with_header(good, two_ints + "xyz!"), "t.npy");
  REQUIRE_FALSE(trailing.ok());
  CHECK(trailing.error() ==
        "'t.npy' is not a valid .npy file: 4 bytes follow the data (shape (2,) of '<i4' is 8 "
        "bytes)");

  auto twice = parse_npy(
      npy_with_header("{'descr': '<i4', 'fortran_order': False, 'descr': '<f4', 'shape': (2,)}\n",
                      two_ints),
      "d.npy");
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error() == "'d.npy' is not a valid .npy file: the header has the key 'descr' twice");

  for (const std::string& header :
       {std::string("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\0\n", 59),
        std::string("{'descr': '<i4\0', 'fortran_order': False, 'shape': (2,), }\n", 60)}) {
    auto nul = parse_npy(npy_with_header(header, two_ints), "n.npy");
    REQUIRE_FALSE(nul.ok());
    CHECK(nul.error() == "'n.npy' is not a valid .npy file: the header contains a NUL byte");
  }

  auto unknown =
      parse_npy(npy_with_header("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), 'x': 1}\n",
                                two_ints),
                "u.npy");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().find("unexpected key 'x'") != std::string::npos);

  auto missing = parse_npy(npy_with_header("{'descr': '<i4', 'shape': (2,)}\n", two_ints), "m.npy");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().find("no 'fortran_order'") != std::string::npos);

  auto after = parse_npy(
      npy_with_header("{'descr': '<i4', 'fortran_order': False, 'shape': (2,)} junk\n", two_ints),
      "a.npy");
  REQUIRE_FALSE(after.ok());
  CHECK(after.error().find("text after its closing '}'") != std::string::npos);

  auto structured =
      parse_npy(npy_with_header(
                    "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,)}\n", two_ints),
                "s.npy");
  REQUIRE_FALSE(structured.ok());
  CHECK(structured.error().find("structured dtype ([('a', '<i4')])") != std::string::npos);
}

TEST_CASE("inputs: write_npy writes what read_npy reads") {
  TempDir dir("ab_inputs_test");
  const std::string path = (dir.path / "out.npy").string();
  REQUIRE(write_npy(path, Scalar::Float, {2}, {float_bits(1.5f), float_bits(-2.0f)}).ok());
  auto floats = read_npy(path);
  REQUIRE(floats.ok());
  CHECK(floats->type == NpyType::Float32);
  CHECK(std::get<double>(floats->at(1)) == -2.0);

  REQUIRE(write_npy(path, Scalar::Bool, {3}, {1, 0, 1}).ok());
  auto bools = read_npy(path);
  REQUIRE(bools.ok());
  CHECK(bools->type == NpyType::Bool);
  CHECK(bools->data == std::string("\x01\x00\x01", 3));

  auto missing = read_npy((dir.path / "nope.npy").string());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().find("cannot read") == 0);
}

TEST_CASE("inputs: array parameters from csv and npy files") {
  TempDir dir("ab_inputs_test");
  const auto module = compiled("fn main(g: int[2][3]) -> int { return 0; }");
  const auto build_inputs = [&](const InputOptions& options) {
    return cli::build_inputs(module->entry(), module->inputs(), options);
  };

  const std::string csv = dir.write("g.csv", "1,2,3,4,5,6\n7,8,9,10,11,12\n");
  auto from_csv = build_inputs({{"g=@" + csv}, std::nullopt, 0});
  REQUIRE_MESSAGE(from_csv.ok(), (from_csv.ok() ? "" : from_csv.error()));
  CHECK(from_csv->lanes == 2);
  CHECK(from_csv->columns[0] == std::vector<uint32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});

  const std::vector<int64_t> values{1, 2, 3, 4, 5, 6};
  const std::string npy = dir.write("g.npy", encode_npy("<i8", {1, 2, 3}, raw_bytes(values)));
  auto from_npy = build_inputs({{"g=@" + npy}, std::nullopt, 0});
  REQUIRE(from_npy.ok());
  CHECK(from_npy->lanes == 1);
  CHECK(from_npy->columns[0] == std::vector<uint32_t>{1, 2, 3, 4, 5, 6});

  const std::string flat = dir.write("flat.npy", encode_npy("<i8", {6}, raw_bytes(values)));
  auto wrong_shape = build_inputs({{"g=@" + flat}, std::nullopt, 0});
  REQUIRE_FALSE(wrong_shape.ok());
  CHECK(wrong_shape.error() ==
        "input 'g' is int[2][3]: expected .npy shape (lanes, 2, 3), got (6,)");

  const std::string short_rows = dir.write("short.csv", "1,2,3\n");
  auto wrong_columns = build_inputs({{"g=@" + short_rows}, std::nullopt, 0});
  REQUIRE_FALSE(wrong_columns.ok());
  CHECK(wrong_columns.error().find("expected 6 values per row") != std::string::npos);

  const std::vector<double> fractional{1, 2, 3, 4, 5, 6.5};
  const std::string frac =
      dir.write("frac.npy", encode_npy("<f8", {1, 2, 3}, raw_bytes(fractional)));
  auto not_int = build_inputs({{"g=@" + frac}, std::nullopt, 0});
  REQUIRE_FALSE(not_int.ok());
  CHECK(not_int.error().find("element [0, 1, 2]") != std::string::npos);

  auto no_file = build_inputs({{"g=@" + (dir.path / "none.csv").string()}, std::nullopt, 0});
  REQUIRE_FALSE(no_file.ok());
  CHECK(no_file.error().find("cannot read") == 0);
}

TEST_CASE("inputs: uniforms bind from npy, csv and scalars with exact shapes") {
  TempDir dir("ab_inputs_test");
  const auto module = compiled(
      "uniform table: float[4];\nuniform scale: int;\nfn main() -> float { return table[0]; }");
  const std::vector<ValueInfo>& uniforms = module->uniforms();

  const std::vector<float> table{0.5f, 1.5f, 2.5f, 3.5f};
  const std::string npy = dir.write("t.npy", encode_npy("<f4", {4}, raw_bytes(table)));
  auto bound = bind_uniforms(uniforms, {"scale=3", "table=@" + npy});
  REQUIRE_MESSAGE(bound.ok(), (bound.ok() ? "" : bound.error()));
  CHECK((*bound)[0] == std::vector<uint32_t>{float_bits(0.5f), float_bits(1.5f), float_bits(2.5f),
                                             float_bits(3.5f)});
  CHECK((*bound)[1] == std::vector<uint32_t>{3});

  const std::string row = dir.write("row.csv", "1,2,3,4\n");
  const std::string column = dir.write("column.csv", "1\n2\n3\n4\n");
  for (const std::string& csv : {row, column}) {
    auto from_csv = bind_uniforms(uniforms, {"scale=1", "table=@" + csv});
    REQUIRE(from_csv.ok());
    CHECK((*from_csv)[0][3] == float_bits(4.0f));
  }

  const std::string three =
      dir.write("three.npy", encode_npy("<f4", {3}, raw_bytes(std::vector<float>{1, 2, 3})));
  auto mismatch = bind_uniforms(uniforms, {"scale=1", "table=@" + three});
  REQUIRE_FALSE(mismatch.ok());
  CHECK(mismatch.error() == "uniform 'table' is float[4]: expected .npy shape (4,), got (3,)");

  const std::string wide = dir.write("wide.csv", "1,2\n3,4\n");
  auto csv_mismatch = bind_uniforms(uniforms, {"scale=1", "table=@" + wide});
  REQUIRE_FALSE(csv_mismatch.ok());
  CHECK(csv_mismatch.error().find("expected 4 rows of 1 value or 1 row of 4 values") !=
        std::string::npos);
  CHECK(csv_mismatch.error().find("got 2 rows of 2 values") != std::string::npos);

  auto missing = bind_uniforms(uniforms, {"scale=1"});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error() ==
        "uniform 'table' (float[4]) is not bound: give --uniform table=@file.npy");
  auto unknown = bind_uniforms(uniforms, {"scale=1", "table=@" + npy, "other=@" + npy});
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error() == "unknown uniform 'other': the program declares table, scale");

  const std::vector<int64_t> too_big{int64_t{1} << 40};
  const std::string big = dir.write("big.npy", encode_npy("<i8", {}, raw_bytes(too_big)));
  auto out_of_range = bind_uniforms(uniforms, {"scale=@" + big, "table=@" + npy});
  REQUIRE_FALSE(out_of_range.ok());
  CHECK(out_of_range.error().find("out of range for int") != std::string::npos);
}

TEST_CASE("inputs: uniforms bind by name from a JSON data file, shapes and types checked") {
  TempDir dir("ab_inputs_json_test");
  const auto module = compiled(
      "uniform y: float[3];\nuniform X: float[2][3];\nuniform n: int;\n"
      "fn main() -> float { return y[0]; }");
  const std::vector<ValueInfo>& uniforms = module->uniforms();
  // posteriordb's form: sizes beside the data (N, D name no uniform and are left alone),
  // ints where the model reads floats, a matrix as a list of rows.
  const std::string data =
      dir.write("data.json", R"({"N": 3, "D": 2, "y": [1, 2.5, -3e-1], "X": [[1, 2, 3], [4, 5, 6]],
                       "n": 7})");
  auto bound = bind_uniforms(uniforms, {}, {data});
  REQUIRE_MESSAGE(bound.ok(), (bound.ok() ? "" : bound.error()));
  CHECK((*bound)[0] ==
        std::vector<uint32_t>{float_bits(1.0f), float_bits(2.5f), float_bits(-0.3f)});
  CHECK((*bound)[1][3] == float_bits(4.0f));  // X[1][0], row-major
  CHECK((*bound)[2] == std::vector<uint32_t>{7});

  // --uniform wins over the data file.
  auto overridden = bind_uniforms(uniforms, {"n=9"}, {data});
  REQUIRE(overridden.ok());
  CHECK((*overridden)[2] == std::vector<uint32_t>{9});

  // The float64 values that float32 rounds are reported as for CSV files.
  std::vector<Rounding> rounded;
  REQUIRE(bind_uniforms(uniforms, {}, {data}, &rounded).ok());
  REQUIRE(rounded.size() == 1);
  CHECK(rounded[0].uniform == "y");
  CHECK(rounded[0].element == 2);

  // A size that disagrees names the data's size that matches the wrong length.
  const std::string longer = dir.write(
      "longer.json", R"({"N": 4, "y": [1, 2, 3, 4], "X": [[1, 2, 3], [4, 5, 6]], "n": 1})");
  auto wrong_size = bind_uniforms(uniforms, {}, {longer});
  REQUIRE_FALSE(wrong_size.ok());
  CHECK(wrong_size.error() ==
        "uniform 'y' is float[3]: '" + longer +
            "' holds nested lists of shape (4) for 'y' (the data's N = 4: the model's array "
            "sizes are its constants, so read them from the data, `const N: int = data;`, or "
            "declare them as the data has them)");

  const std::string ragged =
      dir.write("ragged.json", R"({"y": [1, 2, 3], "X": [[1, 2, 3], [4, 5]], "n": 1})");
  auto ragged_rows = bind_uniforms(uniforms, {}, {ragged});
  REQUIRE_FALSE(ragged_rows.ok());
  CHECK(ragged_rows.error() == "'" + ragged +
                                   "': 'X[1]' is a list of 2 where the uniform float[2][3] "
                                   "needs a list of 3");

  const std::string fractional =
      dir.write("frac.json", R"({"y": [1, 2, 3], "X": [[1, 2, 3], [4, 5, 6]], "n": 1.5})");
  auto not_int = bind_uniforms(uniforms, {}, {fractional});
  REQUIRE_FALSE(not_int.ok());
  CHECK(not_int.error().find("'" + fractional + "': 'n': ") == 0);

  const std::string text = dir.write("text.json", R"({"y": [1, "two", 3]})");
  auto not_number = bind_uniforms(uniforms, {}, {text});
  REQUIRE_FALSE(not_number.ok());
  CHECK(not_number.error() == "'" + text + "': 'y[1]' is \"two\", not a number");

  auto missing = bind_uniforms(uniforms, {"X=@" + dir.write("x.csv", "1,2,3\n4,5,6\n")},
                               {dir.write("only_y.json", R"({"y": [1, 2, 3]})")});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().find("uniform 'n' (int) is not bound: give --uniform n=@file.npy, or a "
                             "key 'n' in '") == 0);

  auto twice = bind_uniforms(uniforms, {}, {data, data});
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().find("uniform 'y' is in two data files") == 0);

  // A syntax error names the file, line and column.
  const std::string broken = dir.write("broken.json", "{\n  \"y\": [1, 2,, 3]\n}");
  auto not_json = bind_uniforms(uniforms, {}, {broken});
  REQUIRE_FALSE(not_json.ok());
  CHECK(not_json.error().find(broken + ":2:") == 0);
  CHECK(not_json.error().find("not valid JSON") != std::string::npos);

  auto not_object = bind_uniforms(uniforms, {}, {dir.write("list.json", "[1, 2]")});
  REQUIRE_FALSE(not_object.ok());
  CHECK(not_object.error().find("expected a JSON object of data by name") != std::string::npos);
}

TEST_CASE("inputs: output columns of a struct result name each leaf field") {
  // Outer { id: int, pos: int[2], inner: Inner, items: Inner[2] } = 1 + 2 + 2 + 4 words.
  const OutputLayout layout = output_layout(
      type_of("Outer",
              "struct Inner { x: float, ok: bool }\n"
              "struct Outer { id: int, pos: int[2], inner: Inner, items: Inner[2] }"));
  CHECK(layout.lane_words == 9);
  REQUIRE(layout.columns.size() == 6);
  CHECK(layout.columns[0].key == "id");
  CHECK(layout.columns[0].word_offsets == std::vector<uint32_t>{0});
  CHECK(layout.columns[1].key == "pos");
  CHECK(layout.columns[1].shape.dims == std::vector<uint32_t>{2});
  CHECK(layout.columns[1].word_offsets == std::vector<uint32_t>{1, 2});
  CHECK(layout.columns[2].key == "inner.x");
  CHECK(layout.columns[2].word_offsets == std::vector<uint32_t>{3});
  CHECK(layout.columns[3].key == "inner.ok");
  CHECK(layout.columns[3].shape.leaf == Scalar::Bool);
  CHECK(layout.columns[4].key == "items.x");
  CHECK(layout.columns[4].word_offsets == std::vector<uint32_t>{5, 7});
  CHECK(layout.columns[5].key == "items.ok");
  CHECK(layout.columns[5].word_offsets == std::vector<uint32_t>{6, 8});

  // Lane 1 of two lanes: pos = [10, 20].
  std::vector<uint32_t> outputs(18, 0);
  outputs[9 + 1] = 10;
  outputs[9 + 2] = 20;
  const auto pos = column_words(layout, layout.columns[1], outputs, 1);
  CHECK(column_json(layout.columns[1], pos).dump() == "[10,20]");
  CHECK(column_text(layout.columns[1], pos) == "[10, 20]");
  CHECK(output_layout(ValueType{}).columns.empty());

  const OutputLayout grid = output_layout(type_of("int[2][2]"));
  REQUIRE(grid.columns.size() == 1);
  CHECK(grid.columns[0].key == "result");
  CHECK(column_json(grid.columns[0], {1, 2, 3, 4}).dump() == "[[1,2],[3,4]]");
  CHECK(column_text(grid.columns[0], {1, 2, 3, 4}, 1) == "[[1, ...], ...]");
}

// Stan's transformed data (issue 45): computed from the bound uniforms, refused by name.
TEST_CASE("inputs: transformed data are computed when the uniforms are bound, never bound") {
  TempDir dir("ab_inputs_transformed");
  CompileOptions options;
  options.file = "f.ab";
  const auto module = compiled(
      "uniform x: float[2];\nuniform lx: float[2] = log(x);\nfn main() -> float { return lx[1]; }",
      options);
  const std::string x = dir.write("x.csv", "1\n2\n");
  auto bound = bind_uniforms(*module, {"x=@" + x});
  REQUIRE_MESSAGE(bound.ok(), (bound.ok() ? "" : bound.error()));
  REQUIRE((*bound)[1].size() == 2);
  CHECK((*bound)[1][0] == float_bits(0.0f));
  CHECK(bits_float((*bound)[1][1]) == doctest::Approx(std::log(2.0)).epsilon(1e-6));

  auto by_hand = bind_uniforms(*module, {"x=@" + x, "lx=@" + x});
  REQUIRE_FALSE(by_hand.ok());
  CHECK(by_hand.error() ==
        "'lx' is computed from the data (transformed data at f.ab:2:9); it cannot be bound");
  const std::string data = dir.write("data.json", R"({"x": [1, 2], "lx": [0, 0]})");
  auto in_data = bind_uniforms(*module, {}, {data});
  REQUIRE_FALSE(in_data.ok());
  CHECK(in_data.error() ==
        "'lx' is computed from the data (transformed data at f.ab:2:9); it "
        "cannot be bound ('lx' in " +
            data + ")");
  auto negative = bind_uniforms(*module, {"x=@" + dir.write("neg.csv", "1\n-2\n")});
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.error().rfind("f.ab:2:9: transformed data 'lx' is NaN at element 1", 0) == 0);
}
