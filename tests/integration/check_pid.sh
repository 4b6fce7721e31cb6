#!/usr/bin/env bash
# agentrun check --pid: a process confined by hand with util-linux (unshare: own pid,
# mount, net, uts, ipc and cgroup namespaces; a read-only root; tmpfs over /tmp and the
# credential places; setpriv: uid 1000, no capabilities, no_new_privs; a memory/pids/cpu
# cgroup where this test may create one) reports exactly what it still lacks, and a
# plain host shell reports the many things it lacks. Needs root.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
need_root
need_cmd unshare
need_cmd setpriv
A=$AGENTRUN

cat >"$AR_TMP/policy.json" <<'JSON'
{
  "name": "pidtest",
  "network": "none",
  "tmpfs": ["/tmp"],
  "limits": {"pids": 64, "memory": "256m", "cpus": "1"},
  "user": "1000",
  "seccomp": "default"
}
JSON

# cgroup_dir CONTROLLER: a fresh v1 cgroup below this test's own one, or nothing when
# this test sits in the hierarchy's root (we never create cgroups at the root).
cgroup_dir() {
	local ctl=$1 path mnt
	path=$(awk -F: -v c="$ctl" '{n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3}' /proc/self/cgroup)
	mnt=$(awk -v c="$ctl" '{for (i = 7; i <= NF; i++) if ($i == "-") break;
		if ($(i + 1) != "cgroup") next; n = split($(i + 3), a, ",");
		for (j = 1; j <= n; j++) if (a[j] == c) { print $5; exit }}' /proc/self/mountinfo)
	if [ -z "$path" ] || [ "$path" = / ] || [ -z "$mnt" ] || [ ! -d "$mnt$path" ]; then
		return 0
	fi
	mkdir "$mnt$path/$AR_TAG-$ctl" && echo "$mnt$path/$AR_TAG-$ctl"
}

# Cgroups this test made: removed last (cleanups run in reverse), once their process is
# gone, which takes the kernel a moment.
CG_DIRS=()
remove_cgroups() {
	local d i
	for d in "${CG_DIRS[@]}"; do
		for i in $(seq 1 40); do rmdir "$d" 2>/dev/null && break; sleep 0.05; done
	done
}
on_exit remove_cgroups

# --- the confined process -------------------------------------------------------------
# shellcheck disable=SC2016
unshare --fork --pid --mount --net --uts --ipc --cgroup --propagation private sh -c '
	mount -o remount,bind,ro / &&
	mount -t tmpfs -o size=1m tmpfs /tmp &&
	mount -t tmpfs -o size=1m tmpfs /root &&
	mount -t tmpfs -o size=1m tmpfs /home &&
	mount -t tmpfs -o size=1m tmpfs /run &&
	{ [ -L /var/run ] || mount -t tmpfs -o size=1m tmpfs /var/run; } &&
	exec env -i PATH=/usr/bin:/bin setpriv --reuid=1000 --regid=1000 --clear-groups \
		--inh-caps=-all --bounding-set=-all --no-new-privs sleep 60' &
launcher=$!
on_exit "kill -KILL $launcher; wait $launcher"
pid=$(descendant "$launcher" sleep) || { fail "the confined sleep did not start"; finish; }
on_exit "kill -KILL $pid"

expected_limits=""
limit_finding() { expected_limits+="$1"$'\n'; }
mem=$(cgroup_dir memory)
if [ -n "$mem" ]; then
	CG_DIRS+=("$mem")
	echo 268435456 >"$mem/memory.limit_in_bytes"
	echo "$pid" >"$mem/cgroup.procs"
else
	limit_finding "DRIFT memory limit expected 268435456 actual unlimited"
fi
pids=$(cgroup_dir pids)
if [ -n "$pids" ]; then
	CG_DIRS+=("$pids")
	echo 64 >"$pids/pids.max"
	echo "$pid" >"$pids/cgroup.procs"
else
	limit_finding "DRIFT pids limit expected 64 actual unlimited"
fi
cpu=$(cgroup_dir cpu)
if [ -n "$cpu" ]; then
	CG_DIRS+=("$cpu")
	echo 100000 >"$cpu/cpu.cfs_period_us"
	echo 100000 >"$cpu/cpu.cfs_quota_us"
	echo "$pid" >"$cpu/cgroup.procs"
else
	limit_finding "DRIFT cpu limit expected 1 actual unlimited"
fi
# the report lists limits in the order pids, memory, cpu
ordered_limits=$(printf '%s' "$expected_limits" | grep -E 'pids' || true)
ordered_limits+=$'\n'$(printf '%s' "$expected_limits" | grep -E 'memory' || true)
ordered_limits+=$'\n'$(printf '%s' "$expected_limits" | grep -E 'cpu' || true)
ordered_limits=$(printf '%s\n' "$ordered_limits" | sed '/^$/d')

expect_status "confined process: drift (exit 1)" 1 "$A" check --policy "$AR_TMP/policy.json" --pid "$pid"
want="DRIFT seccomp expected filter actual disabled"
[ -n "$ordered_limits" ] && want+=$'\n'"$ordered_limits"
expect_eq "confined process: exactly what it lacks" "$want" "$(grep '^DRIFT' "$AR_TMP/out")"
expect_eq "confined process: summary" "pid $pid vs policy pidtest: $(grep -c '^DRIFT' "$AR_TMP/out") drift finding(s)" \
	"$(tail -1 "$AR_TMP/out")"

expect_status "confined process --json: exit 1" 1 "$A" check --policy "$AR_TMP/policy.json" --pid "$pid" --json
expect_eq "confined process --json: first finding" "seccomp filter disabled" \
	"$(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["findings"][0]; print(f["what"], f["expected"], f["actual"])' "$AR_TMP/out")"

# A policy that allows no seccomp and asks for nothing the cgroups lack checks clean.
if [ -z "$ordered_limits" ]; then
	sed 's/"default"/"unconfined"/' "$AR_TMP/policy.json" >"$AR_TMP/unconfined.json"
	expect_status "confined process, unconfined policy: no drift" 0 \
		"$A" check --policy "$AR_TMP/unconfined.json" --pid "$pid"
fi

# A secret and a proxy variable in the environment: named, the value never printed.
# shellcheck disable=SC2016
unshare --fork --pid --net sh -c 'exec env -i GITHUB_TOKEN=ghp_leakedvalue123 HTTPS_PROXY=http://10.254.3.1:3128 sleep 60' &
leaky_launcher=$!
on_exit "kill -KILL $leaky_launcher; wait $leaky_launcher"
leaky=$(descendant "$leaky_launcher" sleep) || { fail "the leaky sleep did not start"; finish; }
on_exit "kill -KILL $leaky"
expect_status "secret in environ: drift" 1 "$A" check --policy "$AR_TMP/policy.json" --pid "$leaky"
expect_match "secret in environ: named" "^DRIFT secret in environment GITHUB_TOKEN expected absent actual set$" "$(cat "$AR_TMP/out")"
expect_match "proxy variable under network none" "^DRIFT proxy variable HTTPS_PROXY expected unset actual http://10.254.3.1:3128$" "$(cat "$AR_TMP/out")"
expect_nomatch "secret in environ: value never printed" "ghp_leakedvalue123" "$(cat "$AR_TMP/out")"
expect_nomatch "own net namespace: not reported shared" "^DRIFT namespace net " "$(cat "$AR_TMP/out")"
expect_match "host mount namespace: reported" "^DRIFT namespace mnt expected private actual host$" "$(cat "$AR_TMP/out")"

# --- a plain host shell ----------------------------------------------------------------
bash -c 'exec sleep 60' &
host=$!
on_exit "kill -KILL $host"
expect_status "host process: drift (exit 1)" 1 "$A" check --policy "$AR_TMP/policy.json" --pid "$host"
for line in "user expected 1000 actual 0" \
	"no_new_privs expected 1 actual 0" \
	"seccomp expected filter actual disabled" \
	"read-only rootfs expected true actual false" \
	"namespace pid expected private actual host" \
	"namespace mnt expected private actual host" \
	"namespace net expected private actual host"; do
	expect_match "host process: $line" "^DRIFT $line\$" "$(cat "$AR_TMP/out")"
done
expect_match "host process: capabilities" "^DRIFT capabilities CapEff expected 0000000000000000 actual [0-9a-f]{16}$" "$(cat "$AR_TMP/out")"
n=$(grep -c '^DRIFT' "$AR_TMP/out")
if [ "$n" -ge 12 ]; then pass "host process: $n findings"; else fail "host process: only $n findings"; fi

# --- bad input -------------------------------------------------------------------------
sh -c 'exit 0' &
gone=$!
wait "$gone" || true
expect_status "a process that is gone: exit 2" 2 "$A" check --policy "$AR_TMP/policy.json" --pid "$gone"
expect_eq "a process that is gone: message" "agentrun: check: --pid $gone: no such process" "$(cat "$AR_TMP/err")"
expect_status "--pid 0: exit 2" 2 "$A" check --policy "$AR_TMP/policy.json" --pid 0

finish
