// Files for the inspector tests: the nvcc-built fixtures (tests/cpu/fixtures) and scratch files.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#ifndef TPCOMM_INSPECT_FIXTURE_DIR
#error "TPCOMM_INSPECT_FIXTURE_DIR comes from tests/cpu/fixtures/CMakeLists.txt"
#endif

namespace tpcomm::test {

inline std::string fixture(const std::string& name) {
  return std::string(TPCOMM_INSPECT_FIXTURE_DIR) + "/" + name;
}

inline std::string tempPath(const std::string& name) {
  return ::testing::TempDir() + "tpcomm_inspect_" + name;
}

inline std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void writeAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace tpcomm::test
