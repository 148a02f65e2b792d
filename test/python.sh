#!/bin/sh
# The Python side's tests, after test/node.sh: the client (clients/python)
# and the agent-loop example (examples/python), each with unittest and
# Debian's python3 ($PYTHON to choose another) against real daemons on
# real FUSE mounts (as root, with /dev/fuse). Builds cowfs once for both.
# The client's contract test also checks the daemon's replies against the
# TypeScript client's wire schema, built here into clients/typescript/dist
# (its npm dependencies are there after test/node.sh).
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/cowfs" ./cmd/cowfs
export COWFS_BIN="$bin/cowfs"
export PYTHONDONTWRITEBYTECODE=1
# Debian's, also where another python3 comes first in PATH (pyenv's, say).
py=${PYTHON:-python3}
if [ -z "${PYTHON:-}" ] && [ -x /usr/bin/python3 ]; then
	py=/usr/bin/python3
fi
"$py" --version
if command -v node >/dev/null; then
	(cd clients/typescript && { [ -d node_modules ] || npm ci --no-audit --no-fund; } && npm run build)
fi
(cd clients/python && "$py" -m unittest discover -s tests -v)
(cd examples/python && PYTHONPATH=../../clients/python "$py" -m unittest -v test_agent_loop)
