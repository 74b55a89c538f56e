// `tpcomm doctor` output: aligned tables for people, JSON for scripts (keys in docs/DOCTOR.md).
#pragma once

#include <string>
#include <vector>

#include "common/json.h"
#include "tools/doctor/doctor_facts.h"
#include "tools/doctor/doctor_findings.h"

namespace tpcomm::cli {

std::string doctorText(const DoctorFacts& f, const std::vector<Finding>& findings);
json::Value doctorJson(const DoctorFacts& f, const std::vector<Finding>& findings, bool env_all);

// The fabric probe: a text section (nothing when it did not run on live GPUs) and its JSON
// (doctor_probe.cc).
void probeSection(const DoctorFacts& f, std::string* out);
json::Value probeJson(const DoctorFacts& f);

// Every TPCOMM_* variable with its default and meaning, and the value when set (`--env`).
std::string envText();
json::Value envJson();

}  // namespace tpcomm::cli
