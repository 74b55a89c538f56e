#include "comm/refusal_log.h"

#include <cstdarg>
#include <cstdio>

#include "common/log.h"

namespace tpcomm {

void RefusalLog::note(const char* fmt, ...) {
  if (shown_ >= kShownRefusals) {
    ++hidden_;
    return;
  }
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  ++shown_;
  TPCOMM_WARN(INIT, "bootstrap: %s refused a connection: %s%s", who_, what,
              shown_ == kShownRefusals ? " (further refusals are counted, not shown)" : "");
}

RefusalLog::~RefusalLog() {
  if (hidden_ > 0)
    TPCOMM_WARN(INIT, "bootstrap: %s refused %d more connections than shown (%d in all)", who_,
                hidden_, shown_ + hidden_);
}

}  // namespace tpcomm
