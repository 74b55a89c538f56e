// Tuning tables (src/plan/tuning_table.h): a good file is read exactly; anything corrupt, foreign
// or inconsistent is rejected whole with a reason, never trusted in part.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "plan/tuning_table.h"
#include "topo/cache_dir.h"

namespace tpcomm {
namespace {

const char kKey[] = "2gpu-0123456789abcdef";

const char kGood[] = R"({
  "tpcomm_tuning": 1,
  "topology_key": "2gpu-0123456789abcdef",
  "fabric": "nvlink",
  "tables": [
    {"world": 2, "rules": [
      {"max_bytes": 65536, "algo": "oneshot"},
      {"max_bytes": 4194304, "algo": "twoshot"},
      {"max_bytes": "inf", "algo": "nccl"}]},
    {"world": 4, "rules": [{"max_bytes": 18446744073709551615, "algo": "island"}]}
  ],
  "measured": {"sizes": [1024, 65536], "us": {"oneshot": [2.9, 3.6], "nccl": [6.2, 7.4]}}
}
)";

std::string with(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string rejection(const std::string& text, const std::string& key = kKey) {
  TuningTable t;
  std::string why;
  EXPECT_FALSE(parseTuningTable(text, key, &t, &why)) << "accepted:\n" << text;
  return why;
}

TEST(TuningTable, GoodFileIsReadExactly) {
  TuningTable t;
  std::string why;
  ASSERT_TRUE(parseTuningTable(kGood, kKey, &t, &why)) << why;
  EXPECT_EQ(t.topology_key, kKey);
  EXPECT_EQ(t.fabric, Fabric::kNvlink);
  ASSERT_EQ(t.tables.size(), 2u);
  const SizeTable* two = t.tableFor(2);
  ASSERT_NE(two, nullptr);
  ASSERT_EQ(two->size(), 3u);
  EXPECT_EQ((*two)[0].max_bytes, 65536u);
  EXPECT_EQ((*two)[0].algo, tpcommAlgoOneShot);
  EXPECT_EQ((*two)[1].algo, tpcommAlgoTwoShot);
  EXPECT_EQ((*two)[2].max_bytes, SIZE_MAX);
  EXPECT_EQ((*two)[2].algo, tpcommAlgoNccl);
  ASSERT_NE(t.tableFor(4), nullptr);
  EXPECT_EQ(t.tableFor(4)->back().max_bytes, SIZE_MAX);  // the number form of "inf"
  EXPECT_EQ(t.tableFor(8), nullptr);
  EXPECT_EQ(t.tableFor(2, Fabric::kNvlink), two);
  EXPECT_EQ(t.tableFor(2, Fabric::kHost), nullptr);  // measured with P2P: not for host memory
  EXPECT_TRUE(t.measured.isObject());
}

// A world's fused crossover (tpcomm tune): a row count or "inf", read and written exactly; a
// file without it has none (0); anything else rejects the file.
TEST(TuningTable, FusedTwoShotRows) {
  TuningTable t;
  std::string why;
  ASSERT_TRUE(parseTuningTable(kGood, kKey, &t, &why)) << why;
  EXPECT_EQ(t.tables[0].fused_twoshot_rows, 0u);
  const std::string rules = R"("rules": [{"max_bytes": 18446744073709551615, "algo": "island"}]})";
  const std::string with48 =
      with(kGood, rules, R"("rules": [{"max_bytes": "inf", "algo": "island"}],
      "fused_twoshot_rows": 48})");
  ASSERT_TRUE(parseTuningTable(with48, kKey, &t, &why)) << why;
  ASSERT_NE(t.worldFor(4, Fabric::kNvlink), nullptr);
  EXPECT_EQ(t.worldFor(4, Fabric::kNvlink)->fused_twoshot_rows, 48u);
  EXPECT_EQ(t.worldFor(4, Fabric::kPcie), nullptr);  // measured on NVLink
  EXPECT_EQ(t.worldFor(8, Fabric::kNvlink), nullptr);
  TuningTable back;
  ASSERT_TRUE(parseTuningTable(tuningTableText(t), kKey, &back, &why)) << why;
  EXPECT_EQ(back.tables[1].fused_twoshot_rows, 48u);
  ASSERT_TRUE(parseTuningTable(with(with48, "48", "\"inf\""), kKey, &t, &why)) << why;
  EXPECT_EQ(t.tables[1].fused_twoshot_rows, SIZE_MAX);
  ASSERT_TRUE(parseTuningTable(tuningTableText(t), kKey, &back, &why)) << why;
  EXPECT_EQ(back.tables[1].fused_twoshot_rows, SIZE_MAX);
  for (const char* bad : {"0", "-3", "1.5", "\"many\"", "1073741825", "[48]"})
    EXPECT_NE(rejection(with(with48, "48", bad)).find("fused_twoshot_rows"), std::string::npos)
        << bad;
  // Below which the pair runs: the same values, the same exactness.
  const std::string below =
      with(with48, "\"fused_twoshot_rows\": 48", "\"fused_unfused_below\": 4");
  ASSERT_TRUE(parseTuningTable(below, kKey, &t, &why)) << why;
  EXPECT_EQ(t.tables[1].fused_unfused_below, 4u);
  EXPECT_EQ(t.tables[1].fused_twoshot_rows, 0u);
  ASSERT_TRUE(parseTuningTable(tuningTableText(t), kKey, &back, &why)) << why;
  EXPECT_EQ(back.tables[1].fused_unfused_below, 4u);
  ASSERT_TRUE(parseTuningTable(with(below, "4}", "\"inf\"}"), kKey, &t, &why)) << why;
  EXPECT_EQ(t.tables[1].fused_unfused_below, SIZE_MAX);
  EXPECT_NE(rejection(with(below, "4}", "0}")).find("fused_unfused_below"), std::string::npos);
}

// A world's wire_from (tpcomm tune, the quantized wire): per codec a byte count or "inf", read
// and written exactly; codecs not named are not measured (0), a file without it measured none.
TEST(TuningTable, WireFromRoundTrip) {
  TuningTable t;
  std::string why;
  ASSERT_TRUE(parseTuningTable(kGood, kKey, &t, &why)) << why;
  for (const WorldTable& w : t.tables)
    for (size_t from : w.wire_from) EXPECT_EQ(from, 0u);
  EXPECT_EQ(tuningTableText(t).find("wire_from"), std::string::npos);  // none measured: absent
  const std::string rules = R"("rules": [{"max_bytes": 18446744073709551615, "algo": "island"}]})";
  const std::string wired = with(kGood, rules, R"("rules": [{"max_bytes": "inf", "algo": "island"}],
      "wire_from": {"fp8_e5m2": 1048576, "int4": "inf", "int8": 4194304}})");
  ASSERT_TRUE(parseTuningTable(wired, kKey, &t, &why)) << why;
  const WorldTable* four = t.worldFor(4, Fabric::kNvlink);
  ASSERT_NE(four, nullptr);
  EXPECT_EQ(four->wire_from[0], 0u);
  EXPECT_EQ(four->wire_from[1], 4194304u);  // int8
  EXPECT_EQ(four->wire_from[2], SIZE_MAX);  // int4
  EXPECT_EQ(four->wire_from[3], 0u);        // fp8: not named, not measured
  EXPECT_EQ(four->wire_from[4], 1048576u);  // fp8_e5m2
  for (size_t from : t.worldFor(2, Fabric::kNvlink)->wire_from) EXPECT_EQ(from, 0u);
  // Written in codec order, "inf" for SIZE_MAX, fp8 left out; read back to the same table.
  const std::string text = tuningTableText(t);
  EXPECT_NE(text.find(R"("wire_from": {"int8": 4194304, "int4": "inf", "fp8_e5m2": 1048576})"),
            std::string::npos)
      << text;
  TuningTable back;
  ASSERT_TRUE(parseTuningTable(text, kKey, &back, &why)) << why;
  for (int c = 0; c < kWireCodecs; ++c)
    EXPECT_EQ(back.tables[1].wire_from[c], four->wire_from[c]) << c;
  EXPECT_EQ(tuningTableText(back), text);
  // Every codec, and the number form of SIZE_MAX (as max_bytes takes it).
  ASSERT_TRUE(parseTuningTable(
      with(wired, R"({"fp8_e5m2": 1048576, "int4": "inf", "int8": 4194304})",
           R"({"int8": 1, "int4": 2, "fp8": 3, "fp8_e5m2": 18446744073709551615})"),
      kKey, &t, &why))
      << why;
  EXPECT_EQ(t.tables[1].wire_from[1], 1u);
  EXPECT_EQ(t.tables[1].wire_from[2], 2u);
  EXPECT_EQ(t.tables[1].wire_from[3], 3u);
  EXPECT_EQ(t.tables[1].wire_from[4], SIZE_MAX);
  // An empty object: nothing measured.
  ASSERT_TRUE(parseTuningTable(
      with(wired, R"({"fp8_e5m2": 1048576, "int4": "inf", "int8": 4194304})", "{}"), kKey, &t,
      &why))
      << why;
  for (size_t from : t.tables[1].wire_from) EXPECT_EQ(from, 0u);
}

// Anything else in wire_from rejects the whole file, naming the member.
TEST(TuningTable, WireFromRefusals) {
  const std::string rules = R"("rules": [{"max_bytes": 18446744073709551615, "algo": "island"}]})";
  const std::string wired = with(kGood, rules, R"("rules": [{"max_bytes": "inf", "algo": "island"}],
      "wire_from": {"int8": 4194304}})");
  const std::string value = R"({"int8": 4194304})";
  EXPECT_EQ(rejection(with(wired, value, R"({"int3": 4194304})")),
            "tables[1].wire_from.int3: not a codec of the quantized wire (int8, int4, fp8, "
            "fp8_e5m2)");
  for (const char* name : {"none", "INT8", "fp8_e4m3", "", "int8 "})
    EXPECT_EQ(rejection(with(wired, value, std::string("{\"") + name + "\": 4194304}")),
              std::string("tables[1].wire_from.") + name +
                  ": not a codec of the quantized wire (int8, int4, fp8, fp8_e5m2)")
        << name;
  for (const char* bad : {"0", "-1", "1.5", "1e6", "\"4194304\"", "\"infinity\"", "null", "true",
                          "[4194304]", "{}", "18446744073709551616"})
    EXPECT_EQ(rejection(with(wired, value, std::string("{\"int8\": ") + bad + "}")),
              "tables[1].wire_from.int8: expected a positive byte count or \"inf\"")
        << bad;
  EXPECT_EQ(rejection(with(wired, value, "[4194304]")),
            "tables[1].wire_from: expected an object, found an array");
  EXPECT_EQ(rejection(with(wired, value, "\"inf\"")),
            "tables[1].wire_from: expected an object, found a string");
  // A codec named twice: the reader refuses duplicate members.
  EXPECT_NE(rejection(with(wired, value, R"({"int8": 4194304, "int8": 8388608})")).find("int8"),
            std::string::npos);
  // A table made in code: index 0 (no codec) has no crossover.
  TuningTable t;
  std::string why;
  ASSERT_TRUE(parseTuningTable(wired, kKey, &t, &why)) << why;
  t.tables[0].wire_from[0] = 1024;
  EXPECT_FALSE(validateTuningTable(t, &why));
  EXPECT_EQ(why, "tables[0].wire_from: codec 0 (none) has no crossover");
  EXPECT_EQ(saveTuningTable("/tmp/never-written.json", t), tpcommInvalidArgument);
}

TEST(TuningTable, AlgoForSize) {
  TuningTable t;
  std::string why;
  ASSERT_TRUE(parseTuningTable(kGood, kKey, &t, &why)) << why;
  const SizeTable& two = *t.tableFor(2);
  EXPECT_EQ(tableAlgoFor(two, 0), tpcommAlgoOneShot);
  EXPECT_EQ(tableAlgoFor(two, 65536), tpcommAlgoOneShot);
  EXPECT_EQ(tableAlgoFor(two, 65537), tpcommAlgoTwoShot);
  EXPECT_EQ(tableAlgoFor(two, SIZE_MAX), tpcommAlgoNccl);
  EXPECT_EQ(tableAlgoFor(SizeTable(), 1), -1);
}

TEST(TuningTable, SaveAndLoadRoundTrip) {
  TuningTable t;
  std::string why;
  ASSERT_TRUE(parseTuningTable(kGood, kKey, &t, &why)) << why;
  const std::string text = tuningTableText(t);
  EXPECT_NE(text.find("\"max_bytes\": \"inf\""), std::string::npos);
  TuningTable back;
  ASSERT_TRUE(parseTuningTable(text, kKey, &back, &why)) << why;
  EXPECT_EQ(tuningTableText(back), text);
  EXPECT_EQ(back.measured, t.measured);

  char tmpl[] = "/tmp/tpcomm_tuning_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/cache/tpcomm/tuning-" + kKey + ".json";
  ASSERT_EQ(saveTuningTable(path, t), tpcommSuccess);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  TuningTable loaded;
  EXPECT_EQ(loadTuningTable(path, kKey, &loaded, &why), TuningLoad::kLoaded) << why;
  EXPECT_EQ(loaded.path, path);
  EXPECT_EQ(loaded.tableFor(2)->size(), 3u);
  // The same file on another machine (another key) is foreign.
  EXPECT_EQ(loadTuningTable(path, "2gpu-ffffffffffffffff", &loaded, &why), TuningLoad::kRejected);
  EXPECT_NE(why.find("topology_key"), std::string::npos);
  // Truncated on disk (a crash while writing by something other than saveTuningTable).
  ASSERT_EQ(topo::writeTextFileAtomic(path, text.substr(0, text.size() / 2)), tpcommSuccess);
  EXPECT_EQ(loadTuningTable(path, kKey, &loaded, &why), TuningLoad::kRejected);
  EXPECT_NE(why.find("end of input"), std::string::npos) << why;
  EXPECT_EQ(loadTuningTable(std::string(tmpl) + "/none.json", kKey, &loaded, &why),
            TuningLoad::kMissing);
  EXPECT_EQ(loadTuningTable("", kKey, &loaded, &why), TuningLoad::kMissing);
  ASSERT_EQ(system(("rm -rf '" + std::string(tmpl) + "'").c_str()), 0);
}

TEST(TuningTable, SaveRefusesAnInvalidTable) {
  TuningTable t;
  t.topology_key = kKey;
  t.tables.push_back(WorldTable{2, {{1024, tpcommAlgoOneShot}}});  // does not cover every size
  EXPECT_EQ(saveTuningTable("/tmp/never-written.json", t), tpcommInvalidArgument);
}

TEST(TuningTable, CorruptJson) {
  EXPECT_NE(rejection("{\"tpcomm_tuning\": 1,,}").find("line 1"), std::string::npos);
  EXPECT_NE(rejection("garbage").find("invalid literal"), std::string::npos);
  EXPECT_NE(rejection("").find("end of input"), std::string::npos);
  EXPECT_NE(rejection("[1, 2]").find("expected an object"), std::string::npos);
}

TEST(TuningTable, TruncatedFile) {
  const std::string good = kGood;
  for (size_t n : {good.size() - 3, good.size() / 2, size_t(10)})
    EXPECT_NE(rejection(good.substr(0, n)).find("end of input"), std::string::npos) << n;
}

TEST(TuningTable, WrongVersion) {
  EXPECT_EQ(rejection(with(kGood, "\"tpcomm_tuning\": 1", "\"tpcomm_tuning\": 2")),
            "tpcomm_tuning: format version 2 is not supported (this tpcomm reads version 1)");
  EXPECT_EQ(rejection(with(kGood, "\"tpcomm_tuning\": 1,", "")), "tpcomm_tuning: missing");
  EXPECT_EQ(rejection(with(kGood, "\"tpcomm_tuning\": 1", "\"tpcomm_tuning\": \"1\"")),
            "tpcomm_tuning: expected an integer, found a string");
}

TEST(TuningTable, ForeignTopologyKey) {
  EXPECT_EQ(rejection(kGood, "2gpu-ffffffffffffffff"),
            "topology_key: '2gpu-0123456789abcdef' is not this machine's "
            "('2gpu-ffffffffffffffff'): measured on other GPUs or another driver");
}

TEST(TuningTable, UnknownAlgorithm) {
  EXPECT_EQ(rejection(with(kGood, "\"algo\": \"twoshot\"", "\"algo\": \"threeshot\"")),
            "tables[0].rules[1].algo: 'threeshot' is not an algorithm (oneshot, twoshot, nccl, "
            "host_oneshot, host_twoshot, host_bulk, island)");
  EXPECT_NE(rejection(with(kGood, "\"algo\": \"twoshot\"", "\"algo\": \"auto\"")).find("'auto'"),
            std::string::npos);
  EXPECT_NE(
      rejection(with(kGood, "\"algo\": \"twoshot\"", "\"algo\": 2")).find("expected a string"),
      std::string::npos);
}

TEST(TuningTable, SizesMustIncreaseAndCoverEverything) {
  EXPECT_EQ(rejection(with(kGood, "4194304", "65536")),
            "tables[0].rules[1].max_bytes: not above the previous rule's (sizes must increase)");
  EXPECT_EQ(rejection(with(kGood, "4194304", "1024")),
            "tables[0].rules[1].max_bytes: not above the previous rule's (sizes must increase)");
  EXPECT_EQ(rejection(with(kGood, "{\"max_bytes\": \"inf\", \"algo\": \"nccl\"}",
                           "{\"max_bytes\": 1073741824, \"algo\": \"nccl\"}")),
            "tables[0].rules: the last rule must cover every size (\"max_bytes\": \"inf\")");
  EXPECT_EQ(rejection(with(kGood, "\"max_bytes\": 65536", "\"max_bytes\": 0")),
            "tables[0].rules[0].max_bytes: expected a positive integer or \"inf\"");
  EXPECT_EQ(rejection(with(kGood, "\"max_bytes\": 65536", "\"max_bytes\": -1")),
            "tables[0].rules[0].max_bytes: expected a positive integer or \"inf\"");
  EXPECT_EQ(rejection(with(kGood, "\"max_bytes\": 65536", "\"max_bytes\": 65536.5")),
            "tables[0].rules[0].max_bytes: expected a positive integer or \"inf\"");
  EXPECT_EQ(rejection(with(kGood, "\"max_bytes\": \"inf\"", "\"max_bytes\": \"infinity\"")),
            "tables[0].rules[2].max_bytes: expected a positive integer or \"inf\"");
  EXPECT_EQ(rejection(with(kGood,
                           "\"rules\": [{\"max_bytes\": 18446744073709551615, "
                           "\"algo\": \"island\"}]",
                           "\"rules\": []")),
            "tables[1].rules: expected a non-empty array of rules");
}

TEST(TuningTable, StructureIsStrict) {
  EXPECT_EQ(rejection(with(kGood, "\"fabric\": \"nvlink\"", "\"fabric\": \"infiniband\"")),
            "fabric: 'infiniband' is not nvlink, pcie or host");
  EXPECT_EQ(rejection(with(kGood, "\"world\": 4", "\"world\": 2")),
            "tables[1].world: 2 has two tables");
  EXPECT_EQ(rejection(with(kGood, "\"world\": 4", "\"world\": 1")),
            "tables[1].world: 1 is out of range 2..64");
  EXPECT_EQ(
      rejection(with(kGood, "\"fabric\": \"nvlink\",", "\"fabric\": \"nvlink\", \"tabels\": [],")),
      "tabels: unknown member (a typo, or a file from a newer tpcomm?)");
  EXPECT_EQ(rejection(with(kGood, "{\"world\": 2, ", "{\"world\": 2, \"note\": 1, ")),
            "tables[0].note: unknown member (a typo, or a file from a newer tpcomm?)");
  EXPECT_EQ(rejection(with(kGood, "\"algo\": \"oneshot\"}", "\"algo\": \"oneshot\", \"us\": 3}")),
            "tables[0].rules[0].us: unknown member (a typo, or a file from a newer tpcomm?)");
  TuningTable t;
  std::string why;
  EXPECT_TRUE(parseTuningTable(with(kGood, "\"world\": 4", "\"world\": 6"), kKey, &t, &why)) << why;
  EXPECT_TRUE(parseTuningTable(with(kGood,
                                    ",\n  \"measured\": {\"sizes\": [1024, 65536], "
                                    "\"us\": {\"oneshot\": [2.9, 3.6], \"nccl\": [6.2, 7.4]}}",
                                    ""),
                               kKey, &t, &why))
      << why;  // "measured" is optional
  EXPECT_TRUE(t.measured.isNull());
}

TEST(TuningTable, AlgorithmsMustFitTheFabricAndWorld) {
  // A host-memory table cannot name an algorithm that needs P2P.
  EXPECT_EQ(rejection(with(kGood, "\"fabric\": \"nvlink\"", "\"fabric\": \"host\"")),
            "tables[0].rules[0].algo: oneshot needs P2P, the table is for host");
  EXPECT_EQ(rejection(with(kGood, "\"world\": 4", "\"world\": 3")),
            "tables[1].rules[0].algo: island needs an even world of at least 4");
}

TEST(TuningTable, DefaultPathIsInTheCacheFolder) {
  if (getenv("TPCOMM_TUNING_FILE")) GTEST_SKIP() << "TPCOMM_TUNING_FILE is set";
  const std::string dir = topo::userCacheDir();
  if (dir.empty()) GTEST_SKIP() << "no cache folder here";
  EXPECT_EQ(defaultTuningPath(kKey), dir + "/tuning-" + kKey + ".json");
}

TEST(TuningTable, NeverSlowerThanNccl) {
  TuningTable t;
  std::string why;
  ASSERT_TRUE(parseTuningTable(kGood, kKey, &t, &why)) << why;
  std::vector<TuningSample> s = {
      {2, 1024, tpcommAlgoOneShot, 2.9},     {2, 1024, tpcommAlgoNccl, 6.2},
      {2, 1048576, tpcommAlgoTwoShot, 11.6}, {2, 1048576, tpcommAlgoNccl, 14.0},
      {2, 67108864, tpcommAlgoNccl, 244.2},  {8, 1024, tpcommAlgoNccl, 40.0},  // no table: skip
  };
  EXPECT_TRUE(tableNeverSlowerThanNccl(t, s, 0.05, &why)) << why;
  s.push_back({2, 1048576, tpcommAlgoTwoShot, 15.0});  // a slower repeat: the best time counts
  EXPECT_TRUE(tableNeverSlowerThanNccl(t, s, 0.05, &why)) << why;
  s.push_back({2, 65536, tpcommAlgoNccl, 7.4});  // one-shot not measured at 64 KiB
  EXPECT_FALSE(tableNeverSlowerThanNccl(t, s, 0.05, &why));
  EXPECT_EQ(why, "world 2, 65536 bytes: the table picks oneshot, which was not measured");
  s.push_back({2, 65536, tpcommAlgoOneShot, 7.7});  // within 5 %
  EXPECT_TRUE(tableNeverSlowerThanNccl(t, s, 0.05, &why)) << why;
  EXPECT_FALSE(tableNeverSlowerThanNccl(t, s, 0.0, &why));
  EXPECT_EQ(why, "world 2, 65536 bytes: oneshot takes 7.70 us, NCCL 7.40 us");
}

// The bounds the format documents are inclusive: a world of 64 ranks, a crossover of 2^30 rows;
// a tie with NCCL is not slower than NCCL.
TEST(TuningTable, TheBoundsThemselvesAreAccepted) {
  TuningTable t;
  std::string why;
  ASSERT_TRUE(parseTuningTable(with(kGood, "\"world\": 4", "\"world\": 64"), kKey, &t, &why))
      << why;
  EXPECT_EQ(t.tables[1].world, 64);
  const std::string rows =
      with(kGood, "{\"world\": 2, ", "{\"world\": 2, \"fused_twoshot_rows\": 1073741824, ");
  ASSERT_TRUE(parseTuningTable(rows, kKey, &t, &why)) << why;
  EXPECT_EQ(t.tables[0].fused_twoshot_rows, size_t{1} << 30);
  ASSERT_TRUE(parseTuningTable(kGood, kKey, &t, &why)) << why;
  const std::vector<TuningSample> tie = {{2, 1024, tpcommAlgoOneShot, 6.25},
                                         {2, 1024, tpcommAlgoNccl, 6.25}};
  EXPECT_TRUE(tableNeverSlowerThanNccl(t, tie, 0.0, &why)) << why;
}

}  // namespace
}  // namespace tpcomm
