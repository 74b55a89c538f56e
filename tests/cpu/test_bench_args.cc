// tpcomm-bench's numeric options (bench/bench_args.h, bench/whole_number.h): whole numbers in
// their ranges, or exit 2 naming the option. atoi took "2x" as 2 and "x" as 0 (a device index,
// a grid bound) without a word.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "bench/bench_args.h"
#include "bench/whole_number.h"
#include "tests/cpu/support/parse_words.h"

namespace tpcomm::bench {
namespace {

bool parse(std::vector<std::string> words, Args* a, int* code, std::string* err) {
  return test::parseWords(
      "tpcomm-bench", std::move(words),
      [&](int argc, char** argv) { return parseArgs(argc, argv, a, code); }, err);
}

TEST(WholeNumber, TakesOnlyAWholeNumberInRange) {
  unsigned long long v = 0;
  EXPECT_TRUE(parseWhole("0", 0, 10, &v));
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(parseWhole("10", 0, 10, &v));
  EXPECT_EQ(v, 10u);
  for (const char* bad :
       {"", "11", "2x", "x", "-3", "+3", " 3", "1e3", "3.0", "99999999999999999999999"})
    EXPECT_FALSE(parseWhole(bad, 0, 10, &v)) << bad;
  int i = -1;
  EXPECT_TRUE(parseWholeInt("1024", 0, 1024, &i));
  EXPECT_EQ(i, 1024);
  EXPECT_FALSE(parseWholeInt("1025", 0, 1024, &i));
}

TEST(BenchArgs, NumbersInRangeAreTaken) {
  Args a;
  int code = -1;
  std::string err;
  ASSERT_TRUE(parse({"--ranks", "8", "--devices", "0,1,3", "--factor", "2", "--iters", "1",
                     "--reps", "3", "--warmup", "0", "--max-blocks", "1024"},
                    &a, &code, &err))
      << err;
  EXPECT_EQ(a.ranks, 8);
  EXPECT_EQ(a.devices, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(a.factor, 2);
  EXPECT_EQ(a.iters, 1);
  EXPECT_EQ(a.reps, 3);
  EXPECT_EQ(a.warmup, 0);
  EXPECT_EQ(a.max_blocks, 1024);
}

TEST(BenchArgs, AnythingElseIsRefusedByName) {
  const std::vector<std::vector<std::string>> bad = {
      {"--ranks", "2x"},   {"--ranks", "9"},   {"--ranks", "0"},       {"--devices", "0,x"},
      {"--devices", "-1"}, {"--devices", ","}, {"--factor", "1"},      {"--iters", "0"},
      {"--reps", "many"},  {"--warmup", "-1"}, {"--max-blocks", "-5"}, {"--max-blocks", "1025"}};
  for (const auto& words : bad) {
    Args a;
    int code = -1;
    std::string err;
    EXPECT_FALSE(parse(words, &a, &code, &err)) << words[0] << " " << words[1];
    EXPECT_EQ(code, 2) << words[0] << " " << words[1];
    EXPECT_NE(err.find("bad option " + words[0] + " " + words[1]), std::string::npos) << err;
  }
}

}  // namespace
}  // namespace tpcomm::bench
