// The user's cache folder and the small file helpers the P2P cache and the tuning tables share.
// Files there are written atomically (temporary file + rename) so that two processes starting at
// once, or a crash mid-write, never leave a half-written file that the next start would trust.
#pragma once

#include <cstddef>
#include <string>

#include "tpcomm/tpcomm.h"

namespace tpcomm {
namespace topo {

// $XDG_CACHE_HOME/tpcomm when XDG_CACHE_HOME is an absolute path, else $HOME/.cache/tpcomm, else
// the home folder of the password database entry; "" when none is known (then nothing is cached).
std::string userCacheDir();

// mkdir -p with mode 0700 for the folders it creates.
tpcommResult_t makeDirs(const std::string& path);

// Reads a whole regular file of at most max_bytes; false with a reason naming the path otherwise.
// For facts the system publishes (sysfs, /proc) and files named on the command line; files that
// decide what tpcomm does are read with readTrustedFile (common/trusted_file.h).
// *missing (if given) tells "the file does not exist" apart from other failures.
bool readTextFile(const std::string& path, std::string* text, std::string* why,
                  size_t max_bytes = 16u << 20, bool* missing = nullptr);

// Writes text to path through a temporary file in the same folder and rename(2); creates the
// folder if needed; the file gets `mode` (caches: user only). Refuses a folder that readers would
// not trust (common/trusted_file.h). tpcommSystemError with the path and the reason on failure.
tpcommResult_t writeTextFileAtomic(const std::string& path, const std::string& text,
                                   unsigned mode = 0600);

}  // namespace topo
}  // namespace tpcomm
