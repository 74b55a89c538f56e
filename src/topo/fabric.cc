#include "topo/fabric.h"

namespace tpcomm {

const char* fabricName(Fabric f) {
  switch (f) {
    case Fabric::kNvlink:
      return "nvlink";
    case Fabric::kPcie:
      return "pcie";
    case Fabric::kHost:
      return "host";
  }
  return "?";
}

}  // namespace tpcomm
