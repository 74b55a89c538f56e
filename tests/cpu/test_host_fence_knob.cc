// The launch knob host_fence (plan/knobs.h): a system-scope fence after every host-memory
// reader's clears (docs/PROTOCOL.md, "The host sentinel's clears"). 0 off, 1 on, 2 auto (the
// default): on unless the NVIDIA driver keeps one GPU's writes to host memory in PCIe order, which
// it does unless it sets Relaxed Ordering (topo/pcie_ordering.h, read from
// /proc/driver/nvidia/params).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "comm/lifecycle/config.h"
#include "plan/knobs.h"
#include "topo/cache_dir.h"  // writeTextFileAtomic
#include "topo/pcie_ordering.h"

namespace tpcomm {
namespace {

TEST(HostFenceKnob, AutoByDefaultAndSetByName) {
  LaunchKnobs k;
  EXPECT_EQ(k.host_fence, kHostFenceAuto);
  ASSERT_EQ(parseLaunchKnobs("host_fence=1", &k), "");
  EXPECT_EQ(k.host_fence, kHostFenceOn);
  ASSERT_EQ(parseLaunchKnobs("host_sentinel=1,host_fence=0", &k), "");
  EXPECT_EQ(k.host_fence, kHostFenceOff);
  ASSERT_EQ(parseLaunchKnobs("host_fence=2", &k), "");
  EXPECT_EQ(launchKnobsError(k, 512), "");
  ASSERT_EQ(parseLaunchKnobs("host_fence=3", &k), "");
  EXPECT_NE(launchKnobsError(k, 512).find("host_fence=3 is out of range"), std::string::npos);
  // The refusal of an unknown name lists it among the known ones.
  EXPECT_NE(parseLaunchKnobs("fence=1", &k).find("host_fence"), std::string::npos);
}

// The way a user sets it: config.launchKnobs (or TPCOMM_KNOBS) into the communicator's settings,
// from which init resolves it into the kernels' handle (DeviceComm::host_fence).
TEST(HostFenceKnob, ReachesTheSettingsFromTheConfig) {
  tpcommConfig_t cfg = TPCOMM_CONFIG_INITIALIZER;
  Settings plain;
  ASSERT_EQ(resolveSettings(&cfg, &plain), tpcommSuccess) << tpcommGetLastError();
  EXPECT_EQ(plain.knobs.host_fence, kHostFenceAuto);
  cfg.launchKnobs = "host_fence=1";
  Settings fenced;
  ASSERT_EQ(resolveSettings(&cfg, &fenced), tpcommSuccess) << tpcommGetLastError();
  EXPECT_EQ(fenced.knobs.host_fence, kHostFenceOn);
  cfg.launchKnobs = "host_fence=7";
  Settings bad;
  EXPECT_EQ(resolveSettings(&cfg, &bad), tpcommInvalidArgument);
  EXPECT_NE(std::string(tpcommGetLastError()).find("host_fence=7"), std::string::npos);
}

// The driver's parameters as the 580 driver prints them (the lines that matter, among others).
std::string params(const std::string& mode, const std::string& dwords = "\"\"",
                   const std::string& per_device = "\"\"") {
  return "ResmanDebugLevel: 4294967295\nEnableMSI: 1\nEnablePCIERelaxedOrderingMode: " + mode +
         "\nEnableResizableBar: 0\nRegistryDwords: " + dwords +
         "\nRegistryDwordsPerDevice: " + per_device + "\nRmMsg: \"\"\n";
}

TEST(PcieOrdering, TheDriverDefaultKeepsWritesInOrder) {
  const topo::PcieOrdering o = topo::relaxedOrderingFromParams(params("0"));
  EXPECT_EQ(o.state, topo::RelaxedOrdering::kOff) << o.why;
  EXPECT_FALSE(hostFenceOn(kHostFenceAuto, o));
  EXPECT_TRUE(hostFenceOn(kHostFenceOn, o));
}

TEST(PcieOrdering, TheModeParameterTurnsTheFenceOn) {
  const topo::PcieOrdering o = topo::relaxedOrderingFromParams(params("1"));
  EXPECT_EQ(o.state, topo::RelaxedOrdering::kOn);
  EXPECT_NE(o.why.find("EnablePCIERelaxedOrderingMode"), std::string::npos);
  EXPECT_TRUE(hostFenceOn(kHostFenceAuto, o));
  EXPECT_FALSE(hostFenceOn(kHostFenceOff, o)) << "an explicit 0 is the user's choice";
}

TEST(PcieOrdering, TheRegistryKeyInEitherStringTurnsTheFenceOn) {
  using topo::RelaxedOrdering;
  EXPECT_EQ(topo::relaxedOrderingFromParams(params("0", "\"RmSetPCIERelaxedOrdering=1\"")).state,
            RelaxedOrdering::kOn);
  EXPECT_EQ(topo::relaxedOrderingFromParams(
                params("0", "\"\"", "\"pci=0000:1b:00.0;RMSetPCIERelaxedOrdering=0x2\""))
                .state,
            RelaxedOrdering::kOn);
  EXPECT_EQ(
      topo::relaxedOrderingFromParams(params("0", "\"RmFoo=3;RmSetPCIERelaxedOrdering=0;RmBar=1\""))
          .state,
      RelaxedOrdering::kOff);
  // A value we cannot read counts as on.
  EXPECT_EQ(topo::relaxedOrderingFromParams(params("0", "\"RmSetPCIERelaxedOrdering=on\"")).state,
            RelaxedOrdering::kOn);
}

TEST(PcieOrdering, WhatCannotBeReadFencesUnderAuto) {
  const topo::PcieOrdering silent = topo::relaxedOrderingFromParams("EnableMSI: 1\n");
  EXPECT_EQ(silent.state, topo::RelaxedOrdering::kUnknown);
  EXPECT_TRUE(hostFenceOn(kHostFenceAuto, silent));
  const topo::PcieOrdering missing = topo::readRelaxedOrdering("/nonexistent/nvidia/params");
  EXPECT_EQ(missing.state, topo::RelaxedOrdering::kUnknown);
  EXPECT_NE(missing.why.find("/nonexistent/nvidia/params"), std::string::npos) << missing.why;
  EXPECT_TRUE(hostFenceOn(kHostFenceAuto, missing));
}

TEST(PcieOrdering, ReadsTheFileAndNamesIt) {
  char tmpl[] = "/tmp/tpcomm_params_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/params";
  ASSERT_EQ(topo::writeTextFileAtomic(path, params("0")), tpcommSuccess);
  const topo::PcieOrdering o = topo::readRelaxedOrdering(path);
  EXPECT_EQ(o.state, topo::RelaxedOrdering::kOff) << o.why;
  EXPECT_NE(o.why.find(path), std::string::npos) << o.why;
}

}  // namespace
}  // namespace tpcomm
