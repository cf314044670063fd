#!/bin/sh
# tach monitor reports the command's own peak RSS, not tach's pre-exec copy of itself (the
# forked child holds tach's pages until exec, and the kernel's ru_maxrss counts them). The
# command prints tach's own VmRSS ($PPID is tach) and sleeps: its peak must be far below it.
# usage: monitor_peak.sh TACH WORK_DIR
set -eu
tach=$1
work=$2
mkdir -p "$work"
out=$("$tach" monitor -i 0.05 -o "$work/monitor_peak.csv" -- sh -c 'grep VmRSS /proc/$PPID/status; sleep 1' 2>&1) ||
  { echo "$out"; echo "FAIL: tach monitor -- sh -c ... exited $?"; exit 1; }
echo "$out"
to_kib() {  # "12.3 MiB" -> KiB
  awk -v n="$1" -v u="$2" 'BEGIN { m = u == "GiB" ? 1048576 : u == "MiB" ? 1024 : u == "KiB" ? 1 : 1 / 1024; printf "%d", n * m }'
}
tach_kib=$(echo "$out" | awk '/^VmRSS:/ { print $2 }')
line=$(echo "$out" | grep 'memory *peak RSS')
peak_kib=$(to_kib $(echo "$line" | awk '{ print $4, $5 }'))
echo "tach's RSS ${tach_kib} KiB, the command's peak ${peak_kib} KiB"
[ -n "$tach_kib" ] && [ "$tach_kib" -gt 0 ] || { echo "FAIL: no VmRSS of tach printed"; exit 1; }
# sh and sleep peak at a few MiB; tach's copy at tens of MiB.
[ "$peak_kib" -gt 0 ] && [ "$peak_kib" -lt 16384 ] && [ $((peak_kib * 4)) -lt "$tach_kib" ] ||
  { echo "FAIL: the peak is tach's size, not the command's"; exit 1; }
# The timeline holds no sample of tach's copy either.
max_csv=$(awk -F, 'NR > 1 && $3 > m { m = $3 } END { printf "%d", m / 1024 }' "$work/monitor_peak.csv")
[ "$max_csv" -lt 16384 ] || { echo "FAIL: the CSV has a sample of ${max_csv} KiB (tach's copy)"; exit 1; }
# A command that exits at once: its status is passed on, and no peak of tach's size is claimed.
set +e
out=$("$tach" monitor -o "$work/monitor_false.csv" -- false 2>&1)
code=$?
set -e
echo "$out"
[ "$code" -eq 1 ] || { echo "FAIL: tach monitor -- false exited $code"; exit 1; }
line=$(echo "$out" | grep 'memory *peak RSS')
case "$line" in
  *unknown*) ;;
  *) peak_kib=$(to_kib $(echo "$line" | awk '{ print $4, $5 }'))
     [ "$peak_kib" -lt 16384 ] || { echo "FAIL: false's peak is ${peak_kib} KiB"; exit 1; } ;;
esac
# A command that cannot run: 127 and its reason.
set +e
out=$("$tach" monitor -o "$work/monitor_none.csv" -- /no/such/command 2>&1)
code=$?
set -e
echo "$out"
[ "$code" -eq 127 ] && echo "$out" | grep -q "cannot run '/no/such/command': No such file" ||
  { echo "FAIL: a missing command gave $code"; exit 1; }
echo "ok"
