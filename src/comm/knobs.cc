#include "comm/knobs.h"

#include "comm/comm.h"
#include "comm/registry.h"
#include "common/error.h"
#include "kernels/algo_launch.h"

namespace tpcomm {

tpcommResult_t setLaunchKnobs(tpcommComm_t comm, const LaunchKnobs& k) {
  TPCOMM_CHECK(checkComm(comm, "setLaunchKnobs"));
  if (k.block_bytes < 16 || k.host_block_bytes < 16 || k.bulk_block_bytes < 16 ||
      k.bulk_step_bytes < 0 || k.max_blocks < 0 || k.max_blocks > 1024 || k.max_threads < 32 ||
      k.max_threads > kThreadsPerBlock || k.max_threads % 32 || k.push_batch < 0 ||
      k.push_batch > 4 || k.push_eighths < 1 || k.push_eighths > 7)
    return fail(tpcommInvalidArgument,
                "setLaunchKnobs: block_bytes=%d max_blocks=%d max_threads=%d push_batch=%d "
                "push_eighths=%d out of range",
                k.block_bytes, k.max_blocks, k.max_threads, k.push_batch, k.push_eighths);
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
