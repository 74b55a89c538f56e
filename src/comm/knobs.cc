#include "comm/knobs.h"

#include <string>

#include "comm/comm.h"
#include "comm/registry.h"
#include "common/error.h"
#include "kernels/algo_launch.h"

namespace tpcomm {

tpcommResult_t setLaunchKnobs(tpcommComm_t comm, const LaunchKnobs& k) {
  TPCOMM_CHECK(checkComm(comm, "setLaunchKnobs"));
  const std::string why = launchKnobsError(k, kThreadsPerBlock);
  if (!why.empty()) return fail(tpcommInvalidArgument, "setLaunchKnobs: %s", why.c_str());
  comm->knobs = k;
  comm->knobs.pdl = k.pdl && comm->cc_major >= 9;
  return tpcommSuccess;
}

tpcommResult_t getLaunchKnobs(tpcommComm_t comm, LaunchKnobs* k) {
  TPCOMM_CHECK(checkComm(comm, "getLaunchKnobs"));
  *k = comm->knobs;
  return tpcommSuccess;
}

}  // namespace tpcomm
