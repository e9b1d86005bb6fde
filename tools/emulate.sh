#!/usr/bin/env bash
# Runs a command on an emulated smaller machine, reproducibly: in a memory cgroup of its own
# (cgroup v2's memory.max, or v1's memory.limit_in_bytes) and, when asked, with reads from the
# disk that holds a file throttled (v2's io.max rbps, v1's blkio.throttle.read_bps_device).
# The engine reads the cgroup's limit as the machine's RAM (engine/machine: RAM), so `trochilus
# cpu` inside shows the machine it emulates. Needs root and a Linux with the memory controller.
#
#   tools/emulate.sh [-m 8gb|16gb|BYTES] [-d MB_PER_S -f FILE] [-drop] -- COMMAND [ARG...]
#
#   -m     memory: 8gb (5.5 GiB available, an 8 GB PC with its system and a browser), 16gb
#          (12.5 GiB), or a number of bytes; default 16gb
#   -d -f  throttle reads from FILE's disk to MB_PER_S megabytes a second (500: SATA-class,
#          2000: NVMe-class)
#   -drop  drop the page cache first, so that FILE is read from the disk (with -f)
#
# It prints the cgroup's peak memory when the command ends and exits with the command's status.
set -euo pipefail

mem=16gb rate= file= drop=
while [ $# -gt 0 ]; do
	case "$1" in
	-m | -d | -f)
		[ $# -ge 2 ] || { echo "emulate: $1 needs a value" >&2; exit 2; }
		case "$1" in -m) mem=$2 ;; -d) rate=$2 ;; -f) file=$2 ;; esac
		shift 2 ;;
	-drop) drop=1; shift ;;
	--) shift; break ;;
	*) echo "emulate: unknown option $1 (see the head of $0)" >&2; exit 2 ;;
	esac
done
[ $# -gt 0 ] || { echo "emulate: no command after --" >&2; exit 2; }
case "$mem" in
8gb) bytes=$((11 * 512 * 1024 * 1024)) ;;   # 5.5 GiB
16gb) bytes=$((25 * 512 * 1024 * 1024)) ;; # 12.5 GiB
*[!0-9]* | '') echo "emulate: -m $mem: want 8gb, 16gb or a number of bytes" >&2; exit 2 ;;
*) bytes=$mem ;;
esac
if [ -n "$rate" ] && [ -z "$file" ]; then
	echo "emulate: -d needs -f FILE (the throttle is on FILE's disk)" >&2
	exit 2
fi
case "$rate" in
*[!0-9]*) echo "emulate: -d $rate: want megabytes a second, a whole number" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "emulate: needs root (it makes a cgroup)" >&2; exit 2; }

# The disk holding FILE, as MAJOR:MINOR of the whole disk (a throttle applies to disks, not
# partitions).
disk() {
	local dev maj min sys
	dev=$(stat -L -c '%d' "$1")
	maj=$(((dev >> 8) & 0xfff)) min=$(((dev & 0xff) | ((dev >> 12) & 0xfff00)))
	sys=/sys/dev/block/$maj:$min
	if [ -e "$sys/partition" ]; then
		cat "$(readlink -f "$sys")/../dev"
	else
		echo "$maj:$min"
	fi
}

name=trochilus-emulate-$$
cg= bg=
cleanup() {
	[ -z "$cg" ] || rmdir "$cg" 2>/dev/null || true
	[ -z "$bg" ] || rmdir "$bg" 2>/dev/null || true
}
trap cleanup EXIT # set before the first mkdir: a failed write below leaves nothing behind
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then # cgroup v2, unified
	for c in memory ${rate:+io}; do
		grep -qw "$c" /sys/fs/cgroup/cgroup.subtree_control || {
			echo "emulate: the $c controller is not enabled for child cgroups here (/sys/fs/cgroup/cgroup.subtree_control)" >&2
			exit 2
		}
	done
	cg=/sys/fs/cgroup/$name
	mkdir "$cg"
	echo "$bytes" >"$cg/memory.max"
	echo 0 >"$cg/memory.swap.max" 2>/dev/null || true
	if [ -n "$rate" ]; then
		echo "$(disk "$file") rbps=$((rate * 1000000))" >"$cg/io.max"
	fi
	procs=$cg/cgroup.procs peak=$cg/memory.peak
else # cgroup v1
	[ -d /sys/fs/cgroup/memory ] || { echo "emulate: no memory cgroup controller mounted" >&2; exit 2; }
	cg=/sys/fs/cgroup/memory/$name
	mkdir "$cg"
	echo "$bytes" >"$cg/memory.limit_in_bytes"
	echo "$bytes" >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null || true
	procs=$cg/cgroup.procs peak=$cg/memory.max_usage_in_bytes
	if [ -n "$rate" ]; then
		bg=/sys/fs/cgroup/blkio/$name
		mkdir "$bg"
		echo "$(disk "$file") $((rate * 1000000))" >"$bg/blkio.throttle.read_bps_device"
	fi
fi
if [ -n "$drop" ]; then
	sync
	echo 3 >/proc/sys/vm/drop_caches
fi
echo "emulate: $(numfmt --to=iec-i --suffix=B "$bytes") of memory${rate:+, reads from $(disk "$file") at $rate MB/s}" >&2
status=0
# The child enters the cgroups before it becomes the command, so all it starts is held too.
(
	echo "$BASHPID" >"$procs"
	[ -z "${bg:-}" ] || echo "$BASHPID" >"$bg/cgroup.procs"
	exec "$@"
) || status=$?
[ ! -r "$peak" ] || echo "emulate: peak memory $(numfmt --to=iec-i --suffix=B "$(cat "$peak")"), exit status $status" >&2
exit "$status"
