#include "engine/src/glsl_prelude.h"

#include "engine/src/shader_texts.h"

namespace ab {

const std::string& glsl_prelude() {
  static const std::string text = std::string(kAbMathText) + kAbOpsText;
  return text;
}

}  // namespace ab
