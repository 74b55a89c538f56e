// How the ranks of a communicator reach each other: the one fact of the topology every layer above
// (the planner, the transports, the doctor) decides by.
#pragma once

namespace tpcomm {

enum class Fabric {
  kNvlink,  // peer memory over NVLink / NVSwitch
  kPcie,    // peer memory over PCIe (P2P works)
  kHost,    // no working P2P: pinned host shared memory
};
const char* fabricName(Fabric f);

}  // namespace tpcomm
