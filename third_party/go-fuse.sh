#!/bin/sh
# Makes cowfs's copy of go-fuse (internal/_gofuse) from the published
# module, and checks that the copy in the tree is exactly what it makes.
# third_party/README.md says what the copy is and why it lives there.
#
#   sh third_party/go-fuse.sh make [DIR]  write the copy to DIR (default internal/_gofuse)
#   sh third_party/go-fuse.sh check       fail unless internal/_gofuse is what make writes
#   sh third_party/go-fuse.sh upstream    run go-fuse's own fs, fuse and posixtest
#                                         suites on the patched module, under its own path
#
# The module comes from the Go module proxy (or the module cache, where
# `go mod download` finds it already), checked against the checksum
# database (GOSUMDB) like any other download.
set -eu

version=v2.12.1
upstream=github.com/hanwen/go-fuse/v2
copy=internal/_gofuse
ourpath=github.com/cowfs/cowfs/$copy
# The packages cowfs builds and those their tests, and cowfs's, need
# (posixtest for fs/fs_test.go, example/loopback for test/bench); each
# kept whole, without its subdirectories (other packages).
packages="fs fuse splice posixtest internal internal/fallocate internal/ioctl
internal/openat internal/renameat internal/testutil internal/utimens internal/xattr
example/loopback"
# The upstream files that say whose code it is.
files="LICENSE AUTHORS README.md"
# Applied in this order.
patches="go-fuse-serve-inline.patch go-fuse-cloexec.patch go-fuse-release-backing-first.patch"

cd "$(dirname "$0")/.."
root=$PWD

# download prints the directory of the published module, read-only.
download() {
	# Outside this module, so go.mod and go.sum are left alone.
	(cd / && GOFLAGS=-mod=mod go mod download -json "$upstream@$version") |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}

# patched copies the published module to $1 and applies the patches.
patched() {
	src=$(download)
	[ -n "$src" ] || { echo "go-fuse.sh: cannot download $upstream@$version" >&2; exit 1; }
	cp -R "$src" "$1"
	chmod -R u+w "$1"
	for p in $patches; do
		(cd "$1" && patch -s -p1 <"$root/third_party/$p")
	done
}

make_copy() {
	dest=$1
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	patched "$tmp/module"
	rm -rf "$dest"
	mkdir -p "$dest"
	for f in $files; do
		cp "$tmp/module/$f" "$dest/$f"
	done
	for p in $packages; do
		mkdir -p "$dest/$p"
		find "$tmp/module/$p" -maxdepth 1 -type f -exec cp {} "$dest/$p/" \;
	done
	# The copy is a package tree of this module, not a module: its
	# imports of itself name it where it now lives. Only import lines
	# change (comments that link upstream issues keep their URLs).
	find "$dest" -name '*.go' | while read -r f; do
		sed -i "s#^\(\(import \)\{0,1\}[[:space:]]*\([A-Za-z_][A-Za-z0-9_]* \)\{0,1\}\)\"$upstream\([/\"]\)#\1\"$ourpath\4#" "$f"
	done
	# The new path sorts elsewhere among a file's imports.
	gofmt -w "$dest"
}

case "${1:-}" in
make)
	make_copy "${2:-$copy}"
	;;
check)
	out=$(mktemp -d)
	make_copy "$out/gofuse"
	if ! diff -r "$out/gofuse" "$copy"; then
		echo "go-fuse.sh: $copy is not what 'sh third_party/go-fuse.sh make' writes" >&2
		rm -rf "$out"
		exit 1
	fi
	rm -rf "$out"
	echo "go-fuse.sh: $copy is $upstream@$version with $patches"
	;;
upstream)
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
	patched "$out/module"
	skip=
	# These abort a connection through /sys/fs/fuse/connections; without
	# fusectl mounted there they fail or hang, with or without the
	# patches, and leave a mount behind.
	grep -qs '^fusectl ' /proc/mounts || skip='-skip=^(TestAbort|TestReconnectByFileHandle)$'
	(cd "$out/module" && GOFLAGS=-mod=mod go test -count=1 $skip ./fs ./fuse ./posixtest)
	;;
*)
	sed -n '2,12s/^# \{0,1\}//p' "$0" >&2
	exit 2
	;;
esac
