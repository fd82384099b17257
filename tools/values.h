// Scalar values at the command line's edges: parsing a parameter's value from text (input specs,
// CSV cells), converting numbers read from .npy files to a declared scalar type with range
// checks, and printing a 32-bit word of a given scalar type for tables and JSON.
//
// Rules: bool accepts true/false/0/1; int is a 32-bit signed integer (decimal or 0x hex) and
// uint an unsigned one (negatives rejected); float accepts any decimal or integer spelling,
// inf and nan, rounds to the nearest float, and rejects finite values beyond float's range.
// A number is converted only if it fits exactly: 1.0 is a valid int, 1.5 is not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "autobatch/expected.h"
#include "autobatch/npy.h"
#include "autobatch/value_type.h"

namespace ab::cli {

// A number as stored in a data file, before conversion to a declared scalar type.
using Number = NpyValue;

// Parses `text` (surrounding spaces ignored) as a value of `type`; returns the value's word.
Expected<uint32_t> parse_scalar(std::string_view text, Scalar type);

// Parses a whole-number bound such as the A of range:A:B.
Expected<int64_t> parse_int64(std::string_view text);

// Converts `number` to `type`, failing if it does not fit.
Expected<uint32_t> encode_number(const Number& number, Scalar type);

std::string number_to_string(const Number& number);

// "1", "-3", "true", "0.1" (floats in their shortest round-tripping form).
std::string format_scalar(uint32_t word, Scalar type);

// The value as JSON: a number or bool; floats round-trip; non-finite floats become the strings
// "NaN", "Infinity" and "-Infinity" because JSON has no spelling for them.
nlohmann::ordered_json scalar_json(uint32_t word, Scalar type);

}  // namespace ab::cli
