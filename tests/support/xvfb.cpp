#include "support/xvfb.h"

#include <doctest/doctest.h>

#include <cstdlib>

namespace ab::testing {

bool have_xvfb() {
  if (std::system("command -v xvfb-run > /dev/null 2>&1") == 0) return true;
  MESSAGE("xvfb-run is not installed: window test skipped");
  return false;
}

}  // namespace ab::testing
