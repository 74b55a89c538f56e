#include "transport/nccl_loader.h"

#include <dlfcn.h>

#include <mutex>

#include "common/env.h"
#include "common/log.h"

namespace tpcomm {
namespace {

template <typename F>
bool bind(void* lib, const char* name, F* fn, std::string* why) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!*fn) *why = std::string("symbol ") + name + " missing in NCCL library";
  return *fn != nullptr;
}

}  // namespace

const NcclApi* ncclApi(std::string* why) {
  static std::once_flag once;
  static NcclApi api;
  static bool ok = false;
  static std::string error;
  std::call_once(once, [] {
    const std::string path = env().nccl_library.empty() ? "libnccl.so.2" : env().nccl_library;
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      error = "dlopen(" + path + ") failed: " + (e ? e : "?") +
              " (set TPCOMM_NCCL_LIBRARY or add NCCL to the library path)";
      TPCOMM_INFO(INIT, "NCCL fallback unavailable: %s", error.c_str());
      return;
    }
    ok = bind(lib, "ncclGetVersion", &api.getVersion, &error) &&
         bind(lib, "ncclGetUniqueId", &api.getUniqueId, &error) &&
         bind(lib, "ncclCommInitRank", &api.commInitRank, &error) &&
         bind(lib, "ncclCommInitAll", &api.commInitAll, &error) &&
         bind(lib, "ncclCommDestroy", &api.commDestroy, &error) &&
         bind(lib, "ncclCommAbort", &api.commAbort, &error) &&
         bind(lib, "ncclAllReduce", &api.allReduce, &error) &&
         bind(lib, "ncclReduceScatter", &api.reduceScatter, &error) &&
         bind(lib, "ncclAllGather", &api.allGather, &error) &&
         bind(lib, "ncclGroupStart", &api.groupStart, &error) &&
         bind(lib, "ncclGroupEnd", &api.groupEnd, &error) &&
         bind(lib, "ncclGetErrorString", &api.getErrorString, &error) &&
         bind(lib, "ncclGetLastError", &api.getLastError, &error);
    if (ok) {
      api.commInitRankConfig =
          reinterpret_cast<decltype(api.commInitRankConfig)>(dlsym(lib, "ncclCommInitRankConfig"));
      api.commGetAsyncError =
          reinterpret_cast<decltype(api.commGetAsyncError)>(dlsym(lib, "ncclCommGetAsyncError"));
      int v = 0;
      api.getVersion(&v);
      TPCOMM_INFO(INIT, "NCCL %d loaded from %s", v, path.c_str());
    }
  });
  if (!ok && why) *why = error;
  return ok ? &api : nullptr;
}

}  // namespace tpcomm
