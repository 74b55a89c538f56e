// The bytes one rank contributes to the second exchange of a communicator that spans machines
// (tpcommCommNodeLinkBegin/End, comm/node/node_link.h), and their checks: the handles come from the
// framework's all-gather, so foreign, reordered or disagreeing ones are errors naming the rank.
// Pure C++: the CPU tests build and corrupt them.
#pragma once

#include <cstdint>

#include "comm/node/node_span.h"
#include "tpcomm/tpcomm.h"

namespace tpcomm {

struct LinkInfo {
  uint32_t magic;
  uint32_t version;
  int32_t rank;
  int32_t nranks;
  int32_t node;
  int32_t local;
  int32_t offers_id;    // the leader of its local index: nccl_id holds an NCCL unique id
  int32_t small_bytes;  // the knob that chooses a call's shape: every rank must agree
  char nccl_id[128];
};
static_assert(sizeof(LinkInfo) <= TPCOMM_RANK_HANDLE_BYTES, "LinkInfo exceeds the handle size");

// This rank's link handle contents (sp.nccl_id when it offers one).
LinkInfo makeLinkInfo(const NodeSpan& sp, int small_bytes);
void packLinkInfo(const LinkInfo& info, tpcommRankHandle* h);
// Every rank's handle: made by this library's Begin, in rank order, of this layout (its node,
// local index and whether it leads), with this rank's knobs; and this rank's own unchanged.
tpcommResult_t checkLinkHandles(const NodeSpan& sp, const LinkInfo& mine,
                                const tpcommRankHandle* all);

}  // namespace tpcomm
