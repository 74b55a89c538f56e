// Which worlds the island kernels serve: two islands of at least 2 ranks, so an even world of at
// least 4 (island.cu instantiates island sizes 2 and 4). The planner asks it before choosing.
#pragma once

namespace tpcomm {

constexpr bool islandWorld(int world) {
  return world >= 4 && world % 2 == 0;
}

}  // namespace tpcomm
