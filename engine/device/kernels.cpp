#include "engine/device/kernels.h"

namespace ab {
namespace {

const std::vector<uint32_t> kCount = {
#include "global_count.comp.inc"
};
const std::vector<uint32_t> kPick = {
#include "global_pick.comp.inc"
};
const std::vector<uint32_t> kCompact = {
#include "global_compact.comp.inc"
};
const std::vector<uint32_t> kLocalRound = {
#include "local_round.comp.inc"
};

}  // namespace

const std::vector<uint32_t>& hand_kernel_spirv(HandKernel k) {
  switch (k) {
    case HandKernel::GlobalCount:
      return kCount;
    case HandKernel::GlobalPick:
      return kPick;
    case HandKernel::GlobalCompact:
      return kCompact;
    case HandKernel::LocalRound:
      return kLocalRound;
  }
  return kCount;
}

}  // namespace ab
