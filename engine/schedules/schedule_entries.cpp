// schedule_entries (schedule_entries.h): every schedule's kernel entry point, for the code
// generator.
#include "engine/schedules/schedule_entries.h"

#include "engine/schedules/schedule_global.h"

namespace ab {

KernelEntries schedule_entries() {
  // In the order the sources held them before the schedules supplied them (masked, compacted;
  // subgroup, fused, workgroup, lane), so that the generated sources, their SPIR-V and the disk
  // cache's keys stay the same.
  static const KernelEntry entries[] = {GlobalMaskedSchedule::entry(),
                                        GlobalSchedule::entry(),
                                        LocalSchedule::entry(LocalScope::Subgroup),
                                        GlobalFusedSchedule::entry(),
                                        LocalSchedule::entry(LocalScope::Workgroup),
                                        LocalSchedule::entry(LocalScope::Lane)};
  return entries;
}

}  // namespace ab
