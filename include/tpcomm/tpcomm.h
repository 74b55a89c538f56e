/*
 * tpcomm: the all-reduce for tensor-parallel inference, on every topology and architecture.
 *
 * Plain C ABI, shaped like NCCL's so that its users feel at home: opaque communicator handles,
 * one result enum, a versioned config struct, asynchronous stream-ordered collectives.
 *
 * Thread safety: one communicator must not be used from two threads at once (as in NCCL).
 * Every function returns a tpcommResult_t; on failure tpcommGetLastError() gives a message that
 * names the operation and the offending value.
 */
#ifndef TPCOMM_TPCOMM_H_
#define TPCOMM_TPCOMM_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TPCOMM_API __attribute__((visibility("default")))
#else
#define TPCOMM_API
#endif

#define TPCOMM_MAJOR 0
#define TPCOMM_MINOR 3
#define TPCOMM_PATCH 0
#define TPCOMM_VERSION_CODE (TPCOMM_MAJOR * 10000 + TPCOMM_MINOR * 100 + TPCOMM_PATCH)

/* Same type as cudaStream_t / CUstream, declared here so that this header needs no CUDA headers
 * (a Python ctypes binding or a C engine can include it without a CUDA toolkit). */
struct CUstream_st;
typedef struct CUstream_st* tpcommStream_t;

typedef enum {
  tpcommSuccess = 0,
  tpcommUnhandledCudaError = 1, /* a CUDA call failed; the message carries cudaGetErrorString */
  tpcommSystemError = 2,        /* an OS call failed (socket, shm, mmap, dlopen) */
  tpcommInternalError = 3,      /* a bug in tpcomm: please report */
  tpcommInvalidArgument = 4,    /* a bad pointer, count, type, op, rank, stream or config */
  tpcommInvalidUsage = 5,       /* a valid call at the wrong time (e.g. a destroyed communicator) */
  tpcommRemoteError = 6,        /* a peer failed or disagrees (version, world size, unique id) */
  tpcommInProgress = 7,         /* reserved for non-blocking init */
  tpcommTimeout = 8,            /* a wait saw no progress for timeoutMs (a peer did not answer) */
  tpcommNoDevice = 9,           /* no usable CUDA device or driver */
  tpcommNoKernelImage = 10,     /* this build has no kernel image for the device's architecture */
  tpcommUnsupported = 11,       /* the request is valid but no algorithm can serve it here */
  tpcommFallbackRefused = 12,   /* strict mode: the policy would have fallen back (e.g. to NCCL) */
  tpcommNcclError = 13,         /* the NCCL fallback failed; the message carries NCCL's string */
  tpcommNumResults = 14
} tpcommResult_t;

/* Values equal NCCL's ncclDataType_t for the same types, so engines can pass theirs through. */
typedef enum { tpcommFloat16 = 6, tpcommFloat32 = 7, tpcommBfloat16 = 9 } tpcommDataType_t;

typedef enum { tpcommSum = 0 } tpcommRedOp_t;

/* Algorithms. Auto lets the policy choose (src/plan/policy.cc); any other value forces one. */
typedef enum {
  tpcommAlgoAuto = 0,
  tpcommAlgoOneShot = 1,     /* push all data to every peer, reduce locally: latency */
  tpcommAlgoTwoShot = 2,     /* reduce-scatter then all-gather, chunked: bandwidth */
  tpcommAlgoNccl = 3,        /* the NCCL fallback */
  tpcommAlgoHostOneShot = 4, /* one-shot through pinned host shared memory (no P2P) */
  tpcommAlgoHostTwoShot = 5, /* two-shot through pinned host shared memory (no P2P) */
  tpcommAlgoIsland = 6,      /* hierarchical for two-socket PCIe: reduce in islands, exchange */
  tpcommAlgoHostBulk = 7,    /* one-shot through pinned host memory, bulk data + a flag per block */
  tpcommAlgoOneShotPull = 8, /* one-shot over peer memory, pull: peers read my own slot (loads) */
  tpcommAlgoTwoShotPull = 9, /* two-shot over peer memory, pull: both halves read peers' slots */
  tpcommAlgoOneShotCe = 10,  /* one-shot whose data crosses by copy engines (forced only) */
  tpcommAlgoIslandPull = 11, /* island over peer memory, pull: every leg reads owners' slots */
  tpcommNumAlgos = 12
} tpcommAlgo_t;

/* Variants: the kernel (or NCCL) one call runs; an algorithm has one or more (e.g. a lean kernel
 * for single-step calls). Values are stable; new ones are appended (src/kernels/runtime). */
typedef enum {
  tpcommVariantNone = 0,                    /* nothing ran (the call failed) */
  tpcommVariantNccl = 1,                    /* the NCCL fallback */
  tpcommVariantP2pOneShotLean = 2,          /* one-shot over peer memory, one step, no tail */
  tpcommVariantP2pOneShot = 3,              /* one-shot over peer memory, general kernel */
  tpcommVariantP2pTwoShot = 4,              /* two-shot over peer memory */
  tpcommVariantIsland = 5,                  /* island (hierarchical) over peer memory */
  tpcommVariantHostOneShotSentinelLean = 6, /* host one-shot, sentinel protocol, lean kernel */
  tpcommVariantHostOneShotSentinel = 7,     /* host one-shot, sentinel protocol (one step) */
  tpcommVariantHostOneShotLL = 8,           /* host one-shot, LL packets (a flag per 4 bytes) */
  tpcommVariantHostTwoShotLL = 9,           /* host two-shot, LL packets */
  tpcommVariantHostBulk = 10,               /* host one-shot, bulk data + a flag per block */
  /* tpcommAllReduceAddRmsNorm: the one-shot with the add + RMSNorm epilogue in the same kernel */
  tpcommVariantFusedP2pOneShot = 11,     /* over peer memory (sentinel protocol, one step) */
  tpcommVariantFusedP2pOneShotFp8 = 12,  /* the same with FP8 e4m3 output */
  tpcommVariantFusedHostOneShot = 13,    /* over host memory (host sentinel protocol, one step) */
  tpcommVariantFusedHostOneShotFp8 = 14, /* the same with FP8 e4m3 output */
  /* ... and where no fused kernel takes the call: the all-reduce's own variant, then this kernel */
  tpcommVariantAddRmsNorm = 15,         /* the add + RMSNorm epilogue kernel after the all-reduce */
  tpcommVariantAddRmsNormFp8 = 16,      /* the same with FP8 e4m3 output */
  tpcommVariantP2pOneShotPullLean = 17, /* one-shot pull over peer memory, one step, no tail */
  tpcommVariantP2pOneShotPull = 18,     /* one-shot pull over peer memory, general kernel */
  tpcommVariantP2pTwoShotPull = 19,     /* two-shot pull over peer memory */
  tpcommVariantP2pOneShotCe = 20, /* one-shot, peer copies by copy engines + a reduce kernel */
  /* tpcommReduceScatter / tpcommAllGather: the two halves of the two-shot kernels */
  tpcommVariantP2pReduceScatter = 21,     /* reduce-scatter over peer memory */
  tpcommVariantP2pAllGather = 22,         /* all-gather over peer memory */
  tpcommVariantHostReduceScatter = 23,    /* reduce-scatter over host memory, LL packets */
  tpcommVariantHostAllGather = 24,        /* all-gather over host memory, LL packets */
  tpcommVariantIslandPull = 25,           /* island over peer memory, pull (every leg by loads) */
  tpcommVariantP2pReduceScatterPull = 26, /* reduce-scatter over peer memory, pull (twoshot_pull) */
  tpcommVariantP2pAllGatherPull = 27,     /* all-gather over peer memory, pull (twoshot_pull) */
  tpcommVariantP2pOneShotPullLL = 28,     /* one-shot pull, one step, LL entries */
  tpcommVariantFusedP2pOneShotPullLL = 29,    /* fused over the one-shot pull's LL entries */
  tpcommVariantFusedP2pOneShotPullLLFp8 = 30, /* the same with FP8 e4m3 output */
  tpcommVariantFusedP2pOneShotPull = 31,      /* fused over the one-shot pull, a flag per block */
  tpcommVariantFusedP2pOneShotPullFp8 = 32,   /* the same with FP8 e4m3 output */
  tpcommVariantFusedP2pTwoShotPull = 33,      /* fused two-shot over pull: rows split by owner */
  tpcommVariantFusedP2pTwoShotPullFp8 = 34,   /* the same with FP8 e4m3 output */
  tpcommVariantFusedP2pIslandPull = 35,       /* fused over island_pull: rows split by member */
  tpcommVariantFusedP2pIslandPullFp8 = 36,    /* the same with FP8 e4m3 output */
  tpcommVariantFusedP2pTwoShot = 37,          /* fused two-shot over pushes: rows split by owner */
  tpcommVariantFusedP2pTwoShotFp8 = 38,       /* the same with FP8 e4m3 output */
  tpcommVariantFusedP2pIsland = 39,           /* fused over the push island: rows split by member */
  tpcommVariantFusedP2pIslandFp8 = 40,        /* the same with FP8 e4m3 output */
  /* two-shot pull over a quantized wire (opt-in: TPCOMM_WIRE), 32 elements a scale */
  tpcommVariantP2pTwoShotPullInt8 = 41,    /* INT8 codes */
  tpcommVariantP2pTwoShotPullInt4 = 42,    /* INT4 codes */
  tpcommVariantP2pTwoShotPullFp8 = 43,     /* FP8 e4m3 codes */
  tpcommVariantP2pTwoShotPullFp8E5m2 = 44, /* FP8 e5m2 codes */
  /* ... its push form over peer memory, and its host form (outboxes in pinned host memory) */
  tpcommVariantP2pTwoShotInt8 = 45,     /* push, INT8 codes */
  tpcommVariantP2pTwoShotInt4 = 46,     /* push, INT4 codes */
  tpcommVariantP2pTwoShotFp8 = 47,      /* push, FP8 e4m3 codes */
  tpcommVariantP2pTwoShotFp8E5m2 = 48,  /* push, FP8 e5m2 codes */
  tpcommVariantHostTwoShotInt8 = 49,    /* host memory, INT8 codes */
  tpcommVariantHostTwoShotInt4 = 50,    /* host memory, INT4 codes */
  tpcommVariantHostTwoShotFp8 = 51,     /* host memory, FP8 e4m3 codes */
  tpcommVariantHostTwoShotFp8E5m2 = 52, /* host memory, FP8 e5m2 codes */
  tpcommVariantHostTwoShotPull = 53,    /* host two-shot, pulled from outboxes (host_ll_bytes) */
  tpcommNumVariants = 54
} tpcommVariant_t;

/* What the caller asks of NCCL as a fallback. */
typedef enum {
  tpcommNcclAuto = 0, /* create an NCCL communicator at init when libnccl loads and GPUs differ */
  tpcommNcclOff = 1,  /* never use NCCL: sizes tpcomm cannot serve fail with tpcommUnsupported */
  tpcommNcclGiven = 2 /* use config.ncclComm, an ncclComm_t the caller created and owns */
} tpcommNcclMode_t;

#define TPCOMM_CONFIG_MAGIC 0x7c0a11ceu
#define TPCOMM_CONFIG_VERSION 2 /* 2: initTimeoutMs, launchKnobs */

/* Versioned so the ABI can grow: always start from TPCOMM_CONFIG_INITIALIZER. A field left at its
 * initializer value means the environment variable of the same purpose, else the default. */
typedef struct {
  size_t size;          /* sizeof(tpcommConfig_t) */
  unsigned int magic;   /* TPCOMM_CONFIG_MAGIC */
  unsigned int version; /* TPCOMM_CONFIG_VERSION */
  size_t bufferBytes;   /* staging bytes per slot (4 slots per rank); 0: TPCOMM_BUFFER_BYTES */
  int timeoutMs;        /* ms a wait may see no progress: tpcommTimeout; 0: TPCOMM_TIMEOUT_MS */
  int strict;           /* -1: TPCOMM_STRICT; 0 allow fallbacks; 1 any fallback is an error */
  int algo;             /* -1: TPCOMM_ALGO; else a tpcommAlgo_t forced for every call */
  int ncclMode;         /* -1: TPCOMM_NCCL (auto); else a tpcommNcclMode_t */
  void* ncclComm;       /* with tpcommNcclGiven: the caller's ncclComm_t (not destroyed) */
  int maxBlocks;        /* 0: default (by message size); else an upper bound on the grid */
  /* version 2: */
  int initTimeoutMs;       /* ms tpcommCommInitRank waits for every rank; 0: TPCOMM_INIT_TIMEOUT_MS
                            * (60000). In version 1's tail padding: read only from version 2 */
  const char* launchKnobs; /* NULL: TPCOMM_KNOBS; else "name=value,..." applied on top of it */
} tpcommConfig_t;

#define TPCOMM_CONFIG_INITIALIZER                                                                  \
  {                                                                                                \
    sizeof(tpcommConfig_t), TPCOMM_CONFIG_MAGIC, TPCOMM_CONFIG_VERSION, 0, 0, -1, -1, -1, NULL, 0, \
        0, NULL                                                                                    \
  }

/* A communicator. After tpcommCommDestroy (or a failed init) its handle is refused with
 * tpcommInvalidUsage for the rest of the process: no later communicator takes its address. */
typedef struct tpcommComm* tpcommComm_t;

#define TPCOMM_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[TPCOMM_UNIQUE_ID_BYTES];
} tpcommUniqueId;

/* What one rank contributes to the rendezvous (buffer IPC handles, device identity, ...). */
#define TPCOMM_RANK_HANDLE_BYTES 2048
typedef struct {
  char internal[TPCOMM_RANK_HANDLE_BYTES];
} tpcommRankHandle;

/* ---- versions and errors ---- */
TPCOMM_API tpcommResult_t tpcommGetVersion(int* version);
TPCOMM_API const char* tpcommGetErrorString(tpcommResult_t result);
/* The message of the last failed call on this thread ("" if none). Valid until the next call. */
TPCOMM_API const char* tpcommGetLastError(void);

/* ---- communicator lifecycle ---- */

/* A fresh id for one communicator; rank 0 makes it and hands it to the others (like NCCL). It
 * holds a secret: send it only to them. */
TPCOMM_API tpcommResult_t tpcommGetUniqueId(tpcommUniqueId* uniqueId);

/* One process per GPU: collective over nranks processes on this machine, which meet through a
 * Unix-domain socket named by the unique id (no TCP listener; every rank proves it holds the id's
 * secret). An id serves one communicator at a time. Waits up to config.initTimeoutMs for every
 * rank (docs/RENDEZVOUS.md). Uses the current CUDA device. config may be NULL. */
TPCOMM_API tpcommResult_t tpcommCommInitRank(tpcommComm_t* comm, int nranks,
                                             tpcommUniqueId uniqueId, int rank,
                                             const tpcommConfig_t* config);

/* One process driving ndev ranks (like ncclCommInitAll). devlist may be NULL (0..ndev-1) and may
 * repeat a device (ranks sharing a GPU, for tests: then no NCCL fallback). */
TPCOMM_API tpcommResult_t tpcommCommInitAll(tpcommComm_t* comms, int ndev, const int* devlist,
                                            const tpcommConfig_t* config);

/* For a framework that already has a process group: Begin gives this rank's handle bytes, the
 * framework all-gathers them (rank order), End completes the communicator (current CUDA device).
 * Between Begin and End the communicator can only be passed to End or Destroy. The ranks may span
 * machines (up to TPCOMM_MAX_GLOBAL_RANKS, 1..8 on each, the same number on every one); such a
 * communicator then needs tpcommCommNodeLinkBegin/End before its first collective. */
#define TPCOMM_MAX_GLOBAL_RANKS 1024
TPCOMM_API tpcommResult_t tpcommCommInitRankBegin(tpcommComm_t* comm, int nranks, int rank,
                                                  const tpcommConfig_t* config,
                                                  tpcommRankHandle* myHandle);
TPCOMM_API tpcommResult_t tpcommCommInitRankEnd(tpcommComm_t comm,
                                                const tpcommRankHandle* allHandles);

/* ---- across machines (docs/MULTINODE.md) ---- */

/* Machines (nodes) of the communicator and ranks on each: 1 and nranks for one machine. */
TPCOMM_API tpcommResult_t tpcommCommNodes(tpcommComm_t comm, int* nodes, int* localRanks);

/* The second exchange of a communicator that spans machines: the ranks of one local index are
 * linked by one NCCL communicator. Begin gives this rank's link handle, the framework all-gathers
 * the handles in rank order as for tpcommCommInitRankBegin, End creates the NCCL communicator
 * (bounded by config.initTimeoutMs). tpcommInvalidUsage on one machine; until End succeeds every
 * collective of a spanning communicator fails with tpcommInvalidUsage "not linked". */
TPCOMM_API tpcommResult_t tpcommCommNodeLinkBegin(tpcommComm_t comm, tpcommRankHandle* myHandle);
TPCOMM_API tpcommResult_t tpcommCommNodeLinkEnd(tpcommComm_t comm,
                                                const tpcommRankHandle* allHandles);

/* NCCL legs between machines this communicator ran (each also counts under
 * calls[tpcommAlgoNccl], never as a fallback). 0 on one machine. */
TPCOMM_API tpcommResult_t tpcommCommGetNodeLinkCalls(tpcommComm_t comm, uint64_t* calls);

/* Frees everything. Not collective; the caller makes sure no peer still runs a collective. */
TPCOMM_API tpcommResult_t tpcommCommDestroy(tpcommComm_t comm);

TPCOMM_API tpcommResult_t tpcommCommCount(tpcommComm_t comm, int* nranks);
TPCOMM_API tpcommResult_t tpcommCommUserRank(tpcommComm_t comm, int* rank);
TPCOMM_API tpcommResult_t tpcommCommCuDevice(tpcommComm_t comm, int* device);

/* An error a kernel reported after its call returned (a peer that stopped answering:
 * tpcommTimeout; ranks whose calls disagreed, or two calls that ran at once: tpcommInvalidUsage).
 * Once set, every later call on the communicator fails with it; tpcommGetLastError says why. The
 * outputs of a failed call and of every later one (graph replays included) are NaN, never stale. */
TPCOMM_API tpcommResult_t tpcommCommGetAsyncError(tpcommComm_t comm, tpcommResult_t* asyncError);

/* ---- collectives ---- */

/* Sum over all ranks, bit-identical on every rank; in place when sendbuff == recvbuff. Any count,
 * any element-aligned pointers, any stream of the communicator's device, and CUDA graph capture
 * with no registration of the user's buffers. The memory it takes, and what it refuses with
 * tpcommInvalidArgument before any launch: README, "Buffers, streams and handles". Calls of one
 * communicator run in issue order whatever the stream; graphs holding its calls must not run
 * concurrently with each other or with its eager calls on another stream (docs/PROTOCOL.md,
 * "Streams"). The same holds for tpcommAllReduceAddRmsNorm and the halves below. */
TPCOMM_API tpcommResult_t tpcommAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                          tpcommDataType_t datatype, tpcommRedOp_t op,
                                          tpcommComm_t comm, tpcommStream_t stream);

/* tpcommAllReduce with this call's own quantized wire (docs/PROTOCOL.md, "The quantized wire's
 * codec"): -1 the communicator's (TPCOMM_WIRE), 0 none, 1 int8, 2 int4, 3 fp8 (e4m3), 4 fp8_e5m2,
 * under the communicator's other rules for it (GetLastCall's reason says whether it was taken).
 * Every rank passes the same wire. Across machines wire > 0 is tpcommUnsupported. */
TPCOMM_API tpcommResult_t tpcommAllReduceWire(const void* sendbuff, void* recvbuff, size_t count,
                                              tpcommDataType_t datatype, tpcommRedOp_t op, int wire,
                                              tpcommComm_t comm, tpcommStream_t stream);

/* The layer epilogue tensor-parallel models run after the all-reduce, fused into it, with the
 * semantics and the bits of FlashInfer's trtllm_allreduce_fusion (so an engine can swap it in).
 * Per row of `hidden` elements of the `tokens` rows, on every path (fused or not, any variant):
 *   ar          = T(sum over ranks of input)     (fp32, rank order, then rounded to T)
 *   residualOut = T(ar + residualIn)             (fp32 add, rounded to T)
 *   norm        = T(residualOut * rsqrt(mean_fp32(residualOut^2) + eps) * w),
 *                 w = gamma, or 1 + gamma when params->weightOffset is 1 (Gemma)
 *   normOut     = norm, or with params->quantScale e4m3(norm * (1 / *quantScale)) bytes
 * (saturating; the scale is read on the device at run time: graph-safe; sm_89 or newer) In place:
 * residualOut may be residualIn and normOut may be input; no other overlap. fp32, fp16 and bf16;
 * hidden 1..65536; tokens 0 does nothing. residualIn must hold the same values on every rank (as
 * tensor parallelism has it): the fused two-shot and island add a row's owner's. Which kernel
 * runs (README, "The C API in short"; Explain and GetLastCall name it) follows the shapes and the
 * communicator, never one rank's pointers. */
#define TPCOMM_RMSNORM_PARAMS_VERSION 1u
typedef struct {
  unsigned int version;    /* TPCOMM_RMSNORM_PARAMS_VERSION */
  float eps;               /* > 0 and finite */
  int weightOffset;        /* 0: w = gamma; 1: w = 1 + gamma */
  const float* quantScale; /* NULL, or a device pointer to one float: FP8 e4m3 output */
} tpcommRmsNormParams_t;
#define TPCOMM_RMSNORM_PARAMS_INITIALIZER \
  { TPCOMM_RMSNORM_PARAMS_VERSION, 1e-6f, 0, NULL }

TPCOMM_API tpcommResult_t tpcommAllReduceAddRmsNorm(const void* input, const void* residualIn,
                                                    void* residualOut, void* normOut,
                                                    const void* gamma, size_t tokens, size_t hidden,
                                                    tpcommDataType_t datatype,
                                                    const tpcommRmsNormParams_t* params,
                                                    tpcommComm_t comm, tpcommStream_t stream);

/* Reduce-scatter, shaped like ncclReduceScatter: sendbuff holds world * recvcount elements, and
 * rank r's recvbuff gets segment r summed over the ranks in fp32, in rank order, rounded once to
 * the datatype (always tpcommSum). In place when recvbuff == sendbuff + rank * recvcount; any
 * other overlap is refused. recvcount 0 does nothing (the buffers may then be NULL). Every other
 * guarantee, rule and refusal of tpcommAllReduce holds. */
TPCOMM_API tpcommResult_t tpcommReduceScatter(const void* sendbuff, void* recvbuff,
                                              size_t recvcount, tpcommDataType_t datatype,
                                              tpcommComm_t comm, tpcommStream_t stream);

/* All-gather, shaped like ncclAllGather: recvbuff gets every rank's sendcount elements in rank
 * order, bit for bit. In place when sendbuff == recvbuff + rank * sendcount; any other overlap is
 * refused. The rest as for tpcommReduceScatter. */
TPCOMM_API tpcommResult_t tpcommAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                          tpcommDataType_t datatype, tpcommComm_t comm,
                                          tpcommStream_t stream);

/* When one thread drives several ranks (tpcommCommInitAll), wrap the calls of one collective
 * across ranks in a group, as with NCCL (its fallback needs every rank's call). Groups nest. */
TPCOMM_API tpcommResult_t tpcommGroupStart(void);
TPCOMM_API tpcommResult_t tpcommGroupEnd(void);

/* ---- what ran ---- */

/* Room in tpcommStats_t::calls for algorithms to come: adding one does not change the struct. */
#define TPCOMM_STATS_MAX_ALGOS 16

/* calls[a]: calls of tpcommAlgo_t a, counted when enqueued (a captured call once, at capture); a
 * reduce-scatter or all-gather counts under the algorithm whose half it runs, or nccl. */
typedef struct {
  uint64_t calls[TPCOMM_STATS_MAX_ALGOS];
  uint64_t fallbacks; /* calls served by NCCL although a tpcomm algorithm was wanted */
  uint64_t captured;  /* calls enqueued while the stream was capturing a graph */
  uint64_t bytes;     /* payload bytes over all calls */
} tpcommStats_t;

typedef struct {
  int algo;         /* tpcommAlgo_t that ran */
  int variant;      /* tpcommVariant_t that ran (in the padding after `algo`: layout unchanged) */
  size_t bytes;     /* payload bytes */
  int datatype;     /* tpcommDataType_t */
  int blocks;       /* grid size launched (0 for NCCL) */
  char reason[160]; /* why the policy chose it */
} tpcommCallInfo_t;

TPCOMM_API tpcommResult_t tpcommCommGetStats(tpcommComm_t comm, tpcommStats_t* stats);
/* Calls whose kernels ran from driver-JIT-compiled PTX (no SASS for the GPU here, docs/ARCH.md). */
TPCOMM_API tpcommResult_t tpcommCommGetPtxJitCalls(tpcommComm_t comm, uint64_t* calls);
TPCOMM_API tpcommResult_t tpcommCommGetLastCall(tpcommComm_t comm, tpcommCallInfo_t* info);
/* Calls per tpcommVariant_t (counted as tpcommStats_t::calls are) into calls[0..n-1]; 0 past the
 * variants this library has. */
TPCOMM_API tpcommResult_t tpcommCommGetVariantStats(tpcommComm_t comm, uint64_t* calls, int n);
/* "oneshot", "twoshot", "nccl", ...; NULL if unknown. */
TPCOMM_API const char* tpcommAlgoName(int algo);
/* "p2p_oneshot_lean", "host_oneshot_ll", "nccl", ...; NULL if unknown. */
TPCOMM_API const char* tpcommVariantName(int variant);

/* What the planner would choose for a call of this size (algorithm, variant, grid, reason) with
 * 16-byte aligned buffers, without running it; bad arguments fail as for tpcommAllReduce. */
TPCOMM_API tpcommResult_t tpcommCommExplain(tpcommComm_t comm, size_t count,
                                            tpcommDataType_t datatype, tpcommCallInfo_t* info);

/* The collectives tpcommCommExplainCollective answers for. */
typedef enum {
  tpcommCollAllReduce = 0,
  tpcommCollReduceScatter = 1,
  tpcommCollAllGather = 2,
  tpcommNumColls = 3
} tpcommColl_t;

/* tpcommCommExplain for any collective: count is the call's own (the all-reduce's count, the
 * reduce-scatter's recvcount, the all-gather's sendcount); info->bytes is the call's payload.
 * Count 0 of a reduce-scatter or all-gather plans nothing: variant None, tpcommSuccess. */
TPCOMM_API tpcommResult_t tpcommCommExplainCollective(tpcommComm_t comm, tpcommColl_t collective,
                                                      size_t count, tpcommDataType_t datatype,
                                                      tpcommCallInfo_t* info);

/* What the planner would run for tpcommAllReduceAddRmsNorm with these shapes: a fused variant, or
 * tpcommVariantAddRmsNorm[Fp8] after the all-reduce's (named in the reason), the grid and why.
 * params may be NULL (no FP8). Shapes are checked as tpcommAllReduceAddRmsNorm checks them. */
TPCOMM_API tpcommResult_t tpcommCommExplainAddRmsNorm(tpcommComm_t comm, size_t tokens,
                                                      size_t hidden, tpcommDataType_t datatype,
                                                      const tpcommRmsNormParams_t* params,
                                                      tpcommCallInfo_t* info);

#ifdef __cplusplus
}
#endif

#endif /* TPCOMM_TPCOMM_H_ */
