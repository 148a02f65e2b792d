#!/bin/sh
# Every test cowfs has, in one command (the README's, and what .ci/run
# runs after installing the tools): the Go packages and end-to-end tests,
# the check that cowfs's copy of go-fuse is the published module with its
# patches, the tests of those patches (./... leaves the copy out: go-fuse's
# whole suite is upstream's, third_party/README.md), the TypeScript client
# and example, the Python client and example.
# As root with /dev/fuse; COWFS_TEST_DISALLOW_SKIP=1 turns skips into failures.
set -eu
cd "$(dirname "$0")/.."
go test ./...
sh third_party/go-fuse.sh check
go test ./internal/_gofuse/fs ./internal/_gofuse/fuse -run 'TestServeInline|TestMountCloseOnExec' -count=1
sh test/node.sh
sh test/python.sh
