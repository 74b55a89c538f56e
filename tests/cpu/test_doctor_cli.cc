// `tpcomm doctor` end to end, as a user runs it. The GPU is hidden (CUDA_VISIBLE_DEVICES=-1), so
// these pass the same way on the development machine (no driver) and on a GPU machine; the cache
// folder is a fresh temporary one. --topology judges the fixture machines.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "common/json.h"
#include "kernels/runtime/image_check.h"
#include "plan/tuning_table.h"
#include "tests/cpu/support/cli_run.h"
#include "topo/topology_json.h"

namespace tpcomm {
namespace {

using test::CliResult;

class DoctorCli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tpcomm_doctor_cli_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    cache_ = tmpl;
  }
  void TearDown() override { ASSERT_EQ(system(("rm -rf '" + cache_ + "'").c_str()), 0); }

  // Runs `env <env> tpcomm doctor <args>` with no GPU visible and the temporary cache folder;
  // stdout only (stderr is dropped: the library's log lines go there).
  CliResult doctor(const std::string& args, const std::string& env = "") {
    return test::runCommand(
        "env -u TPCOMM_ALGO -u TPCOMM_TUNING_FILE -u TPCOMM_LIBRARY "
        "CUDA_VISIBLE_DEVICES=-1 XDG_CACHE_HOME='" +
        cache_ + "' " + env + " '" + TPCOMM_CLI_PATH + "' doctor " + args + " 2>/dev/null");
  }

  static std::string topoFile(const std::string& name) {
    return std::string("--topology '") + TPCOMM_TEST_DATA_DIR + "/topo/" + name + ".json'";
  }

  std::string cache_;
};

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Whether the build's architecture list ("75-real,90-real,120") has SASS for "90".
bool builtArch(const std::string& sm) {
  std::string list = std::string(builtArchitectures()) + ",";
  for (size_t start = 0, comma; (comma = list.find(',', start)) != std::string::npos;
       start = comma + 1) {
    const std::string a = list.substr(start, comma - start);
    if (a == sm || a == sm + "-real") return true;
  }
  return false;
}

json::Value parsed(const CliResult& r) {
  json::Value v;
  std::string why;
  EXPECT_TRUE(json::parse(r.out, &v, &why)) << why << "\n" << r.out;
  return v;
}

TEST_F(DoctorCli, NoGpuExitsTwoAndStillShowsTheBuild) {
  const CliResult r = doctor("");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(has(r.out, "no GPU visible")) << r.out;
  EXPECT_TRUE(has(r.out, "Architecture coverage")) << r.out;
  EXPECT_TRUE(has(r.out, builtArchitectures())) << r.out;
  EXPECT_TRUE(has(r.out, "tpcomm executable")) << r.out;
  EXPECT_TRUE(has(r.out, "12.0")) << r.out;  // every known cc is listed without a GPU
  EXPECT_TRUE(has(r.out, "hypothetical")) << r.out;
  EXPECT_TRUE(has(r.out, "[FATAL]")) << r.out;
  EXPECT_TRUE(has(r.out, "CANNOT RUN (exit 2)")) << r.out;
}

TEST_F(DoctorCli, JsonHasTheExpectedKeys) {
  const CliResult r = doctor("--json");
  EXPECT_EQ(r.status, 2);
  const json::Value v = parsed(r);
  ASSERT_TRUE(v.isObject());
  for (const char* key :
       {"tpcomm_doctor", "tpcomm_version", "exit_code", "status", "system", "gpus_visible",
        "no_gpu_reason", "gpus", "topology_key", "topology", "p2p", "fabric", "coverage", "tuning",
        "policy", "nccl", "env", "findings"})
    EXPECT_NE(v.find(key), nullptr) << key;
  int64_t code = -1;
  ASSERT_TRUE(v.find("exit_code")->getInt64(&code));
  EXPECT_EQ(code, 2);
  EXPECT_EQ(v.find("status")->asString(), "no_gpu");
  EXPECT_FALSE(v.find("gpus_visible")->asBool());
  EXPECT_FALSE(v.find("no_gpu_reason")->asString().empty());
  EXPECT_TRUE(v.find("gpus")->items().empty());

  const json::Value& cov = *v.find("coverage");
  EXPECT_EQ(cov.find("built_architectures")->asString(), builtArchitectures());
  ASSERT_FALSE(cov.find("binaries")->items().empty());
  EXPECT_EQ(cov.find("binaries")->items()[0].find("role")->asString(), "tpcomm executable");
  EXPECT_EQ(cov.find("ccs")->items().size(), 11u);  // inspect::knownCcs()
  for (const json::Value& c : cov.find("ccs")->items()) {
    EXPECT_NE(c.find("cc"), nullptr);
    EXPECT_NE(c.find("verdict"), nullptr);
    EXPECT_TRUE(c.find("gpus")->items().empty());
  }
  // The executable carries the kernels the library carries: every architecture of the build
  // ("90-real" -> cc 9.0) runs natively.
  int native = 0;
  for (const json::Value& c : cov.find("ccs")->items()) {
    std::string cc = c.find("cc")->asString();
    cc.erase(cc.find('.'), 1);
    if (builtArch(cc)) {
      EXPECT_EQ(c.find("verdict")->asString(), "native") << c.find("cc")->asString();
      ++native;
    }
  }
  EXPECT_GT(native, 0) << builtArchitectures();

  const json::Value& policy = *v.find("policy");
  EXPECT_TRUE(policy.find("hypothetical")->asBool());
  EXPECT_EQ(policy.find("worlds")->items().size(), 21u);
  const json::Value& row = policy.find("worlds")->items()[0].find("rows")->items()[0];
  for (const char* key : {"bytes", "algo", "fallback", "error", "reason"})
    EXPECT_NE(row.find(key), nullptr) << key;
  EXPECT_FALSE(row.find("reason")->asString().empty());

  const json::Value& findings = *v.find("findings");
  ASSERT_FALSE(findings.items().empty());
  EXPECT_EQ(findings.items()[0].find("severity")->asString(), "fatal");
  EXPECT_TRUE(has(findings.items()[0].find("what")->asString(), "no GPU visible"));
  EXPECT_NE(v.find("nccl")->find("loaded"), nullptr);
}

TEST_F(DoctorCli, TopologyFileIsJudgedLikeAMachine) {
  CliResult r = doctor(topoFile("h200_2x_nvlink"));
  EXPECT_TRUE(r.status == 0 || r.status == 1) << r.out;  // 1 where libnccl is not installed
  EXPECT_TRUE(has(r.out, "simulated from")) << r.out;
  EXPECT_TRUE(has(r.out, "NVIDIA H200")) << r.out;
  EXPECT_TRUE(has(r.out, "fabric nvlink")) << r.out;
  EXPECT_TRUE(has(r.out, "world 2")) << r.out;
  EXPECT_FALSE(has(r.out, "[FATAL]")) << r.out;

  const json::Value v = parsed(doctor("--json " + topoFile("h200_2x_nvlink")));
  EXPECT_EQ(v.find("gpus")->items().size(), 2u);
  EXPECT_EQ(v.find("fabric")->find("fabric")->asString(), "nvlink");
  const json::Value& policy = *v.find("policy");
  EXPECT_FALSE(policy.find("hypothetical")->asBool());
  ASSERT_EQ(policy.find("worlds")->items().size(), 1u);
  EXPECT_EQ(policy.find("worlds")->items()[0].find("rows")->items().size(), 9u);
  EXPECT_EQ(v.find("tuning")->find("status")->asString(), "missing");
  const json::Value& cc = v.find("coverage")->find("ccs")->items()[0];
  EXPECT_EQ(cc.find("cc")->asString(), "9.0");
  EXPECT_EQ(cc.find("gpus")->items().size(), 2u);

  // Four GeForce cards without P2P: host memory, which this build cannot do yet: exit 1.
  r = doctor(topoFile("rtx_4090_4x_no_p2p"));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(has(r.out, "no working P2P")) << r.out;
  EXPECT_TRUE(has(r.out, "fix: ")) << r.out;
}

TEST_F(DoctorCli, TuningTableInTheCacheIsShown) {
  topo::Topology t;
  ASSERT_EQ(
      topo::loadTopologyFile(std::string(TPCOMM_TEST_DATA_DIR) + "/topo/h200_2x_nvlink.json", &t),
      tpcommSuccess);
  TuningTable table;
  table.topology_key = t.key();
  table.fabric = Fabric::kNvlink;
  table.tables.push_back({2, {{4096, tpcommAlgoTwoShot}, {SIZE_MAX, tpcommAlgoOneShot}}});
  const std::string path = cache_ + "/tpcomm/tuning-" + t.key() + ".json";
  ASSERT_EQ(saveTuningTable(path, table), tpcommSuccess);
  const json::Value v = parsed(doctor("--json " + topoFile("h200_2x_nvlink")));
  EXPECT_EQ(v.find("tuning")->find("status")->asString(), "loaded");
  EXPECT_EQ(v.find("tuning")->find("path")->asString(), path);
  const json::Value& w = v.find("policy")->find("worlds")->items()[0];
  EXPECT_TRUE(w.find("tuned")->asBool());
  EXPECT_EQ(w.find("rows")->items()[0].find("algo")->asString(), "twoshot");
  EXPECT_EQ(w.find("rows")->items()[8].find("algo")->asString(), "oneshot");

  // A corrupt table is ignored, never trusted, and doctor says so (exit 1).
  std::ofstream(path) << "{\"tpcomm_tuning\": 1,";
  const CliResult r = doctor(topoFile("h200_2x_nvlink"));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(has(r.out, "ignored")) << r.out;
}

TEST_F(DoctorCli, EnvironmentIsReported) {
  CliResult r = doctor("--env");
  EXPECT_TRUE(has(r.out, "TPCOMM_BUFFER_BYTES")) << r.out;
  EXPECT_TRUE(has(r.out, "TPCOMM_LIBRARY")) << r.out;

  r = doctor(topoFile("h200_2x_nvlink"), "TPCOMM_ALGO=fastest");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(has(r.out, "TPCOMM_ALGO=fastest")) << r.out;

  r = doctor(topoFile("h200_2x_nvlink"), "TPCOMM_ALGO=twoshot");
  EXPECT_TRUE(has(r.out, "TPCOMM_ALGO=twoshot forces every call")) << r.out;

  r = doctor("", "TPCOMM_LIBRARY=/nonexistent/libtpcomm.so");
  EXPECT_TRUE(has(r.out, "cannot inspect /nonexistent/libtpcomm.so")) << r.out;

  const json::Value v =
      parsed(doctor("--json", std::string("TPCOMM_LIBRARY='") + TPCOMM_LIBRARY_PATH + "'"));
  const json::Value& bins = *v.find("coverage")->find("binaries");
  ASSERT_EQ(bins.items().size(), 2u);
  EXPECT_EQ(bins.items()[1].find("role")->asString(), "libtpcomm.so");
  EXPECT_EQ(bins.items()[1].find("how")->asString(), "TPCOMM_LIBRARY");
}

// TPCOMM_KNOBS values that make every init fail (tpcommInvalidArgument) are findings, found by
// init's own parser and range checks; a usable value is none.
TEST_F(DoctorCli, BadKnobsAreFindings) {
  const std::string machine = topoFile("h200_2x_nvlink");
  const CliResult good = doctor(machine);
  for (const char* bad :
       {"block_bytes=-5", "max_threads=0", "lean=2", "block_bytes=8", "bogus=1"}) {
    SCOPED_TRACE(bad);
    const CliResult r = doctor(machine, std::string("TPCOMM_KNOBS='") + bad + "'");
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_TRUE(has(r.out, std::string("TPCOMM_KNOBS=") + bad + ": ")) << r.out;
    EXPECT_TRUE(has(r.out, "communicator init fails (tpcommInvalidArgument)")) << r.out;
    const json::Value v = parsed(doctor("--json " + machine, std::string("TPCOMM_KNOBS=") + bad));
    bool listed = false;
    for (const json::Value& f : v.find("findings")->items())
      listed |= has(f.find("what")->asString(), std::string("TPCOMM_KNOBS=") + bad);
    EXPECT_TRUE(listed);
  }
  const CliResult fine = doctor(machine, "TPCOMM_KNOBS=block_bytes=4096,lean=0");
  EXPECT_EQ(fine.status, good.status) << fine.out;
  EXPECT_FALSE(has(fine.out, "TPCOMM_KNOBS=block_bytes")) << fine.out;
}

// The box simulated whole on the CPU: the 8-GPU two-socket PCIe fixture with a probe file
// shaped like the published Broadcom + Turin box (stores collapse with all pairs, loads hold).
// The verdict is write_collapse, no SM push is previewed, and the fused all-reduce + RMSNorm (what
// the engines' fusion passes call) runs a fused pull kernel at every world and token count: the
// one-shot or two-shot where the all-reduce pulls flat, the island where it is island_pull; never
// a push, never unfused, except where the all-reduce itself goes to NCCL.
TEST_F(DoctorCli, ASimulatedCollapseKeepsTheFusedCallFusedOverPull) {
  const std::string probe =
      std::string(" --probe '") + TPCOMM_TEST_DATA_DIR + "/probe/broadcom_turin_collapse.json'";
  const std::string machine = topoFile("rtx_pro_6000_8x_pcie_2socket") + probe;
  const CliResult text = doctor(machine);
  EXPECT_EQ(text.status, 1) << text.out;  // a collapse costs speed
  EXPECT_TRUE(has(text.out, "Fabric probe (file in ")) << text.out;
  EXPECT_TRUE(has(text.out, "fabric probe verdict write_collapse")) << text.out;
  EXPECT_TRUE(
      has(text.out, "all-reduce + add + RMSNorm, 7168 bf16 rows: T=1 fused_p2p_oneshot_pull"))
      << text.out;
  const json::Value v = parsed(doctor("--json " + machine));
  EXPECT_EQ(v.find("fabric_probe")->find("policy_verdict")->asString(), "write_collapse");
  int islands = 0, fused = 0;
  for (const json::Value& w : v.find("policy")->find("worlds")->items()) {
    const int world = static_cast<int>(w.find("world")->asDouble());
    for (const json::Value& r : w.find("fused")->items()) {
      const std::string ar = r.find("allreduce")->asString(), k = r.find("variant")->asString();
      const std::string what =
          "world " + std::to_string(world) +
          " T=" + std::to_string(static_cast<int>(r.find("tokens")->asDouble())) + ": " + ar +
          " then " + k + " (" + r.find("reason")->asString() + ")";
      if (ar == "nccl") continue;
      ++fused;
      EXPECT_EQ(k.rfind("fused_p2p_", 0), 0u) << what;
      EXPECT_TRUE(has(k, "pull")) << what;
      if (ar == "island_pull") {
        EXPECT_EQ(k, "fused_p2p_island_pull") << what;
        ++islands;
      }
    }
  }
  EXPECT_GE(fused, 7 * 3);  // 1, 16 and 64 tokens at every world 2..8
  EXPECT_GE(islands, 2);    // above 1 MiB at 6 and 8 ranks
}

TEST_F(DoctorCli, UsageErrors) {
  EXPECT_EQ(doctor("--bogus").status, 2);
  EXPECT_EQ(doctor("--topology /nonexistent.json").status, 2);
  EXPECT_EQ(doctor(topoFile("h200_2x_nvlink") + " --probe /nonexistent.json").status, 2);
  EXPECT_EQ(doctor(topoFile("h200_2x_nvlink") + " --probe " + topoFile("h200_2x_nvlink").substr(11))
                .status,
            2);  // a topology file is not a probe
  const CliResult help = doctor("--help");
  EXPECT_EQ(help.status, 0);
  EXPECT_TRUE(has(help.out, "--retest-p2p")) << help.out;
}

}  // namespace
}  // namespace tpcomm
