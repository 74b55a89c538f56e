// What a large or hostile JSON file costs (src/common/json.h): parsing is linear in the text, and
// the caps (members per object, elements per array, nesting depth, total size) each stop a file
// with a "line L, column C" message. The time bounds are far above what the parser needs (tens of
// ms per MiB) and far below what the quadratic hand-written parser took (tens of seconds).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/json.h"
#include "plan/tuning_table.h"
#include "tests/cpu/support/cli_run.h"
#include "topo/cache_dir.h"
#include "topo/topology_json.h"

namespace tpcomm {
namespace {

using json::kMaxDepth;
using json::kMaxElements;
using json::kMaxMembers;
using json::kMaxTextBytes;
using json::kMaxValues;
using json::parse;
using json::Value;
using json::write;

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string parseError(const std::string& text) {
  Value v;
  std::string error;
  EXPECT_FALSE(parse(text, &v, &error)) << "accepted " << text.size() << " bytes";
  return error;
}

bool parses(const std::string& text) {
  Value v;
  std::string error;
  const bool ok = parse(text, &v, &error);
  EXPECT_TRUE(ok) << error;
  return ok;
}

// {"m0000000": 1234567890123, "m0000001": ...}: distinct names with a long common prefix, the
// worst case for a parser that searches the members for duplicates.
std::string objectWithMembers(size_t n) {
  std::string text = "{";
  char name[32];
  for (size_t i = 0; i < n; ++i) {
    snprintf(name, sizeof(name), "%s\"m%07zu\": ", i ? ", " : "", i);
    text += name;
    text += std::to_string(1234567890123 + i);
  }
  return text + "}";
}

std::string arrayWithElements(size_t n) {
  std::string text = "[";
  for (size_t i = 0; i < n; ++i) text += i ? ",0" : "0";
  return text + "]";
}

TEST(JsonLimits, MembersPerObject) {
  EXPECT_TRUE(parses(objectWithMembers(kMaxMembers)));
  const std::string text = objectWithMembers(kMaxMembers + 1);
  // Stopped at the closing quote of the first name too many.
  const size_t closing_quote = text.rfind("\"m") + 9;
  EXPECT_EQ(parseError(text), "line 1, column " + std::to_string(closing_quote + 1) +
                                  ": more than 100000 members in one object (no tpcomm file has "
                                  "that many)");
}

TEST(JsonLimits, ElementsPerArray) {
  EXPECT_TRUE(parses(arrayWithElements(kMaxElements)));
  // Element 100001 is at column 200002; a number is read with the byte after it.
  EXPECT_NE(parseError("{\"a\":\n" + arrayWithElements(kMaxElements + 1) + "}")
                .find("line 2, column 200003: more than 100000 elements in one array"),
            std::string::npos);
}

// The per-container caps do not bound the document: arrays of arrays each under kMaxElements.
// Counted over every value (the root and the containers included), so exactly kMaxValues parse.
TEST(JsonLimits, ValuesPerDocument) {
  const size_t a = (kMaxValues - 3) / 2, b = kMaxValues - 3 - a;  // root + 2 arrays + a + b
  ASSERT_LE(b, kMaxElements);
  const std::string inner_a = arrayWithElements(a), inner_b = arrayWithElements(b);
  EXPECT_TRUE(parses("[" + inner_a + "," + inner_b + "]"));
  EXPECT_NE(parseError("[" + inner_a + "," + inner_b + ",0]")
                .find("more than " + std::to_string(kMaxValues) + " values in the document"),
            std::string::npos);
  // Near 4 MiB of small arrays (2 bytes a value): about 2M values without the cap. Refused at
  // once, with where it stopped.
  std::string big = "{\"gpus\": [";
  const std::string row = arrayWithElements(1000);
  while (big.size() + row.size() + 4 < kMaxTextBytes) big += (big.back() == '[' ? "" : ",") + row;
  big += "]}";
  const auto t0 = std::chrono::steady_clock::now();
  const std::string error = parseError(big);
  EXPECT_LT(msSince(t0), 1000.0);
  EXPECT_EQ(error.rfind("line 1, column ", 0), 0u) << error;
  EXPECT_NE(error.find("more than 200000 values in the document (no tpcomm file has that many)"),
            std::string::npos)
      << error;
}

TEST(JsonLimits, NestingDepth) {
  EXPECT_TRUE(parses(std::string(kMaxDepth, '[') + std::string(kMaxDepth, ']')));
  EXPECT_EQ(parseError(std::string(kMaxDepth + 1, '[') + std::string(kMaxDepth + 1, ']')),
            "line 1, column 65: nesting deeper than 64 levels");
  std::string objects;
  for (size_t i = 0; i <= kMaxDepth; ++i) objects += "{\"a\":";
  EXPECT_NE(parseError(objects + "1" + std::string(kMaxDepth + 1, '}')).find("nesting deeper"),
            std::string::npos);
  // A deep file is refused before its nesting costs stack or time.
  EXPECT_NE(parseError(std::string(1000000, '[')).find("line 1, column 65: nesting"),
            std::string::npos);
}

TEST(JsonLimits, TotalSize) {
  const std::string full = "\"" + std::string(kMaxTextBytes - 2, 'x') + "\"";
  EXPECT_TRUE(parses(full));
  EXPECT_EQ(parseError(full + " "),
            "line 1, column 4194305: the text goes on past 4 MiB (4194305 bytes), more than any "
            "tpcomm file holds");
}

// A 1 MiB object with tens of thousands of members: the shape that made the hand-written parser
// quadratic (tens of seconds). Parsed, written and parsed again well within a second.
TEST(JsonLimits, LargeObjectIsLinear) {
  const std::string text = objectWithMembers(40000);
  ASSERT_GT(text.size(), 1000000u);
  auto t0 = std::chrono::steady_clock::now();
  Value v;
  std::string error;
  ASSERT_TRUE(parse(text, &v, &error)) << error;
  const double parse_ms = msSince(t0);
  ASSERT_EQ(v.members().size(), 40000u);
  EXPECT_EQ(v.members()[39999].first, "m0039999");

  t0 = std::chrono::steady_clock::now();
  const std::string written = write(v);
  const double write_ms = msSince(t0);
  Value back;
  ASSERT_TRUE(parse(written, &back, &error)) << error;
  EXPECT_EQ(back, v);
  printf("  %zu bytes, 40000 members: parse %.1f ms, write %.1f ms\n", text.size(), parse_ms,
         write_ms);
  RecordProperty("parse_ms", std::to_string(parse_ms));
  EXPECT_LT(parse_ms, 1000.0);
  EXPECT_LT(write_ms, 1000.0);
}

// A ~175 KB tuning table: valid rules, and in "measured" (free-form, kept as written) the
// per-size numbers plus one object of ~11,600 short members, written compactly: the file that
// made the hand-written parser take seconds.
std::string largeTuningTableText(const std::string& key, size_t runs) {
  std::string text =
      "{\"tpcomm_tuning\": 1, \"topology_key\": \"" + key +
      "\", \"fabric\": \"nvlink\", \"tables\": [{\"world\": 2, \"rules\": "
      "[{\"max_bytes\": 4096, \"algo\": \"twoshot\"}, {\"max_bytes\": \"inf\", "
      "\"algo\": \"oneshot\"}]}], \"measured\": {\"tool\": \"tpcomm tune\", "
      "\"worlds\": [{\"world\": 2, \"us\": [1.5, 1.75, 2.0, 2.5, 4.25]}], \"runs\": {";
  char member[48];
  for (size_t i = 0; i < runs; ++i) {
    snprintf(member, sizeof(member), "%s\"r%zu\": %zu.%02zu", i ? ", " : "", i, 3 + i % 7, i % 100);
    text += member;
  }
  return text + "}}}\n";
}

TEST(JsonLimits, LargeTuningTableLoadsQuickly) {
  const std::string text = largeTuningTableText("2gpu-test", 11600);
  EXPECT_GT(text.size(), 170000u);
  EXPECT_LT(text.size(), 180000u);
  const auto t0 = std::chrono::steady_clock::now();
  TuningTable table;
  std::string why;
  ASSERT_TRUE(parseTuningTable(text, "2gpu-test", &table, &why)) << why;
  const double ms = msSince(t0);
  ASSERT_NE(table.measured.find("runs"), nullptr);
  EXPECT_EQ(table.measured.find("runs")->members().size(), 11600u);
  printf("  tuning table of %zu bytes: parsed and checked in %.1f ms\n", text.size(), ms);
  EXPECT_LT(ms, 1000.0);
}

// `tpcomm doctor` reads the machine's tuning table: a large one costs it next to nothing (a
// 175 KB table made it take 10.7 s). Measured against the same doctor run with a small table.
TEST(JsonLimits, DoctorWithALargeTuningTableIsQuick) {
  char tmpl[] = "/tmp/tpcomm_json_doctor_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string cache = tmpl;
  const std::string topo_file = std::string(TPCOMM_TEST_DATA_DIR) + "/topo/h200_2x_nvlink.json";
  topo::Topology topo;
  ASSERT_EQ(topo::loadTopologyFile(topo_file, &topo), tpcommSuccess);
  const std::string path = cache + "/tpcomm/tuning-" + topo.key() + ".json";
  const auto doctor = [&](double* ms) {
    const auto t0 = std::chrono::steady_clock::now();
    const test::CliResult r = test::runCommand(
        "env -u TPCOMM_ALGO -u TPCOMM_TUNING_FILE -u TPCOMM_LIBRARY CUDA_VISIBLE_DEVICES=-1 "
        "XDG_CACHE_HOME='" +
        cache + "' '" + TPCOMM_CLI_PATH + "' doctor --json --topology '" + topo_file +
        "' 2>/dev/null");
    *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    json::Value v;
    std::string why;
    EXPECT_TRUE(json::parse(r.out, &v, &why)) << why;
    const json::Value* tuning = v.find("tuning");
    return tuning && tuning->find("status") ? tuning->find("status")->asString() : "?";
  };

  // Written as saveTuningTable writes (user-owned folder, mode 0644).
  double small_ms = 0, large_ms = 0;
  ASSERT_EQ(topo::writeTextFileAtomic(path, largeTuningTableText(topo.key(), 1), 0644),
            tpcommSuccess);
  EXPECT_EQ(doctor(&small_ms), "loaded");
  ASSERT_EQ(topo::writeTextFileAtomic(path, largeTuningTableText(topo.key(), 11600), 0644),
            tpcommSuccess);
  EXPECT_EQ(doctor(&large_ms), "loaded");
  printf("  doctor: %.0f ms with a small tuning table, %.0f ms with a 175 KB one\n", small_ms,
         large_ms);
  EXPECT_LT(large_ms - small_ms, 1000.0);
  ASSERT_EQ(system(("rm -rf '" + cache + "'").c_str()), 0);
}

}  // namespace
}  // namespace tpcomm
