#include "tools/values.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "autobatch/user_input.h"

namespace ab::cli {
namespace {

std::string_view trim_spaces(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

// Whole numbers in decimal (optional sign) or 0x hex, as a sign and a magnitude so that both
// INT64_MIN-ish negatives and large unsigned values are representable.
struct WholeNumber {
  bool negative = false;
  uint64_t magnitude = 0;
  bool overflow = false;  // the text is beyond 64 bits; magnitude is then UINT64_MAX
};

std::optional<WholeNumber> parse_whole(std::string_view text) {
  WholeNumber number;
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) {
    number.negative = text.front() == '-';
    text.remove_prefix(1);
  }
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number.magnitude, base);
  // Every character must be a digit, whether or not the digits overflow: "9999...9x" is no number.
  if (end != text.data() + text.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    number.magnitude = std::numeric_limits<uint64_t>::max();  // reported as out of range below
    number.overflow = true;
  } else if (ec != std::errc()) {
    return std::nullopt;
  }
  return number;
}

std::optional<double> parse_double(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (end != text.data() + text.size()) return std::nullopt;
  // from_chars leaves `value` unset on overflow and on underflow alike; strtod, on the plain
  // decimal that from_chars accepted (the tool keeps the C locale), tells them apart. Underflow
  // rounds to the nearest value (0 or a denormal, keeping the sign); overflow is a finite
  // spelling beyond any float, so it becomes the largest double, which encode_double rejects
  // like 1e39.
  if (ec == std::errc::result_out_of_range) {
    const double nearest = std::strtod(std::string(text).c_str(), nullptr);
    if (!std::isinf(nearest)) return nearest;
    return std::copysign(std::numeric_limits<double>::max(), nearest);
  }
  if (ec != std::errc()) return std::nullopt;
  return value;
}

Expected<uint32_t> encode_whole(const WholeNumber& n, Scalar type, const std::string& shown) {
  switch (type) {
    case Scalar::Bool:
      if (!n.negative && n.magnitude <= 1) return static_cast<uint32_t>(n.magnitude);
      if (n.negative && n.magnitude == 0) return 0u;
      return Error{fmt::format("'{}' is not a bool (expected true, false, 0 or 1)", shown)};
    case Scalar::Int: {
      const uint64_t limit = n.negative ? uint64_t{1} << 31 : (uint64_t{1} << 31) - 1;
      if (n.magnitude > limit) return Error{fmt::format("'{}' is out of range for int", shown)};
      const int64_t value =
          n.negative ? -static_cast<int64_t>(n.magnitude) : static_cast<int64_t>(n.magnitude);
      return static_cast<uint32_t>(static_cast<int32_t>(value));
    }
    case Scalar::UInt:
      if (n.negative && n.magnitude != 0)
        return Error{fmt::format("'{}' is negative but the type is uint", shown)};
      if (n.magnitude > std::numeric_limits<uint32_t>::max())
        return Error{fmt::format("'{}' is out of range for uint", shown)};
      return static_cast<uint32_t>(n.magnitude);
    case Scalar::Float: {
      const double magnitude = static_cast<double>(n.magnitude);
      return float_bits(static_cast<float>(n.negative ? -magnitude : magnitude));
    }
  }
  return Error{"unknown scalar type"};
}

Expected<uint32_t> encode_double(double value, Scalar type, const std::string& shown) {
  if (type == Scalar::Float) {
    if (std::isfinite(value) && std::fabs(value) > std::numeric_limits<float>::max())
      return Error{fmt::format("'{}' is out of range for float", shown)};
    return float_bits(static_cast<float>(value));
  }
  // An integer type takes a double only if it holds a whole number exactly.
  if (!std::isfinite(value) || value != std::trunc(value) || std::fabs(value) > 1e19)
    return Error{fmt::format("'{}' is not a whole number, so it is not a valid {}", shown,
                             scalar_name(type))};
  WholeNumber whole{value < 0, static_cast<uint64_t>(std::fabs(value))};
  return encode_whole(whole, type, shown);
}

}  // namespace

Expected<uint32_t> parse_scalar(std::string_view raw, Scalar type) {
  const std::string_view text = trim_spaces(raw);
  const std::string shown = excerpt(text);
  if (text.empty())
    return Error{fmt::format("empty value where a {} was expected", scalar_name(type))};
  if (type == Scalar::Bool) {
    if (text == "true") return 1u;
    if (text == "false") return 0u;
  }
  // A float takes a whole number beyond 64 bits (1e30 spelled out) as the decimal it is.
  if (auto whole = parse_whole(text); whole && !(whole->overflow && type == Scalar::Float))
    return encode_whole(*whole, type, shown);
  if (type == Scalar::Float) {
    if (auto value = parse_double(text)) return encode_double(*value, type, shown);
    return Error{fmt::format("'{}' is not a valid float", shown)};
  }
  if (type == Scalar::Bool)
    return Error{fmt::format("'{}' is not a bool (expected true, false, 0 or 1)", shown)};
  return Error{fmt::format("'{}' is not a valid {}", shown, scalar_name(type))};
}

Expected<int64_t> parse_int64(std::string_view raw) {
  const std::string_view text = trim_spaces(raw);
  auto whole = parse_whole(text);
  const uint64_t limit = whole && whole->negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (!whole) return Error{fmt::format("'{}' is not a whole number", excerpt(text))};
  if (whole->magnitude > limit)
    return Error{fmt::format("'{}' is out of range (-9223372036854775808 to 9223372036854775807)",
                             excerpt(text))};
  if (whole->negative) return static_cast<int64_t>(0 - whole->magnitude);
  return static_cast<int64_t>(whole->magnitude);
}

Expected<uint32_t> encode_number(const Number& number, Scalar type) {
  const std::string shown = number_to_string(number);
  if (const bool* b = std::get_if<bool>(&number))
    return encode_whole(WholeNumber{false, *b ? 1u : 0u}, type, shown);
  if (const int64_t* i = std::get_if<int64_t>(&number)) {
    WholeNumber whole{*i < 0, *i < 0 ? 0 - static_cast<uint64_t>(*i) : static_cast<uint64_t>(*i)};
    return encode_whole(whole, type, shown);
  }
  if (const uint64_t* u = std::get_if<uint64_t>(&number))
    return encode_whole(WholeNumber{false, *u}, type, shown);
  return encode_double(std::get<double>(number), type, shown);
}

std::string number_to_string(const Number& number) {
  return std::visit([](auto value) { return fmt::format("{}", value); }, number);
}

std::string format_scalar(uint32_t word, Scalar type) {
  switch (type) {
    case Scalar::Bool:
      return word ? "true" : "false";
    case Scalar::Int:
      return fmt::format("{}", static_cast<int32_t>(word));
    case Scalar::UInt:
      return fmt::format("{}", word);
    case Scalar::Float:
      return fmt::format("{}", bits_float(word));
  }
  return "?";
}

nlohmann::ordered_json scalar_json(uint32_t word, Scalar type) {
  switch (type) {
    case Scalar::Bool:
      return word != 0;
    case Scalar::Int:
      return static_cast<int32_t>(word);
    case Scalar::UInt:
      return word;
    case Scalar::Float: {
      const float value = bits_float(word);
      if (std::isnan(value)) return "NaN";
      if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
      // The float's shortest decimal, read back as a double, prints as that same decimal, so the
      // JSON shows "0.1" rather than 0.10000000149011612 and still reads back as the same float.
      const std::string shortest = fmt::format("{}", value);
      return std::strtod(shortest.c_str(), nullptr);
    }
  }
  return nullptr;
}

}  // namespace ab::cli
