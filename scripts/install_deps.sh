#!/usr/bin/env bash
# Build dependencies from Debian/Ubuntu packages, installed only where missing (a fresh machine or
# CI): libssl-dev (OpenSSL libcrypto: the rendezvous handshake's HMAC-SHA256), nlohmann-json3-dev
# (the header-only JSON library behind src/common/json*.cc), liblz4-dev and libzstd-dev (the
# inspector's decompressors, src/inspect/decompress.h; linked statically into the tools and tests
# only, never into libtpcomm.so). Called by scripts/test.sh and README's demo command; safe to
# run again.
set -euo pipefail
missing=()
for pkg in libssl-dev nlohmann-json3-dev liblz4-dev libzstd-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
((${#missing[@]})) || exit 0
if ! command -v apt-get >/dev/null; then
  echo "install the development files of OpenSSL, nlohmann/json, liblz4 and libzstd" \
    "(${missing[*]})" >&2
  exit 1
fi
echo "== installing ${missing[*]}"
sudo=$([[ $(id -u) == 0 ]] || echo sudo)
$sudo apt-get install -y --no-install-recommends "${missing[@]}" ||
  { $sudo apt-get update -qq && $sudo apt-get install -y --no-install-recommends "${missing[@]}"; }
