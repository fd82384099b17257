// Formats a value's words by its type, the way the source spells values: 3, 2.5, true,
// [1, 2, 3], {x: 1, y: 2}. Long arrays are cut after `max_elements` with ", ...".
#pragma once

#include <cstdint>
#include <string>

#include "autobatch/value_type.h"

namespace ab::debugger {

std::string format_value(const ValueType& type, const uint32_t* words, uint32_t max_elements = 8);
// The value's first leaf as a double (for colouring by a watched variable).
double leading_scalar(const ValueType& type, const uint32_t* words);

}  // namespace ab::debugger
