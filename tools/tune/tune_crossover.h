// The walk every `tpcomm tune` crossover is picked by (tune_fused_pick.h: the fused call's row
// counts; tune_wire_pick.h: the quantized wire's sizes): from the largest measured point down, the
// smallest point from which a condition holds at every point that compares. Pure and
// header-only, so the CPU tests check it through the picks.
#pragma once

#include <cstddef>
#include <vector>

namespace tpcomm::cli {

// Walking points (ascending by key) down from the largest: the smallest key(point) from which
// `holds` is true at every point `compares`; 0 where it fails at the largest such point.
// *compared: some point compares; *everywhere: it held at every one.
template <typename Point, typename Key, typename Compares, typename Holds>
size_t holdsFrom(const std::vector<Point>& points, Key key, Compares compares, Holds holds,
                 bool* compared, bool* everywhere) {
  size_t from = 0;
  *compared = false;
  *everywhere = true;
  for (auto it = points.rbegin(); it != points.rend(); ++it) {
    if (!compares(*it)) continue;
    *compared = true;
    if (!holds(*it)) {
      *everywhere = false;
      break;
    }
    from = key(*it);
  }
  return from;
}

}  // namespace tpcomm::cli
