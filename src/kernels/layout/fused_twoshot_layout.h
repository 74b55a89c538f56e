// The fused kernels over pull that split a call's rows by owner (fused_twoshot_pull.cu,
// fused_island_pull.cu): which rows a step holds, which owner has which of them, and where they
// lie in an outbox slot. A step is up to `parts` times `area_rows` rows (area_rows: the rows one
// area of a slot holds); its rows are split among the owners in consecutive runs of
// ceil(len / parts), owner d having run d.
// - The two-shot (parts = areas = world): rank r's slot holds, for each other rank d, an area with
//   r's input of d's run (area (d - r - 1) mod world, 0 .. world - 2), then the reduced area
//   (world - 1): r's finished residual rows of its own run, which the others read.
// - The push forms (fused_twoshot_push.cu; fusedPushAreas): rank r pushes its input of owner d's
//   run into d's reduce-scatter area r, owner d pushes its residual rows into every other
//   owner's all-gather area n + d (n owners), and the island's partners exchange their partial
//   in the two areas after those (X, fp32).
// - The island over pull (parts = m, the island size; areas = m + 2): owners are the island members
// by
//   local index, the same areas for the inputs of the other members' runs (0 .. m - 2), then two
//   areas for the island partial of the member's run in fp32 (X, up to 2 vectors a data vector),
//   then the result area (m + 1).
// Plain arithmetic, so the CPU tests check what the kernels and the planner use.
#pragma once

#include <cstddef>

#include "kernels/layout/ll_layout.h"  // TPCOMM_HOST_DEVICE

namespace tpcomm {

struct FusedTwoShotSteps {
  size_t area_rows;  // rows of one area: a run of a full step
  size_t step_rows;  // rows of a full step: world * area_rows
  size_t nsteps;
};

// A call of `rows` rows of `hv` vectors over slots of `slot_vecs` vectors cut into `areas` areas,
// split among `parts` owners. No step (area_rows 0) where a slot cannot hold one row per area.
TPCOMM_HOST_DEVICE inline FusedTwoShotSteps fusedRunSteps(size_t slot_vecs, size_t hv, int parts,
                                                          int areas, size_t rows) {
  const size_t area_rows = hv > 0 ? slot_vecs / (hv * static_cast<size_t>(areas)) : 0;
  const size_t step_rows = area_rows * static_cast<size_t>(parts);
  return {area_rows, step_rows, step_rows > 0 ? (rows + step_rows - 1) / step_rows : 0};
}

// The two-shot's steps: one run and one area per rank.
TPCOMM_HOST_DEVICE inline FusedTwoShotSteps fusedTwoShotSteps(size_t slot_vecs, size_t hv,
                                                              int world, size_t rows) {
  return fusedRunSteps(slot_vecs, hv, world, world, rows);
}

// The island's areas: the inputs of the other m - 1 members' runs, X (two), the result.
TPCOMM_HOST_DEVICE constexpr int fusedIslandAreas(int m) {
  return m + 2;
}
TPCOMM_HOST_DEVICE inline FusedTwoShotSteps fusedIslandSteps(size_t slot_vecs, size_t hv, int m,
                                                             size_t rows) {
  return fusedRunSteps(slot_vecs, hv, m, fusedIslandAreas(m), rows);
}

// The push forms' areas (fused_twoshot_push.cu): n RS areas, n AG areas, and the island's X.
TPCOMM_HOST_DEVICE constexpr int fusedPushAreas(int n, bool island) {
  return 2 * n + (island ? 2 : 0);
}

// Step s's rows: [first, first + len), owner d's run [first + d * run, first + min(len, (d + 1) *
// run)).
struct FusedTwoShotStep {
  size_t first;
  size_t len;
  size_t run;
  TPCOMM_HOST_DEVICE size_t runBegin(int d) const {
    const size_t b = static_cast<size_t>(d) * run;
    return b < len ? b : len;
  }
  TPCOMM_HOST_DEVICE size_t runLen(int d) const {
    const size_t e = static_cast<size_t>(d + 1) * run;
    return (e < len ? e : len) - runBegin(d);
  }
};

TPCOMM_HOST_DEVICE inline FusedTwoShotStep fusedTwoShotStep(const FusedTwoShotSteps& k, size_t s,
                                                            int parts, size_t rows) {
  const size_t first = s * k.step_rows;
  const size_t left = rows - first;
  const size_t len = left < k.step_rows ? left : k.step_rows;
  const size_t w = static_cast<size_t>(parts);
  return {first, len, (len + w - 1) / w};
}

// The area of `from`'s slot that holds its input of `owner`'s run (owner != from; ranks, or local
// indices in an island of `world` members).
TPCOMM_HOST_DEVICE inline int fusedTwoShotArea(int from, int owner, int world) {
  const int a = owner - from - 1;
  return a < 0 ? a + world : a;
}

}  // namespace tpcomm
