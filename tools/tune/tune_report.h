// `tpcomm tune`'s human output: the measured table (a row per size, a column per candidate, the
// pick and its speed-up over NCCL) and the rules that go into the tuning table.
#pragma once

#include <string>
#include <vector>

#include "plan/tuning_table.h"
#include "tools/tune/tune_rules.h"

namespace tpcomm::cli {

// Candidates not eligible on `fabric` (eligibleOn) are shown for information, marked "(info)".
std::string measuredText(const std::vector<TuningSample>& samples, int world, Fabric fabric,
                         const std::vector<int>& candidates, const std::vector<SizePick>& picks);
std::string rulesText(const SizeTable& rules);

}  // namespace tpcomm::cli
