#include "bench/fused_report.h"

#include <cstdio>

namespace tpcomm::bench {
namespace {

// A cell of the table: the value, or "-" where its calls failed (their error is on stderr).
std::string cell(bool ok, double v) {
  char buf[32];
  if (ok)
    snprintf(buf, sizeof buf, "%10.2f", v);
  else
    snprintf(buf, sizeof buf, "%10s", "-");
  return buf;
}

// A number of the JSON object: null where its calls failed.
std::string jsonNumber(bool ok, double v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.3f", v);
  return ok ? buf : "null";
}

}  // namespace

std::string fusedRowText(const FusedRow& r) {
  const bool fused_vs_ar = r.ok[2] && r.ok[0];
  const bool fused_vs_pair = r.ok[2] && r.ok[1] && r.us[1] > 0;
  char head[32], tail[160];
  snprintf(head, sizeof head, "%8zu", r.tokens);
  snprintf(tail, sizeof tail, " %7d  %s\n", r.blocks,
           r.variant ? r.variant : "(refused: see stderr)");
  return head + (" " + cell(r.ok[0], r.us[0])) + " " + cell(r.ok[1], r.us[1]) + " " +
         cell(r.ok[2], r.us[2]) + " " + cell(fused_vs_ar, r.us[2] - r.us[0]) + " " +
         cell(fused_vs_pair, fused_vs_pair ? r.us[2] / r.us[1] : 0.0) + " " +
         cell(r.ok[3], r.us[3]) + tail;
}

std::string fusedRowJson(const FusedRow& r) {
  char buf[512];
  snprintf(buf, sizeof buf,
           "{\"tokens\": %zu, \"allreduce_us\": %s, \"pair_us\": %s, \"fused_us\": %s, "
           "\"fused_block_per_row_us\": %s, \"fused_blocks\": %d, \"variant\": %s}",
           r.tokens, jsonNumber(r.ok[0], r.us[0]).c_str(), jsonNumber(r.ok[1], r.us[1]).c_str(),
           jsonNumber(r.ok[2], r.us[2]).c_str(), jsonNumber(r.ok[3], r.us[3]).c_str(), r.blocks,
           r.variant ? ("\"" + std::string(r.variant) + "\"").c_str() : "null");
  return buf;
}

}  // namespace tpcomm::bench
