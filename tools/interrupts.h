// Ctrl-C (SIGINT) and SIGTERM during a long command. After `catch_interrupts()`:
//  - Until `stop_at_step_boundaries()`, a signal ends the process at once with exit status 128 +
//    the signal's number and a line on stderr: the run has not begun (data loading, the driver
//    compiling kernels for minutes), so there is nothing to keep, and waiting for a first step
//    boundary would hold a `timeout` or a Ctrl-C for as long as the compile takes.
//  - After it, the first signal only records itself and says on stderr that the command is
//    stopping; the command polls `interrupt_signal()` at step boundaries
//    (RunOptions::should_stop), finishes what it can and exits with 128 + the signal's number. A
//    second signal ends the process at once, as usual.
//  - Under mpirun, once the run takes steps (`ranks_stop_at_once(root)`), a signal still ends
//    the process at once (every rank does: one rank's partial fit would lack the others'
//    chains), saying so truthfully on rank 0 alone: mpirun ends the job the same way when a rank
//    dies, and its own report names that rank.
#pragma once

namespace ab::cli {

void catch_interrupts();
// Called once the run takes steps (from its first should_stop poll on): signals now wait for a
// step boundary.
void stop_at_step_boundaries();
// Under mpirun, called once the run takes steps: a signal ends the process at once, and only
// when `say` (rank 0) with a line on stderr.
void ranks_stop_at_once(bool say);
// The signal received since stop_at_step_boundaries(), or 0.
int interrupt_signal();

}  // namespace ab::cli
