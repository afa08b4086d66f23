#!/usr/bin/env bash
# Installs the official MCP conformance suite (@modelcontextprotocol/conformance,
# run by Node 22 from npm's node package: the machine's own node may be
# older than the suite accepts) and builds the go-sdk's conformance
# everything-server at the go-sdk version go.mod requires, into the CI
# cache directory. On success it prints the exports the conformance test
# (cmd/custody/conformance_test.go) reads; its progress goes to stderr.
# Usage from .ci/run:
#
#   eval "$(bash .ci/conformance.sh)" || echo "..."
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

# 0.1.16 is the suite's latest stable release, the one the go-sdk's own
# scripts/server-conformance.sh runs (npx ...@latest) against its
# everything-server; all its checks pass against go-sdk v1.8.0's. (The
# 0.2.0 prereleases pass too, with more checks per scenario.)
suite_version=0.1.16
node_version=22.23.3
sdk_version="$(go list -m -f '{{.Version}}' github.com/modelcontextprotocol/go-sdk)"

cache="${XDG_CACHE_HOME:-$HOME/.cache}/custody-ci"
dir="$cache/conformance-$suite_version-node$node_version"
suite="$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
node="$dir/node_modules/node/bin/node"
if [ ! -f "$suite" ] || [ ! -x "$node" ]; then
  echo "== installing @modelcontextprotocol/conformance@$suite_version and node@$node_version into $dir" >&2
  mkdir -p "$dir"
  (cd "$dir" && npm install --no-audit --no-fund --silent \
    "@modelcontextprotocol/conformance@$suite_version" "node@$node_version" >&2)
fi
# The suite's own bin runs "env node", whichever node is first on PATH;
# this command runs it with the Node 22 installed beside it.
cmd="$dir/conformance"
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$node" "$suite" >"$cmd"
chmod +x "$cmd"
"$cmd" --version >/dev/null

server="$cache/everything-server-$sdk_version"
if [ ! -x "$server" ]; then
  echo "== building the go-sdk $sdk_version conformance everything-server" >&2
  go mod download github.com/modelcontextprotocol/go-sdk >&2
  go build -o "$server" github.com/modelcontextprotocol/go-sdk/conformance/everything-server >&2
fi

echo "export CUSTODY_TEST_CONFORMANCE='$cmd'"
echo "export CUSTODY_TEST_EVERYTHING_SERVER='$server'"
