// The environment as people write it: log levels in any case, byte sizes with K/M/G suffixes,
// and clear reasons for junk and overflow (src/common/env.cc, byte_size.cc).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/byte_size.h"
#include "common/env.h"

namespace tpcomm {
namespace {

Env parse(const std::map<std::string, std::string>& vars) {
  return parseEnvironment([&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

size_t bytesOf(const char* text) {
  size_t out = 12345;
  std::string why;
  EXPECT_TRUE(parseByteSize(text, &out, &why)) << text << ": " << why;
  return out;
}

std::string whyNot(const char* text) {
  size_t out = 12345;
  std::string why;
  EXPECT_FALSE(parseByteSize(text, &out, &why)) << text << " parsed as " << out;
  EXPECT_EQ(out, 12345u) << "a failed parse must leave the output alone";
  return why;
}

TEST(ByteSize, EverySuffixInEveryCase) {
  EXPECT_EQ(bytesOf("0"), 0u);
  EXPECT_EQ(bytesOf("65536"), 65536u);
  EXPECT_EQ(bytesOf("512B"), 512u);
  EXPECT_EQ(bytesOf("512b"), 512u);
  for (const char* k : {"64K", "64k", "64KB", "64kb", "64KiB", "64kib", "64KIB", "64Kb", "64Ki"})
    EXPECT_EQ(bytesOf(k), 64u << 10) << k;
  for (const char* m : {"16M", "16m", "16MB", "16MiB", "16mib"}) EXPECT_EQ(bytesOf(m), 16u << 20);
  for (const char* g : {"2G", "2g", "2GB", "2GiB", "2gib"}) EXPECT_EQ(bytesOf(g), size_t{2} << 30);
}

TEST(ByteSize, JunkIsRefusedWithAReason) {
  for (const char* junk : {"", "K", "abc", "-1", "+5", " 64K", "1.5M"})
    EXPECT_NE(whyNot(junk).find("whole number"), std::string::npos) << "'" << junk << "'";
  for (const char* junk : {"64 K", "64X", "64KK", "64iB", "64KiBs", "64KBi", "16T", "0x10"})
    EXPECT_NE(whyNot(junk).find("suffix"), std::string::npos) << junk;
}

TEST(ByteSize, OverflowIsRefusedNotWrapped) {
  EXPECT_EQ(bytesOf("18446744073709551615"), SIZE_MAX);
  EXPECT_NE(whyNot("18446744073709551616").find("too large"), std::string::npos);
  EXPECT_NE(whyNot("99999999999999999999999").find("too large"), std::string::npos);
  EXPECT_EQ(bytesOf("17179869183G"), size_t{17179869183} << 30);  // 2^64 - 1 GiB
  EXPECT_NE(whyNot("17179869184G").find("too large"), std::string::npos);
  EXPECT_EQ(bytesOf("16777216M"), size_t{1} << 44);
}

TEST(EnvParse, LogLevelsInAnyCase) {
  const std::pair<const char*, LogLevel> cases[] = {
      {"none", LogLevel::kNone},   {"NONE", LogLevel::kNone},    {"warn", LogLevel::kWarn},
      {"WARN", LogLevel::kWarn},   {"Warning", LogLevel::kWarn}, {"info", LogLevel::kInfo},
      {"INFO", LogLevel::kInfo},   {"Info", LogLevel::kInfo},    {"DEBUG", LogLevel::kDebug},
      {"TRACE", LogLevel::kDebug}, {"debug", LogLevel::kDebug}};
  for (const auto& [text, level] : cases) {
    const Env e = parse({{"TPCOMM_LOG", text}});
    EXPECT_TRUE(e.errors.empty()) << text << ": " << e.errors.front();
    EXPECT_EQ(e.log_level, level) << text;
  }
  const Env bad = parse({{"TPCOMM_LOG", "verbose"}});
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_NE(bad.errors[0].find("TPCOMM_LOG=verbose"), std::string::npos) << bad.errors[0];
  EXPECT_EQ(bad.log_level, LogLevel::kWarn);
}

TEST(EnvParse, BufferBytesTakesSuffixesAndChecksTheRange) {
  EXPECT_EQ(parse({{"TPCOMM_BUFFER_BYTES", "16M"}}).buffer_bytes, 16u << 20);
  EXPECT_EQ(parse({{"TPCOMM_BUFFER_BYTES", "64KiB"}}).buffer_bytes, 64u << 10);
  EXPECT_EQ(parse({{"TPCOMM_BUFFER_BYTES", "16777216"}}).buffer_bytes, 16u << 20);
  EXPECT_EQ(parse({{"TPCOMM_BUFFER_BYTES", "16G"}}).buffer_bytes, size_t{16} << 30);
  const std::pair<const char*, const char*> bad[] = {
      {"32K", "64K..16G"},    {"17G", "64K..16G"},
      {"16Q", "suffix 'Q'"},  {"lots", "whole"},
      {"-16M", "whole"},      {"99999999999999999999", "too large"},
      {"16M junk", "suffix"}, {"18014398509481984K", "too large"}};
  for (const auto& [text, why] : bad) {
    const Env e = parse({{"TPCOMM_BUFFER_BYTES", text}});
    ASSERT_EQ(e.errors.size(), 1u) << text;
    EXPECT_NE(e.errors[0].find(std::string("TPCOMM_BUFFER_BYTES=") + text), std::string::npos)
        << e.errors[0];
    EXPECT_NE(e.errors[0].find(why), std::string::npos) << e.errors[0];
    EXPECT_EQ(e.buffer_bytes, 0u) << text;
  }
}

}  // namespace
}  // namespace tpcomm
