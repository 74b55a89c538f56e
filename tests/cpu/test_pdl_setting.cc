// TPCOMM_PDL and the pdl knob are one setting: the variable gives the knob's default and
// TPCOMM_KNOBS (then config.launchKnobs) applies on top (comm/lifecycle/config.h).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "comm/lifecycle/config.h"

namespace tpcomm {
namespace {

bool pdlWith(const std::map<std::string, std::string>& vars) {
  const Env e = parseEnvironment([&](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
  Settings s;
  EXPECT_EQ(settingsFromEnv(e, &s), tpcommSuccess);
  return s.knobs.pdl;
}

TEST(PdlSetting, TheVariableIsTheKnobsDefault) {
  EXPECT_TRUE(pdlWith({}));
  EXPECT_FALSE(pdlWith({{"TPCOMM_PDL", "0"}}));
  EXPECT_FALSE(pdlWith({{"TPCOMM_KNOBS", "pdl=0"}}));
  EXPECT_TRUE(pdlWith({{"TPCOMM_PDL", "0"}, {"TPCOMM_KNOBS", "pdl=1"}}));  // the knob on top
  EXPECT_FALSE(pdlWith({{"TPCOMM_PDL", "1"}, {"TPCOMM_KNOBS", "block_bytes=4096,pdl=0"}}));
}

}  // namespace
}  // namespace tpcomm
