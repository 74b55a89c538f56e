"""ctypes mirror of include/tpcomm/tpcomm.h: constants, structs and function prototypes.

Kept by hand (no header parser at run time) and checked against the header by
python/tests/test_abi.py, which compiles offsetof/sizeof probes when a C compiler is there.
"""
import ctypes
from ctypes import POINTER, c_char, c_char_p, c_int, c_size_t, c_uint, c_uint64, c_void_p

# tpcommResult_t
SUCCESS = 0
RESULT_NAMES = (
    "tpcommSuccess", "tpcommUnhandledCudaError", "tpcommSystemError", "tpcommInternalError",
    "tpcommInvalidArgument", "tpcommInvalidUsage", "tpcommRemoteError", "tpcommInProgress",
    "tpcommTimeout", "tpcommNoDevice", "tpcommNoKernelImage", "tpcommUnsupported",
    "tpcommFallbackRefused", "tpcommNcclError",
)
NUM_RESULTS = len(RESULT_NAMES)

# tpcommDataType_t: NCCL's values, so engines can pass theirs through.
FLOAT16, FLOAT32, BFLOAT16 = 6, 7, 9
DTYPE_NAMES = {FLOAT16: "float16", FLOAT32: "float32", BFLOAT16: "bfloat16"}
DTYPE_SIZES = {FLOAT16: 2, FLOAT32: 4, BFLOAT16: 2}

SUM = 0  # tpcommRedOp_t

# tpcommAlgo_t, by value: the library's own names (tpcommAlgoName); every value has one.
ALGO_NAMES = ("auto", "oneshot", "twoshot", "nccl", "host_oneshot", "host_twoshot", "island",
              "host_bulk", "oneshot_pull", "twoshot_pull", "oneshot_ce",
              "island_pull")
NUM_ALGOS = len(ALGO_NAMES)
STATS_MAX_ALGOS = 16  # TPCOMM_STATS_MAX_ALGOS: room in tpcommStats_t.calls

# tpcommVariant_t: not mirrored here. The library names its own (tpcommVariantName, NULL past
# the last), so a variant added to its table needs no change in this package (variant_name).

# tpcommColl_t (tpcommCommExplainCollective)
COLL_NAMES = ("all_reduce", "reduce_scatter", "all_gather")

# tpcommNcclMode_t
NCCL_AUTO, NCCL_OFF, NCCL_GIVEN = 0, 1, 2

CONFIG_MAGIC = 0x7C0A11CE
CONFIG_VERSION = 2
UNIQUE_ID_BYTES = 128
RANK_HANDLE_BYTES = 2048
REASON_BYTES = 160


class Config(ctypes.Structure):
    _fields_ = [
        ("size", c_size_t),
        ("magic", c_uint),
        ("version", c_uint),
        ("bufferBytes", c_size_t),
        ("timeoutMs", c_int),
        ("strict", c_int),
        ("algo", c_int),
        ("ncclMode", c_int),
        ("ncclComm", c_void_p),
        ("maxBlocks", c_int),
        ("initTimeoutMs", c_int),  # version 2
        ("launchKnobs", c_char_p),  # version 2
    ]

    @classmethod
    def initializer(cls):
        """TPCOMM_CONFIG_INITIALIZER: every field at 'default' (environment, then built-in)."""
        return cls(ctypes.sizeof(cls), CONFIG_MAGIC, CONFIG_VERSION, 0, 0, -1, -1, -1, None, 0, 0,
                   None)


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", c_char * UNIQUE_ID_BYTES)]


class RankHandle(ctypes.Structure):
    _fields_ = [("internal", c_char * RANK_HANDLE_BYTES)]


class Stats(ctypes.Structure):
    _fields_ = [
        ("calls", c_uint64 * STATS_MAX_ALGOS),
        ("fallbacks", c_uint64),
        ("captured", c_uint64),
        ("bytes", c_uint64),
    ]


class CallInfo(ctypes.Structure):
    _fields_ = [
        ("algo", c_int),
        ("variant", c_int),
        ("bytes", c_size_t),
        ("datatype", c_int),
        ("blocks", c_int),
        ("reason", c_char * REASON_BYTES),
    ]


class RmsNormParams(ctypes.Structure):
    """tpcommRmsNormParams_t (tpcommAllReduceAddRmsNorm)."""
    _fields_ = [
        ("version", ctypes.c_uint),
        ("eps", ctypes.c_float),
        ("weightOffset", c_int),
        ("quantScale", c_void_p),
    ]


RMSNORM_PARAMS_VERSION = 1  # TPCOMM_RMSNORM_PARAMS_VERSION

_comm = c_void_p
_res = c_int

# name -> (restype, argtypes)
PROTOTYPES = {
    "tpcommGetVersion": (_res, [POINTER(c_int)]),
    "tpcommGetErrorString": (c_char_p, [c_int]),
    "tpcommGetLastError": (c_char_p, []),
    "tpcommGetUniqueId": (_res, [POINTER(UniqueId)]),
    "tpcommCommInitRank": (_res, [POINTER(_comm), c_int, UniqueId, c_int, POINTER(Config)]),
    "tpcommCommInitAll": (_res, [POINTER(_comm), c_int, POINTER(c_int), POINTER(Config)]),
    "tpcommCommInitRankBegin": (
        _res, [POINTER(_comm), c_int, c_int, POINTER(Config), POINTER(RankHandle)]),
    "tpcommCommInitRankEnd": (_res, [_comm, POINTER(RankHandle)]),
    "tpcommCommDestroy": (_res, [_comm]),
    "tpcommCommNodes": (_res, [_comm, POINTER(c_int), POINTER(c_int)]),
    "tpcommCommNodeLinkBegin": (_res, [_comm, POINTER(RankHandle)]),
    "tpcommCommNodeLinkEnd": (_res, [_comm, POINTER(RankHandle)]),
    "tpcommCommGetNodeLinkCalls": (_res, [_comm, POINTER(c_uint64)]),
    "tpcommCommCount": (_res, [_comm, POINTER(c_int)]),
    "tpcommCommUserRank": (_res, [_comm, POINTER(c_int)]),
    "tpcommCommCuDevice": (_res, [_comm, POINTER(c_int)]),
    "tpcommCommGetAsyncError": (_res, [_comm, POINTER(c_int)]),
    "tpcommAllReduce": (_res, [c_void_p, c_void_p, c_size_t, c_int, c_int, _comm, c_void_p]),
    "tpcommAllReduceWire": (
        _res, [c_void_p, c_void_p, c_size_t, c_int, c_int, c_int, _comm, c_void_p]),
    "tpcommReduceScatter": (_res, [c_void_p, c_void_p, c_size_t, c_int, _comm, c_void_p]),
    "tpcommAllGather": (_res, [c_void_p, c_void_p, c_size_t, c_int, _comm, c_void_p]),
    "tpcommCommExplainCollective": (_res, [_comm, c_int, c_size_t, c_int, POINTER(CallInfo)]),
    "tpcommAllReduceAddRmsNorm": (
        _res, [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_size_t, c_size_t, c_int,
               POINTER(RmsNormParams), _comm, c_void_p]),
    "tpcommCommExplainAddRmsNorm": (
        _res, [_comm, c_size_t, c_size_t, c_int, POINTER(RmsNormParams), POINTER(CallInfo)]),
    "tpcommGroupStart": (_res, []),
    "tpcommGroupEnd": (_res, []),
    "tpcommCommGetStats": (_res, [_comm, POINTER(Stats)]),
    "tpcommCommGetPtxJitCalls": (_res, [_comm, POINTER(c_uint64)]),
    "tpcommCommGetLastCall": (_res, [_comm, POINTER(CallInfo)]),
    "tpcommCommGetVariantStats": (_res, [_comm, POINTER(c_uint64), c_int]),
    "tpcommAlgoName": (c_char_p, [c_int]),
    "tpcommVariantName": (c_char_p, [c_int]),
    "tpcommCommExplain": (_res, [_comm, c_size_t, c_int, POINTER(CallInfo)]),
}


def bind(lib):
    """Sets restype/argtypes on every function; a missing symbol is an old or foreign library."""
    missing = []
    for name, (restype, argtypes) in PROTOTYPES.items():
        fn = getattr(lib, name, None)
        if fn is None:
            missing.append(name)
            continue
        fn.restype = restype
        fn.argtypes = argtypes
    return missing


def variant_name(lib, value):
    """The library's name of tpcommVariant_t `value` (its number where it has none)."""
    name = lib.tpcommVariantName(value) if value >= 0 else None
    return name.decode() if name else str(value)


def call_info_dict(info, lib):
    return {
        "algo": ALGO_NAMES[info.algo] if 0 <= info.algo < NUM_ALGOS else str(info.algo),
        "variant": variant_name(lib, info.variant),
        "bytes": int(info.bytes),
        "dtype": DTYPE_NAMES.get(info.datatype, str(info.datatype)),
        "blocks": int(info.blocks),
        "reason": info.reason.decode("utf-8", "replace"),
    }


def stats_dict(stats):
    return {
        "calls": {name: int(stats.calls[a]) for a, name in enumerate(ALGO_NAMES)},
        "fallbacks": int(stats.fallbacks),
        "captured": int(stats.captured),
        "bytes": int(stats.bytes),
    }
