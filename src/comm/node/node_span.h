// What a communicator that spans machines keeps beyond its local group (comm.h holds one when
// its ranks are on more than one machine): where it sits among the machines, and the NCCL
// communicator of its local index that links them (comm/node/node_link.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "comm/lifecycle/nccl_watchdog.h"
#include "comm/node/node_layout.h"

struct ncclComm;

namespace tpcomm {

struct NodeSpan {
  NodeLayout layout;
  int global_rank = 0;
  int global_world = 0;
  bool link_begun = false;  // tpcommCommNodeLinkBegin ran
  bool linked = false;      // tpcommCommNodeLinkEnd succeeded: collectives may run
  bool offers_id = false;   // this rank leads its local index: nccl_id is its NCCL unique id
  char nccl_id[128] = {};
  ncclComm* nccl = nullptr;  // the link of this rank's local index (nodes ranks)
  // Bounds the eager NCCL legs as the fallback's watch does (comm/lifecycle/nccl_watchdog.h).
  std::unique_ptr<NcclWatch> watch;
  uint64_t link_calls = 0;  // tpcommCommGetNodeLinkCalls
};

}  // namespace tpcomm
