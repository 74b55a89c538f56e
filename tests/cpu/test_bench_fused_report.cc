// tpcomm-bench-fused's rows: a column whose calls failed is "-" (JSON null), never the 0.00 a
// failed timing leaves, and a refused fused call names no variant. Before, a forced variant that
// refused 128 tokens printed "0.00 -29.00 0.00 ... p2p_twoshot": a time it never measured, and
// the pair's all-reduce as the fused call's variant.
#include <gtest/gtest.h>

#include <string>

#include "bench/fused_report.h"

namespace {

using tpcomm::bench::FusedRow;
using tpcomm::bench::fusedRowJson;
using tpcomm::bench::fusedRowText;

FusedRow allRan() {
  FusedRow r;
  r.tokens = 16;
  r.us[0] = 8.0;
  r.us[1] = 13.0;
  r.us[2] = 6.5;
  r.us[3] = 7.0;
  for (bool& ok : r.ok) ok = true;
  r.variant = "fused_p2p_oneshot";
  r.blocks = 16;
  return r;
}

TEST(BenchFusedReport, ARowThatRanShowsEveryColumn) {
  const std::string text = fusedRowText(allRan());
  EXPECT_EQ(text,
            "      16       8.00      13.00       6.50      -1.50       0.50       7.00      16  "
            "fused_p2p_oneshot\n");
  EXPECT_EQ(fusedRowJson(allRan()),
            "{\"tokens\": 16, \"allreduce_us\": 8.000, \"pair_us\": 13.000, \"fused_us\": 6.500, "
            "\"fused_block_per_row_us\": 7.000, \"fused_blocks\": 16, \"variant\": "
            "\"fused_p2p_oneshot\"}");
}

TEST(BenchFusedReport, ARefusedFusedCallShowsNoTimeAndNoVariant) {
  FusedRow r = allRan();
  r.tokens = 128;
  r.ok[2] = r.ok[3] = false;
  r.us[2] = r.us[3] = 0.0;  // what a failed timing leaves
  r.variant = nullptr;
  r.blocks = 0;
  const std::string text = fusedRowText(r);
  EXPECT_EQ(text,
            "     128       8.00      13.00          -          -          -          -       0  "
            "(refused: see stderr)\n");
  EXPECT_EQ(text.find("0.00 "), std::string::npos) << text;
  const std::string json = fusedRowJson(r);
  EXPECT_NE(json.find("\"fused_us\": null"), std::string::npos) << json;
  EXPECT_NE(json.find("\"fused_block_per_row_us\": null"), std::string::npos) << json;
  EXPECT_NE(json.find("\"variant\": null"), std::string::npos) << json;
  EXPECT_NE(json.find("\"allreduce_us\": 8.000"), std::string::npos) << json;
}

TEST(BenchFusedReport, AFailedBaselineBlanksTheColumnsDerivedFromIt) {
  FusedRow r = allRan();
  r.ok[1] = false;  // the pair failed: fused/pair has nothing to divide by
  const std::string text = fusedRowText(r);
  EXPECT_EQ(text,
            "      16       8.00          -       6.50      -1.50          -       7.00      16  "
            "fused_p2p_oneshot\n");
  r = allRan();
  r.ok[0] = false;  // the all-reduce failed: fused-ar is unknown
  EXPECT_EQ(fusedRowText(r),
            "      16          -      13.00       6.50          -       0.50       7.00      16  "
            "fused_p2p_oneshot\n");
}

}  // namespace
