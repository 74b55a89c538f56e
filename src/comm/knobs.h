// Launch knobs of a communicator (grid shape, push batch, PDL), for the benchmark and `tpcomm
// tune`. Not part of the C ABI: every rank must use the same knobs (ranks' blocks pair up).
#pragma once

#include "plan/grid.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

tpcommResult_t setLaunchKnobs(tpcommComm_t comm, const LaunchKnobs& knobs);
tpcommResult_t getLaunchKnobs(tpcommComm_t comm, LaunchKnobs* knobs);

}  // namespace tpcomm
