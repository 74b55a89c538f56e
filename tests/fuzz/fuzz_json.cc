// libFuzzer target: tpcomm's JSON reader (json::parse), the first parser every tpcomm file meets.
// Property: what parse() accepts, write() prints as JSON that parses back to the same value.
#include "common/json.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tpcomm::json::Value;
  Value v;
  std::string error;
  if (!tpcomm::json::parse(tpcomm::fuzz::asText(data, size), &v, &error)) return 0;
  const std::string text = tpcomm::json::write(v);
  Value again;
  tpcomm::fuzz::check(tpcomm::json::parse(text, &again, &error), "json::write output parses again",
                      error + "\n" + text);
  tpcomm::fuzz::check(again == v, "json::write then parse gives the same value", text);
  return 0;
}
