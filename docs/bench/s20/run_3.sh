#!/bin/bash
# Twentieth round, device call 3 (one H200, all ranks sharing it): the first GPU run of runCall,
# the one pipeline of the local collectives (comm/call/run_call.h): every gtest suite but World/*
# with the Python GPU tests and doctor (tests-b), then the late-rank chains of every algorithm
# (each chain prints the variants it ran: the fused two-shot in the pull chains).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
tar -C gpu-carry -xJf gpu-carry/pack.tar.xz || exit 1
B=gpu-carry/pack/build
nvidia-smi -L; cat $B/COMMIT
TPCOMM_SUITE_SECONDS=280 TPCOMM_SUITE_PACK=1 tests/gpu/run_suite.sh $B $OUT/tb tests-b >/dev/null 2>&1
cat $OUT/tb/summary.txt
TPCOMM_SUITE_SECONDS=200 TPCOMM_SUITE_PACK=1 tests/gpu/run_suite.sh $B $OUT/ch chains >/dev/null 2>&1
cat $OUT/ch/summary.txt
ls $OUT/ch
