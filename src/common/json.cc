#include "common/json.h"

#include <nlohmann/json.hpp>

namespace tpcomm {
namespace json {

Value Value::boolean(bool b) {
  Value v;
  v.type_ = Type::kBool;
  v.bool_ = b;
  return v;
}

Value Value::number(double d) {
  Value v;
  v.type_ = Type::kNumber;
  v.double_ = d;
  return v;
}

Value Value::integer(int64_t i) {
  Value v = number(static_cast<double>(i));
  v.has_int_ = true;
  v.int_ = i;
  if (i >= 0) {
    v.has_uint_ = true;
    v.uint_ = static_cast<uint64_t>(i);
  }
  return v;
}

Value Value::unsignedInteger(uint64_t u) {
  Value v = number(static_cast<double>(u));
  v.has_uint_ = true;
  v.uint_ = u;
  if (u <= static_cast<uint64_t>(INT64_MAX)) {
    v.has_int_ = true;
    v.int_ = static_cast<int64_t>(u);
  }
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.type_ = Type::kString;
  v.string_ = std::move(s);
  return v;
}

Value Value::array() {
  Value v;
  v.type_ = Type::kArray;
  return v;
}

Value Value::object() {
  Value v;
  v.type_ = Type::kObject;
  return v;
}

bool Value::getInt64(int64_t* out) const {
  if (type_ != Type::kNumber || !has_int_) return false;
  *out = int_;
  return true;
}

bool Value::getUint64(uint64_t* out) const {
  if (type_ != Type::kNumber || !has_uint_) return false;
  *out = uint_;
  return true;
}

const Value* Value::find(const std::string& key) const {
  for (const Member& m : members_)
    if (m.first == key) return &m.second;
  return nullptr;
}

Value& Value::push(Value v) {
  items_.push_back(std::move(v));
  return items_.back();
}

Value& Value::set(const std::string& key, Value v) {
  for (Member& m : members_)
    if (m.first == key) return m.second = std::move(v);
  members_.emplace_back(key, std::move(v));
  return members_.back().second;
}

bool Value::operator==(const Value& o) const {
  if (type_ != o.type_) return false;
  switch (type_) {
    case Type::kNull:
      return true;
    case Type::kBool:
      return bool_ == o.bool_;
    case Type::kNumber:
      if (has_uint_ && o.has_uint_) return uint_ == o.uint_;
      if (has_int_ && o.has_int_) return int_ == o.int_;
      return double_ == o.double_;
    case Type::kString:
      return string_ == o.string_;
    case Type::kArray:
      return items_ == o.items_;
    case Type::kObject:
      return members_ == o.members_;
  }
  return false;
}

const char* typeName(Value::Type t) {
  switch (t) {
    case Value::Type::kNull:
      return "null";
    case Value::Type::kBool:
      return "a boolean";
    case Value::Type::kNumber:
      return "a number";
    case Value::Type::kString:
      return "a string";
    case Value::Type::kArray:
      return "an array";
    case Value::Type::kObject:
      return "an object";
  }
  return "?";
}

namespace {

// ---- writer ----
// The layout (one line where it fits) is tpcomm's; strings and numbers are nlohmann's dump().

void writeString(const std::string& s, std::string* out) {
  // replace: bytes that are not UTF-8 become U+FFFD instead of making an unreadable file.
  out->append(nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void writeNumber(const Value& v, std::string* out) {
  int64_t i = 0;
  uint64_t u = 0;
  if (v.getUint64(&u)) {
    out->append(nlohmann::json(u).dump());
  } else if (v.getInt64(&i)) {
    out->append(nlohmann::json(i).dump());
  } else {
    // The shortest form that reads back exactly; JSON has no NaN or infinity, so those become
    // null (tpcomm never writes them).
    out->append(nlohmann::json(v.asDouble()).dump());
  }
}

constexpr size_t kLineWidth = 120;

// Everything on one line (", " between elements, ": " after names), but only while it fits in
// `room` columns: returns false as soon as it does not, so deciding the layout of each container
// never renders a large subtree in full (writing stays linear in the output).
bool writeCompact(const Value& v, size_t room, std::string* out) {
  const size_t start = out->size();
  const auto fits = [&] { return out->size() - start <= room; };
  if (v.isArray()) {
    out->push_back('[');
    for (size_t i = 0; i < v.items().size(); ++i) {
      if (i) out->append(", ");
      if (!fits() || !writeCompact(v.items()[i], room - (out->size() - start), out)) return false;
    }
    out->push_back(']');
  } else if (v.isObject()) {
    out->push_back('{');
    for (size_t i = 0; i < v.members().size(); ++i) {
      if (i) out->append(", ");
      writeString(v.members()[i].first, out);
      out->append(": ");
      if (!fits() || !writeCompact(v.members()[i].second, room - (out->size() - start), out))
        return false;
    }
    out->push_back('}');
  } else if (v.isString()) {
    writeString(v.asString(), out);
  } else if (v.isNumber()) {
    writeNumber(v, out);
  } else {
    out->append(v.isNull() ? "null" : v.asBool() ? "true" : "false");
  }
  return fits();
}

void writeValue(const Value& v, int indent, std::string* out) {
  switch (v.type()) {
    case Value::Type::kNull:
      out->append("null");
      return;
    case Value::Type::kBool:
      out->append(v.asBool() ? "true" : "false");
      return;
    case Value::Type::kNumber:
      writeNumber(v, out);
      return;
    case Value::Type::kString:
      writeString(v.asString(), out);
      return;
    case Value::Type::kArray:
    case Value::Type::kObject:
      break;
  }
  // A container that fits on its line stays on one line (a topology link, a tuning rule).
  std::string line;
  const size_t used = static_cast<size_t>(indent);
  if (used <= kLineWidth && writeCompact(v, kLineWidth - used, &line)) {
    out->append(line);
    return;
  }
  const bool is_array = v.isArray();
  const size_t n = is_array ? v.items().size() : v.members().size();
  const std::string pad(indent + 2, ' ');
  out->append(is_array ? "[\n" : "{\n");
  for (size_t i = 0; i < n; ++i) {
    out->append(pad);
    if (is_array) {
      writeValue(v.items()[i], indent + 2, out);
    } else {
      writeString(v.members()[i].first, out);
      out->append(": ");
      writeValue(v.members()[i].second, indent + 2, out);
    }
    out->append(i + 1 < n ? ",\n" : "\n");
  }
  out->append(std::string(indent, ' '));
  out->push_back(is_array ? ']' : '}');
}

}  // namespace

std::string write(const Value& v) {
  std::string out;
  writeValue(v, 0, &out);
  out.push_back('\n');
  return out;
}

// ---- ObjectReader ----

ObjectReader::ObjectReader(const Value& v, std::string where, std::string* error)
    : v_(v), where_(std::move(where)), error_(error) {
  if (!v_.isObject()) {
    ok_ = false;
    *error_ = where_ + ": expected an object, found " + typeName(v_.type());
  }
}

std::string ObjectReader::where(const char* key) const {
  return where_.empty() ? std::string(key) : where_ + "." + key;
}

bool ObjectReader::fail(const std::string& key, const std::string& why) {
  if (ok_) *error_ = where(key.c_str()) + ": " + why;
  ok_ = false;
  return false;
}

const Value* ObjectReader::required(const char* key) {
  if (!ok_) return nullptr;
  const Value* v = v_.find(key);
  if (!v) fail(key, "missing");
  return v;
}

bool ObjectReader::string(const char* key, std::string* out, bool allow_empty) {
  const Value* v = required(key);
  if (!v) return false;
  if (!v->isString())
    return fail(key, std::string("expected a string, found ") + typeName(v->type()));
  if (!allow_empty && v->asString().empty()) return fail(key, "must not be empty");
  *out = v->asString();
  return true;
}

bool ObjectReader::integer(const char* key, int64_t lo, int64_t hi, int64_t* out) {
  const Value* v = required(key);
  if (!v) return false;
  int64_t i = 0;
  if (!v->getInt64(&i))
    return fail(key, std::string("expected an integer, found ") +
                         (v->isNumber() ? "a non-integer number" : typeName(v->type())));
  if (i < lo || i > hi)
    return fail(key, std::to_string(i) + " is out of range " + std::to_string(lo) + ".." +
                         std::to_string(hi));
  *out = i;
  return true;
}

bool ObjectReader::boolean(const char* key, bool* out) {
  const Value* v = required(key);
  if (!v) return false;
  if (!v->isBool())
    return fail(key, std::string("expected true or false, found ") + typeName(v->type()));
  *out = v->asBool();
  return true;
}

bool ObjectReader::onlyKeys(std::initializer_list<const char*> known) {
  if (!ok_) return false;
  for (const Value::Member& m : v_.members()) {
    bool found = false;
    for (const char* k : known) found = found || m.first == k;
    if (!found) return fail(m.first, "unknown member (a typo, or a file from a newer tpcomm?)");
  }
  return true;
}

}  // namespace json
}  // namespace tpcomm
