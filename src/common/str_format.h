// printf into a std::string of exactly the needed size (messages and report lines).
#pragma once

#include <string>

namespace tpcomm {

std::string strFormat(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace tpcomm
