#include "autobatch/autobatch.h"

namespace ab {

const char* version() {
  return AB_VERSION;
}

}  // namespace ab
