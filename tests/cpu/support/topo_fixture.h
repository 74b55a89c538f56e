// The topology fixtures of tests/cpu/data/topo/ (one JSON machine description each), loaded the
// way `tpcomm doctor --topology` loads them, for the tests that judge those machines.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "topo/topology_json.h"

namespace tpcomm::test {

inline topo::Topology topoFixture(const std::string& name) {
  topo::Topology t;
  EXPECT_EQ(
      topo::loadTopologyFile(std::string(TPCOMM_TEST_DATA_DIR) + "/topo/" + name + ".json", &t),
      tpcommSuccess)
      << name;
  return t;
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace tpcomm::test
