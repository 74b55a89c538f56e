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

// Per-rank state in device memory, private to the rank.
struct RankState {
  unsigned long long epoch;  // steps completed; the next step uses slot epoch % kNumSlots
  unsigned int arrive;       // blocks of the running kernel that have read epoch
  unsigned int abort;        // set by a kernel that timed out: later kernels exit at once
};

// Written by a kernel that gave up waiting, read by the host (mapped pinned memory).
struct HostError {
  volatile int code;  // 0 or a tpcommResult_t (tpcommTimeout)
  volatile int peer;  // the rank whose data never came
  volatile int step;  // the step epoch it waited in
  volatile int pad;
};

struct DeviceComm {
  int rank;
  int world;
  unsigned long long timeout_ns;
  size_t slot_bytes;      // bytes of one slot; a multiple of kVecBytes
  char* bufs[kMaxRanks];  // every rank's staging base as seen from this rank's device
  RankState* state;
  HostError* host_error;
  int push_batch;  // 1..kPushBatch vectors loaded per thread before they are pushed
  int aligned;     // both user buffers are 16-byte aligned (set per launch)
  // Host-memory transport (no P2P): every rank's inbox slots in pinned host memory, as device
  // pointers; null when the communicator has no host transport.
  char* hbufs[kMaxRanks];
  size_t host_slot_bytes;
  // The island algorithm (island.cu): the two islands' members in rank order, this rank's island
  // (0 or 1; -1 when the communicator has no island split: odd world or world < 4), its local
  // index (position in its island) and its partner (the same local index in the other island).
  int island;
  int island_size;
  int island_local;
  int partner;
  signed char island_members[2][kMaxRanks / 2];
  int push_eighths;  // split one-shot: eighths of a block's threads that push (set per launch)
};

}  // namespace tpcomm
