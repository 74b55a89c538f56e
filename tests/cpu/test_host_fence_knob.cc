// The launch knob host_fence (plan/knobs.h): a system-scope fence after every host-memory
// reader's clears (docs/PROTOCOL.md, "The host sentinel's clears"), off by default, set by name
// like every other knob so tpcomm-bench --sweep-knobs and the GPU tests can turn it on.
#include <gtest/gtest.h>

#include <string>

#include "comm/config.h"
#include "plan/knobs.h"

namespace tpcomm {
namespace {

TEST(HostFenceKnob, OffByDefaultAndSetByName) {
  LaunchKnobs k;
  EXPECT_FALSE(k.host_fence) << "the fence costs every back-to-back host call until measured";
  ASSERT_EQ(parseLaunchKnobs("host_fence=1", &k), "");
  EXPECT_TRUE(k.host_fence);
  ASSERT_EQ(parseLaunchKnobs("host_sentinel=1,host_fence=0", &k), "");
  EXPECT_FALSE(k.host_fence);
  EXPECT_NE(parseLaunchKnobs("host_fence=2", &k).find("host_fence=2: expected 0 or 1"),
            std::string::npos);
  // The refusal of an unknown name lists it among the known ones.
  EXPECT_NE(parseLaunchKnobs("fence=1", &k).find("host_fence"), std::string::npos);
}

// The way a user turns it on: config.launchKnobs (or TPCOMM_KNOBS) into the communicator's
// settings, from which init copies it into the kernels' handle (DeviceComm::host_fence).
TEST(HostFenceKnob, ReachesTheSettingsFromTheConfig) {
  tpcommConfig_t cfg = TPCOMM_CONFIG_INITIALIZER;
  Settings plain;
  ASSERT_EQ(resolveSettings(&cfg, &plain), tpcommSuccess) << tpcommGetLastError();
  EXPECT_FALSE(plain.knobs.host_fence);
  cfg.launchKnobs = "host_fence=1";
  Settings fenced;
  ASSERT_EQ(resolveSettings(&cfg, &fenced), tpcommSuccess) << tpcommGetLastError();
  EXPECT_TRUE(fenced.knobs.host_fence);
}

}  // namespace
}  // namespace tpcomm
