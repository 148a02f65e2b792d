#!/usr/bin/env bash
# Verified stress on a cowfs mount (issue 15): the Go fsx-style
# exerciser (test/stress/fsx), fio with --verify=crc32c (psync, libaio
# with O_DIRECT, mmap) and stress-ng's filesystem stressors with
# --verify, each in its own turn while steps begin and end under it;
# then rollbacks across the stressed turns, compared with copies taken
# at each turn's start. Any verification error or difference fails.
#
# Usage: test/stress/run.sh [--long] [--keep] [--only STAGE,...]
#   --long  hundreds of thousands of fsx operations, larger fio jobs,
#           every stressor of stress-ng's filesystem class for 30 s
#   --keep  leave the scratch directory (logs, copies) behind
#   --only  run only these stages (fsx, fio, stress-ng), then their
#           rollbacks
# Needs root, /dev/fuse, go, fio and stress-ng (apt-get install fio
# stress-ng). The short form takes a few minutes. Exits 0 only when
# every stage and every rollback passed.
set -euo pipefail
cd "$(dirname "$0")/../.."
long=0 keep=0 only=fsx,fio,stress-ng
usage() { echo "usage: $0 [--long] [--keep] [--only STAGE,...]" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--long) long=1 ;;
	--keep) keep=1 ;;
	--only) [ $# -gt 1 ] || usage; only=$2; shift ;;
	*) usage ;;
	esac
	shift
done
stage() { case ,$only, in *,$1,*) return 0 ;; esac; return 1; }
for s in ${only//,/ }; do
	case $s in fsx | fio | stress-ng) ;; *) echo "$0: no stage $s" >&2; usage ;; esac
done
for tool in fio stress-ng; do
	stage $tool || continue
	command -v $tool >/dev/null || { echo "$0: $tool is not installed" >&2; exit 2; }
done

scratch=$(mktemp -d /tmp/cowfs-stress.XXXXXX)
ws=$scratch/ws
export COWFS_STATE_DIR=$scratch/state
go build -o "$scratch/cowfs" ./cmd/cowfs
go build -o "$scratch/fsx" ./test/stress/fsx
cowfs() { "$scratch/cowfs" -w "$ws" "$@"; }

daemon=
stepper=
cleanup() {
	[ -n "$stepper" ] && kill "$stepper" 2>/dev/null || true
	cowfs umount >/dev/null 2>&1 || true
	# The daemon this script started, by pid, if it outlived the unmount.
	[ -n "$daemon" ] && kill "$daemon" 2>/dev/null || true
	if [ $keep = 1 ]; then echo "kept $scratch"; else rm -rf "$scratch"; fi
}
trap cleanup EXIT

# A workspace with history: files every workload will overwrite.
mkdir -p "$ws/fsx" "$ws/fio" "$ws/src"
for i in 0 1 2 3; do head -c $((200000 + i * 50000)) /dev/urandom >"$ws/fsx/fsx.$i"; done
cp -a cmd journal "$ws/src/"
cowfs mount --background "$ws" >/dev/null 2>&1
daemon=$(cowfs status --json | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' | head -1)

# copy N: the workspace as turn N begins (through the mount).
copy() { rm -rf "$scratch/copy$1"; cp -a "$ws/." "$scratch/copy$1"; }

# Steps under the running workload: each begins a new epoch.
steps() { local i=0; while sleep 0.5; do cowfs turn step "s$((i++))" >/dev/null || true; done; }

turns=0
inturn() { # inturn NAME COMMAND...: one turn, with steps under it
	local name=$1; shift
	turns=$((turns + 1))
	copy $turns
	cowfs turn begin --id "$name" >/dev/null
	steps & stepper=$!
	local rc=0
	# set -e does not reach into "$@" here (it runs as the left side of
	# ||), so each stage returns its tools' failures itself.
	"$@" || rc=$?
	kill $stepper; wait $stepper 2>/dev/null || true; stepper=
	cowfs turn end >/dev/null
	if [ $rc != 0 ]; then echo "FAIL: $name exited $rc" >&2; exit 1; fi
	echo "ok: $name"
}

if [ $long = 1 ]; then
	ops=200000 fiosize=256M sngtime=30
else
	ops=5000 fiosize=16M sngtime=2
fi

if stage fsx; then
	inturn fsx "$scratch/fsx" -dir "$ws/fsx" -files 4 -ops $ops -size $((1 << 20))
fi

fio_job() { # fio_job NAME ENGINE [fio options]
	local name=$1 engine=$2 rc=0; shift 2
	fio --name="$name" --directory="$ws/fio" --ioengine="$engine" --rw=randrw --bs=4k \
		--size=$fiosize --numjobs=2 --verify=crc32c --do_verify=1 --verify_fatal=1 \
		--verify_backlog=1024 --verify_state_save=0 --output="$scratch/fio-$name.log" "$@" || rc=$?
	if [ $rc != 0 ]; then echo "fio $name exited $rc" >&2; return $rc; fi
	if grep -q 'verify.*bad\|verify failed\|err= *[1-9]' "$scratch/fio-$name.log"; then
		echo "fio $name: errors in $scratch/fio-$name.log" >&2
		return 1
	fi
}
fio_all() {
	fio_job psync psync &&
		fio_job libaio libaio --direct=1 --iodepth=16 &&
		fio_job mmap mmap
}
if stage fio; then inturn fio fio_all; fi

if [ $long = 1 ]; then
	sng=(--class filesystem --sequential 2)
else
	# The stressors that change files and directories, in short.
	sng=(--hdd 2 --hdd-bytes 8M --fallocate 1 --fpunch 1 --iomix 1 --rename 1 --link 1
		--symlink 1 --dir 1 --dentry 1 --chmod 1 --chown 1 --utime 1 --xattr 1 --copy-file 1
		--open 1 --touch 1 --filename 1 --mknod 1 --fsize 1 --sync-file 1 --lockf 1 --flock 1)
fi
sng_run() {
	local rc=0
	mkdir -p "$ws/sng" || return
	stress-ng "${sng[@]}" --verify --timeout $sngtime --temp-path "$ws/sng" \
		--log-file "$scratch/stress-ng.log" --metrics-brief >/dev/null || rc=$?
	# Any status but 0 fails: 2 is a stressor that failed, 3 one that
	# ran out of resources, 4 one not implemented here.
	if [ $rc != 0 ]; then echo "stress-ng exited $rc (log: $scratch/stress-ng.log)" >&2; return $rc; fi
	if grep -qi "verif.*fail\|fail.*verif" "$scratch/stress-ng.log"; then
		echo "stress-ng: verification failures in $scratch/stress-ng.log" >&2
		return 1
	fi
}
if stage stress-ng; then inturn stress-ng sng_run; fi

# Rollbacks across the stressed turns, each compared with its copy:
# content, types, modes, owners and link targets of every path.
listing() { (cd "$1" && find . -printf '%p %y %m %U %G %l\n' | LC_ALL=C sort); }
same() { # same N: the workspace is copy N
	diff <(listing "$scratch/copy$1") <(listing "$ws") >"$scratch/diff$1" &&
		diff -r --no-dereference "$scratch/copy$1" "$ws" >>"$scratch/diff$1" ||
		{ echo "FAIL: rollback to before turn $1 differs:" >&2; head -40 "$scratch/diff$1" >&2; exit 1; }
}
for n in $(seq $turns -1 1); do
	cowfs rollback "$n" >/dev/null
	same $n
	echo "ok: rolled back to before turn $n, exact"
done
echo "PASS: $turns stressed turns, 0 verification errors, every rollback exact"
