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

// Every TPCOMM_* variable with its default and meaning, and the value when set (`--env`).
std::string envText();
json::Value envJson();

}  // namespace tpcomm::cli
