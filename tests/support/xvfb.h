// The window tests run their program under xvfb-run; where it is not installed they skip
// themselves, saying so.
#pragma once

namespace ab::testing {

// Whether xvfb-run is installed; when not, logs "xvfb-run is not installed: window test skipped"
// in the current test case.
bool have_xvfb();

}  // namespace ab::testing
