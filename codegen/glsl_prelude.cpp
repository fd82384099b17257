#include "codegen/glsl_prelude.h"

#include "codegen/shader_texts.h"

namespace ab {

const std::string& glsl_prelude() {
  static const std::string text = std::string(kAbMathText) + kAbOpsText;
  return text;
}

}  // namespace ab
