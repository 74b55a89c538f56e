#include "common/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>

#include "common/env.h"

namespace tpcomm {
namespace {

FILE* logStream() {
  static FILE* stream = [] {
    const std::string& path = env().log_file;
    if (!path.empty()) {
      if (FILE* f = fopen(path.c_str(), "a")) return f;
    }
    return stderr;
  }();
  return stream;
}

}  // namespace

LogLevel logLevel() {
  return env().log_level;
}

void logMessage(LogLevel level, const char* subsys, const char* fmt, ...) {
  static std::mutex mu;
  char body[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(body, sizeof(body), fmt, ap);
  va_end(ap);
  const char* tag = level == LogLevel::kWarn ? "WARN" : level == LogLevel::kInfo ? "INFO" : "DEBUG";
  std::lock_guard<std::mutex> lock(mu);
  fprintf(logStream(), "tpcomm %d %s %s %s\n", static_cast<int>(getpid()), tag, subsys, body);
  fflush(logStream());
}

}  // namespace tpcomm
