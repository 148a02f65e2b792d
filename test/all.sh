#!/bin/sh
# Every test cowfs has, in one command (the README's, and what .ci/run
# runs after installing the tools): the Go packages and end-to-end tests,
# the tests of the patch cowfs carries in its copy of go-fuse, the
# TypeScript client and example, the Python client and example.
# As root with /dev/fuse; COWFS_TEST_DISALLOW_SKIP=1 turns skips into failures.
set -eu
cd "$(dirname "$0")/.."
go test ./...
(cd third_party/go-fuse && go test ./fs ./fuse -run 'TestServeInline|TestMountCloseOnExec' -count=1)
sh test/node.sh
sh test/python.sh
