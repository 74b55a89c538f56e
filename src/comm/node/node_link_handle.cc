#include "comm/node/node_link_handle.h"

#include <cstring>

#include "common/error.h"

namespace tpcomm {
namespace {

constexpr uint32_t kLinkMagic = 0x7c0a11d0u;
constexpr uint32_t kLinkVersion = 2;  // 2: node_variant gone
constexpr const char* kOp = "tpcommCommNodeLinkEnd";

tpcommResult_t checkOne(const NodeSpan& sp, const LinkInfo& h, const LinkInfo& mine, int r) {
  if (h.magic != kLinkMagic || h.version != kLinkVersion)
    return fail(tpcommInvalidArgument,
                "%s: link handle %d was not made by tpcommCommNodeLinkBegin of this library "
                "(magic 0x%08x, version %u)",
                kOp, r, h.magic, h.version);
  if (h.rank != r)
    return fail(tpcommInvalidArgument,
                "%s: link handles out of order: position %d holds rank %d's (gather in rank order)",
                kOp, r, h.rank);
  const NodeLayout& l = sp.layout;
  const bool leads = l.leaders[l.local_of[r]] == r;
  if (h.nranks != sp.global_world || h.node != l.node_of[r] || h.local != l.local_of[r] ||
      h.offers_id != (leads ? 1 : 0))
    return fail(tpcommInvalidArgument,
                "%s: link handle %d says nranks %d, node %d, local index %d, offers an id %d; "
                "the first exchange says %d, %d, %d, %d (handles of another communicator?)",
                kOp, r, h.nranks, h.node, h.local, h.offers_id, sp.global_world, l.node_of[r],
                l.local_of[r], leads ? 1 : 0);
  if (h.small_bytes != mine.small_bytes)
    return fail(tpcommRemoteError,
                "%s: rank %d's knob node_small_bytes=%d differs from this rank's (%d): every rank "
                "must use the same TPCOMM_KNOBS / config.launchKnobs",
                kOp, r, h.small_bytes, mine.small_bytes);
  return tpcommSuccess;
}

}  // namespace

LinkInfo makeLinkInfo(const NodeSpan& sp, int small_bytes) {
  LinkInfo i{};
  i.magic = kLinkMagic;
  i.version = kLinkVersion;
  i.rank = sp.global_rank;
  i.nranks = sp.global_world;
  i.node = sp.layout.node;
  i.local = sp.layout.local;
  i.offers_id = sp.offers_id ? 1 : 0;
  i.small_bytes = small_bytes;
  memcpy(i.nccl_id, sp.nccl_id, sizeof(i.nccl_id));
  return i;
}

void packLinkInfo(const LinkInfo& info, tpcommRankHandle* h) {
  memset(h, 0, sizeof(*h));
  memcpy(h->internal, &info, sizeof(info));
}

tpcommResult_t checkLinkHandles(const NodeSpan& sp, const LinkInfo& mine,
                                const tpcommRankHandle* all) {
  for (int r = 0; r < sp.global_world; ++r) {
    LinkInfo h;
    memcpy(&h, all[r].internal, sizeof(h));
    TPCOMM_CHECK(checkOne(sp, h, mine, r));
  }
  if (memcmp(all[sp.global_rank].internal, &mine, sizeof(mine)) != 0)
    return fail(tpcommInvalidArgument, "%s: allHandles[%d] is not the handle this rank produced",
                kOp, sp.global_rank);
  return tpcommSuccess;
}

}  // namespace tpcomm
