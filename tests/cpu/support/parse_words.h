// Runs an in-process command-line parser (the benches' parseArgs / parseFusedArgs) on
// {program, words...} as main() receives them, and keeps what it printed on stderr.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tpcomm::test {

// parse(argc, argv) -> bool, called once; *err: its stderr (may be null).
template <typename Parse>
bool parseWords(const char* program, std::vector<std::string> words, Parse&& parse,
                std::string* err = nullptr) {
  words.insert(words.begin(), program);
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  testing::internal::CaptureStderr();
  const bool ok = parse(static_cast<int>(argv.size()), argv.data());
  const std::string printed = testing::internal::GetCapturedStderr();
  if (err) *err = printed;
  return ok;
}

}  // namespace tpcomm::test
