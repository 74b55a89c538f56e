#include "topo/pcie_ordering.h"

#include <cctype>
#include <cstdlib>
#include <sstream>

#include "topo/cache_dir.h"  // readTextFile

namespace tpcomm {
namespace topo {
namespace {

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// The values RmSetPCIERelaxedOrdering is given in a registry string ("Key=Value;..." with an
// optional "pci=...;" device prefix per entry in the per-device form). *found: the key appears;
// returns true if any of its values is not 0, or cannot be read as a number.
bool registryEnables(const std::string& value, bool* found) {
  const std::string key = "rmsetpcierelaxedordering";
  const std::string s = lower(value);
  bool on = false;
  for (size_t at = s.find(key); at != std::string::npos; at = s.find(key, at + key.size())) {
    *found = true;
    size_t p = at + key.size();
    while (p < s.size() && s[p] == ' ') ++p;
    if (p >= s.size() || s[p] != '=') {
      on = true;  // a form we cannot read: assume the worst
      continue;
    }
    const char* begin = s.c_str() + p + 1;
    char* end = nullptr;
    const unsigned long v = strtoul(begin, &end, 0);
    if (end == begin || v != 0) on = true;
  }
  return on;
}

}  // namespace

PcieOrdering relaxedOrderingFromParams(const std::string& text) {
  PcieOrdering r;
  bool mode_seen = false, mode_on = false, key_seen = false, key_on = false;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = line.substr(0, colon);
    const std::string value = line.substr(colon + 1);
    if (name == "EnablePCIERelaxedOrderingMode") {
      mode_seen = true;
      const char* begin = value.c_str();
      char* end = nullptr;
      const long v = strtol(begin, &end, 0);
      mode_on = end == begin || v != 0;
    } else if (name == "RegistryDwords" || name == "RegistryDwordsPerDevice") {
      if (registryEnables(value, &key_seen)) key_on = true;
    }
  }
  if (mode_on) {
    r.state = RelaxedOrdering::kOn;
    r.why = "the driver sets PCIe Relaxed Ordering on GPU writes (EnablePCIERelaxedOrderingMode)";
  } else if (key_on) {
    r.state = RelaxedOrdering::kOn;
    r.why = "the driver may set PCIe Relaxed Ordering on GPU writes (RmSetPCIERelaxedOrdering)";
  } else if (!mode_seen) {
    r.state = RelaxedOrdering::kUnknown;
    r.why = "the driver's parameters do not list EnablePCIERelaxedOrderingMode";
  } else {
    r.state = RelaxedOrdering::kOff;
    r.why =
        std::string("the driver sets no PCIe Relaxed Ordering (EnablePCIERelaxedOrderingMode 0") +
        (key_seen ? ", RmSetPCIERelaxedOrdering 0)" : ", no RmSetPCIERelaxedOrdering)");
  }
  return r;
}

PcieOrdering readRelaxedOrdering(const std::string& path) {
  std::string text, why;
  if (!readTextFile(path, &text, &why, 1u << 20)) {
    PcieOrdering r;
    r.why = "cannot read the driver's parameters: " + why;
    return r;
  }
  PcieOrdering r = relaxedOrderingFromParams(text);
  r.why += " (" + path + ")";
  return r;
}

}  // namespace topo
}  // namespace tpcomm
