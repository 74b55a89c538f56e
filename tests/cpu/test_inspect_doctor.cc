// How `tpcomm doctor` reports an inspector verdict of "unknown" (tools/doctor/doctor_findings.h): a
// warning that names the GPUs and the unreadable image, ranked between PTX JIT and no image.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/doctor/doctor_findings.h"

namespace tpcomm::cli {
namespace {

TEST(InspectDoctor, UnknownVerdictIsAWarningWithTheInspectCommand) {
  DoctorFacts f;
  f.built_archs = "90-real";
  CcCoverage c;
  c.major = 9;
  c.minor = 0;
  c.gpus = {0, 1};
  c.worst = inspect::VerdictKind::kUnknown;
  c.worst_detail = "libtpcomm.so: unknown for 9.0: the sm_90 SASS ... is corrupt cubin: ...";
  f.coverage = {c};
  std::vector<Finding> out;
  coverageFindings(f, &out);
  const Finding* w = nullptr;
  for (const Finding& x : out)
    if (x.what.find("cannot tell") != std::string::npos) w = &x;
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->severity, Severity::kWarning);
  EXPECT_NE(w->what.find("corrupt cubin"), std::string::npos) << w->what;
  EXPECT_NE(w->fix.find("tpcomm inspect --cc 9.0"), std::string::npos) << w->fix;

  EXPECT_LT(verdictRank(inspect::VerdictKind::kPtxJit),
            verdictRank(inspect::VerdictKind::kUnknown));
  EXPECT_LT(verdictRank(inspect::VerdictKind::kUnknown),
            verdictRank(inspect::VerdictKind::kNoImage));
}

}  // namespace
}  // namespace tpcomm::cli
