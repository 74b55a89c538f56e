// json::parse (json.h): nlohmann/json's RFC 8259 lexer and parser, driven through its SAX
// interface so that the tree is tpcomm's Value (members in written order, appended in constant
// time) and so that what nlohmann lets through is refused here: duplicate member names (its DOM
// keeps the last), a byte order mark (it skips one) and a NUL byte (it reads one as the end of the
// text). The caps of json.h (per container and per document) are checked as the values arrive,
// before any work is spent on more.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/json.h"

namespace tpcomm {
namespace json {

namespace {

// "line L, column C" (1-based; C counts bytes) of the byte at offset, for messages.
std::string lineAndColumn(const std::string& text, size_t offset) {
  offset = std::min(offset, text.size());
  const size_t line = 1 + std::count(text.begin(), text.begin() + offset, '\n');
  const size_t line_start = offset == 0 ? std::string::npos : text.rfind('\n', offset - 1);
  const size_t column = line_start == std::string::npos ? offset + 1 : offset - line_start;
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// A byte iterator that records how far nlohmann's lexer has read, so that errors found in the SAX
// callbacks (which get no position) can say where they are.
class TrackedBytes {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackedBytes(const char* p, const char** read_to) : p_(p), read_to_(read_to) {}
  reference operator*() const { return *p_; }
  TrackedBytes& operator++() {
    *read_to_ = ++p_;
    return *this;
  }
  TrackedBytes operator++(int) {
    TrackedBytes old = *this;
    ++*this;
    return old;
  }
  bool operator==(const TrackedBytes& o) const { return p_ == o.p_; }
  bool operator!=(const TrackedBytes& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  const char** read_to_;
};

// nlohmann's exception text is "[json.exception.parse_error.101] parse error at line 3, column 7:
// syntax error ..."; the position is ours (same convention), the description is kept.
std::string describe(const nlohmann::json::exception& ex) {
  std::string what = ex.what();
  const size_t tag_end = what.find("] ");
  if (tag_end != std::string::npos) what.erase(0, tag_end + 2);
  if (what.rfind("parse error at line ", 0) == 0) {
    const size_t colon = what.find(": ");
    if (colon != std::string::npos) what.erase(0, colon + 2);
  }
  return what;
}

}  // namespace

namespace detail {

// The SAX handler: builds the Value tree, refuses duplicate members and enforces the caps. Each
// callback returns false to stop the parse at the first error.
class TreeBuilder {
 public:
  using number_integer_t = nlohmann::json::number_integer_t;
  using number_unsigned_t = nlohmann::json::number_unsigned_t;
  using number_float_t = nlohmann::json::number_float_t;
  using string_t = nlohmann::json::string_t;
  using binary_t = nlohmann::json::binary_t;

  TreeBuilder(const std::string& text, Value* root) : text_(text), root_(root) {}

  // Where the lexer's reading stands; TrackedBytes keeps it current.
  const char** readTo() { return &read_to_; }
  const std::string& error() const { return error_; }

  bool null() { return add(Value()); }
  bool boolean(bool b) { return add(Value::boolean(b)); }
  bool number_integer(number_integer_t i) { return add(Value::integer(i)); }
  bool number_unsigned(number_unsigned_t u) { return add(Value::unsignedInteger(u)); }
  bool number_float(number_float_t d, const string_t&) { return add(Value::number(d)); }
  bool string(string_t& s) { return add(Value::string(std::move(s))); }
  bool binary(binary_t&) { return fail("binary values are not JSON"); }  // never from text

  bool start_object(std::size_t) { return open(Value::object()); }
  bool start_array(std::size_t) { return open(Value::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t& name) {
    Frame& f = open_.back();
    if (f.value->members_.size() >= kMaxMembers)
      return fail("more than " + std::to_string(kMaxMembers) +
                  " members in one object (no tpcomm file has that many)");
    if (!f.names.insert(name).second) return fail("duplicate member \"" + name + "\"");
    f.value->members_.emplace_back(std::move(name), Value());
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::json::exception& ex) {
    // position counts the bytes read, end of input included: the last one read is position - 1.
    const size_t at = position == 0 ? 0 : position - 1;
    std::string why = describe(ex);
    // A file cut short (a crash while writing, a full disk) should say so, whatever was expected.
    if (at >= text_.size() && why.find("end of input") == std::string::npos)
      why += " (unexpected end of input: the file is truncated?)";
    error_ = lineAndColumn(text_, at) + ": " + why;
    return false;
  }

 private:
  struct Frame {
    explicit Frame(Value* v) : value(v) {}
    Value* value;
    std::unordered_set<std::string> names;  // objects: the members so far, for duplicates
  };

  bool fail(const std::string& why) {
    // The last byte the lexer read: the end of the name, value or bracket that broke the rule.
    const size_t read = static_cast<size_t>(read_to_ - text_.data());
    error_ = lineAndColumn(text_, read == 0 ? 0 : read - 1) + ": " + why;
    return false;
  }

  // Places a value: the root, the next element of the open array, or the value of the member
  // whose name key() just appended.
  bool add(Value v, Value** placed = nullptr) {
    if (++values_ > kMaxValues)
      return fail("more than " + std::to_string(kMaxValues) +
                  " values in the document (no tpcomm file has that many)");
    Value* slot = nullptr;
    if (open_.empty()) {
      slot = root_;
    } else if (open_.back().value->isArray()) {
      std::vector<Value>& items = open_.back().value->items_;
      if (items.size() >= kMaxElements)
        return fail("more than " + std::to_string(kMaxElements) +
                    " elements in one array (no tpcomm file has that many)");
      slot = &items.emplace_back();
    } else {
      slot = &open_.back().value->members_.back().second;
    }
    *slot = std::move(v);
    if (placed) *placed = slot;
    return true;
  }

  bool open(Value container) {
    if (open_.size() >= kMaxDepth)
      return fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    Value* placed = nullptr;
    if (!add(std::move(container), &placed)) return false;
    // The pointer stays valid: only the innermost open container grows until this one closes.
    open_.emplace_back(placed);
    return true;
  }

  bool close() {
    open_.pop_back();
    return true;
  }

  const std::string& text_;
  Value* root_;
  const char* read_to_ = nullptr;
  std::vector<Frame> open_;
  size_t values_ = 0;  // placed so far (kMaxValues)
  std::string error_;
};

}  // namespace detail

bool parse(const std::string& text, Value* out, std::string* error) {
  if (text.size() > kMaxTextBytes) {
    *error = lineAndColumn(text, kMaxTextBytes) + ": the text goes on past " +
             std::to_string(kMaxTextBytes >> 20) + " MiB (" + std::to_string(text.size()) +
             " bytes), more than any tpcomm file holds";
    return false;
  }
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) {
    *error = lineAndColumn(text, 0) + ": a byte order mark (tpcomm's files are plain UTF-8)";
    return false;
  }
  // Not valid anywhere in JSON text (a string must escape it), and nlohmann would stop there.
  const size_t nul = text.find('\0');
  if (nul != std::string::npos) {
    *error = lineAndColumn(text, nul) + ": a NUL byte (a binary or corrupt file?)";
    return false;
  }
  detail::TreeBuilder builder(text, out);
  *builder.readTo() = text.data();
  const TrackedBytes first(text.data(), builder.readTo());
  const TrackedBytes last(text.data() + text.size(), builder.readTo());
  // strict: nothing may follow the value; comments are not ignored. Errors come back through
  // the handler, not as exceptions.
  if (nlohmann::json::sax_parse(first, last, &builder, nlohmann::json::input_format_t::json,
                                /*strict=*/true, /*ignore_comments=*/false))
    return true;
  *error = builder.error();
  return false;
}

}  // namespace json
}  // namespace tpcomm
