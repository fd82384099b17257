// The type of a value crossing the API (an input, the output, a uniform, an emitted record), as a
// plain tree a host can walk to parse, lay out or print the value's words without the compiler's
// own type table.
//
// Every value is a flat run of 32-bit words (autobatch/batch.h): bool, int, uint and float take
// one word, an array T[N] N * words(T) with element i at word i * words(T), a struct the sum of
// its fields in declaration order, each field at its `offset`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ab {

enum class Scalar : uint8_t { Bool, Int, UInt, Float };
const char* scalar_name(Scalar s);  // "bool", "int", "uint", "float"

// A float's word and back (floats travel bit-cast, batch.h).
uint32_t float_bits(float f);
float bits_float(uint32_t w);

struct ValueField;

struct ValueType {
  enum class Kind : uint8_t { Void, Scalar, Array, Struct };
  Kind kind = Kind::Void;
  Scalar scalar = Scalar::Int;     // Kind::Scalar
  uint32_t count = 0;              // Kind::Array: the number of elements
  std::vector<ValueType> element;  // Kind::Array: one entry, the element type
  std::string struct_name;         // Kind::Struct
  std::vector<ValueField> fields;  // Kind::Struct, in declaration order
  uint32_t words = 0;              // the flattened size; 0 for void

  bool is_void() const { return kind == Kind::Void; }
  bool is_scalar() const { return kind == Kind::Scalar; }
  bool is_array() const { return kind == Kind::Array; }
  bool is_struct() const { return kind == Kind::Struct; }
  const ValueType& elem() const { return element.front(); }  // Kind::Array only
  // The field called `name` of a struct, or nullptr.
  const ValueField* field(std::string_view name) const;
  // Source spelling: "int", "float[3][4]", "Pair", "void".
  std::string spelling() const;
};

// A constrained vector type of a struct field, on its innermost dimension: `simplex[K]` (K
// positive floats summing to 1), `ordered[K]` (strictly increasing), `positive_ordered[K]`
// (strictly increasing and positive); `simplex[M][K]` is M simplexes of K. One matrix type,
// on the two innermost: `cholesky_factor_corr[K]` is a float[K][K], the lower Cholesky factor
// of a K x K correlation matrix (rows of unit length, a positive diagonal, +0 above it).
enum class VectorConstraint : uint8_t {
  None,
  Simplex,
  Ordered,
  PositiveOrdered,
  CholeskyFactorCorr
};

// The bounds a struct field of floats declares, `x: float<lower=0, upper=1>` (or an array of
// them), or its constrained vector type: metadata for the sampler, which maps such a field to
// the unconstrained space (docs/nuts.md). Nothing checks them at run time.
struct FloatBounds {
  std::optional<float> lower, upper;
  // A bound that depends on earlier fields or data (`upper=1 - alpha1`): the function of the
  // struct that computes it, in place of a constant (lang/dependent_bounds.h).
  std::string lower_fn = {}, upper_fn = {};
  VectorConstraint vector = VectorConstraint::None;
  bool has_lower() const { return lower || !lower_fn.empty(); }
  bool has_upper() const { return upper || !upper_fn.empty(); }
  bool dependent() const { return !lower_fn.empty() || !upper_fn.empty(); }
  bool any() const { return has_lower() || has_upper() || vector != VectorConstraint::None; }
  bool operator==(const FloatBounds&) const = default;
};

struct ValueField {
  std::string name;
  uint32_t offset = 0;  // in words, from the start of the struct
  ValueType type;
  FloatBounds bounds;
};

}  // namespace ab
