#!/bin/sh
# The TypeScript side's tests, after `go test ./...`: the client
# (clients/typescript) and the TanStack AI example (examples/tanstack),
# each with node --test against real daemons on real FUSE mounts (as root,
# with /dev/fuse). Installs their npm dependencies from the lockfiles,
# builds cowfs once for both, and runs each package's test script.
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/cowfs" ./cmd/cowfs
export COWFS_BIN="$bin/cowfs"
node --version
(cd clients/typescript && npm ci --no-audit --no-fund && npm test)
(cd examples/tanstack && npm ci --no-audit --no-fund && npm test)
