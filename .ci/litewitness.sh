#!/usr/bin/env bash
# Installs litewitness and witnessctl (filippo.io/torchwood v0.6.1), the
# C2SP tlog-witness the witness tests run against, into a cache directory
# and prints that directory. The tests look there (and in
# $CUSTODY_LITEWITNESS_DIR, then $PATH) and skip, saying so, when the
# binaries are missing. Usage from .ci/run:
#
#   export CUSTODY_LITEWITNESS_DIR="$(bash .ci/litewitness.sh)" || true
set -euo pipefail
export PATH="$PATH:/usr/local/go/bin"
version=v0.6.1
dir="${CUSTODY_LITEWITNESS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/custody/litewitness-$version}"
if [ ! -x "$dir/litewitness" ] || [ ! -x "$dir/witnessctl" ]; then
  mkdir -p "$dir"
  echo "== installing litewitness $version into $dir" >&2
  GOBIN="$dir" go install "filippo.io/torchwood/cmd/litewitness@$version" "filippo.io/torchwood/cmd/witnessctl@$version" >&2
fi
echo "$dir"
