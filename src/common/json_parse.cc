// The JSON parser behind json::parse (json.h): RFC 8259 exactly, with positions in messages.
#include <charconv>
#include <cmath>
#include <cstring>

#include "common/json.h"

namespace tpcomm {
namespace json {

namespace {

constexpr int kMaxDepth = 64;  // our files nest 4 deep; a deeper file is not ours

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  bool parseDocument(Value* out, std::string* error) {
    skipSpace();
    bool ok = parseValue(out, 0);
    if (ok) {
      skipSpace();
      if (!atEnd()) ok = fail("unexpected bytes after the JSON value");
    }
    if (!ok) *error = where() + ": " + why_;
    return ok;
  }

 private:
  bool fail(const std::string& why) {
    if (!why_.empty()) return false;
    why_ = why;
    // A file cut short (a crash while writing, a full disk) should say so, whatever was expected.
    if (atEnd() && why.find("end of input") == std::string::npos)
      why_ += " (unexpected end of input: the file is truncated?)";
    return false;
  }

  // Line and column (1-based, in bytes) of the current position, for messages.
  std::string where() const {
    int line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(col);
  }

  bool atEnd() const { return pos_ >= s_.size(); }
  char peek() const { return atEnd() ? '\0' : s_[pos_]; }

  void skipSpace() {
    while (!atEnd() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }

  bool literal(const char* word, Value v, Value* out) {
    const size_t n = strlen(word);
    if (s_.compare(pos_, n, word) != 0) {
      const size_t left = s_.size() - pos_;
      if (left < n && s_.compare(pos_, left, word, left) == 0)
        return fail("unexpected end of input inside a literal");
      return fail("invalid literal (expected a JSON value)");
    }
    pos_ += n;
    *out = std::move(v);
    return true;
  }

  bool parseValue(Value* out, int depth) {
    if (depth > kMaxDepth) return fail("nesting deeper than 64 levels");
    if (atEnd()) return fail("unexpected end of input (the file is truncated?)");
    switch (peek()) {
      case '{':
        return parseObject(out, depth);
      case '[':
        return parseArray(out, depth);
      case '"': {
        std::string str;
        if (!parseString(&str)) return false;
        *out = Value::string(std::move(str));
        return true;
      }
      case 't':
        return literal("true", Value::boolean(true), out);
      case 'f':
        return literal("false", Value::boolean(false), out);
      case 'n':
        return literal("null", Value(), out);
      default:
        return parseNumber(out);
    }
  }

  bool parseObject(Value* out, int depth) {
    ++pos_;  // '{'
    *out = Value::object();
    skipSpace();
    if (peek() == '}') {
      ++pos_;
      return true;
    }
    for (;;) {
      skipSpace();
      if (peek() != '"')
        return fail(atEnd() ? "unexpected end of input inside an object"
                            : "expected a member name in double quotes");
      std::string key;
      if (!parseString(&key)) return false;
      if (out->find(key)) return fail("duplicate member \"" + key + "\"");
      skipSpace();
      if (peek() != ':') return fail("expected ':' after a member name");
      ++pos_;
      skipSpace();
      Value v;
      if (!parseValue(&v, depth + 1)) return false;
      out->set(key, std::move(v));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return true;
      }
      return fail(atEnd() ? "unexpected end of input inside an object"
                          : "expected ',' or '}' in an object");
    }
  }

  bool parseArray(Value* out, int depth) {
    ++pos_;  // '['
    *out = Value::array();
    skipSpace();
    if (peek() == ']') {
      ++pos_;
      return true;
    }
    for (;;) {
      skipSpace();
      if (peek() == ']') return fail("trailing ',' in an array");
      Value v;
      if (!parseValue(&v, depth + 1)) return false;
      out->push(std::move(v));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return true;
      }
      return fail(atEnd() ? "unexpected end of input inside an array"
                          : "expected ',' or ']' in an array");
    }
  }

  // RFC 8259 grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool parseNumber(Value* out) {
    const size_t start = pos_;
    auto digits = [this] {
      size_t n = 0;
      while (!atEnd() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_, ++n;
      return n;
    };
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
      if (peek() >= '0' && peek() <= '9') return fail("leading zeros are not allowed in numbers");
    } else if (digits() == 0) {
      pos_ = start;
      return fail("expected a JSON value");
    }
    bool integral = true;
    if (peek() == '.') {
      ++pos_;
      integral = false;
      if (digits() == 0) return fail("expected digits after '.'");
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      integral = false;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (digits() == 0) return fail("expected digits in the exponent");
    }
    const char* first = s_.data() + start;
    const char* last = s_.data() + pos_;
    if (integral) {
      // Exact when it fits in 64 bits; larger integers become doubles like any other number.
      if (*first == '-') {
        int64_t i = 0;
        auto r = std::from_chars(first, last, i);
        if (r.ec == std::errc() && r.ptr == last) {
          *out = Value::integer(i);
          return true;
        }
      } else {
        uint64_t u = 0;
        auto r = std::from_chars(first, last, u);
        if (r.ec == std::errc() && r.ptr == last) {
          *out = Value::unsignedInteger(u);
          return true;
        }
      }
    }
    double d = 0;
    auto r = std::from_chars(first, last, d);  // locale-independent, unlike strtod
    if (r.ec != std::errc() || r.ptr != last || !std::isfinite(d)) {
      pos_ = start;
      return fail("number out of range");
    }
    *out = Value::number(d);
    return true;
  }

  bool hex4(unsigned* out) {
    unsigned v = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      const char c = peek();
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= c - '0';
      else if (c >= 'a' && c <= 'f')
        v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        v |= c - 'A' + 10;
      else
        return fail("expected 4 hex digits after \\u");
    }
    *out = v;
    return true;
  }

  static void appendUtf8(unsigned cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // Length of the valid UTF-8 sequence at pos_ (0 if invalid): shortest form, no surrogates.
  size_t utf8Length() const {
    const auto b = [this](size_t i) { return static_cast<unsigned char>(s_[pos_ + i]); };
    const unsigned c = b(0);
    size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (n == 0 || c > 0xF4 || pos_ + n > s_.size()) return 0;
    for (size_t i = 1; i < n; ++i)
      if ((b(i) & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogate
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // above U+10FFFF
    return n;
  }

  bool parseString(std::string* out) {
    ++pos_;  // opening quote
    out->clear();
    for (;;) {
      if (atEnd()) return fail("unexpected end of input inside a string");
      const unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return fail("control character inside a string (escape it)");
      if (c >= 0x80) {
        const size_t n = utf8Length();
        if (n == 0) return fail("invalid UTF-8 inside a string");
        out->append(s_, pos_, n);
        pos_ += n;
        continue;
      }
      ++pos_;
      if (c != '\\') {
        out->push_back(static_cast<char>(c));
        continue;
      }
      const char e = peek();
      ++pos_;
      switch (e) {
        case '"':
          out->push_back('"');
          break;
        case '\\':
          out->push_back('\\');
          break;
        case '/':
          out->push_back('/');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          unsigned cp = 0;
          if (!hex4(&cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return fail("unpaired low surrogate in \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo = 0;
            if (peek() != '\\' || (++pos_, peek() != 'u'))
              return fail("unpaired high surrogate in \\u escape");
            ++pos_;
            if (!hex4(&lo)) return false;
            if (lo < 0xDC00 || lo > 0xDFFF) return fail("unpaired high surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          appendUtf8(cp, out);
          break;
        }
        default:
          --pos_;
          return fail("invalid escape in a string");
      }
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
  std::string why_;
};

}  // namespace

bool parse(const std::string& text, Value* out, std::string* error) {
  Parser p(text);
  return p.parseDocument(out, error);
}

}  // namespace json
}  // namespace tpcomm
