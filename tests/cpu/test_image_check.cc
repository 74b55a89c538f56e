// The start-up kernel-image check (src/kernels/runtime/image_check.cc) must ask about every kernel
// the library can launch: a kernel it skipped could lack an image for the GPU and fail at its first
// call instead of at init. Kernel entry points are host stubs, so all of this runs without a GPU.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "inspect/inspect.h"
#include "kernels/fused_oneshot.h"
#include "kernels/lean_kernels.h"
#include "kernels/runtime/algo_launch.h"
#include "kernels/runtime/fabric_probe_kernels.h"
#include "kernels/runtime/image_check.h"
#include "kernels/runtime/variant_table.h"

namespace tpcomm {
namespace {

// Every kernel of every variant row's getter, and of the getters outside the table whose
// kernels the rows' sets carry (the lean one-shots, the fused cluster kernels), at every
// world-size class, general, lean, cluster and one-pass entries alike. (That the rows hold every
// kernel the library's binary has is CoversEveryKernelInTheLibrarysFatBinary below.)
std::set<const void*> everyGetterKernel() {
  using Getter = KernelSet (*)(int);
  std::vector<std::pair<const char*, Getter>> getters = {
      {"leanOneShotKernels", leanOneShotKernels},
      {"leanHostSentinelKernels", leanHostSentinelKernels},
      {"leanPullOneShotKernels", leanPullOneShotKernels},
      {"fusedP2pClusterKernels", fusedP2pClusterKernels},
      {"fusedP2pClusterFp8Kernels", fusedP2pClusterFp8Kernels},
  };
  int rows = 0;
  const VariantRow* table = variantRows(&rows);
  for (int i = 0; i < rows; ++i)
    if (table[i].kernels) getters.emplace_back(table[i].name, table[i].kernels);
  std::set<const void*> out;
  for (const auto& [name, get] : getters)
    for (int w : kWorldClasses) {
      const KernelSet set = get(w);
      for (const void* const* fns : {set.fn, set.lean, set.cluster, set.one_pass})
        for (int d = 0; d < kNumDtypes; ++d)
          if (fns[d]) out.insert(fns[d]);
    }
  for (const void* fn : topo::probeKernels()) out.insert(fn);  // the fabric probe's, no getter
  return out;
}

TEST(ImageCheck, AsksAboutEveryKernelOfEveryGetter) {
  const std::vector<const void*> checked_list = checkedKernels();
  const std::set<const void*> checked(checked_list.begin(), checked_list.end());
  const std::set<const void*> all = everyGetterKernel();
  int missing = 0;
  for (const void* fn : all)
    if (!checked.count(fn)) ++missing;
  EXPECT_EQ(missing, 0) << "of " << all.size() << " kernels, the image check skips " << missing;
  // And nothing else: every checked pointer is a kernel of some getter.
  for (const void* fn : checked) EXPECT_TRUE(all.count(fn));
}

// Kernel names per cubin, where the inspector gives them (FatbinEntry::kernel_names, added with
// its decompression); the overload for an inspector without them returns false.
template <typename Entry>
auto namesOf(const Entry& e, std::vector<std::string>* out, int)
    -> decltype(e.kernel_names, bool()) {
  *out = std::vector<std::string>(e.kernel_names.begin(), e.kernel_names.end());
  return true;
}
template <typename Entry>
bool namesOf(const Entry&, std::vector<std::string>*, long) {
  return false;
}

// The kernels of the library's cubins for one architecture, by name; false (with why) when the
// inspector cannot list them.
bool libraryKernelNames(int sm, std::set<std::string>* names, std::string* why) {
  inspect::FileReport r;
  if (!inspect::inspectFile(TPCOMM_LIBRARY_PATH, &r)) {
    *why = r.errors.empty() ? "inspect failed" : r.errors[0];
    return false;
  }
  for (const inspect::FatbinContainer& c : r.containers)
    for (const inspect::FatbinEntry& e : c.entries) {
      if (e.kind != inspect::ImageKind::kCubin || e.sm != sm) continue;
      std::vector<std::string> list;
      if (!namesOf(e, &list, 0)) {
        *why = "the inspector lists no kernel names per cubin (FatbinEntry::kernel_names)";
        return false;
      }
      names->insert(list.begin(), list.end());
    }
  if (names->empty()) *why = "no sm_" + std::to_string(sm) + " cubin in the library";
  return !names->empty();
}

TEST(ImageCheck, CoversEveryKernelInTheLibrarysFatBinary) {
  // The dev build holds sm_90 cubins only; the fat build holds sm_90 among others.
  std::set<std::string> names;
  std::string why;
  if (!libraryKernelNames(90, &names, &why)) GTEST_SKIP() << "cannot list kernels: " << why;
  const std::vector<const void*> checked_list = checkedKernels();
  const std::set<const void*> checked(checked_list.begin(), checked_list.end());
  // One entry point per kernel: the library holds no kernel the check does not ask about.
  EXPECT_EQ(checked.size(), names.size()) << "kernels in the sm_90 cubins: " << names.size();
}

}  // namespace
}  // namespace tpcomm
