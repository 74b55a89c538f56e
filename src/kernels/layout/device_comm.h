// The plain structs a kernel receives by value (a "device handle", as MSCCL++ calls it). Compiles
// in host-only code too, so the communicator fills it without including CUDA device headers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tpcomm {

constexpr int kMaxRanks = 8;
constexpr int kNumSlots = 4;   // receive slots rotated by step epoch (see docs/PROTOCOL.md)
constexpr int kVecBytes = 16;  // every staging access is one 16-byte vector
// Every staging word not holding current data holds this pattern (all ones). It is a NaN in
// fp32, fp16 and bf16 alike, so one cleared state serves every datatype; senders rewrite inputs
// that carry exactly this NaN payload to another NaN, so data can never look like "not arrived".
constexpr uint32_t kSentinelWord = 0xFFFFFFFFu;
constexpr unsigned char kSentinelByte = 0xFF;
// The LL protocol (host inboxes) stores the two halves of its 32-byte entries apart within
// aligned blocks of this size (proto_device.cuh, LLProto::half), so host slots are whole blocks.
constexpr size_t kLLBlockBytes = 1024;

// The bulk host protocol (host_bulk, proto_device.cuh): every rank writes its data once into its
// own outbox in pinned host memory and its peers read it from there. An outbox holds kNumSlots
// slots of bulkSlotBytes, then a flag per slot and block (a block publishes a step's share with
// one flag once its data is written). A slot is a quarter of an inbox slot (1 MiB by default):
// each step costs a fence and a flag round trip per block, more than the overlap of smaller steps
// wins back (measured on 2x H200: docs/BENCHMARKS.md, "The numbers behind the defaults in the
// code"). Two flag sets, one after the other: host_bulk publishes with the first, the quantized
// two-shot's host form (twoshot_pull_wire.cu) with both, once a phase.
constexpr int kBulkFlagBlocks = 1024;  // the largest grid (config.maxBlocks <= 1024)
constexpr int kBulkPhases = 2;
constexpr size_t kBulkFlagBytes =
    static_cast<size_t>(kNumSlots) * kBulkPhases * kBulkFlagBlocks * 4;
constexpr size_t bulkSlotBytes(size_t host_slot_bytes) {
  return host_slot_bytes / 4 / 256 * 256 > 4096 ? host_slot_bytes / 4 / 256 * 256 : 4096;
}
constexpr size_t bulkOutboxBytes(size_t host_slot_bytes) {
  return kNumSlots * bulkSlotBytes(host_slot_bytes) + kBulkFlagBytes;
}
// The pull protocol over peer memory (PullProto, pull_device.cuh): every rank writes its data into
// its own outbox in its device memory, after its call fingerprints in the staging allocation, and
// its peers read it from there over the fabric (loads: unaffected where peer stores collapse,
// docs/TOPOLOGY.md, "Push or pull over PCIe"). An outbox is kNumSlots slots of pullSlotBytes, then
// flags per slot, phase and block, zeroed at creation:
// stepFlag is never 0. Its own memory, apart from the push slots, because push readers take any
// non-sentinel entry of theirs as arrived data, and pull data is never cleared. Phases: two-shot
// pull publishes twice a step, island_pull three times (its RS inputs, its fp32 partial, its
// result: island_pull.cu).
constexpr int kPullPhases = 3;
constexpr size_t kPullFlagBytes =
    static_cast<size_t>(kNumSlots) * kPullPhases * kBulkFlagBlocks * 4;
constexpr size_t pullSlotBytes(size_t slot_bytes) {
  return slot_bytes / 4 / 256 * 256 > 4096 ? slot_bytes / 4 / 256 * 256 : 4096;
}
// After the flags, the LL area of the one-step pull (oneshot_pull_ll.cu, docs/PROTOCOL.md "Pull
// with the flag in the data"): kNumSlots slots of kPullLLSlotBytes, zeroed at creation like the
// flags. Its own memory, apart from the slots above: a stale LL entry must hold an older LL
// step's flag (or 0), never another variant's raw data, which could equal any flag.
constexpr size_t kPullLLSlotBytes = 128u << 10;  // LL doubles the bytes: calls of 64 KiB at most
constexpr size_t pullLLAreaOffset(size_t pull_slot_bytes) {
  return kNumSlots * pull_slot_bytes + kPullFlagBytes;
}
constexpr size_t pullOutboxBytes(size_t slot_bytes) {
  return pullLLAreaOffset(pullSlotBytes(slot_bytes)) + kNumSlots * kPullLLSlotBytes;
}
// The sentinel protocol over host memory (HostSentinelProto, proto_device.cuh): every rank has an
// inbox of kNumSlots slots of this size, all zeros while no data is in it (entries are stored
// inverted), apart from the LL inboxes (whose flags are never cleared). A fixed size, whatever the
// configured buffers, so the calls it takes (one step: a source's region, 512 KiB at world 2) are
// the same on every machine and the policy can count on them (plan/policy.cc).
constexpr size_t kHostSentinelSlotBytes = 1u << 20;

// The copy-engine one-shot (oneshot_ce.cu, docs/PROTOCOL.md "Copy engines"): a rank's data
// reaches its peers by peer copies in the call's stream, not by stores of a kernel. Every rank
// that forced it at init (comm/lifecycle/init.cc) has a CE area after its print array, in the same
// allocation as its slots (peers reach it through the same mapping): this control block, then
// kNumSlots landing slots of slot_bytes, one region per source rank as the one-shot's slots.
// Zeroed at creation: 0 is no flag and no acknowledgement (both carry a step epoch + 1).
struct alignas(16) CeControl {
  // Written by the peers' flag copies, after their data copies: flag[s][q] = the step epoch + 1
  // of rank q's data now in landing slot s.
  unsigned long long flag[kNumSlots][kMaxRanks];
  // Written by the peers' reduce kernels once they have read this rank's data: ack[s][q] = the
  // step epoch + 1 of the last step q read from slot s; ~0 once q reads nothing more (aborted).
  unsigned long long ack[kNumSlots][kMaxRanks];
  // This rank's own words, never written by a peer:
  unsigned long long flag_src;         // what this rank's flag copies carry (set by the guard)
  unsigned long long sent[kNumSlots];  // step epoch + 1 of this rank's last step into slot s
  unsigned int released;               // peers the guard stopped waiting for (bit per rank)
  unsigned int finished;               // blocks of the running reduce kernel done reading
};
constexpr size_t kCeControlBytes = (sizeof(CeControl) + 255) / 256 * 256;
constexpr size_t ceAreaBytes(size_t slot_bytes) {
  return kCeControlBytes + static_cast<size_t>(kNumSlots) * slot_bytes;
}

// Per-rank state in device memory, private to the rank. 16-byte aligned: the lean one-shot loads
// epoch, arrive and abort as one vector (readEpochThread, epoch_device.cuh).
struct alignas(16) RankState {
  unsigned long long epoch;  // steps completed; the next step uses slot epoch % kNumSlots
  unsigned int arrive;       // blocks of the running kernel that have read epoch
  unsigned int abort;        // set by a kernel that timed out: later kernels exit at once
};

// Call fingerprints (print_device.cuh, docs/PROTOCOL.md "Calls that disagree"): every kernel's
// checker thread writes a 16-byte record of its call into every peer's print array, in the same
// memory as the protocol's slots, at [epoch % kNumSlots][its rank], and compares every peer's
// record with its own. What a record says a call was:
enum CallKind : int {
  kCallNone = 0,  // never written (zeroed memory)
  kCallAllReduce = 1,
  kCallFused = 2,     // all-reduce + add + RMSNorm
  kCallFusedFp8 = 3,  // the same, the norm quantised to FP8 e4m3
  kCallReduceScatter = 4,
  kCallAllGather = 5,
  // An all-reduce over a quantized wire (twoshot_pull_wire.cu), by codec (WireCodec 1..4): a
  // rank on another wire would read codes it cannot decode.
  kCallAllReduceInt8 = 6,
  kCallAllReduceInt4 = 7,
  kCallAllReduceFp8 = 8,
  kCallAllReduceFp8E5m2 = 9,
};
constexpr size_t kPrintBytes = static_cast<size_t>(kNumSlots) * kMaxRanks * kVecBytes;

// What a fingerprint says about a call (its record unpacked), as the host reports it.
struct CallPrint {
  unsigned long long
      count;  // elements (fused: rows x hidden; reduce-scatter, all-gather: per rank)
  int dtype;  // dtypeIndex: 0 fp32, 1 fp16, 2 bf16
  int kind;   // CallKind
};

// Written by a kernel that gave up waiting or saw a peer's call disagree with its own, read by
// the host (mapped pinned memory).
struct HostError {
  volatile int code;  // 0 or a tpcommResult_t (tpcommTimeout, tpcommInvalidUsage: a mismatch)
  volatile int peer;  // the rank whose data never came
  volatile int step;  // the step epoch it waited in
  // Set with a timeout whose peer's call fingerprint never came: the peer never started a
  // tpcomm kernel for that call.
  volatile int never_started;
  // A mismatch (code tpcommInvalidUsage), written only by its reporter (reportMismatch), so a
  // timeout reported at the same time cannot mix its peer into these.
  volatile int mismatch_peer;
  volatile int mismatch_step;
  volatile CallPrint mine;    // this rank's call
  volatile CallPrint theirs;  // mismatch_peer's
  // Set (before the code) by a kernel that saw another kernel of this communicator running at
  // the same time (epoch_device.cuh, reportConcurrentCalls): tpcommInvalidUsage, not a mismatch.
  volatile int concurrent;
};

// The communicator as its kernels see it: built once at init (comm/lifecycle/init.cc) and passed
// unchanged to every launch. What changes from call to call is in LaunchParams (below).
struct DeviceComm {
  int rank;
  int world;
  unsigned long long timeout_ns;
  size_t slot_bytes;      // bytes of one slot; a multiple of kVecBytes
  char* bufs[kMaxRanks];  // every rank's staging base as seen from this rank's device
  RankState* state;
  HostError* host_error;
  // Host-memory transport (no P2P): every rank's inbox slots in pinned host memory, as device
  // pointers; null when the communicator has no host transport.
  char* hbufs[kMaxRanks];
  size_t host_slot_bytes;
  // The bulk host protocol: rank r's outbox is hout + r * out_stride (one segment, so a reader
  // addresses every source from one base); slots of out_slot_bytes, then the flags.
  char* hout;
  size_t out_stride;
  size_t out_slot_bytes;
  // The sentinel protocol over host memory: every rank's sentinel inbox, as device pointers.
  char* hsbufs[kMaxRanks];
  size_t hs_slot_bytes;
  // The island algorithm (island.cu): the two islands' members in rank order, this rank's island
  // (0 or 1; -1 when the communicator has no island split: odd world or world < 4), its local
  // index (position in its island) and its partner (the same local index in the other island).
  int island;
  int island_size;
  int island_local;
  int partner;
  signed char island_members[2][kMaxRanks / 2];
  int host_fence;  // LaunchKnobs::host_fence: host-memory readers fence after their clears
  // Every rank's call fingerprint array (kPrintBytes, device_comm.h above): after its staging
  // slots in its device memory (prints: the peer-memory protocols) and in the host segment
  // (hprints: the host protocols). Null where that transport is not set up.
  char* prints[kMaxRanks];
  char* hprints[kMaxRanks];
  // Every rank's pull outbox (pullOutboxBytes, above) after its prints: slots of pull_slot_bytes,
  // the flags, the LL area (pullLLAreaOffset). Null where the peer-memory transport is not set up.
  char* pulls[kMaxRanks];
  size_t pull_slot_bytes;
  // Every rank's CE area (CeControl, then its landing slots of slot_bytes) as seen from this
  // rank; null where the communicator has none (oneshot_ce not forced at init).
  char* ce[kMaxRanks];
};

// What one launch of an all-reduce-family kernel (all-reduce, reduce-scatter, all-gather) reads
// besides its buffers and the communicator: the host's plan of the call (LaunchArgs, launch.cu).
// The kernels' second __grid_constant__ parameter, so a launch passes DeviceComm as init built
// it instead of copying it to patch per-call fields into it.
struct LaunchParams {
  // The one-shot kernels' call geometry (oneshot_layout.h: vectors per source and step, steps, a
  // block's share), from oneShotGeometry (plan/planner.cc). Computed once on the host, so the
  // host's choice of kernel and the kernel's layout cannot differ, and no kernel divides 64-bit
  // numbers before its first push: where the previous kernel on the stream was not launched for
  // programmatic dependent launch (an engine's GEMM), nothing hides that work.
  size_t call_region;
  size_t call_nsteps;
  size_t call_per;
  int push_batch;    // 1..kPushBatch vectors loaded per thread before they are pushed
  int push_eighths;  // split one-shot: eighths of a block's threads that push
  int aligned;       // both user buffers are 16-byte aligned
};

}  // namespace tpcomm
