// Live discovery's pure parts (sysfs PCIe tree, driver version, UUID text) on fake inputs, and
// discover() / testP2p() on this machine: with no GPU or driver they must fail cleanly, with a
// GPU they must produce a valid topology.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "common/error.h"
#include "topo/discover.h"
#include "topo/p2p_test.h"
#include "topo/sysfs.h"

namespace tpcomm {
namespace topo {
namespace {

// A fake /sys with the PCIe tree of a two-socket box: socket 0 has a switch with two GPUs and a
// GPU on its own root port; socket 1 has one GPU.
class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tpcomm_sysfs_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    addGpu("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:03:00.0", "0");
    addGpu("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:10.0/0000:04:00.0", "0");
    addGpu("pci0000:00/0000:00:03.0/0000:05:00.0", "0\n");
    addGpu("pci0000:80/0000:80:01.0/0000:81:00.0", "1");
  }
  void TearDown() override { ASSERT_EQ(system(("rm -rf '" + root_ + "'").c_str()), 0); }

  void addGpu(const std::string& tree, const std::string& numa) {
    const std::string dir = root_ + "/devices/" + tree;
    ASSERT_EQ(system(("mkdir -p '" + dir + "' '" + root_ + "/bus/pci/devices'").c_str()), 0);
    std::ofstream(dir + "/numa_node") << numa;
    const std::string bus = tree.substr(tree.rfind('/') + 1);
    ASSERT_EQ(
        symlink(("../../../devices/" + tree).c_str(), (root_ + "/bus/pci/devices/" + bus).c_str()),
        0);
  }

  PathClass between(const std::string& a, const std::string& b) {
    return pciPathClass(pciDevicePath(a, root_), pciDevicePath(b, root_), readNumaNode(a, root_),
                        readNumaNode(b, root_));
  }

  std::string root_;
};

TEST_F(FakeSysfs, ResolvesDevicesAndNumaNodes) {
  EXPECT_NE(pciDevicePath("0000:03:00.0", root_).find("/devices/pci0000:00/0000:00:01.0/"),
            std::string::npos);
  EXPECT_NE(pciDevicePath("00000000:03:00.0", root_), "");  // NVML's form is normalized
  EXPECT_EQ(pciDevicePath("0000:99:00.0", root_), "");
  EXPECT_EQ(pciDevicePath("garbage", root_), "");
  EXPECT_EQ(readNumaNode("0000:03:00.0", root_), 0);
  EXPECT_EQ(readNumaNode("0000:05:00.0", root_), 0);
  EXPECT_EQ(readNumaNode("0000:81:00.0", root_), 1);
  EXPECT_EQ(readNumaNode("0000:99:00.0", root_), -1);
}

TEST_F(FakeSysfs, PathClassFromTheTree) {
  EXPECT_EQ(between("0000:03:00.0", "0000:04:00.0"), PathClass::kPcieSameSwitch);
  EXPECT_EQ(between("0000:03:00.0", "0000:05:00.0"), PathClass::kPcieHostBridge);
  EXPECT_EQ(between("0000:03:00.0", "0000:81:00.0"), PathClass::kPcieCrossSocket);
  EXPECT_EQ(between("0000:03:00.0", "0000:03:00.0"), PathClass::kSelf);
  EXPECT_EQ(between("0000:03:00.0", "0000:99:00.0"), PathClass::kUnknown);
}

TEST(TopoSysfs, PathClassRules) {
  const std::string r0 = "/sys/devices/pci0000:00";
  const std::string r1 = "/sys/devices/pci0000:80";
  // Different root complexes: the socket decides; unknown NUMA is taken as one socket.
  EXPECT_EQ(
      pciPathClass(r0 + "/0000:00:01.0/0000:01:00.0", r1 + "/0000:80:01.0/0000:81:00.0", 0, 0),
      PathClass::kPcieHostBridge);
  EXPECT_EQ(
      pciPathClass(r0 + "/0000:00:01.0/0000:01:00.0", r1 + "/0000:80:01.0/0000:81:00.0", -1, 1),
      PathClass::kPcieHostBridge);
  EXPECT_EQ(
      pciPathClass(r0 + "/0000:00:01.0/0000:01:00.0", r1 + "/0000:80:01.0/0000:81:00.0", 0, 1),
      PathClass::kPcieCrossSocket);
  // A VM: every GPU straight on the root bus.
  EXPECT_EQ(pciPathClass(r0 + "/0000:00:05.0", r0 + "/0000:00:06.0", -1, -1),
            PathClass::kPcieHostBridge);
  // Hyper-V style prefix before the root complex is skipped.
  EXPECT_EQ(pciPathClass("/sys/devices/LNXSYSTM:00/VMBUS:00/pci7870:00/7870:00:00.0",
                         "/sys/devices/LNXSYSTM:00/VMBUS:00/pci7871:00/7871:00:00.0", -1, -1),
            PathClass::kPcieHostBridge);
  EXPECT_EQ(pciPathClass("", r0 + "/0000:00:05.0", 0, 0), PathClass::kUnknown);
  EXPECT_EQ(pciPathClass("/sys/devices/platform/foo", r0 + "/0000:00:05.0", 0, 0),
            PathClass::kUnknown);
}

TEST(TopoDiscover, DriverVersionFromProc) {
  EXPECT_EQ(driverVersionFromProc("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  "
                                  "Sun Jul 27 06:54:38 UTC 2025\nGCC version:  gcc version 12\n"),
            "580.65.06");
  EXPECT_EQ(driverVersionFromProc("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
                                  "570.144  Release Build  (dvs-builder@U16)  Thu Apr 10 2025\n"),
            "570.144");
  EXPECT_EQ(driverVersionFromProc("GCC version: 12.2.0\n"), "");
  EXPECT_EQ(driverVersionFromProc(""), "");
}

TEST(TopoDiscover, UuidText) {
  const unsigned char bytes[16] = {0x5f, 0x2a, 0x1c, 0x3e, 0x00, 0x01, 0x40, 0x02,
                                   0x80, 0x03, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x42};
  EXPECT_EQ(formatGpuUuid(bytes), "GPU-5f2a1c3e-0001-4002-8003-deadbeef0042");
}

bool machineHasGpu() {
  int n = 0;
  const bool has = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  cudaGetLastError();
  return has;
}

// Decision (docs/TOPOLOGY.md): without a usable GPU or driver, discover() fails with
// tpcommNoDevice, a message naming the cause, and an empty topology; it does not crash.
TEST(TopoDiscover, FailsCleanlyWithoutGpuOrSucceedsWithOne) {
  Topology t;
  t.resize(3);  // must be cleared on failure
  clearLastError();
  const tpcommResult_t r = discover(&t);
  if (!machineHasGpu()) {
    EXPECT_EQ(r, tpcommNoDevice);
    EXPECT_EQ(t.size(), 0);
    EXPECT_NE(std::string(lastError()).find("topology discovery"), std::string::npos)
        << lastError();
    EXPECT_EQ(discover(&t), tpcommNoDevice);  // and again: nothing cached in a broken state
    return;
  }
  ASSERT_EQ(r, tpcommSuccess) << lastError();
  EXPECT_GT(t.size(), 0);
  std::string why;
  EXPECT_TRUE(t.validate(&why)) << why;
  EXPECT_FALSE(t.driver_version.empty());
  EXPECT_NE(t.sources.find("cuda"), std::string::npos);
}

TEST(TopoDiscover, P2pTestWithoutGpuSaysWhy) {
  if (machineHasGpu()) GTEST_SKIP() << "GPU present: covered by the GPU suite";
  std::string why;
  EXPECT_EQ(testP2p(0, 1, 100, &why), P2pHealth::kUnknown);
  EXPECT_FALSE(why.empty());
}

}  // namespace
}  // namespace topo
}  // namespace tpcomm
