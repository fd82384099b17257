#include "ir/types.h"

namespace ab {

int StructDef::find_field(const std::string& field_name) const {
  for (size_t i = 0; i < fields.size(); ++i)
    if (fields[i].name == field_name) return static_cast<int>(i);
  return -1;
}

ValueType value_type(const Types& types, TypeId id) {
  const Type& t = types[id];
  ValueType out;
  out.words = t.words;
  switch (t.kind) {
    case Type::Kind::Void:
      break;
    case Type::Kind::Scalar:
      out.kind = ValueType::Kind::Scalar;
      out.scalar = t.scalar;
      break;
    case Type::Kind::Array:
      out.kind = ValueType::Kind::Array;
      out.count = t.count;
      out.element.push_back(value_type(types, t.elem));
      break;
    case Type::Kind::Struct: {
      const StructDef& def = types.struct_def(id);
      out.kind = ValueType::Kind::Struct;
      out.struct_name = def.name;
      for (const Field& f : def.fields)
        out.fields.push_back({f.name, f.offset, value_type(types, f.type), f.bounds});
      break;
    }
  }
  return out;
}

const ValueField* ValueType::field(std::string_view name) const {
  for (const ValueField& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

std::string ValueType::spelling() const {
  switch (kind) {
    case Kind::Void:
      return "void";
    case Kind::Scalar:
      return scalar_name(scalar);
    case Kind::Struct:
      return struct_name;
    case Kind::Array:
      break;
  }
  // float[3][4]: the innermost element first, then the dimensions outermost first.
  const ValueType* leaf = this;
  std::string dims;
  while (leaf->is_array()) {
    dims += "[" + std::to_string(leaf->count) + "]";
    leaf = &leaf->elem();
  }
  return leaf->spelling() + dims;
}

const char* scalar_name(Scalar s) {
  switch (s) {
    case Scalar::Bool:
      return "bool";
    case Scalar::Int:
      return "int";
    case Scalar::UInt:
      return "uint";
    case Scalar::Float:
      return "float";
  }
  return "?";
}

Types::Types() {
  types_.push_back(Type{});  // void
  for (Scalar s : {Scalar::Bool, Scalar::Int, Scalar::UInt, Scalar::Float}) {
    Type t;
    t.kind = Type::Kind::Scalar;
    t.scalar = s;
    t.words = 1;
    types_.push_back(t);
  }
}

TypeId Types::array(TypeId elem, uint32_t count) {
  for (size_t i = 0; i < types_.size(); ++i) {
    const Type& t = types_[i];
    if (t.kind == Type::Kind::Array && t.elem == elem && t.count == count)
      return static_cast<TypeId>(i);
  }
  Type t;
  t.kind = Type::Kind::Array;
  t.elem = elem;
  t.count = count;
  t.words = words(elem) * count;
  types_.push_back(t);
  return static_cast<TypeId>(types_.size() - 1);
}

Expected<TypeId> Types::add_struct(std::string name, std::vector<Field> fields) {
  if (find_struct(name) >= 0) return Error{"struct '" + name + "' declared twice"};
  StructDef def{std::move(name), std::move(fields), 0};
  for (Field& f : def.fields) {
    f.offset = def.words;
    def.words += words(f.type);
  }
  Type t;
  t.kind = Type::Kind::Struct;
  t.struct_index = static_cast<int32_t>(structs_.size());
  t.words = def.words;
  structs_.push_back(std::move(def));
  types_.push_back(t);
  return static_cast<TypeId>(types_.size() - 1);
}

TypeId Types::find_struct(const std::string& name) const {
  for (size_t i = 0; i < types_.size(); ++i)
    if (types_[i].kind == Type::Kind::Struct && structs_[types_[i].struct_index].name == name)
      return static_cast<TypeId>(i);
  return -1;
}

TypeId Types::leaf(TypeId id) const {
  while ((*this)[id].kind == Type::Kind::Array)
    id = (*this)[id].elem;
  return id;
}

bool Types::is_array_of(TypeId id, Scalar s) const {
  const Type& leaf_type = (*this)[leaf(id)];
  return leaf_type.kind == Type::Kind::Scalar && leaf_type.scalar == s;
}

std::string Types::to_string(TypeId id) const {
  const Type& t = (*this)[id];
  switch (t.kind) {
    case Type::Kind::Void:
      return "void";
    case Type::Kind::Scalar:
      return scalar_name(t.scalar);
    case Type::Kind::Struct:
      return structs_[t.struct_index].name;
    case Type::Kind::Array: {
      // T[A][B] is A arrays of T[B]: print the leaf, then the dimensions outermost first.
      std::string dims;
      TypeId cur = id;
      while ((*this)[cur].kind == Type::Kind::Array) {
        dims += "[" + std::to_string((*this)[cur].count) + "]";
        cur = (*this)[cur].elem;
      }
      return to_string(cur) + dims;
    }
  }
  return "?";
}

uint32_t layout_words(const Types& types, const std::vector<TypeId>& var_types,
                      std::vector<uint32_t>& offsets) {
  offsets.resize(var_types.size());
  uint32_t total = 0;
  for (size_t v = 0; v < var_types.size(); ++v) {
    offsets[v] = total;
    total += types.words(var_types[v]);
  }
  return total;
}

}  // namespace ab
