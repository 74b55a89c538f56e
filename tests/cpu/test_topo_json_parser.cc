// The strict JSON reader/writer (src/common/json.h) behind topology files, tuning tables and the
// P2P cache: what it accepts, what it rejects and with which message.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "common/json.h"

namespace tpcomm {
namespace json {
namespace {

Value parseOk(const std::string& text) {
  Value v;
  std::string error;
  EXPECT_TRUE(parse(text, &v, &error)) << text << ": " << error;
  return v;
}

std::string parseError(const std::string& text) {
  Value v;
  std::string error;
  EXPECT_FALSE(parse(text, &v, &error)) << "accepted: " << text;
  return error;
}

TEST(TopoJsonParser, Scalars) {
  EXPECT_TRUE(parseOk("null").isNull());
  EXPECT_TRUE(parseOk(" true ").asBool());
  EXPECT_FALSE(parseOk("false").asBool());
  EXPECT_EQ(parseOk("\"a\\\"b\\\\c\\/\\n\\t\"").asString(), "a\"b\\c/\n\t");
  EXPECT_DOUBLE_EQ(parseOk("-1.5e3").asDouble(), -1500.0);
  EXPECT_DOUBLE_EQ(parseOk("0.25").asDouble(), 0.25);
}

TEST(TopoJsonParser, IntegersAreExact) {
  uint64_t u = 0;
  int64_t i = 0;
  EXPECT_TRUE(parseOk("18446744073709551615").getUint64(&u));
  EXPECT_EQ(u, UINT64_MAX);
  EXPECT_FALSE(parseOk("18446744073709551615").getInt64(&i));
  EXPECT_TRUE(parseOk("-9223372036854775808").getInt64(&i));
  EXPECT_EQ(i, INT64_MIN);
  EXPECT_FALSE(parseOk("-1").getUint64(&u));
  EXPECT_FALSE(parseOk("1.0").getInt64(&i));  // written as a fraction: not an integer
  EXPECT_FALSE(parseOk("1e2").getInt64(&i));
  EXPECT_FALSE(parseOk("18446744073709551616").getUint64(&u));  // too big: a double
  EXPECT_TRUE(parseOk("18446744073709551616").isNumber());
}

TEST(TopoJsonParser, UnicodeEscapes) {
  EXPECT_EQ(parseOk("\"\\u00e9\"").asString(), "\xc3\xa9");
  EXPECT_EQ(parseOk("\"\\ud83d\\ude00\"").asString(), "\xf0\x9f\x98\x80");
  EXPECT_EQ(parseOk("\"\xc3\xa9\"").asString(), "\xc3\xa9");  // raw UTF-8 passes
  EXPECT_NE(parseError("\"\\ud83d\"").find("surrogate"), std::string::npos);
  EXPECT_NE(parseError("\"\\ude00\"").find("surrogate"), std::string::npos);
  EXPECT_NE(parseError("\"\\u12g4\"").find("hex"), std::string::npos);
  EXPECT_NE(parseError("\"\xff\"").find("UTF-8"), std::string::npos);
  EXPECT_NE(parseError("\"\xc0\xaf\"").find("UTF-8"), std::string::npos);      // overlong '/'
  EXPECT_NE(parseError("\"\xed\xa0\x80\"").find("UTF-8"), std::string::npos);  // surrogate
}

TEST(TopoJsonParser, ObjectsKeepOrderAndFind) {
  const Value v = parseOk("{\"b\": 1, \"a\": [1, 2, {\"c\": null}]}");
  ASSERT_TRUE(v.isObject());
  ASSERT_EQ(v.members().size(), 2u);
  EXPECT_EQ(v.members()[0].first, "b");
  ASSERT_NE(v.find("a"), nullptr);
  EXPECT_EQ(v.find("a")->items().size(), 3u);
  EXPECT_EQ(v.find("zz"), nullptr);
  EXPECT_TRUE(parseOk("{}").members().empty());
  EXPECT_TRUE(parseOk("[]").items().empty());
}

// The descriptions after the position are nlohmann/json's (json_parse.cc); each rejection is
// pinned by the phrase that says what was wrong.
TEST(TopoJsonParser, RejectsWhatIsNotStrictJson) {
  EXPECT_NE(parseError("{\"a\": 1,}").find("unexpected '}'; expected string literal"),
            std::string::npos);
  EXPECT_NE(parseError("[1, 2,]").find("unexpected ']'"), std::string::npos);
  EXPECT_NE(parseError("{\"a\": 1, \"a\": 2}").find("duplicate member \"a\""), std::string::npos);
  EXPECT_NE(parseError("// c\n{}").find("invalid literal; last read: '/'"), std::string::npos);
  EXPECT_NE(parseError("/* c */ {}").find("invalid literal; last read: '/'"), std::string::npos);
  EXPECT_NE(parseError("{} {}").find("expected end of input"), std::string::npos);
  EXPECT_NE(parseError("NaN").find("invalid literal"), std::string::npos);
  EXPECT_NE(parseError("Infinity").find("invalid literal"), std::string::npos);
  EXPECT_NE(parseError("-Infinity").find("expected digit after '-'"), std::string::npos);
  EXPECT_NE(parseError("01").find("unexpected number literal"), std::string::npos);
  EXPECT_NE(parseError("[01]").find("unexpected number literal"), std::string::npos);
  EXPECT_NE(parseError("+1").find("invalid literal"), std::string::npos);
  EXPECT_NE(parseError("1.").find("expected digit after '.'"), std::string::npos);
  EXPECT_NE(parseError("1e").find("after exponent"), std::string::npos);
  EXPECT_NE(parseError("1e999").find("number overflow"), std::string::npos);
  EXPECT_NE(parseError("\"a\nb\"").find("control character"), std::string::npos);
  EXPECT_NE(parseError("\"\\x\"").find("forbidden character after backslash"), std::string::npos);
  EXPECT_NE(parseError("trux").find("invalid literal"), std::string::npos);
  EXPECT_NE(parseError("nul").find("end of input"), std::string::npos);
  EXPECT_NE(parseError("{'a': 1}").find("expected string literal"), std::string::npos);
  EXPECT_NE(parseError("").find("end of input"), std::string::npos);
  EXPECT_NE(parseError("   ").find("end of input"), std::string::npos);
}

// What the RFC allows a parser to accept and nlohmann/json does (or reads differently), tpcomm
// refuses: a byte order mark, a NUL byte (nlohmann stops reading there, so "{}\0junk" would pass),
// duplicate members at any depth (nlohmann's DOM keeps the last).
TEST(TopoJsonParser, RejectsWhatTheLibraryWouldLetThrough) {
  EXPECT_EQ(parseError("\xEF\xBB\xBF{}"),
            "line 1, column 1: a byte order mark (tpcomm's files are plain UTF-8)");
  EXPECT_EQ(parseError(std::string("{}\0junk", 7)),
            "line 1, column 3: a NUL byte (a binary or corrupt file?)");
  EXPECT_NE(parseError(std::string("[1,\0", 4)).find("NUL byte"), std::string::npos);
  EXPECT_NE(parseError(std::string("\"a\0\"", 4)).find("NUL byte"), std::string::npos);
  EXPECT_EQ(parseError("{\"t\": [{\"x\": 1}, {\"x\": 1, \"y\": 2, \"x\": 3}]}"),
            "line 1, column 37: duplicate member \"x\"");
  // The same name in different objects, or as a value, is fine.
  parseOk("{\"x\": {\"x\": \"x\"}, \"y\": [{\"x\": 1}, {\"x\": 2}]}");
  // Names are compared as decoded text: an escape does not make a second "a".
  EXPECT_NE(parseError("{\"a\": 1, \"\\u0061\": 2}").find("duplicate member \"a\""),
            std::string::npos);
}
TEST(TopoJsonParser, TruncatedInputSaysSo) {
  const std::string full = "{\"a\": [1, 2, {\"b\": \"xyz\"}], \"c\": true}";
  for (size_t n = 0; n < full.size(); ++n) {
    const std::string error = parseError(full.substr(0, n));
    EXPECT_NE(error.find("end of input"), std::string::npos) << n << ": " << error;
  }
}

TEST(TopoJsonParser, ErrorsCarryLineAndColumn) {
  EXPECT_EQ(parseError("{\n  \"a\": 1,\n  \"b\" 2\n}"),
            "line 3, column 7: syntax error while parsing object separator - unexpected number "
            "literal; expected ':'");
  EXPECT_EQ(parseError("x").substr(0, 17), "line 1, column 1:");
  EXPECT_EQ(parseError("[\n\n  1,\n  -]").substr(0, 17), "line 4, column 4:");
}

TEST(TopoJsonParser, WriteRoundTrips) {
  Value root = Value::object();
  root.set("max", Value::unsignedInteger(UINT64_MAX));
  root.set("neg", Value::integer(-42));
  root.set("pi", Value::number(3.141592653589793));
  root.set("text", Value::string("tab\there \"quoted\" \x01 \xc3\xa9"));
  Value arr = Value::array();
  arr.push(Value::boolean(true));
  arr.push(Value());
  Value inner = Value::object();
  inner.set("k", Value::string("v"));
  arr.push(inner);
  root.set("list", arr);
  root.set("empty", Value::array());
  const std::string text = write(root);
  EXPECT_EQ(text.back(), '\n');
  const Value back = parseOk(text);
  EXPECT_EQ(back, root);
  EXPECT_EQ(write(back), text);  // canonical: writing again changes nothing
}

TEST(TopoJsonParser, Exact64BitIntegersRoundTrip) {
  for (const uint64_t u : {uint64_t{0}, uint64_t{SIZE_MAX}, uint64_t{SIZE_MAX - 1},
                           uint64_t{1} << 53, (uint64_t{1} << 53) + 1}) {
    uint64_t back = 0;
    ASSERT_TRUE(parseOk(write(Value::unsignedInteger(u))).getUint64(&back)) << u;
    EXPECT_EQ(back, u);
  }
  for (const int64_t i : {INT64_MIN, INT64_MIN + 1, int64_t{-1}, -(int64_t{1} << 53) - 1}) {
    int64_t back = 0;
    ASSERT_TRUE(parseOk(write(Value::integer(i))).getInt64(&back)) << i;
    EXPECT_EQ(back, i);
  }
  EXPECT_EQ(write(Value::unsignedInteger(SIZE_MAX)), "18446744073709551615\n");
}

TEST(TopoJsonParser, MembersKeepTheirWrittenOrder) {
  std::string text = "{";
  for (int i = 0; i < 1000; ++i)
    text += (i ? ", \"" : "\"") + std::to_string((i * 7919) % 1000) + "\": " + std::to_string(i);
  text += "}";
  const Value v = parseOk(text);
  ASSERT_EQ(v.members().size(), 1000u);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(v.members()[i].first, std::to_string((i * 7919) % 1000));
    int64_t n = -1;
    EXPECT_TRUE(v.members()[i].second.getInt64(&n));
    EXPECT_EQ(n, i);
  }
  EXPECT_EQ(write(v).substr(0, 24), "{\n  \"0\": 0,\n  \"919\": 1,\n");
}

// The writer never makes a file the reader refuses: bytes that are not UTF-8 (a path, a device
// name) become U+FFFD, every control character is escaped.
TEST(TopoJsonParser, WriteAlwaysMakesValidJson) {
  Value o = Value::object();
  o.set("path", Value::string("/tmp/\xff\xfe-cache"));
  o.set("ctl", Value::string(std::string("\x00\x1f\r\b\f", 5)));
  const Value back = parseOk(write(o));
  EXPECT_EQ(back.find("path")->asString(), "/tmp/\xEF\xBF\xBD\xEF\xBF\xBD-cache");
  EXPECT_EQ(back.find("ctl")->asString(), std::string("\x00\x1f\r\b\f", 5));
}

TEST(TopoJsonParser, WriteKeepsWhatFitsOnOneLine) {
  Value pair = Value::array();
  pair.push(Value::integer(0));
  pair.push(Value::integer(1));
  Value o = Value::object();
  o.set("gpus", pair);
  EXPECT_EQ(write(o), "{\"gpus\": [0, 1]}\n");
  Value big = Value::object();
  big.set("list", Value::array());
  big.set("inner", o);
  big.set("long", Value::string(std::string(100, 'x')));
  EXPECT_EQ(write(big), "{\n  \"list\": [],\n  \"inner\": {\"gpus\": [0, 1]},\n  \"long\": \"" +
                            std::string(100, 'x') + "\"\n}\n");
}

TEST(TopoJsonParser, SetReplacesAndEqualityIsDeep) {
  Value o = Value::object();
  o.set("a", Value::integer(1));
  o.set("a", Value::integer(2));
  ASSERT_EQ(o.members().size(), 1u);
  EXPECT_EQ(*o.find("a"), Value::integer(2));
  EXPECT_NE(Value::integer(1), Value::string("1"));
  EXPECT_EQ(Value::integer(5), Value::unsignedInteger(5));
}

TEST(TopoJsonParser, ObjectReaderNamesTheField) {
  const Value v = parseOk("{\"n\": 5, \"s\": \"\", \"b\": 1, \"x\": 1}");
  std::string error;
  {
    ObjectReader r(v, "gpus[2]", &error);
    int64_t n = 0;
    EXPECT_TRUE(r.integer("n", 0, 10, &n));
    EXPECT_EQ(n, 5);
    std::string s;
    EXPECT_FALSE(r.string("s", &s));
    EXPECT_EQ(error, "gpus[2].s: must not be empty");
    bool b = false;
    EXPECT_FALSE(r.boolean("b", &b));  // the first failure sticks
    EXPECT_EQ(error, "gpus[2].s: must not be empty");
    EXPECT_FALSE(r.ok());
  }
  {
    ObjectReader r(v, "", &error);
    int64_t n = 0;
    EXPECT_FALSE(r.integer("n", 6, 10, &n));
    EXPECT_EQ(error, "n: 5 is out of range 6..10");
  }
  {
    ObjectReader r(v, "top", &error);
    EXPECT_FALSE(r.onlyKeys({"n", "s", "b"}));
    EXPECT_NE(error.find("top.x: unknown member"), std::string::npos);
  }
  {
    ObjectReader r(v, "top", &error);
    EXPECT_EQ(r.required("missing"), nullptr);
    EXPECT_EQ(error, "top.missing: missing");
  }
  {
    ObjectReader r(parseOk("[1]"), "top", &error);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(error, "top: expected an object, found an array");
  }
}

}  // namespace
}  // namespace json
}  // namespace tpcomm
