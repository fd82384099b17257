// Types of the autobatch language and IR.
//
// Every value is stored as a flat run of 32-bit words: bool, int, uint and float take one word
// (floats bit-cast, bools 0 or 1), an array T[N] takes N * words(T), a struct the sum of its
// fields in declaration order. The interpreter, the VM and the GPU state layout all use this one
// flattening, so a type's `words` and a field's `offset` mean the same thing everywhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autobatch/expected.h"
#include "autobatch/value_type.h"

namespace ab {

using TypeId = int32_t;

// Scalar (its kinds) and scalar_name() are public: autobatch/value_type.h.

struct Field {
  std::string name;
  TypeId type = 0;
  uint32_t offset = 0;   // in words, from the start of the struct
  FloatBounds bounds{};  // `float<lower=.., upper=..>`: the sampler's metadata (value_type.h)
};

struct StructDef {
  std::string name;
  std::vector<Field> fields;
  uint32_t words = 0;
  // Index of the field called `name`, or -1.
  int find_field(const std::string& name) const;
};

struct Type {
  enum class Kind : uint8_t { Void, Scalar, Array, Struct };
  Kind kind = Kind::Void;
  Scalar scalar = Scalar::Int;  // Kind::Scalar
  TypeId elem = 0;              // Kind::Array
  uint32_t count = 0;           // Kind::Array
  int32_t struct_index = -1;    // Kind::Struct: index into Types::structs()
  uint32_t words = 0;           // flattened size
};

// Interns types so that equal types have equal ids. The first five ids are fixed.
class Types {
 public:
  static constexpr TypeId kVoid = 0, kBool = 1, kInt = 2, kUInt = 3, kFloat = 4;

  Types();
  TypeId scalar(Scalar s) const { return kBool + static_cast<int>(s); }
  TypeId array(TypeId elem, uint32_t count);
  // Declares a struct; fields' offsets and the struct's size are computed here. An Error when a
  // struct of that name exists (the front end and the IR parser check first, in their words).
  Expected<TypeId> add_struct(std::string name, std::vector<Field> fields);

  const Type& operator[](TypeId id) const { return types_.at(id); }
  const StructDef& struct_def(TypeId id) const { return structs_.at(types_.at(id).struct_index); }
  const std::vector<StructDef>& structs() const { return structs_; }
  TypeId find_struct(const std::string& name) const;  // -1 if unknown
  size_t size() const { return types_.size(); }

  uint32_t words(TypeId id) const { return (*this)[id].words; }
  bool is_scalar(TypeId id) const { return (*this)[id].kind == Type::Kind::Scalar; }
  bool is_array(TypeId id) const { return (*this)[id].kind == Type::Kind::Array; }
  bool is_struct(TypeId id) const { return (*this)[id].kind == Type::Kind::Struct; }
  // The scalar at the leaves of an array nest (float[3][4] -> float); the type itself if scalar.
  TypeId leaf(TypeId id) const;
  // True if every leaf of the type is a scalar of kind `s` (a struct never qualifies).
  bool is_array_of(TypeId id, Scalar s) const;

  // Source spelling: "int", "float[3][4]", "Pair".
  std::string to_string(TypeId id) const;

 private:
  std::vector<Type> types_;
  std::vector<StructDef> structs_;
};

// The public description of type `id` (autobatch/value_type.h): what the API hands a host.
ValueType value_type(const Types& types, TypeId id);

// The flat frame of a list of variables (a lane's registers in every backend, FrameView in
// ir/exec.h): variable v's words start at offsets[v], packed in order. Returns the total words.
uint32_t layout_words(const Types& types, const std::vector<TypeId>& var_types,
                      std::vector<uint32_t>& offsets);

}  // namespace ab
