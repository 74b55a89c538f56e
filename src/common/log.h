// One logger: TPCOMM_LOG=warn (default) | info | debug | none (any case), to stderr (or
// TPCOMM_LOG_FILE), each line tagged with the subsystem so a reader can grep INIT, COLL, P2P...
#pragma once

namespace tpcomm {

enum class LogLevel { kNone = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

LogLevel logLevel();
void logMessage(LogLevel level, const char* subsys, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

}  // namespace tpcomm

#define TPCOMM_LOG_AT(lvl, subsys, ...)                                                   \
  do {                                                                                    \
    if (::tpcomm::logLevel() >= (lvl)) ::tpcomm::logMessage((lvl), #subsys, __VA_ARGS__); \
  } while (0)
#define TPCOMM_WARN(subsys, ...) TPCOMM_LOG_AT(::tpcomm::LogLevel::kWarn, subsys, __VA_ARGS__)
#define TPCOMM_INFO(subsys, ...) TPCOMM_LOG_AT(::tpcomm::LogLevel::kInfo, subsys, __VA_ARGS__)
#define TPCOMM_DEBUG(subsys, ...) TPCOMM_LOG_AT(::tpcomm::LogLevel::kDebug, subsys, __VA_ARGS__)
