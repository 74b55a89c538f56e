// tpcomm-bench's --backends entries (bench/bench_args.h): an algorithm with launch knobs after
// '@', so that one run times push, the flag pull and the LL pull side by side; bad names and
// knobs are refused with the reason, before any communicator is made.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "tests/cpu/support/parse_words.h"

namespace tpcomm::bench {
namespace {

TEST(BenchBackends, NameWithKnobs) {
  BackendSpec s;
  std::string why;
  ASSERT_TRUE(parseBackend("oneshot_pull", &s, &why)) << why;
  EXPECT_EQ(s.algo, tpcommAlgoOneShotPull);
  EXPECT_EQ(s.knobs, "");
  ASSERT_TRUE(parseBackend("oneshot_pull@pull_ll_bytes=0", &s, &why)) << why;
  EXPECT_EQ(s.algo, tpcommAlgoOneShotPull);
  EXPECT_EQ(s.knobs, "pull_ll_bytes=0");
  ASSERT_TRUE(parseBackend("oneshot_pull@pull_ll_bytes=65536+lean=0", &s, &why)) << why;
  EXPECT_EQ(s.knobs, "pull_ll_bytes=65536,lean=0");
  ASSERT_TRUE(parseBackend("nccl", &s, &why)) << why;
  EXPECT_EQ(s.algo, tpcommAlgoNccl);
}

TEST(BenchBackends, BadEntriesSayWhy) {
  BackendSpec s;
  std::string why;
  EXPECT_FALSE(parseBackend("pull", &s, &why));
  EXPECT_EQ(why, "unknown backend \"pull\"");
  EXPECT_FALSE(parseBackend("nccl@lean=0", &s, &why));
  EXPECT_EQ(why, "nccl takes no launch knobs");
  EXPECT_FALSE(parseBackend("oneshot_pull@", &s, &why));
  EXPECT_NE(why.find("no knobs after '@'"), std::string::npos) << why;
  EXPECT_FALSE(parseBackend("oneshot_pull@pull_ll_bytes=65537", &s, &why));
  EXPECT_NE(why.find("pull_ll_bytes=65537 is out of range"), std::string::npos) << why;
  EXPECT_FALSE(parseBackend("oneshot_pull@pull_ll=1", &s, &why));
  EXPECT_NE(why.find("unknown knob \"pull_ll\""), std::string::npos) << why;
}

// parseArgs into *out, its exit code into *code: the parser test::parseWords runs.
auto parseInto(Args* out, int* code) {
  return [out, code](int argc, char** argv) { return parseArgs(argc, argv, out, code); };
}

TEST(BenchBackends, ArgsTakeThemSideBySide) {
  Args a;
  int code = -1;
  ASSERT_TRUE(test::parseWords("tpcomm-bench",
                               {"--backends", "oneshot,oneshot_pull,oneshot_pull@pull_ll_bytes=0"},
                               parseInto(&a, &code)));
  EXPECT_EQ(code, 0);
  EXPECT_EQ(a.backends,
            (std::vector<std::string>{"oneshot", "oneshot_pull", "oneshot_pull@pull_ll_bytes=0"}));
  Args b;  // out of range: refused
  EXPECT_FALSE(test::parseWords(
      "tpcomm-bench", {"--backends", "oneshot,oneshot_pull@block_bytes=1"}, parseInto(&b, &code)));
  EXPECT_EQ(code, 2);
}

// --wire adds each codec's two-shot (the pull form, or the form ALGO: names) next to the listed
// backends (whatever the options' order), labelled so that the check knows them; a codec the
// library lacks is refused.
TEST(BenchBackends, WireAddsTheCodecsTwoShots) {
  Args a;
  int code = -1;
  ASSERT_TRUE(test::parseWords(
      "tpcomm-bench",
      {"--wire", "int8,fp8,twoshot:int4,host_twoshot:fp8_e5m2", "--backends", "twoshot_pull,nccl"},
      parseInto(&a, &code)));
  EXPECT_EQ(a.backends,
            (std::vector<std::string>{
                "twoshot_pull", "nccl", "twoshot_pull@wire=int8+wire_min_bytes=0",
                "twoshot_pull@wire=fp8+wire_min_bytes=0", "twoshot@wire=int4+wire_min_bytes=0",
                "host_twoshot@wire=fp8_e5m2+wire_min_bytes=0"}));
  EXPECT_TRUE(isWireBackend(a.backends[2]));
  EXPECT_FALSE(isWireBackend(a.backends[0]));
  Args b;
  EXPECT_FALSE(test::parseWords(
      "tpcomm-bench", {"--wire", "int3", "--backends", "twoshot_pull,nccl"}, parseInto(&b, &code)));
  EXPECT_EQ(code, 2);
}

}  // namespace
}  // namespace tpcomm::bench
