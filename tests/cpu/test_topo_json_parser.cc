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

TEST(TopoJsonParser, RejectsWhatIsNotStrictJson) {
  EXPECT_NE(parseError("{\"a\": 1,}").find("member name"), std::string::npos);
  EXPECT_NE(parseError("[1, 2,]").find("trailing"), std::string::npos);
  EXPECT_NE(parseError("{\"a\": 1, \"a\": 2}").find("duplicate member \"a\""), std::string::npos);
  EXPECT_NE(parseError("// c\n{}").find("JSON value"), std::string::npos);
  EXPECT_NE(parseError("{} {}").find("after the JSON value"), std::string::npos);
  EXPECT_NE(parseError("NaN").find("JSON value"), std::string::npos);
  EXPECT_NE(parseError("01").find("leading zeros"), std::string::npos);
  EXPECT_NE(parseError("1.").find("digits after"), std::string::npos);
  EXPECT_NE(parseError("1e").find("exponent"), std::string::npos);
  EXPECT_NE(parseError("1e999").find("out of range"), std::string::npos);
  EXPECT_NE(parseError("\"a\nb\"").find("control character"), std::string::npos);
  EXPECT_NE(parseError("\"\\x\"").find("invalid escape"), std::string::npos);
  EXPECT_NE(parseError("trux").find("invalid literal"), std::string::npos);
  EXPECT_NE(parseError("nul").find("end of input"), std::string::npos);
  EXPECT_NE(parseError("{'a': 1}").find("double quotes"), std::string::npos);
  EXPECT_NE(parseError("").find("end of input"), std::string::npos);
  EXPECT_NE(parseError("   ").find("end of input"), std::string::npos);
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
            "line 3, column 7: expected ':' after a member name");
}

TEST(TopoJsonParser, DepthIsBounded) {
  EXPECT_NE(parseError(std::string(100, '[') + std::string(100, ']')).find("nesting"),
            std::string::npos);
  parseOk(std::string(60, '[') + std::string(60, ']'));
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
