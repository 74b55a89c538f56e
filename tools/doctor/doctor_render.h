// `tpcomm doctor` output: aligned tables for people, JSON for scripts (keys in docs/DOCTOR.md),
// and an HTML page.
#pragma once

#include <string>
#include <vector>

#include "common/json.h"
#include "tools/doctor/doctor_facts.h"
#include "tools/doctor/doctor_findings.h"

namespace tpcomm::cli {

std::string doctorText(const DoctorFacts& f, const std::vector<Finding>& findings);
json::Value doctorJson(const DoctorFacts& f, const std::vector<Finding>& findings, bool env_all);
// The report as a self-contained HTML page: findings by severity, then the text's sections
// (doctor_html.cc).
std::string doctorHtml(const DoctorFacts& f, const std::vector<Finding>& findings);

// The fabric probe: a text section (nothing when it did not run on live GPUs) and its JSON
// (doctor_probe.cc).
void probeSection(const DoctorFacts& f, std::string* out);
json::Value probeJson(const DoctorFacts& f);

// Every TPCOMM_* variable with its default and meaning, and the value when set (`--env`).
std::string envText();
json::Value envJson();

}  // namespace tpcomm::cli
