// printf into a std::string of exactly the needed size (messages and report lines), and text made
// safe for XML and HTML (the bench's SVG plot, doctor's HTML page).
#pragma once

#include <string>

namespace tpcomm {

std::string strFormat(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// s with & < > " escaped as entities and control characters other than tab and newline dropped.
std::string xmlEscape(const std::string& s);

}  // namespace tpcomm
