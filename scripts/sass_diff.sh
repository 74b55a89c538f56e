#!/usr/bin/env bash
# Proof that a change left the device code alone: disassembles the kernels of two builds
# (cuobjdump -sass) and compares them kernel by kernel, instruction by instruction (opcode,
# operands and encoding). Kernels are matched by their demangled names, with the anonymous
# namespace's per-file tag removed, so moving a kernel to another file keeps it matched; a kernel
# renamed by the change is matched through --rename (a Python regex on the demangled name, and its
# replacement, applied to the OLD build's names).
#
#   scripts/sass_diff.sh [--rename FROM TO]... [--verbose] OLD NEW
#
# OLD and NEW: build directories (their src/libtpcomm.so), directories of .cubin / .o files, or
# binaries (.so, .o, .cubin). Prints
# one line per kernel and a summary; exits 0 only if both builds hold the same kernels and every
# kernel is identical. Example (the dev preset, sm_90 only; the old build in a second worktree):
#   git worktree add ../old-main main && (cd ../old-main && cmake --preset dev && \
#     cmake --build build-dev --target tpcomm -j2)
#   scripts/sass_diff.sh ../old-main/build-dev build-dev
#   scripts/sass_diff.sh --rename 'oldKernel<' 'newKernel<' OLD NEW   # after renaming a kernel
# cuobjdump and nvdisasm come from the CUDA toolkit; where the toolkit has none (nvcc-only
# installs), they are installed from PyPI into ${TPCOMM_TOOLS_DIR:-~/.cache/tpcomm-tools}.
set -euo pipefail

renames=()
verbose=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rename) renames+=("$2" "$3"); shift 3 ;;
    --verbose) verbose=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) break ;;
  esac
done
if [[ $# -ne 2 ]]; then
  echo "usage: $0 [--rename FROM TO]... [--verbose] OLD NEW" >&2
  exit 2
fi

# The binaries a side names: a build directory's src/libtpcomm.so, else every .cubin and .o in a
# directory, else the file itself.
binaries_of() {
  if [[ -f "$1/src/libtpcomm.so" ]]; then
    echo "$1/src/libtpcomm.so"
  elif [[ -d "$1" ]]; then
    find "$1" -maxdepth 1 \( -name '*.cubin' -o -name '*.o' \) | sort
  else
    echo "$1"
  fi
}
mapfile -t OLD < <(binaries_of "$1")
mapfile -t NEW < <(binaries_of "$2")
for f in "${OLD[@]}" "${NEW[@]}"; do
  [[ -f "$f" ]] || { echo "sass_diff: no such binary: $f" >&2; exit 2; }
done
((${#OLD[@]} > 0 && ${#NEW[@]} > 0)) || { echo "sass_diff: no binaries in $1 or $2" >&2; exit 2; }

# cuobjdump needs nvdisasm beside it or on PATH.
cuda_bin=$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")
tools=${TPCOMM_TOOLS_DIR:-$HOME/.cache/tpcomm-tools}
for dir in "$cuda_bin" "$tools/nvidia/cu13/bin"; do
  if [[ -x "$dir/cuobjdump" && -x "$dir/nvdisasm" ]]; then PATH="$dir:$PATH"; break; fi
done
if ! command -v cuobjdump >/dev/null || ! command -v nvdisasm >/dev/null; then
  echo "sass_diff: installing cuobjdump and nvdisasm into $tools (pip)" >&2
  python3 -m pip install -q --target "$tools" "nvidia-cuda-cuobjdump==13.2.51" \
    "nvidia-cuda-nvdisasm==13.2.51" >&2
  PATH="$tools/nvidia/cu13/bin:$PATH"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in "${OLD[@]}"; do cuobjdump -sass "$f"; done >"$work/old.sass"
for f in "${NEW[@]}"; do cuobjdump -sass "$f"; done >"$work/new.sass"

python3 - "$work/old.sass" "$work/new.sass" "$verbose" "${renames[@]}" <<'PY'
import difflib, re, subprocess, sys

old_path, new_path, verbose = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
pairs = sys.argv[4:]
renames = [(re.compile(pairs[i]), pairs[i + 1]) for i in range(0, len(pairs), 2)]
INSN = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")
ENC = re.compile(r"^\s*/\* (0x[0-9a-f]{16}) \*/\s*$")
ANON = re.compile(r"(\d+)_GLOBAL__N_")


def untag(name):
    """The anonymous namespace's mangled name carries a per-file tag: make it the plain one."""
    out, i = "", 0
    for m in ANON.finditer(name):
        if m.start() < i:
            continue
        out += name[i:m.start()] + "12_GLOBAL__N_1"
        i = m.start(1) + len(m.group(1)) + int(m.group(1))  # skip the whole identifier
    return out + name[i:]


def kernels(path):
    """{(arch, mangled name without the anonymous namespace's tag): [instruction lines]}"""
    out, arch, name = {}, "?", None
    for line in open(path):
        m = re.match(r"\s*arch = (\S+)", line)
        if m:
            arch, name = m.group(1), None
            continue
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            name = (arch, untag(m.group(1)))
            out[name] = []
            continue
        if name is None:
            continue
        m = INSN.match(line)
        if m:
            enc = line.split("/*")[-1].strip(" */\n")
            out[name].append(m.group(1) + " | " + enc)
            continue
        m = ENC.match(line)
        if m and out[name]:
            out[name][-1] += " " + m.group(1)  # the second half of the 128-bit encoding
    return out

def demangle(names):
    res = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    return res.stdout.split("\n")[: len(names)]

def keyed(table, rename):
    keys = list(table)
    shown = demangle([n for _, n in keys])
    out = {}
    for (arch, _), d, k in zip(keys, shown, keys):
        if rename:
            for pat, rep in renames:
                d = pat.sub(rep, d)
        out[(arch, d)] = table[k]
    return out

old = keyed(kernels(old_path), True)
new = keyed(kernels(new_path), False)
same = changed = 0
for key in sorted(set(old) | set(new)):
    arch, name = key
    if key not in new:
        print(f"ONLY IN OLD  {arch} {name}")
        changed += 1
        continue
    if key not in old:
        print(f"ONLY IN NEW  {arch} {name}")
        changed += 1
        continue
    a, b = old[key], new[key]
    if a == b:
        same += 1
        print(f"identical    {arch} {name} ({len(a)} instructions)")
        continue
    changed += 1
    sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    moved = sum(max(i2 - i1, j2 - j1) for op, i1, i2, j1, j2 in sm.get_opcodes() if op != "equal")
    print(f"DIFFERS      {arch} {name} ({len(a)} -> {len(b)} instructions, {moved} differ)")
    if verbose:
        for line in difflib.unified_diff(a, b, "old", "new", n=2, lineterm=""):
            print("    " + line)
total = same + changed
if changed == 0 and total > 0:
    print(f"{total} kernels, all identical")
    sys.exit(0)
print(f"{total} kernels: {same} identical, {changed} differ or are unmatched")
sys.exit(1)
PY
