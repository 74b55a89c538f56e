// The one-shot's call geometry. The planner computes it once per call (oneShotGeometry,
// src/plan/planner.cc), decides from it which kernel runs (leanFits, src/plan/planner.cc) and hands
// it to the kernels (oneshot.cu and oneshot_lean.cu read LaunchParams::call_*), so the host can
// never send the lean kernel a call it would lay out differently. A slot holds one region per
// source rank (over host memory with the bulk protocol, an outbox slot holds only ours); a call
// goes in steps of one region, or of step_vecs vectors if fewer; block b handles vectors
// [b*per, b*per + per) of every step, with `per` fixed for the call, even in a shorter last step
// (why: docs/PROTOCOL.md, "Why a peer cannot overwrite a slot entry that is still to be read").
// Plain arithmetic on explicit grid sizes, so the CPU tests check what the kernels use, and no
// kernel divides 64-bit numbers before its first push.
#pragma once

#include <cstddef>

#include "kernels/layout/chunk_layout.h"  // minVecs, TPCOMM_HOST_DEVICE

namespace tpcomm {

// The rank at distance p after `rank` (both in [0, world)): (rank + p) mod world without a
// division, which on the GPU is ~20 instructions before a peer's base can be loaded
// (oneshot_lean.cu).
TPCOMM_HOST_DEVICE inline int ringRank(int rank, int p, int world) {
  const int q = rank + p;
  return q < world ? q : q - world;
}

struct OneShotCall {
  size_t region;  // vectors per source and step
  size_t nsteps;
  size_t per;  // a block's share of a step
};

// full: vectors of a source's whole region (or of an outbox slot); step_vecs > 0 asks for
// shorter steps (a launch knob; 0: the whole region); nvec: vectors in the message; grid: blocks.
TPCOMM_HOST_DEVICE inline OneShotCall oneShotCall(size_t full, size_t step_vecs, size_t nvec,
                                                  unsigned grid) {
  OneShotCall k;
  k.region = step_vecs > 0 ? minVecs(step_vecs, full) : full;
  k.nsteps = (nvec + k.region - 1) / k.region;
  k.per = (minVecs(k.region, nvec) + grid - 1) / grid;
  return k;
}

}  // namespace tpcomm
