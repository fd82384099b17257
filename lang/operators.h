// The typing rules of the language's operators, shared by the constant folder and the IR builder
// so a constant and a run-time expression are typed (and their errors worded) identically.
#pragma once

#include <optional>
#include <string>

#include "autobatch/expected.h"
#include "ir/ops.h"
#include "ir/types.h"
#include "lang/token.h"

namespace ab::frontend {

// The op a binary or unary operator token computes (&& -> And; nullopt for other tokens).
std::optional<OpCode> binary_opcode(Tok op);
std::optional<OpCode> unary_opcode(Tok op);
// `+=` -> `+`, ...; Tok::End for plain `=` or non-assignments.
Tok compound_operator(Tok assign);
// The source spelling of an operator token: "+", "<<=", ...
const char* spelling(Tok op);

// Result type of `l op r`, or an error naming both types. Arithmetic and
// bitwise operators work on equal types and elementwise between an array and a scalar of its
// leaf type; comparisons need equal scalar types; && and || need bools.
Expected<TypeId> binary_result_type(const Types& types, Tok op, TypeId l, TypeId r);
Expected<TypeId> unary_result_type(const Types& types, Tok op, TypeId t);

// The leaf scalar kind of a type, if its leaves are scalars.
std::optional<Scalar> leaf_scalar(const Types& types, TypeId t);

}  // namespace ab::frontend
