// Ctrl-C (SIGINT) and SIGTERM during a long command. After `catch_interrupts()`, the first signal
// only records itself and says on stderr that the command is stopping; the command polls
// `interrupt_signal()` at step boundaries (RunOptions::should_stop), finishes what it can and
// exits with 128 + the signal's number. A second signal ends the process at once, as usual.
#pragma once

namespace ab::cli {

void catch_interrupts();
// The signal received since catch_interrupts(), or 0.
int interrupt_signal();

}  // namespace ab::cli
