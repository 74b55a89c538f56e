#!/usr/bin/env bash
# Fails if a tracked C++/CUDA file is not formatted as .clang-format says (clang-format --dry-run).
# The tree is formatted with clang-format 14 (Debian 12's); other major versions break lines
# differently, so with those (or without clang-format) the check says so and is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  echo "format check skipped: clang-format is not installed"
  exit 0
fi
major=$(clang-format --version | sed -n 's/.*version \([0-9]*\).*/\1/p')
if [[ $major != 14 ]]; then
  echo "format check skipped: clang-format $major (the tree is formatted with 14)"
  exit 0
fi
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh' 2>/dev/null)
if ((${#files[@]} == 0)); then
  echo "format check skipped: not a git checkout"
  exit 0
fi
if ! clang-format --dry-run -Werror "${files[@]}"; then
  echo "format check failed: run clang-format -i on the files above"
  exit 1
fi
echo "format check: ${#files[@]} files formatted"
