#include "tools/tune/tune_report.h"

#include <cstdio>

#include "tools/doctor/doctor_table.h"

namespace tpcomm::cli {
namespace {

std::string us(double v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

}  // namespace

std::string measuredText(const std::vector<TuningSample>& samples, int world, Fabric fabric,
                         const std::vector<int>& candidates, const std::vector<SizePick>& picks) {
  std::vector<std::string> header = {"bytes"};
  for (int a : candidates)
    header.push_back(std::string(tpcommAlgoName(a)) + " us" +
                     (eligibleOn(fabric, a) ? "" : " (info)"));
  header.push_back("pick");
  header.push_back("NCCL / pick");
  TextTable t(header);
  for (const SizePick& p : picks) {
    const std::map<int, double> times = timesAt(samples, world, p.bytes);
    std::vector<std::string> row = {formatBytes(p.bytes)};
    for (int a : candidates) {
      // '*' marks the fastest; the pick can differ from it by the tie margin.
      row.push_back(times.count(a) ? us(times.at(a)) + (a == p.fastest ? "*" : "") : "-");
    }
    row.push_back(p.algo >= 0 ? tpcommAlgoName(p.algo) : "-");
    char ratio[32] = "-";
    if (p.algo >= 0 && p.nccl_us > 0 && p.us > 0)
      snprintf(ratio, sizeof(ratio), "%.2fx", p.nccl_us / p.us);
    row.push_back(ratio);
    t.add(row);
  }
  return t.render();
}

std::string rulesText(const SizeTable& rules) {
  TextTable t({"up to", "algorithm"});
  for (const SizeRule& r : rules)
    t.add({r.max_bytes == SIZE_MAX ? "every larger size" : formatBytes(r.max_bytes),
           tpcommAlgoName(r.algo)});
  return t.render();
}

}  // namespace tpcomm::cli
