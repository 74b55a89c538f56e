// Synthetic fabric probes shaped like the published PCIe measurements (../shared/BRIEF.md,
// "PCIe fabrics"), for the verdict and policy tests.
#pragma once

#include "topo/probe/fabric_probe.h"

namespace tpcomm {
namespace topo {

// 8 GPUs; every pair alone at `store`/`load` GB/s (cross-socket pairs, where `cross` > 0, at
// `cross`), and with all pairs at once `all_store`/`all_load` per GPU.
inline FabricProbe syntheticFabric(double store, double load, double copy, double all_store,
                                   double all_load, double cross = -1) {
  FabricProbe p;
  for (int g = 0; g < 8; ++g) p.gpus.push_back(g);
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b) {
      ProbePair pair;
      pair.a = a;
      pair.b = b;
      const bool crosses = cross > 0 && (a < 4) != (b < 4);
      pair.speed = {crosses ? cross : store, crosses ? cross : load, copy, 0.41};
      p.pairs.push_back(pair);
    }
  p.all_pairs = {all_store, all_load, copy, -1};
  p.host = {52, 50, 55, 1.38};
  p.elapsed_ms = 640;
  return p;
}

// One GPU probed as two ranks' buffers on it ({0, 0}), shaped like an H200: the pair alone at
// `store`/`load` GB/s (HBM, no link), both buffers at once `all_store`/`all_load` per buffer.
inline FabricProbe syntheticOneGpu(double store, double load, double copy, double all_store,
                                   double all_load) {
  FabricProbe p;
  p.gpus = {0, 0};
  ProbePair pair;
  pair.speed = {store, load, copy, 0.9};
  p.pairs.push_back(pair);
  p.all_pairs = {all_store, all_load, copy / 2, -1};
  p.host = {52, 50, 55, 1.38};
  p.elapsed_ms = 210;
  return p;
}

}  // namespace topo
}  // namespace tpcomm
