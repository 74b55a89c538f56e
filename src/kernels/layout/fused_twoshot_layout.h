// The fused two-shot over pull (fused_twoshot_pull.cu): which rows a step holds, which rank owns
// which of them, and where they lie in an outbox slot. A step is up to `world` times `area_rows`
// rows (area_rows: the rows one area of a slot holds); its rows are split among the ranks in
// consecutive runs of ceil(len / world), rank d owning run d. Rank r's slot holds, for each other
// rank d, an area with r's input of d's run (area (d - r - 1) mod world, 0 .. world - 2), then
// the reduced area (world - 1): r's finished residual rows of its own run, which the others read.
// Plain arithmetic, so the CPU tests check what the kernel and the planner use.
#pragma once

#include <cstddef>

#include "kernels/layout/ll_layout.h"  // TPCOMM_HOST_DEVICE

namespace tpcomm {

struct FusedTwoShotSteps {
  size_t area_rows;  // rows of one area: a run of a full step
  size_t step_rows;  // rows of a full step: world * area_rows
  size_t nsteps;
};

// A call of `rows` rows of `hv` vectors over slots of `slot_vecs` vectors, `world` ranks. No
// step (area_rows 0) where a slot cannot hold one row per rank.
TPCOMM_HOST_DEVICE inline FusedTwoShotSteps fusedTwoShotSteps(size_t slot_vecs, size_t hv,
                                                              int world, size_t rows) {
  const size_t w = static_cast<size_t>(world);
  const size_t area_rows = hv > 0 ? slot_vecs / (hv * w) : 0;
  const size_t step_rows = area_rows * w;
  return {area_rows, step_rows, step_rows > 0 ? (rows + step_rows - 1) / step_rows : 0};
}

// Step s's rows: [first, first + len), rank d's run [first + d * run, first + min(len, (d + 1) *
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
                                                            int world, size_t rows) {
  const size_t first = s * k.step_rows;
  const size_t left = rows - first;
  const size_t len = left < k.step_rows ? left : k.step_rows;
  const size_t w = static_cast<size_t>(world);
  return {first, len, (len + w - 1) / w};
}

// The area of rank `from`'s slot that holds its input of rank `owner`'s run (owner != from).
TPCOMM_HOST_DEVICE inline int fusedTwoShotArea(int from, int owner, int world) {
  const int a = owner - from - 1;
  return a < 0 ? a + world : a;
}

}  // namespace tpcomm
