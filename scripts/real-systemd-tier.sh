#!/usr/bin/env bash
# shellcheck disable=SC2317  # the check functions run indirectly (check "desc" fn ..., traps)
# The `systemd` test tier: the collection's units and the vllm_launch role against a real systemd
# (252, PID 1 of a `systemd-nspawn -b` container booted from the Debian rootfs nspawn-setup.sh
# caches), and Debian's irqbalance on the environment file the collection writes.
#
#   1. units: the stand-in instance rendered by vllm_launch_wrapper into a copy of the rootfs
#      (host_root), booted, then start / bind / reconcile / timer / stop / kill / restart /
#      failing binder / reconcile while stopped / crash loop, each checked on the real systemd;
#   2. the role over SSH into the container (sshd on 127.0.0.1:$NPUOPS_SYSTEMD_SSH_PORT, a
#      throwaway key): first start, a change without restart, restart on change (new MainPID,
#      new environment, re-bound), the throttled roll-out, a plan change without restart (the
#      threads end on the new plan, binder and reconciler agree), a second run changes nothing;
#   3. irqbalance --oneshot --debug on that environment file vs the collection's parser.
#
# Prints "PASS: ..." / "FAIL: ..." per check, then "systemd tier: N passed, M failed".
# Exit 0 all passed; 1 a check failed or the tier cannot run (says why); 0 with "SKIPPED: ..."
# when NPUOPS_SKIP_REAL_SYSTEMD=1. Everything it starts is stopped on exit (trap), under a hard
# deadline (NPUOPS_SYSTEMD_DEADLINE seconds, default 900); nothing is left mounted or running.
set -uo pipefail
{  # the whole script is read before it runs: editing the file meanwhile cannot change a run

REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$REPO/.venv}
PORT=${NPUOPS_SYSTEMD_SSH_PORT:-2299}
DEADLINE=${NPUOPS_SYSTEMD_DEADLINE:-900}
HERE=$REPO/tests/real/systemd
# NPUOPS_SYSTEMD_STAGES=partition: boot, then section 4 only (the others take most of the time)
STAGES=${NPUOPS_SYSTEMD_STAGES:-all}
NAME=standin
PASSED=0
FAILED=0
T0=$(date +%s)

say() { printf 'systemd-tier: %s\n' "$*" >&2; }
cannot_run() {
    if [[ ${NPUOPS_SKIP_REAL_SYSTEMD:-} == 1 ]]; then echo "SKIPPED: $* (NPUOPS_SKIP_REAL_SYSTEMD=1)"; exit 0; fi
    echo "FAIL: the systemd tier cannot run: $* (set NPUOPS_SKIP_REAL_SYSTEMD=1 to skip it)"
    exit 1
}
if [[ ${NPUOPS_SKIP_REAL_SYSTEMD:-} == 1 ]]; then echo "SKIPPED: NPUOPS_SKIP_REAL_SYSTEMD=1"; exit 0; fi
[[ $(id -u) -eq 0 ]] || cannot_run "needs root (systemd-nspawn, nsenter)"
[[ -x $VENV/bin/ansible-playbook ]] || cannot_run "no $VENV/bin/ansible-playbook (make venv)"
for tool in nsenter setsid ssh-keygen ssh; do
    command -v $tool >/dev/null 2>&1 || cannot_run "no $tool on PATH"
done
setup_out=$("$REPO/scripts/nspawn-setup.sh")
setup_rc=$?
if [[ $setup_rc -eq 77 ]]; then cannot_run "${setup_out#SKIPPED: }"; fi
[[ $setup_rc -eq 0 ]] || cannot_run "scripts/nspawn-setup.sh failed (rc=$setup_rc)"
BASE=$(tail -1 <<<"$setup_out")
command -v systemd-nspawn >/dev/null 2>&1 || cannot_run "no systemd-nspawn after nspawn-setup.sh"
if ss -ltn 2>/dev/null | grep -E "127\.0\.0\.1:$PORT\b|\*:$PORT\b|0\.0\.0\.0:$PORT\b" >/dev/null; then
    cannot_run "port $PORT is in use (NPUOPS_SYSTEMD_SSH_PORT)"
fi

WORK=$(mktemp -d /var/tmp/npuops-systemd-tier.XXXXXX)
ROOT=$WORK/root
NSPAWN=
LEADER=
MOUNTED=
E() { timeout 120 nsenter -t "$LEADER" -a "$@"; }
cleanup() {
    trap - EXIT INT TERM
    if [[ -n $LEADER ]] && kill -0 "$LEADER" 2>/dev/null; then
        timeout 20 nsenter -t "$LEADER" -a systemctl poweroff >/dev/null 2>&1 || true
    fi
    if [[ -n $NSPAWN ]]; then
        for _ in $(seq 1 40); do kill -0 "$NSPAWN" 2>/dev/null || break; sleep 0.5; done
        if kill -0 "$NSPAWN" 2>/dev/null; then
            say "the container did not power off: killing nspawn $NSPAWN"
            kill -TERM "$NSPAWN" 2>/dev/null; sleep 2; kill -KILL -- "-$NSPAWN" 2>/dev/null || true
        fi
    fi
    if [[ -n $WATCHDOG ]]; then kill $(pgrep -P "$WATCHDOG") "$WATCHDOG" 2>/dev/null; fi
    if [[ -n $MOUNTED ]]; then umount "$ROOT" 2>/dev/null || umount -l "$ROOT" 2>/dev/null || true; fi
    rmdir /run/systemd/nspawn/propagate /run/systemd/nspawn/locks /run/systemd/nspawn 2>/dev/null
    if findmnt -rn -o TARGET | grep "^$WORK" >/dev/null; then
        say "mounts left under $WORK; not removing it"
    else
        rm -rf --one-file-system "$WORK"
    fi
}
WATCHDOG=
trap cleanup EXIT
trap 'exit 1' INT TERM

check() {  # check DESCRIPTION COMMAND...
    local what=$1; shift
    if "$@"; then echo "PASS: $what"; PASSED=$((PASSED + 1)); else echo "FAIL: $what"; FAILED=$((FAILED + 1)); fi
}
wait_for() {  # wait_for SECONDS COMMAND...
    local end=$(( $(date +%s) + $1 )); shift
    while :; do "$@" && return 0; [[ $(date +%s) -ge $end ]] && return 1; sleep 0.5; done
}
prop() { E systemctl show -p "$2" --value "$1" 2>/dev/null; }
active() { [[ $(E systemctl is-active "$1" 2>/dev/null) == "$2" ]]; }
main_pid() { prop "vllm-$NAME.service" MainPID; }
PLAN_IN=/usr/local/lib/npuops/$NAME.plan.json
bound() { E python3 /opt/standin/tree.py /run/standin-tree "$PLAN_IN" "$NAME" "$(main_pid)" >"$WORK/tree.txt" 2>&1; }
not_degraded() { local s; s=$(E systemctl is-system-running 2>/dev/null); [[ $s == running ]] || { echo "  is-system-running: $s"; E systemctl --failed --no-legend; return 1; }; }

# ---- the rootfs: an overlay on the cached one (a copy where overlayfs is missing) ---------------
mkdir -p "$WORK"/{root,upper,ovl-work,collections/ansible_collections/npuops}
ln -s "$REPO" "$WORK/collections/ansible_collections/npuops/fleet"
if mount -t overlay overlay -o "lowerdir=$BASE,upperdir=$WORK/upper,workdir=$WORK/ovl-work" "$ROOT" 2>/dev/null; then
    MOUNTED=1
else
    say "no overlayfs: copying the rootfs"
    cp -a "$BASE/." "$ROOT/"
fi
mkdir -p "$ROOT/opt/standin" "$ROOT/root/.ssh"
cp "$REPO/scripts/vllm_stand_in.py" "$HERE/tree.py" "$ROOT/opt/standin/"
ssh-keygen -q -t ed25519 -N '' -f "$WORK/id" -C npuops-systemd-tier
install -m 0600 "$WORK/id.pub" "$ROOT/root/.ssh/authorized_keys"
chmod 0700 "$ROOT/root/.ssh"
printf 'Port %s\nListenAddress 127.0.0.1\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n' \
    "$PORT" >"$ROOT/etc/ssh/sshd_config.d/npuops-tier.conf"

export ANSIBLE_COLLECTIONS_PATH=$WORK/collections ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 \
    ANSIBLE_HOST_KEY_CHECKING=False ANSIBLE_RETRY_FILES_ENABLED=False ANSIBLE_PIPELINING=True ANSIBLE_LOCAL_TEMP=$WORK/ansible-local
PLAYBOOK=$VENV/bin/ansible-playbook

# ---- 1. the units, rendered by the module into the rootfs -----------------------------------------
timeout 300 "$PLAYBOOK" -i localhost, "$HERE/render.yml" -e "repo=$REPO root=$ROOT" >"$WORK/render.log" 2>&1 \
    || { tail -30 "$WORK/render.log"; echo "FAIL: render the units"; exit 1; }
# timing only, so the timer's run is seen in seconds: no random delay, 1 s accuracy (the schedule,
# OnActiveSec=/OnUnitActiveSec= and the Wants= from the service are the unit's own)
for timer in "vllm-$NAME-reconcile.timer" vllm-slow-reconcile.timer; do
    mkdir -p "$ROOT/etc/systemd/system/$timer.d"
    printf '[Timer]\nRandomizedDelaySec=0\nAccuracySec=1s\n' >"$ROOT/etc/systemd/system/$timer.d/tier.conf"
done

# tuned (Debian's package) for section 4, into this run's overlay only: the cached rootfs stays
# as nspawn-setup.sh made it
TUNED_WHY=
if [[ ! -x $ROOT/usr/sbin/tuned-adm ]]; then
    # a chroot, not a second nspawn: nspawn refuses a root it propagated mounts into before
    cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null
    mount -t proc proc "$ROOT/proc" 2>/dev/null
    if ! timeout 300 chroot "$ROOT" sh -c 'apt-get -q update && DEBIAN_FRONTEND=noninteractive apt-get -q install -y --no-install-recommends tuned' \
        >"$WORK/tuned-install.log" 2>&1; then
        TUNED_WHY="apt-get install tuned failed: $(tail -1 "$WORK/tuned-install.log")"
    fi
    umount "$ROOT/proc" 2>/dev/null || umount -l "$ROOT/proc" 2>/dev/null
fi
setsid systemd-nspawn -D "$ROOT" -b --register=no --keep-unit --console=passive -M npuops-tier \
    >"$WORK/nspawn.log" 2>&1 </dev/null &
NSPAWN=$!
# hard deadline for the whole tier: stop what runs in the foreground (never the container: the
# trap powers it off cleanly), then the script itself; bash runs its trap once that child ended
(
    sleep "$DEADLINE"
    say "deadline of ${DEADLINE}s reached"
    for child in $(pgrep -P $$); do
        [[ $child == "$BASHPID" || $child == "$NSPAWN" ]] || kill -TERM "$child" 2>/dev/null
    done
    kill -TERM $$
) &
WATCHDOG=$!
booted() {
    LEADER=$(pgrep -P "$NSPAWN" -x systemd | sed -n 1p)
    [[ -n $LEADER ]] && [[ $(E systemctl is-system-running 2>/dev/null) =~ ^(running|degraded)$ ]]
}
wait_for 60 booted || { cat "$WORK/nspawn.log"; echo "FAIL: the container did not boot"; exit 1; }
T_BOOT=$(( $(date +%s) - T0 ))
say "booted in ${T_BOOT}s (leader $LEADER)"
check "container boots clean (is-system-running: running)" not_degraded

if [[ $STAGES != partition ]]; then
U=/etc/systemd/system/vllm-$NAME
check "systemd-analyze verify (service, bind, reconcile, timer, crash-loop service)" \
    E systemd-analyze verify "$U.service" "$U-bind.service" "$U-reconcile.service" \
    "$U-reconcile.timer" /etc/systemd/system/vllm-crash.service /etc/systemd/system/vllm-slow.service
# a crash-looping instance, in the background while the rest runs: RestartSec=10, 5 starts
E systemctl start vllm-crash.service >/dev/null 2>&1
CRASH_T0=$(date +%s)
# a slow instance (no worker for its first minute, like vLLM loading a model): its timer fires
# 10 s after the start, while nothing is there to bind yet
E systemctl start vllm-slow.service

E systemctl start "vllm-$NAME.service"
check "start: bind unit started by the service (Wants=)" wait_for 10 active "vllm-$NAME-bind.service" active
check "start: reconcile timer started by the service (Wants=)" wait_for 10 active "vllm-$NAME-reconcile.timer" active
check "start: the timer did not fire at once (OnActiveSec=, not a past OnBootSec=)" \
    bash -c "[[ \$(nsenter -t $LEADER -a systemctl show -p LastTriggerUSecMonotonic --value vllm-$NAME-reconcile.timer) =~ ^(0|)$ ]]"
check "threads bound to the plan (every process and thread of the tree)" wait_for 20 bound
cat "$WORK/tree.txt"
check "timer fires and the reconcile run succeeds" wait_for 30 bash -c \
    "[[ \$(nsenter -t $LEADER -a systemctl show -p LastTriggerUSecMonotonic --value vllm-$NAME-reconcile.timer) =~ ^[1-9] ]] \
     && [[ \$(nsenter -t $LEADER -a systemctl show -p Result --value vllm-$NAME-reconcile.service) == success ]] \
     && [[ \$(nsenter -t $LEADER -a systemctl is-active vllm-$NAME-reconcile.service) != activating ]]"
PROM=$ROOT/var/lib/prometheus/node-exporter/npuops_$NAME.prom
check "timer's run wrote the metrics" grep -qE '^npuops_binder_last_run_success\{[^}]*\} 1' "$PROM"

slow_ran() { [[ $(prop vllm-slow-reconcile.timer LastTriggerUSecMonotonic) =~ ^[1-9] && $(prop vllm-slow-reconcile.service ActiveState) != activating ]]; }
if wait_for 30 slow_ran; then
    echo "  slow instance's reconcile: Result=$(prop vllm-slow-reconcile.service Result), binder exit $(prop vllm-slow-reconcile.service ExecMainStatus)"
    grep -E '^npuops_instance_(up|workers_missing)' "$ROOT/var/lib/prometheus/node-exporter/npuops_slow.prom" 2>/dev/null | sed 's/^/  /'
fi
check "still starting (no worker yet): the timer's reconcile run ends well, not failed" bash -c \
    "[[ \$(nsenter -t $LEADER -a systemctl show -p Result --value vllm-slow-reconcile.service) == success && \
        \$(nsenter -t $LEADER -a systemctl show -p ExecMainStatus --value vllm-slow-reconcile.service) == 2 ]]"
check "still starting: the metrics say the workers are missing" \
    grep -qE '^npuops_instance_workers_missing\{[^}]*\} 2' "$ROOT/var/lib/prometheus/node-exporter/npuops_slow.prom"
check "still starting: the host is not degraded" not_degraded
E systemctl stop vllm-slow.service

E systemctl stop "vllm-$NAME-bind.service"       # the reconciler's job from here on
ACL=$(awk '$1 == "NPU0" && $4 == "acl_thread" {sub("tid=", "", $3); print $3}' "$WORK/tree.txt")
E taskset -pc 1 "$ACL" >/dev/null
E systemctl start "vllm-$NAME-reconcile.service"
check "reconcile pins the drifted thread back" bound
check "reconcile wrote the drift to its metrics" \
    grep -q 'npuops_binding_drift_threads{instance="standin",device="NPU0",role="acl"} 1' "$PROM"

OLD=$(main_pid)
E systemctl restart "vllm-$NAME.service"
check "restart: new main process" bash -c "[[ \$(nsenter -t $LEADER -a systemctl show -p MainPID --value vllm-$NAME.service) != $OLD ]]"
check "restart: bind unit back" wait_for 10 active "vllm-$NAME-bind.service" active
check "restart: new tree re-bound" wait_for 20 bound

E kill -9 "$(main_pid)"
check "kill main: bind unit stopped with it (BindsTo=)" wait_for 10 active "vllm-$NAME-bind.service" inactive
check "kill main: Restart=on-failure brings it back after RestartSec=10" wait_for 25 \
    bash -c "[[ \$(nsenter -t $LEADER -a systemctl show -p NRestarts --value vllm-$NAME.service) == 1 ]] && \
             [[ \$(nsenter -t $LEADER -a systemctl is-active vllm-$NAME.service) == active ]]"
check "kill main: bind unit back and the new tree re-bound" wait_for 20 bash -c \
    "[[ \$(nsenter -t $LEADER -a systemctl is-active vllm-$NAME-bind.service) == active ]] && \
     nsenter -t $LEADER -a python3 /opt/standin/tree.py /run/standin-tree $PLAN_IN $NAME \$(nsenter -t $LEADER -a systemctl show -p MainPID --value vllm-$NAME.service) >/dev/null"

E systemctl stop "vllm-$NAME.service"
check "stop: bind unit stopped too" active "vllm-$NAME-bind.service" inactive
check "stop: no process of the tree left" bash -c "! nsenter -t $LEADER -a pgrep -f 'vllm_stand_in|standin-bind' >/dev/null"
before=$(stat -c %Y "$PROM")
sleep 1
E systemctl start "vllm-$NAME-reconcile.service"
rc=$?
status=$(prop "vllm-$NAME-reconcile.service" ExecMainStatus)
echo "  reconcile with the service stopped: systemctl rc=$rc, binder exit status $status"
check "reconcile while stopped: the unit does not fail (binder exit $status is a success)" \
    bash -c "[[ $rc == 0 ]] && [[ \$(nsenter -t $LEADER -a systemctl is-failed vllm-$NAME-reconcile.service) != failed ]]"
check "reconcile while stopped: it still wrote the metrics" bash -c "[[ \$(stat -c %Y $PROM) -gt $before ]]"
if grep -q '^npuops_instance_up' "$PROM"; then
    check "reconcile while stopped: metrics say the instance is down" grep -qE '^npuops_instance_up\{[^}]*\} 0' "$PROM"
fi
grep -E '^npuops_(instance|binder_last)' "$PROM" | sed 's/^/  /'

# the crash loop: StartLimitBurst starts within StartLimitIntervalSec, then it stays failed
# (systemd 252 logs "Start request repeated too quickly"; Result= keeps the last exit's)
crashed() {
    [[ $(prop vllm-crash.service ActiveState) == failed ]] &&
        E journalctl -u vllm-crash.service -o cat --no-pager | grep 'Start request repeated too quickly' >/dev/null
}
check "crash loop reaches the start limit (failed: start request repeated too quickly)" wait_for 90 crashed
echo "  crash loop: $(prop vllm-crash.service NRestarts) restarts, limit hit $(( $(date +%s) - CRASH_T0 ))s after the first start"
E systemctl reset-failed vllm-crash.service
check "no unit failed and the host is not degraded (reconcile while stopped, timer still running)" \
    wait_for 15 not_degraded

# a failing binder never takes the service down (last: the failed bind unit degrades the host)
cp -p "$ROOT$PLAN_IN" "$WORK/plan.good"
sed -i 's/"name": *"standin"/"name": "other"/' "$ROOT$PLAN_IN"
E systemctl start "vllm-$NAME.service"
check "failing binder (a plan for another instance): the bind unit fails" wait_for 15 active "vllm-$NAME-bind.service" failed
sleep 2
check "failing binder: the service stays up" active "vllm-$NAME.service" active
cp -p "$WORK/plan.good" "$ROOT$PLAN_IN"
E systemctl stop "vllm-$NAME.service"
E systemctl reset-failed
T_UNITS=$(( $(date +%s) - T0 ))

# ---- 2. the role over SSH --------------------------------------------------------------------------
# from scratch, as on a new host: the role's first start; the drop-ins make a restart last 3 s
# each, so a throttled roll-out (one host at a time) cannot overlap
E systemctl disable --now "vllm-$NAME.service" "vllm-$NAME-bind.service" "vllm-$NAME-reconcile.timer" >/dev/null 2>&1
for unit in "vllm-$NAME" vllm-standin2; do
    mkdir -p "$ROOT/etc/systemd/system/$unit.service.d"
    printf '[Service]\nExecStopPost=/bin/sleep 3\n' >"$ROOT/etc/systemd/system/$unit.service.d/tier.conf"
done
E systemctl daemon-reload
E systemctl reset-failed
cat >"$WORK/inventory.ini" <<EOF
[ct]
ct-a npuops_tier_instance=$NAME
ct-b npuops_tier_instance=standin2
[ct:vars]
ansible_host=127.0.0.1
ansible_port=$PORT
ansible_user=root
ansible_ssh_private_key_file=$WORK/id
ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ControlMaster=no -o ControlPath=none'
ansible_python_interpreter=/usr/bin/python3
EOF
check "sshd in the container answers on 127.0.0.1:$PORT" wait_for 20 \
    ssh -q -i "$WORK/id" -p "$PORT" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
    -o ConnectTimeout=3 root@127.0.0.1 true
ROLE_RUNS=0
role() {  # role LOG EXTRA-VARS...
    local log=$WORK/role-$1.log; shift
    ROLE_RUNS=$((ROLE_RUNS + 1))
    timeout 600 "$PLAYBOOK" -i "$WORK/inventory.ini" "$HERE/role.yml" -e "repo=$REPO" "$@" >"$log" 2>&1
    local rc=$?
    [[ $rc -eq 0 ]] || { echo "  role run failed (rc=$rc), $log:"; tail -25 "$log" | sed 's/^/  /'; }
    return "$rc"
}
environ_has() { E cat "/proc/$1/environ" 2>/dev/null | tr '\0' '\n' | grep -x "$2" >/dev/null; }

check "role run 1 (first start) succeeds" role first -e lifetime=3600
check "role run 1: the service and its bind unit and timer run, enabled" bash -c \
    "for u in vllm-$NAME.service vllm-$NAME-bind.service vllm-$NAME-reconcile.timer vllm-standin2.service; do \
       [[ \$(nsenter -t $LEADER -a systemctl is-active \$u) == active ]] || exit 1; \
       [[ \$(nsenter -t $LEADER -a systemctl is-enabled \$u) == enabled ]] || exit 1; done"
check "role run 1: the units the module rendered in the sandbox are what the role installs (unchanged)" \
    bash -c "grep -A4 'TASK \[npuops.fleet.vllm_launch : Install' $WORK/role-first.log | grep 'ok: \[ct-a\]' >/dev/null && \
             ! grep -A4 'TASK \[npuops.fleet.vllm_launch : Install' $WORK/role-first.log | grep 'changed: \[ct-a\]' >/dev/null"
check "role run 1: threads bound" wait_for 20 bound
check "role run 1: the host is not degraded" not_degraded
mode=$(E grep -hE '^cgroup2? ' /proc/self/mounts | awk '{print $1}' | sort -u | paste -sd+)
if [[ $mode == "cgroup+cgroup2" || $mode == cgroup ]]; then   # v1 or hybrid, as on this VM
    check "role run 1: the module warns that AllowedCPUs= is not enforced here (cgroup mounts: $mode)" \
        grep -q 'systemd ignores AllowedCPUs=' "$WORK/role-first.log"
fi
PID1=$(main_pid)

check "role run 2 (wrapper env changed, default: no restart) succeeds" role norestart -e lifetime=3601
check "role run 2: the wrapper changed" bash -c "[[ \$(awk '\$1 == \"ct-a\" {print}' $WORK/role-norestart.log | grep -o 'changed=[0-9]*') =~ ^changed=[1-9] ]]"
check "role run 2: MainPID unchanged ($PID1)" bash -c "[[ $PID1 != 0 && \$(nsenter -t $LEADER -a systemctl show -p MainPID --value vllm-$NAME.service) == $PID1 ]]"

BIND_BEFORE=$(prop "vllm-$NAME-bind.service" MainPID)
PID2B=$(prop vllm-standin2.service MainPID)
check "role run 3 (restart_on_change: true, throttle 1) succeeds" role restart -e lifetime=3602 -e npuops_vllm_restart_on_change=true
PID3=$(main_pid)
check "role run 3: MainPID changed ($PID1 -> $PID3)" bash -c "[[ $PID3 != $PID1 && $PID3 != 0 ]]"
check "role run 3: the new process has the new environment (STAND_IN_LIFETIME=3602)" environ_has "$PID3" STAND_IN_LIFETIME=3602
check "role run 3: bind unit restarted with it" bash -c "[[ \$(nsenter -t $LEADER -a systemctl show -p MainPID --value vllm-$NAME-bind.service) != $BIND_BEFORE ]]"
check "role run 3: the new tree re-bound" wait_for 20 bound
check "role run 3: the other host's instance restarted too" bash -c "[[ \$(nsenter -t $LEADER -a systemctl show -p MainPID --value vllm-standin2.service) != $PID2B ]]"
# throttle 1: one host's restart (stop, 3 s ExecStopPost, start) ends before the other's begins
span() { echo "$(prop "$1" ActiveExitTimestampMonotonic) $(prop "$1" ActiveEnterTimestampMonotonic)"; }
no_overlap() {
    local a b; read -r -a a <<<"$(span "vllm-$NAME.service")"; read -r -a b <<<"$(span vllm-standin2.service)"
    echo "  restart spans (monotonic us): ct-a ${a[0]}..${a[1]}  ct-b ${b[0]}..${b[1]}"
    [[ ${a[1]} -le ${b[0]} || ${b[1]} -le ${a[0]} ]]
}
check "role run 3: the roll-out is throttled (npuops_vllm_restart_throttle=1: the two restarts do not overlap)" no_overlap
check "role run 3b (throttle 2) succeeds" role restart2 -e lifetime=3603 -e npuops_vllm_restart_on_change=true -e npuops_vllm_restart_throttle=2
negate() { ! "$@"; }
check "role run 3b: with npuops_vllm_restart_throttle=2 the two restarts do overlap (the check above can fail)" \
    negate no_overlap

E systemctl reset-failed
wait_for 20 active "vllm-$NAME-bind.service" active
PID4=$(main_pid)
BIND_BEFORE=$(prop "vllm-$NAME-bind.service" MainPID)
check "role run 4 (plan change, default: no restart) succeeds" role plan -e lifetime=3603 -e plan_swap=true
check "role run 4: MainPID unchanged" bash -c "[[ $PID4 != 0 && $PID4 == \$(nsenter -t $LEADER -a systemctl show -p MainPID --value vllm-$NAME.service) ]]"
BIND_AFTER=$(prop "vllm-$NAME-bind.service" MainPID)
check "role run 4: the running bind unit was restarted on the new plan (try-restart: $BIND_BEFORE -> $BIND_AFTER)" \
    bash -c "[[ $BIND_AFTER != $BIND_BEFORE && $BIND_AFTER != 0 ]]"
check "role run 4: threads end on the new plan" wait_for 25 bound
cat "$WORK/tree.txt"
sleep 12   # a reconcile run (10 s timer) and the bind unit's follow loop both had their turn
check "role run 4: ... and stay there (binder and reconciler agree, no fight)" bound
check "role run 5 (the same again) succeeds" role again -e lifetime=3603 -e plan_swap=true
unchanged_again() {  # both hosts' recap says changed=0; else show the tasks that changed
    [[ $(awk '$1 == "ct-a" || $1 == "ct-b"' "$WORK/role-again.log" | grep -c 'changed=0') == 2 ]] && return 0
    grep -B4 '^changed:' "$WORK/role-again.log" | sed 's/^/    /'
    return 1
}
check "role run 5: a second run changes nothing" unchanged_again
check "after the role: the host is not degraded" not_degraded
T_ROLE=$(( $(date +%s) - T0 - T_UNITS ))

# ---- 3. irqbalance on the environment file the collection writes -----------------------------------
PYTHONPATH=$WORK/collections
export PYTHONPATH
envfiles=$(prop irqbalance.service EnvironmentFiles)
if cfg=$("$VENV/bin/python" "$HERE/irqbalance_check.py" render "$ROOT" "$envfiles" 1 2>"$WORK/irqbalance-render.err"); then
    echo "  irqbalance config ($cfg), as written:"
    grep -E '^(IRQBALANCE_|# npuops)' "$ROOT$cfg" | sed 's/^/    /'
    # Debian's unit (its EnvironmentFile= lines, $IRQBALANCE_ARGS) in one pass; irqbalance may
    # not change this VM's IRQs from inside the test: every path read-only
    mkdir -p "$ROOT/etc/systemd/system/irqbalance.service.d"
    # shellcheck disable=SC2016  # $IRQBALANCE_ARGS is for systemd to expand, not bash
    printf '[Unit]\nConditionVirtualization=\n[Service]\nType=oneshot\nExecStart=\nExecStart=/usr/sbin/irqbalance --oneshot --debug --interval=1 $IRQBALANCE_ARGS\nReadWritePaths=\nReadOnlyPaths=/proc/irq\n' \
        >"$ROOT/etc/systemd/system/irqbalance.service.d/tier.conf"
    E systemctl daemon-reload
    E systemctl start irqbalance.service
    E journalctl -b -u irqbalance.service -o cat --no-pager >"$WORK/irqbalance.out" 2>&1
    grep -E 'Banned CPUs|was BANNED|CPU number|Prevent irq' "$WORK/irqbalance.out" | sed 's/^/    irqbalance: /'
    "$VENV/bin/python" "$HERE/irqbalance_check.py" compare "$ROOT$cfg" "$WORK/irqbalance.out" | sed 's/^/  /'
    check "irqbalance honours the bans exactly as the parser predicts (banned CPUs, banned IRQs)" \
        bash -c "'$VENV/bin/python' '$HERE/irqbalance_check.py' compare '$ROOT$cfg' '$WORK/irqbalance.out' >/dev/null"
else
    cat "$WORK/irqbalance-render.err"
    check "irqbalance config rendered" false
fi
fi  # STAGES != partition

# ---- 4. the host CPU partition (npu_cpu_partition on the container's systemd) ------------------
# The plan of the container's two CPUs: CPU 1 the worker's (isolated), CPU 0 housekeeping.
T_PART0=$(date +%s)
printf '[ct]\nct-a\n[ct:vars]\nansible_host=127.0.0.1\nansible_port=%s\nansible_user=root\nansible_ssh_private_key_file=%s\nansible_ssh_common_args=%s\nansible_python_interpreter=/usr/bin/python3\n' \
    "$PORT" "$WORK/id" "'-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ControlMaster=no -o ControlPath=none'" \
    >"$WORK/partition.ini"
wait_for 20 ssh -q -i "$WORK/id" -p "$PORT" -o BatchMode=yes -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null -o ConnectTimeout=3 root@127.0.0.1 true
PMODE=$(E grep -hE '^cgroup2? ' /proc/self/mounts | awk '{print $1 " " $2}' | sort -u | paste -sd' ')
if E grep -qw cpuset /sys/fs/cgroup/cgroup.controllers 2>/dev/null && ! E grep -qE '^cgroup ' /proc/self/mounts; then
    PCG=v2
else
    PCG=v1
fi
echo "  partition: the container's cgroups: $PMODE -> the $PCG path"
partition() {  # partition LOG STATE [EXTRA...]
    local log=$WORK/partition-$1.log state=$2; shift 2
    timeout 300 "$PLAYBOOK" -i "$WORK/partition.ini" "$HERE/partition.yml" -e "state=$state tier_cgroup=$PCG" "$@" >"$log" 2>&1
    local rc=$?
    [[ $rc -eq 0 ]] || { echo "  partition run failed (rc=$rc), $log:"; tail -25 "$log" | sed 's/^/  /'; }
    return "$rc"
}
# shellcheck disable=SC2016  # awk's own $1, not the shell's
recap_changed() { awk '$1 == "ct-a"' "$1" | grep -o 'changed=[0-9]*'; }
# shellcheck disable=SC2016  # awk's own $2
allowed_of() { E awk '/^Cpus_allowed_list/ {print $2}' "/proc/$1/status"; }
E systemctl reset-failed >/dev/null 2>&1
E systemctl start "vllm-$NAME.service"      # an instance already running in system.slice
wait_for 10 active "vllm-$NAME.service" active
E systemctl stop tuned.service >/dev/null 2>&1  # tuned's part comes last
check "partition: check mode writes nothing" bash -c \
    "'$PLAYBOOK' -i '$WORK/partition.ini' '$HERE/partition.yml' -e 'state=present tier_cgroup=$PCG tuned=never' --check >'$WORK/partition-check.log' 2>&1 \
     && [[ ! -e '$ROOT/var/lib/npuops/cpu_partition.json' && ! -e '$ROOT/etc/systemd/system.conf.d/50-npuops-cpu-partition.conf' && ! -e '$ROOT/etc/systemd/system/system.slice.d/50-npuops-cpu-partition.conf' ]]"
check "partition: applied on the live systemd" partition on present -e tuned=never
grep -E '"(isolated|housekeeping|restarted|reexec_needed)"|read-only here' "$WORK/partition-on.log" | sed -n '1,12s/^/  /p'
E systemctl restart "vllm-$NAME.service"   # v1: the instance moves to its slice at a restart
wait_for 10 active "vllm-$NAME.service" active
E systemd-run --unit=npuops-probe.service /bin/sleep 600 >/dev/null 2>&1
wait_for 10 active npuops-probe.service active
PROBE=$(prop npuops-probe.service MainPID)
echo "  probe service (system.slice): $(prop npuops-probe.service ControlGroup), Cpus_allowed_list $(allowed_of "$PROBE")"
check "partition: a service started in system.slice lands on the housekeeping CPU (0)" \
    bash -c "[[ \$(nsenter -t $LEADER -a awk '/^Cpus_allowed_list/ {print \$2}' /proc/$PROBE/status) == 0 ]]"
VPID=$(main_pid)
echo "  vLLM unit: $(prop "vllm-$NAME.service" ControlGroup), main process Cpus_allowed_list $(allowed_of "$VPID")"
check "partition: the vLLM unit runs in npuops-vllm.slice (under npuops.slice, not system.slice)" \
    bash -c "[[ \$(nsenter -t $LEADER -a systemctl show -p ControlGroup --value vllm-$NAME.service) == /npuops.slice/npuops-vllm.slice/vllm-$NAME.service ]]"
# every thread of the tree on its planned CPUs, the isolated CPU 1 included (a cut tree could not be)
check "partition: the vLLM tree is bound on its pools, the isolated CPU included" wait_for 20 bound
if [[ $PCG == v2 ]]; then
    check "partition: system.slice's effective cpuset is the housekeeping CPU" \
        bash -c "[[ \$(nsenter -t $LEADER -a cat /sys/fs/cgroup/system.slice/cpuset.cpus.effective) == 0 ]]"
fi
check "partition: a second run changes nothing" bash -c "\
    '$PLAYBOOK' -i '$WORK/partition.ini' '$HERE/partition.yml' -e 'state=present tier_cgroup=$PCG tuned=never' >'$WORK/partition-again.log' 2>&1 \
    && [[ \$(awk '\$1 == \"ct-a\"' '$WORK/partition-again.log' | grep -o 'changed=[0-9]*') == changed=0 ]]"
check "partition: the host is not degraded" not_degraded
E systemctl stop npuops-probe.service >/dev/null 2>&1
check "partition: taken back (state=absent)" partition off absent
E systemd-run --unit=npuops-probe2.service /bin/sleep 600 >/dev/null 2>&1
wait_for 10 active npuops-probe2.service active
check "partition: taken back - a new service may run on every CPU again (0-1)" \
    bash -c "[[ \$(nsenter -t $LEADER -a awk '/^Cpus_allowed_list/ {print \$2}' /proc/\$(nsenter -t $LEADER -a systemctl show -p MainPID --value npuops-probe2.service)/status) == 0-1 ]]"
check "partition: taken back - no partition file left" bash -c \
    "! ls '$ROOT'/etc/systemd/system/*.d/50-npuops-cpu-partition.conf '$ROOT/etc/systemd/system.conf.d/50-npuops-cpu-partition.conf' '$ROOT/etc/tmpfiles.d/npuops-cpu-partition.conf' '$ROOT/var/lib/npuops/cpu_partition.json' 2>/dev/null | grep -c . >/dev/null"
E systemctl stop npuops-probe2.service >/dev/null 2>&1

# tuned from Debian's package (installed into the container's root before the boot when it could be)
if E test -x /usr/sbin/tuned-adm; then
    E systemctl start tuned.service
    wait_for 30 bash -c "[[ \$(nsenter -t $LEADER -a systemctl is-active tuned.service) == active ]]"
    TUNED_BEFORE=$(E tuned-adm active 2>&1 | sed -n 's/^Current active profile: //p')
    # shellcheck disable=SC2016  # dpkg-query's own ${Version}
    echo "  tuned $(E dpkg-query -W -f='${Version}' tuned) active, profile before: ${TUNED_BEFORE:-none}"
    E systemctl restart "vllm-$NAME.service"; wait_for 10 active "vllm-$NAME.service" active
    wait_for 20 bound
    # nothing re-pins from here: what tuned moves stays moved
    E systemctl stop "vllm-$NAME-reconcile.timer" "vllm-$NAME-bind.service" >/dev/null 2>&1
    # a process allowed on CPU 1 outside the vLLM trees: tuned's scheduler must move it, not the vLLM tree
    E systemd-run --unit=npuops-probe3.service -p CPUAffinity=0-1 /bin/sleep 600 >/dev/null 2>&1
    wait_for 10 active npuops-probe3.service active
    check "tuned: the partition drives tuned (profile including cpu-partitioning)" partition tuned present -e tuned=auto
    E tuned-adm active 2>&1 | sed 's/^/  /'
    { E journalctl -u tuned.service -o cat --no-pager; E cat /var/log/tuned/tuned.log; } 2>/dev/null \
        | grep -iE 'error|isolated|scheduler|cpu-partitioning|npuops' | tail -12 | sed 's/^/  tuned: /'
    check "tuned: its active profile is npuops-cpu-partition" bash -c \
        "nsenter -t $LEADER -a tuned-adm active 2>&1 | grep -c 'Current active profile: npuops-cpu-partition' >/dev/null"
    P3=$(prop npuops-probe3.service MainPID)
    echo "  after tuned: probe3 Cpus_allowed_list $(allowed_of "$P3")"
    # tuned's scheduler plugin imports perf (tuned/plugins/plugin_scheduler.py); Debian's tuned
    # depends on no package that provides it (bookworm has no python3-perf): the plugin does not
    # load there and moves nothing - said, not counted as a pass
    if E python3 -c 'import perf' >/dev/null 2>&1; then
        check "tuned: its scheduler moved a process outside the vLLM trees off the isolated CPU" \
            bash -c "[[ \$(nsenter -t $LEADER -a awk '/^Cpus_allowed_list/ {print \$2}' /proc/$P3/status) == 0 ]]"
    else
        echo "  tuned: no python perf module in the container: tuned's scheduler plugin cannot load, no process is moved (not checked)"
    fi
    # with the scheduler plugin loaded this is the cgroup_ps_blacklist at work; without it, only
    # that nothing else in the profile moved the tree
    check "tuned: the vLLM tree kept its CPUs, the isolated one included" bound
    sed -n '1,12s/^/  /p' "$WORK/tree.txt"
    check "tuned: taken back - the previous profile is active again" bash -c \
        "'$PLAYBOOK' -i '$WORK/partition.ini' '$HERE/partition.yml' -e 'state=absent tier_cgroup=$PCG' >'$WORK/partition-tuned-off.log' 2>&1 \
         && nsenter -t $LEADER -a tuned-adm active 2>&1 | grep -c 'Current active profile: ${TUNED_BEFORE:-none}' >/dev/null"
    E systemctl stop npuops-probe3.service >/dev/null 2>&1
else
    echo "  tuned: not installed in the container (${TUNED_WHY:-see above}): its checks did not run"
    check "tuned: installed in the container" false
fi
E systemctl stop "vllm-$NAME.service" >/dev/null 2>&1
T_PART=$(( $(date +%s) - T_PART0 ))
echo "systemd tier: partition section ${T_PART}s"

T_ALL=$(( $(date +%s) - T0 ))
echo "systemd tier: times: boot ${T_BOOT}s, units ${T_UNITS:-0}s, role ${T_ROLE:-0}s (${ROLE_RUNS:-0} runs), partition ${T_PART}s, total ${T_ALL}s"
echo "systemd tier: $PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]
exit
}
