// The source folders are layers that point one way: comm (the C API and the communicator) ->
// plan -> kernels / transport -> topo / inspect -> common. An include against that direction
// (a transport that reaches into the communicator, a topology helper that includes the policy)
// fails here, naming the file and the include.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

namespace tpcomm {
namespace {

namespace fs = std::filesystem;

// What each folder of src/ may include besides itself and the public header.
const std::map<std::string, std::set<std::string>>& allowed() {
  static const std::map<std::string, std::set<std::string>> m = {
      {"comm", {"plan", "kernels", "transport", "topo", "inspect", "common"}},
      {"plan", {"kernels", "topo", "common"}},
      {"kernels", {"topo", "common"}},
      // The transports lay out what the kernels read (kernels/layout/device_comm.h).
      {"transport", {"kernels", "topo", "common"}},
      {"topo", {"common"}},
      {"inspect", {"common"}},
      {"common", {}},
  };
  return m;
}

TEST(Layers, IncludesPointDownOnly) {
  const fs::path src = fs::path(TPCOMM_SOURCE_DIR) / "src";
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    if (!e.is_regular_file()) continue;
    const fs::path rel = fs::relative(e.path(), src);
    const std::string layer = rel.begin()->string();
    if (rel.has_parent_path() == false) continue;  // src/CMakeLists.txt
    const auto it = allowed().find(layer);
    ASSERT_NE(it, allowed().end()) << "src/" << layer << " is not a known layer";
    ++files;
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("#include \"", 0) != 0) continue;
      const std::string inc = line.substr(10, line.find('"', 10) - 10);
      const std::string to = inc.substr(0, inc.find('/'));
      if (to == layer || to == "tpcomm" || inc.find('/') == std::string::npos) continue;
      EXPECT_TRUE(it->second.count(to)) << "src/" << rel.string() << " includes " << inc;
    }
  }
  EXPECT_GT(files, 50);
}

}  // namespace
}  // namespace tpcomm
