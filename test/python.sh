#!/bin/sh
# The Python side's tests, after test/node.sh: the client (clients/python)
# and the agent-loop example (examples/python), each with unittest and
# Debian's python3 against real daemons on real FUSE mounts (as root, with
# /dev/fuse). Builds cowfs once for both. The client's contract test also
# checks the daemon's replies against the TypeScript client's wire schema,
# which test/node.sh builds into clients/typescript/dist (built here too
# if node is present and it is missing).
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/cowfs" ./cmd/cowfs
export COWFS_BIN="$bin/cowfs"
export PYTHONDONTWRITEBYTECODE=1
python3 --version
if command -v node >/dev/null && [ ! -f clients/typescript/dist/test/wire-schema.js ]; then
	(cd clients/typescript && npm ci --no-audit --no-fund && npm run build)
fi
(cd clients/python && python3 -m unittest discover -s tests -v)
(cd examples/python && PYTHONPATH=../../clients/python python3 -m unittest -v test_agent_loop)
