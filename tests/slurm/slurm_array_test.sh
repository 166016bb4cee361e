#!/usr/bin/env bash
# Runs the README's Slurm job array ("Sharding a sweep over many machines") on a real,
# single-host Slurm and checks that `placesim merge` of its shards prints exactly the bytes of
# the unsharded sweep, in CSV (the README's merge line) and in JSON.
#
# The README stays the source of truth: the array script is extracted from it and submitted
# byte for byte; only where it runs is arranged around it: `placesim` is found on PATH (a
# folder with a link to the binary under test) and `study.textproto` in the job's working
# folder (tests/slurm/study.textproto, a scenario valid at every point of the README's sweep).
# The unsharded sweep is the script's own command without `--shard` and its redirection.
#
# The cluster: munged, slurmctld and slurmd (Debian's munge and slurm-wlm), configured, keyed,
# logged and spooled under one temporary folder, on free TCP ports, so neither /etc nor another
# run on the same host is touched. Invariant: on every exit (pass, failure, timeout, signal)
# the EXIT trap cancels the job, stops every daemon this script started and every process they
# started (found by a marker in their environment, never by name) and removes the folder.
#
# usage: slurm_array_test.sh PLACESIM SOURCE_DIR
# Exit: 0 pass, 1 fail, 77 skipped (Slurm or munge not installed: `./dev test` installs them).
set -euo pipefail

placesim="$(realpath "$1")"
src="$2"
# Bounds (seconds), so that the cleanup always runs before ctest's TIMEOUT (900 s) kills the
# script: 60 + 300 + 6 commands × 60, then under 40 s of cleanup. On 2 idle cores the daemons
# start in about 3 s, the 16 tasks end in about 22 s and each of the four placesim commands
# after them takes under 8 s.
# PLACESIM_SLURM_TIME_SCALE multiplies every bound, as CMake multiplies ctest's TIMEOUT, for a
# placesim built with the sanitizers (tests/slurm/CMakeLists.txt).
scale="${PLACESIM_SLURM_TIME_SCALE:-1}"
start_timeout=$((60 * scale))
job_timeout=$((300 * scale))
command_timeout=$((60 * scale))

find_program() {
  PATH="$PATH:/usr/sbin:/sbin" command -v "$1" 2>/dev/null || true
}
declare -A bin
for p in munged mungekey slurmctld slurmd sbatch squeue scontrol scancel sinfo; do
  bin[$p]="$(find_program "$p")"
  if [ -z "${bin[$p]}" ]; then
    echo "SKIP: $p is not installed (Debian packages slurm-wlm and munge; ./dev test installs them)"
    exit 77
  fi
done

tmp="$(mktemp -d "${TMPDIR:-/tmp}/placesim-slurm.XXXXXX")"
# Every process started for this test carries the marker, and so do their children (slurmd
# passes its environment to slurmstepd, sbatch exports it to the job): cleanup finds them by it.
marker="PLACESIM_SLURM_TEST=$tmp"
pids=()
jobid=""

# The processes whose environment holds the marker, except this shell.
marked_processes() {
  local f pid
  for f in /proc/[0-9]*/environ; do
    pid="${f#/proc/}"
    pid="${pid%/environ}"
    [ "$pid" = "$$" ] && continue
    # Kernel threads and processes that just ended have no readable environment.
    if { tr '\0' '\n' <"$f"; } 2>/dev/null | grep -qxF "$marker"; then echo "$pid"; fi
  done
}

# Sends TERM, waits up to 10 s for the processes to end, then KILLs what is left.
stop_processes() {
  [ $# -eq 0 ] && return 0
  kill -TERM "$@" 2>/dev/null || true
  local i pid alive
  for i in $(seq 100); do
    alive=()
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
    [ ${#alive[@]} -eq 0 ] && return 0
    sleep 0.1
  done
  echo "killing processes that outlived TERM: ${alive[*]}" >&2
  kill -KILL "${alive[@]}" 2>/dev/null || true
}

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  set +e
  if [ -n "$jobid" ]; then SLURM_CONF="$tmp/slurm.conf" "${bin[scancel]}" "$jobid" 2>/dev/null; fi
  # slurmd first (it stops its job steps), then the controller, then munge, which both need.
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop_processes "${pids[i]}"; done
  wait 2>/dev/null
  mapfile -t left < <(marked_processes)
  if [ ${#left[@]} -gt 0 ]; then
    echo "stopping processes the daemons left behind: ${left[*]}" >&2
    stop_processes "${left[@]}"
  fi
  # What the daemons printed (their .out also holds what they logged).
  if [ "$status" -ne 0 ] && [ "$status" -ne 77 ]; then
    for log in "$tmp"/log/*.out; do
      [ -f "$log" ] || continue
      echo "---- last lines of $(basename "$log")" >&2
      tail -n 25 "$log" >&2
    done
  fi
  rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# A free TCP port in the unprivileged range, not yet bound on this host.
free_port() {
  local port hex
  while :; do
    port=$((20000 + RANDOM % 20000))
    hex="$(printf ':%04X ' "$port")"
    if ! grep -q "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null; then
      echo "$port"
      return
    fi
  done
}

# Runs a daemon in the foreground of a background job, so this script holds its pid; what it
# prints goes to log/NAME.out beside its log file.
start_daemon() {
  env "$marker" "$@" >"$tmp/log/$(basename "$1").out" 2>&1 &
  pids+=("$!")
}

# --- the README's script ----------------------------------------------------------------------
readme="$src/README.md"
array_script="$(awk '/With a Slurm job array:/ { found = 1; next }
  found && /^```sh$/ { inside = 1; next }
  inside && /^```$/ { exit }
  inside { print }' "$readme")"
# One line per command (backslash continuations joined).
joined="$(sed -e ':a' -e '/\\$/N; s/\\\n *//; ta' <<<"$array_script")"
sweep_line="$(grep -m1 '^placesim sweep .* --shard ' <<<"$joined" || true)"
merge_line="$(sed -n 's/^# afterwards: //p' <<<"$joined")"
# The unsharded sweep: the same command without its slice and its output file.
unsharded="$(sed -e 's/ --shard [^ ]*//' -e 's/ --format json > [^ ]*$//' <<<"$sweep_line")"
if ! grep -q '^#SBATCH --array=[0-9]*-[0-9]*$' <<<"$joined" || [ -z "$sweep_line" ] ||
  [ -z "$merge_line" ] || [ "$unsharded" = "$sweep_line" ]; then
  echo "FAIL: after 'With a Slurm job array:', $readme should show a script with" \
    "'#SBATCH --array=FIRST-LAST', 'placesim sweep ... --shard ... --format json > FILE' and" \
    "'# afterwards: placesim merge ...'; it shows:" >&2
  echo "$array_script" >&2
  exit 1
fi

# --- the cluster ------------------------------------------------------------------------------
mkdir -p "$tmp/bin" "$tmp/log" "$tmp/tasks" "$tmp/state" "$tmp/spool" "$tmp/work"
ln -s "$placesim" "$tmp/bin/placesim"
cp "$src/tests/slurm/study.textproto" "$tmp/work/study.textproto"
printf '%s\n' "$array_script" >"$tmp/array.sh"

"${bin[mungekey]}" --create --keyfile="$tmp/munge.key"
munge_socket="$tmp/munge.socket"
start_daemon "${bin[munged]}" --foreground --force --socket="$munge_socket" \
  --key-file="$tmp/munge.key" --pid-file="$tmp/munged.pid" --log-file="$tmp/log/munged.log" \
  --seed-file="$tmp/munged.seed"

host="$(hostname -s)"
user="$(id -un)"
: >"$tmp/plugstack.conf"
cat >"$tmp/slurm.conf" <<EOF
ClusterName=placesim-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
PlugStackConfig=$tmp/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$tmp/slurm.conf"

# munged answers before the Slurm daemons authenticate with it.
deadline=$((SECONDS + start_timeout))
until [ -S "$munge_socket" ]; do
  [ $SECONDS -lt $deadline ] || { echo "FAIL: munged did not open $munge_socket" >&2; exit 1; }
  sleep 0.1
done
start_daemon "${bin[slurmctld]}" -D -f "$SLURM_CONF"
start_daemon "${bin[slurmd]}" -D -f "$SLURM_CONF"
until [ "$("${bin[sinfo]}" -h -o %T 2>/dev/null)" = idle ]; do
  if [ $SECONDS -ge $deadline ]; then
    echo "FAIL: the node is not idle after ${start_timeout} s" >&2
    exit 1
  fi
  sleep 0.5
done
echo "Slurm up: node $host, $(nproc) CPUs, in $tmp"

# --- the sharded sweep ------------------------------------------------------------------------
cd "$tmp/work"
export PATH="$tmp/bin:$PATH"
jobid="$(env "$marker" timeout "$command_timeout" "${bin[sbatch]}" --parsable \
  --output="$tmp/tasks/%a.out" "$tmp/array.sh")"
jobid="${jobid%%;*}"
echo "submitted the README's array as job $jobid"
deadline=$((SECONDS + job_timeout))
while [ -n "$("${bin[squeue]}" -h -j "$jobid" -o %i 2>/dev/null)" ]; do
  if [ $SECONDS -ge $deadline ]; then
    echo "FAIL: job $jobid still queued or running after ${job_timeout} s:" >&2
    "${bin[squeue]}" -j "$jobid" >&2 || true
    exit 1
  fi
  sleep 1
done
# Every task ended COMPLETED with exit code 0 (the controller keeps them for MinJobAge).
states="$(timeout "$command_timeout" "${bin[scontrol]}" -o show job "$jobid" |
  grep -o 'JobState=[A-Z_]* .*ExitCode=[0-9:]*' |
  sed 's/JobState=\([A-Z_]*\) .*ExitCode=\([0-9:]*\)/\1 \2/' | sort | uniq -c)"
echo "array tasks (count, state, exit code):"
echo "$states"
read -r first last < <(sed -n 's/^#SBATCH --array=\([0-9]*\)-\([0-9]*\)$/\1 \2/p' "$tmp/array.sh")
tasks=$((last - first + 1))
if [ "$(awk '{ print $2, $3 }' <<<"$states")" != "COMPLETED 0:0" ] ||
  [ "$(awk '{ print $1 }' <<<"$states")" != "$tasks" ]; then
  echo "FAIL: not every one of the $tasks tasks completed with exit code 0" >&2
  grep -H . "$tmp"/tasks/*.out >&2 || true
  exit 1
fi

# --- merged shards against the unsharded sweep --------------------------------------------------
bounded() { timeout "$command_timeout" bash -c "$1"; }
echo "merging: $merge_line"
bounded "$merge_line"
bounded "${merge_line%% --format *} --format json" >merged.json
echo "unsharded: $unsharded"
bounded "$unsharded --format csv" >unsharded.csv
bounded "$unsharded --format json" >unsharded.json
csv_out="$(sed 's/.*--format csv > *//' <<<"$merge_line")"
status=0
for pair in "$csv_out unsharded.csv" "merged.json unsharded.json"; do
  read -r merged whole <<<"$pair"
  if cmp "$merged" "$whole"; then
    echo "identical: $merged and $whole ($(wc -c <"$whole") bytes, $(wc -l <"$whole") lines)"
  else
    echo "FAIL: the merged shards differ from the unsharded sweep:" >&2
    diff "$merged" "$whole" | head -20 >&2 || true
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "PASS: the README's Slurm array, merged, equals the unsharded sweep"
exit "$status"
