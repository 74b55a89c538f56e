// The one result table (src/common/result_table.h) serves both names and descriptions.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/error.h"
#include "common/result_table.h"

namespace tpcomm {
namespace {

TEST(ResultTable, EveryCodeHasItsOwnNameAndDescription) {
  std::set<std::string> names, descriptions;
  for (int r = 0; r < tpcommNumResults; ++r) {
    const auto code = static_cast<tpcommResult_t>(r);
    ASSERT_NE(resultInfo(r), nullptr) << r;
    EXPECT_EQ(resultName(code), std::string(resultInfo(r)->name));
    EXPECT_EQ(std::string(resultName(code)).rfind("tpcomm", 0), 0u) << resultName(code);
    EXPECT_STRNE(tpcommGetErrorString(code), "unknown result code") << r;
    names.insert(resultName(code));
    descriptions.insert(tpcommGetErrorString(code));
  }
  EXPECT_EQ(names.size(), size_t{tpcommNumResults});
  EXPECT_EQ(descriptions.size(), size_t{tpcommNumResults});
  EXPECT_STREQ(resultName(tpcommTimeout), "tpcommTimeout");
  EXPECT_STREQ(tpcommGetErrorString(tpcommTimeout), "timeout (a peer did not answer in time)");
}

TEST(ResultTable, ValuesOutsideTheEnumAreUnknown) {
  for (int r : {-1, static_cast<int>(tpcommNumResults), 1000}) {
    EXPECT_EQ(resultInfo(r), nullptr) << r;
    EXPECT_STREQ(resultName(static_cast<tpcommResult_t>(r)), "tpcommUnknownResult");
    EXPECT_STREQ(tpcommGetErrorString(static_cast<tpcommResult_t>(r)), "unknown result code");
  }
}

}  // namespace
}  // namespace tpcomm
