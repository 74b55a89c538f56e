#!/usr/bin/env bash
# Session 5: issue 5's install path on the H200 machine, as a newcomer follows docs/PYTHON.md:
# `pip install --no-build-isolation .` with the image's torch, then the doc's 2-GPU demo.
# The machine is offline: scikit-build-core (and ninja, cmake if missing) come from carried wheels.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=$PWD/.carry/s5w/wheels
R=$OUT/r; mkdir -p $R
{ date -u; command -v python3 pip; pip --version; python3 -m pip --version; python3 --version; command -v cmake nvcc ninja; cmake --version | head -1
  python3 -c "import torch; print('torch', torch.__version__)"
  python3 -c "import scikit_build_core; print('scikit-build-core present')" 2>&1 | tail -1; } 2>&1 | tee $R/env.txt
# The image's Python is torch's own environment (/opt/torch/.venv): install into it, as a user would.
python3 -c "import scikit_build_core" 2>/dev/null || python3 -m pip install -q --no-index --find-links $W scikit-build-core ninja
command -v cmake >/dev/null || python3 -m pip install -q --no-index --find-links $W cmake
start=$SECONDS
python3 -m pip install --no-build-isolation . -C cmake.define.TPCOMM_CUDA_ARCHS=90-real > $R/pip.log 2>&1
echo "pip install rc=$? in $((SECONDS - start)) s"; tail -3 $R/pip.log
cd /tmp
python3 -c "import tpcomm; print(tpcomm.library_path(), tpcomm.library_version())" 2>&1 | tee $R/import.txt
timeout 60 tpcomm doctor > $R/doctor.txt 2>&1; echo "doctor rc=$?"; tail -5 $R/doctor.txt
# The demo exactly as docs/PYTHON.md shows it (the first python block after "Save as `demo.py`").
DOC=$OLDPWD/docs/PYTHON.md python3 - <<'PY' > /tmp/demo.py
import re
import os
doc = open(os.environ["DOC"]).read()
tail = doc.split("Save as `demo.py`", 1)[1]
print(re.search(r"```python\n(.*?)```", tail, re.S).group(1))
PY
echo "demo rc=$?"
timeout 120 torchrun --nproc-per-node 2 /tmp/demo.py > $R/demo.txt 2>&1; echo "torchrun rc=$?"; tail -6 $R/demo.txt
cd $OUT && tar czf w.tgz r
