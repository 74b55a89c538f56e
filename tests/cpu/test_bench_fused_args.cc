// tpcomm-bench-fused's command line (bench/fused_args.h): every value parsed whole, the token
// counts sorted (the bench sizes its buffers by the last one), --help on stdout with exit 0, and
// a clear message with exit 2 for anything else it cannot take.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "bench/fused_args.h"
#include "tests/cpu/support/parse_words.h"

namespace tpcomm::bench {
namespace {

// Parses {"tpcomm-bench-fused", args...}; *exit_code and *err (stderr) as the bench would give.
bool parse(std::vector<std::string> args, FusedArgs* a, int* exit_code, std::string* err) {
  return test::parseWords(
      "tpcomm-bench-fused", std::move(args),
      [&](int argc, char** argv) { return parseFusedArgs(argc, argv, a, exit_code); }, err);
}

TEST(BenchFusedArgs, DefaultsWithoutOptions) {
  FusedArgs a;
  int rc = -1;
  std::string err;
  ASSERT_TRUE(parse({}, &a, &rc, &err));
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(a.ranks, 2);
  EXPECT_EQ(a.hidden, 7168u);
  EXPECT_EQ(a.tokens, (std::vector<size_t>{1, 2, 4, 8, 16, 32, 64, 128, 256}));
  EXPECT_FALSE(a.fp8);
  EXPECT_EQ(a.json, "");
  EXPECT_EQ(err, "");
}

TEST(BenchFusedArgs, EveryOptionTakesItsValue) {
  FusedArgs a;
  int rc = -1;
  std::string err;
  ASSERT_TRUE(parse({"--ranks", "4", "--hidden", "4096", "--tokens", "128,1,16,16", "--fp8",
                     "--iters", "10", "--reps", "3", "--json", "rows.json"},
                    &a, &rc, &err))
      << err;
  EXPECT_EQ(a.ranks, 4);
  EXPECT_EQ(a.hidden, 4096u);
  EXPECT_EQ(a.tokens, (std::vector<size_t>{1, 16, 128}));  // sorted, the repeat dropped
  EXPECT_TRUE(a.fp8);
  EXPECT_EQ(a.iters, 10);
  EXPECT_EQ(a.reps, 3);
  EXPECT_EQ(a.json, "rows.json");
}

TEST(BenchFusedArgs, HelpIsNotAnError) {
  FusedArgs a;
  int rc = -1;
  std::string err;
  EXPECT_FALSE(parse({"--help"}, &a, &rc, &err));
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(err, "");  // the usage goes to stdout
}

TEST(BenchFusedArgs, BadValuesAreRefusedWithTheReason) {
  const std::vector<std::vector<std::string>> bad = {
      {"--tokens", "1,x"},  // once an endless loop: strtoull stopped at 'x' and never moved
      {"--tokens", ""},       {"--tokens", "1,,2"},
      {"--tokens", "0"},      {"--tokens", "2,"},
      {"--ranks", "9"},       {"--ranks", "0"},
      {"--ranks", "2x"},      {"--ranks", "-2"},
      {"--hidden", "0"},      {"--hidden", "1e3"},
      {"--iters", "0"},       {"--reps", "-1"},
      {"--json", ""},         {"--tokens", "99999999999999999999999"},
      {"--hidden", "1048577"}};
  for (const auto& args : bad) {
    FusedArgs a;
    int rc = -1;
    std::string err;
    EXPECT_FALSE(parse(args, &a, &rc, &err)) << args[0] << " " << args[1];
    EXPECT_EQ(rc, 2) << args[0] << " " << args[1];
    EXPECT_NE(err.find("bad value for " + args[0] + ": '" + args[1] + "'"), std::string::npos)
        << err;
    EXPECT_NE(err.find("usage: tpcomm-bench-fused"), std::string::npos);
  }
}

TEST(BenchFusedArgs, UnknownOptionsAndMissingValuesAreNamed) {
  FusedArgs a;
  int rc = -1;
  std::string err;
  EXPECT_FALSE(parse({"--tokens", "1", "--bogus"}, &a, &rc, &err));
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("unknown option --bogus"), std::string::npos) << err;
  EXPECT_FALSE(parse({"--hidden"}, &a, &rc, &err));
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("--hidden needs a value"), std::string::npos) << err;
}

}  // namespace
}  // namespace tpcomm::bench
