// A strict JSON reader and writer for tpcomm's own files: topology dumps, tuning tables and the
// P2P health cache. Those files decide which algorithm runs, so anything that is not plain
// RFC 8259 JSON (comments, trailing commas, duplicate member names, NaN, a byte order mark, a NUL
// byte, bytes after the value, invalid UTF-8) is rejected with a "line L, column C: why" message
// instead of being guessed at, and the caps below bound the work a file can cause.
//
// The lexer, the grammar and the scalar formatting are nlohmann/json's (json_parse.cc drives its
// SAX parser, json.cc its dump()). The facade keeps tpcomm's own Value rather than migrating the
// callers (topology_json, tuning_table, p2p_cache, the inspect report, doctor, tune) to
// nlohmann's types: the files are written in a meaningful member order, which nlohmann::json
// sorts away and nlohmann::ordered_json keeps only by a linear search per inserted member (the
// quadratic parse again); and the callers' schema readers (ObjectReader) are written against
// this API. nlohmann stays out of this header: only json*.cc include it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace tpcomm {
namespace json {

// Caps on what parse() accepts. tpcomm's largest file (a tuning table with its measurements) is
// read up to 1 MiB and holds a few thousand values, nested 5 deep; the caps leave room for
// growth and stop a corrupt or hostile file from costing more than a moment's work.
constexpr size_t kMaxTextBytes = 4u << 20;
constexpr size_t kMaxDepth = 64;         // arrays and objects open at once
constexpr size_t kMaxMembers = 100000;   // members of one object
constexpr size_t kMaxElements = 100000;  // elements of one array
// Values in one document, containers and the root included: the caps above bound each container,
// this bounds their sum (4 MiB of "[[0,0,...],[0,...],...]" would build 2M values, 250 MiB).
constexpr size_t kMaxValues = 200000;

namespace detail {
class TreeBuilder;  // json_parse.cc: appends parsed members without the duplicate search of set()
}

class Value {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  using Member = std::pair<std::string, Value>;

  Value() = default;  // null
  static Value boolean(bool b);
  static Value number(double d);
  static Value integer(int64_t i);
  static Value unsignedInteger(uint64_t u);
  static Value string(std::string s);
  static Value array();
  static Value object();

  Type type() const { return type_; }
  bool isNull() const { return type_ == Type::kNull; }
  bool isBool() const { return type_ == Type::kBool; }
  bool isNumber() const { return type_ == Type::kNumber; }
  bool isString() const { return type_ == Type::kString; }
  bool isArray() const { return type_ == Type::kArray; }
  bool isObject() const { return type_ == Type::kObject; }

  bool asBool() const { return bool_; }
  double asDouble() const { return double_; }
  const std::string& asString() const { return string_; }
  // Exact integers: only when the number was written without fraction or exponent and fits, so
  // 18446744073709551615 (SIZE_MAX) survives a round trip where a double would round it.
  bool getInt64(int64_t* out) const;
  bool getUint64(uint64_t* out) const;

  const std::vector<Value>& items() const { return items_; }       // array elements
  const std::vector<Member>& members() const { return members_; }  // object, in written order
  const Value* find(const std::string& key) const;                 // nullptr if absent

  // Builders (arrays and objects). set() searches the members (linear): for the small objects
  // tpcomm writes; the parser appends without it.
  Value& push(Value v);
  Value& set(const std::string& key, Value v);  // replaces an existing member of that name

  bool operator==(const Value& o) const;
  bool operator!=(const Value& o) const { return !(*this == o); }

 private:
  friend class detail::TreeBuilder;

  Type type_ = Type::kNull;
  bool bool_ = false;
  double double_ = 0;
  bool has_int_ = false;   // int_ holds the exact value
  bool has_uint_ = false;  // uint_ holds the exact value
  int64_t int_ = 0;
  uint64_t uint_ = 0;
  std::string string_;
  std::vector<Value> items_;
  std::vector<Member> members_;
};

const char* typeName(Value::Type t);

// Parses text as exactly one JSON value, in time linear in its size. On failure returns false,
// leaves *out unspecified and sets *error to "line L, column C: why" (1-based, C in bytes: where
// the reading stopped).
bool parse(const std::string& text, Value* out, std::string* error);

// Pretty-printed with a 2-space indent and a final newline; an array or object that fits in 120
// columns is written on one line, so files stay short and diffable. Bytes of a string that are not
// UTF-8 (a path, a device name) are written as U+FFFD, so the output always parses.
std::string write(const Value& v);

// Reads the members of one object for a schema, with messages that name the field
// ("gpus[3].pci_bus_id: expected a string"). The first failure sticks: later calls return false
// and keep the first message, so a reader can make all its calls and check ok() once.
class ObjectReader {
 public:
  ObjectReader(const Value& v, std::string where, std::string* error);
  bool ok() const { return ok_; }
  bool fail(const std::string& key, const std::string& why);

  const Value* required(const char* key);  // nullptr (and an error) if absent
  bool string(const char* key, std::string* out, bool allow_empty = false);
  bool integer(const char* key, int64_t lo, int64_t hi, int64_t* out);
  bool boolean(const char* key, bool* out);
  // Rejects members not in the list (typos must not pass as defaults).
  bool onlyKeys(std::initializer_list<const char*> known);
  std::string where(const char* key) const;

 private:
  const Value& v_;
  std::string where_;
  std::string* error_;
  bool ok_ = true;
};

}  // namespace json
}  // namespace tpcomm
