# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NPU soft-share (软切分): capacity, the Volcano ``chip1-softShareDev`` rules, placement
what-if, and the Ascend device-plugin configuration (DaemonSet manifest, node labels).

Pure functions over plain data. Two rule sets exist and both are implemented:

- ``shipped``: what MindCluster 26.x code does (device plugin + ascend-for-volcano);
- ``rfc``: the differing rules of the RFC text (combined usage <= 100 %, threshold 0.25,
  used-chip score capped at 15).

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError

# Each physical chip (die, with single-die mode on A3) is advertised as this many devices.
SHARE_DEV_COUNT = 100

# The device plugin's getDevState(): DCMI health 0 (npu-smi "OK") and 1 (general alarm,
# npu-smi "Warning") are Healthy; every other state is Unhealthy.
HEALTHY_STATES = ("ok", "warning")


class SoftShareError(NpuopsError):
    """A soft-share input (job, allocation, plugin configuration) is invalid."""

    def __init__(self, source, msg):
        self.source = source
        self.msg = msg
        super(SoftShareError, self).__init__("%s: %s" % (source, msg))


def is_healthy(health):
    """True when the device plugin would report a chip with this npu-smi Health as Healthy."""
    return str(health or "").strip().lower() in HEALTHY_STATES


def _chip_groups(npus, device_type, single_die_mode):
    """Health lists per advertised chip. A3 without single-die mode: one chip per package."""
    if device_type == "A3" and not single_die_mode:
        groups = {}
        order = []
        for npu in npus:
            key = npu.get("npu_id")
            if key not in groups:
                groups[key] = []
                order.append(key)
            groups[key].append(npu.get("health"))
        return [groups[key] for key in order]
    return [[npu.get("health")] for npu in npus]


def capacity(npus, device_type, single_die_mode=True):
    """Soft-share capacity of one host, as the device plugin advertises it to kubelet.

    ``npus``: the facts' ``npus`` list (one entry per logic NPU, i.e. per die on A3), each
    with ``health``. Every healthy chip is 100 devices; an unhealthy chip makes all its 100
    devices Unhealthy (-100). On A3, single-die mode (``-useSingleDieMode=true``, required for
    soft share on A3 inference hosts) counts each die as a chip; without it the two dies of a
    package are one chip, healthy only when both dies are.
    """
    groups = _chip_groups(list(npus or []), device_type, single_die_mode)
    healthy = sum(1 for healths in groups if all(is_healthy(h) for h in healths))
    return {"chips_total": len(groups), "chips_healthy": healthy,
            "capacity": healthy * SHARE_DEV_COUNT}


# ---------------------------------------------------------------------------------------------
# Volcano chip1-softShareDev rules
# ---------------------------------------------------------------------------------------------

RULES = ("shipped", "rfc")
POLICIES = ("fixed-share", "elastic", "best-effort")
# Policy values the device plugin writes into npu_info.config (scheduling-policy=).
POLICY_CODES = {"fixed-share": 1, "elastic": 2, "best-effort": 3}
AICORE_BUDGET = 100                 # percent of one chip's AI cores
MAX_SCORE = 200                     # exact-fit score (shipped and RFC)
MAX_NODE_NPU_NUM = 16               # shipped: node score x max NPUs per node
RFC_COMBINED_LIMIT = 1.0            # RFC: a chip's AI-core share + HBM share <= 100 %
RFC_THRESHOLD = 0.25                # RFC: ... with at least 25 % of that combined share free
RFC_USED_CHIP_SCORE_CAP = 15        # RFC: "used chips x 1, at most 15"
MB_PER_GB = 1024

LABEL_ENABLE = "huawei.com/scheduler.chip1softsharedev.enable"
LABEL_CHIP_MEMORY = "mind-cluster/npu-chip-memory"
LABEL_WORKER = "workerselector"
JOB_LABEL_AICORE = "huawei.com/scheduler.softShareDev.aicoreQuota"
JOB_LABEL_HBM = "huawei.com/scheduler.softShareDev.hbmQuota"
JOB_LABEL_POLICY = "huawei.com/scheduler.softShareDev.policy"


def _check_rules(rules):
    if rules not in RULES:
        raise SoftShareError("rules", "must be one of %s, got %r" % (", ".join(RULES), rules))


def _as_int(value, source, what):
    if isinstance(value, bool):
        raise SoftShareError(source, "%s must be an integer, got %r" % (what, value))
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        raise SoftShareError(source, "%s must be an integer, got %r" % (what, value))


def _pick(mapping, *keys):
    labels = mapping.get("labels") or {}
    for key in keys:
        if key in mapping:
            return mapping[key]
        if key in labels:
            return labels[key]
    return None


def validate_job(job, rules="shipped"):
    """Normalise and validate a soft-share job; raise SoftShareError naming every problem.

    ``job``: ``{name, aicore_quota, hbm_quota, policy, replicas}`` (or the job labels
    ``huawei.com/scheduler.softShareDev.*`` under ``labels``), optional ``request`` (the
    ``huawei.com/Ascend910`` request per replica), ``vnpus_per_replica`` (default 1) and
    ``tasks`` (per-replica dicts with their own ``policy``).

    shipped: aicoreQuota 1-100, hbmQuota >= 1 MB, a known policy; the device plugin rejects a
    pod whose request differs from aicoreQuota. rfc: the request wins over the label.
    Both: one vNPU per replica; every replica uses the same policy.
    """
    _check_rules(rules)
    if not isinstance(job, dict):
        raise SoftShareError("job", "must be a dict, got %s" % type(job).__name__)
    name = str(job.get("name") or "job")
    source = "job %s" % name
    problems = []
    raw = {"aicore_quota": _pick(job, "aicore_quota", "aicoreQuota", JOB_LABEL_AICORE),
           "hbm_quota": _pick(job, "hbm_quota", "hbmQuota", JOB_LABEL_HBM)}
    values = {}
    for key, value in raw.items():
        if value is None:
            problems.append("%s is missing" % key)
            continue
        try:
            values[key] = _as_int(value, source, key)
        except SoftShareError as err:
            problems.append(err.msg)
    request = job.get("request")
    if request is not None:
        try:
            request = _as_int(request, source, "request")
        except SoftShareError as err:
            problems.append(err.msg)
            request = None
    if request is not None and "aicore_quota" in values and request != values["aicore_quota"]:
        if rules == "shipped":
            problems.append("request %d must equal aicore_quota %d (the device plugin rejects the "
                            "pod otherwise)" % (request, values["aicore_quota"]))
        else:
            values["aicore_quota"] = request
    aicore = values.get("aicore_quota")
    if aicore is not None and not 1 <= aicore <= AICORE_BUDGET:
        problems.append("aicore_quota %d not in range [1,100]" % aicore)
    hbm = values.get("hbm_quota")
    if hbm is not None and hbm < 1:
        problems.append("hbm_quota %d MB is less than 1" % hbm)
    policy = _pick(job, "policy", JOB_LABEL_POLICY)
    tasks = job.get("tasks")
    replicas = job.get("replicas", 1)
    if tasks is not None:
        if not isinstance(tasks, list) or not tasks:
            problems.append("tasks must be a non-empty list")
            tasks = []
        policies = set()
        for index, task in enumerate(tasks):
            if not isinstance(task, dict):
                problems.append("tasks[%d] must be a dict" % index)
                continue
            policies.add(task.get("policy", policy))
            if _as_int_or(task.get("vnpus", 1), 1) != 1:
                problems.append("tasks[%d] asks for %s vNPUs; a replica holds exactly one"
                                % (index, task.get("vnpus")))
        if len(policies) > 1:
            problems.append("replicas use different policies %s; all replicas of a job share one"
                            % ", ".join(sorted(str(p) for p in policies)))
        elif policies:
            policy = policies.pop()
        replicas = len(tasks) or 1
    if policy not in POLICIES:
        problems.append("policy %r is invalid (one of %s)" % (policy, ", ".join(POLICIES)))
    try:
        replicas = _as_int(replicas, source, "replicas")
        if replicas < 1:
            problems.append("replicas must be >= 1, got %d" % replicas)
    except SoftShareError as err:
        problems.append(err.msg)
    vnpus = _as_int_or(job.get("vnpus_per_replica", 1), None)
    if vnpus != 1:
        problems.append("vnpus_per_replica %r: a replica holds exactly one soft-share vNPU"
                        % job.get("vnpus_per_replica"))
    if problems:
        raise SoftShareError(source, "; ".join(problems))
    return {"name": name, "aicore_quota": aicore, "hbm_quota": hbm, "policy": policy,
            "replicas": replicas}


def _as_int_or(value, default):
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def chip_memory_mb(npus):
    """What Volcano reads from ``mind-cluster/npu-chip-memory``: HBM // 1024 as ``<N>G``, x1024.

    The plugin writes one value per node; the smallest chip is used here. None when no chip
    reports its HBM (the plugin then writes no label and soft-share scheduling fails).
    """
    sizes = [n.get("hbm_total_mb") for n in npus if isinstance(n.get("hbm_total_mb"), int)]
    sizes = [s for s in sizes if s > 0]
    if not sizes:
        return None
    return (min(sizes) // MB_PER_GB) * MB_PER_GB


def chip_id(npu):
    """The id Volcano and the plugin annotate (``Ascend910-<phy>``): physical id, else logic id."""
    phy = npu.get("phy_id")
    return phy if isinstance(phy, int) else npu.get("logic_id")


def _topology_of(entry):
    if not isinstance(entry, dict):
        return None
    if "npu_topology" in entry:
        return entry["npu_topology"]
    facts = entry.get("ansible_facts")
    if isinstance(facts, dict) and "npu_topology" in facts:
        return facts["npu_topology"]
    return entry


def node_state(host, entry, allocations, job_name=None):
    """Everything the rules need about one node: labels, chip memory, usable chips, usage.

    ``entry``: the host's facts (``npu_topology`` dict, or hostvars holding it), optionally
    with ``node_labels`` (Kubernetes labels; default: what softshare_host sets plus the chip
    memory label the plugin derives from HBM). ``allocations``: soft-share pods placed now.
    """
    topo = _topology_of(entry) or {}
    npus = [n for n in (topo.get("npus") or []) if isinstance(n, dict)]
    memory = chip_memory_mb(npus)
    labels = entry.get("node_labels") if isinstance(entry, dict) else None
    if labels is None:
        labels = {LABEL_ENABLE: "true", LABEL_WORKER: "dls-worker-node"}
        if memory is not None:
            labels[LABEL_CHIP_MEMORY] = "%dG" % (memory // MB_PER_GB)
    used = {}
    used_other = {}
    for alloc in allocations:
        if alloc["host"] != host:
            continue
        for table in (used, used_other) if alloc.get("job") != job_name else (used,):
            slot = table.setdefault(alloc["chip"], {"aicore": 0, "hbm": 0, "policy": None})
            slot["aicore"] += alloc["aicore_quota"]
            slot["hbm"] += alloc["hbm_quota"]
            slot["policy"] = alloc["policy"]
    chips = []
    for npu in npus:
        if not is_healthy(npu.get("health")):
            continue
        cid = chip_id(npu)
        if cid is None:
            continue
        hbm = npu.get("hbm_total_mb") if isinstance(npu.get("hbm_total_mb"), int) else memory
        slot = used.get(cid)
        # The plugin drops a chip from its available list once AI core or HBM is used up.
        if slot and (slot["aicore"] >= AICORE_BUDGET or (hbm is not None and slot["hbm"] >= hbm)):
            continue
        chips.append(cid)
    return {"host": host, "labels": labels, "device_type": topo.get("device_type"),
            "usable": sorted(chips), "used": used, "used_other_jobs": used_other,
            "chip_memory": _label_memory(labels)}


def _label_memory(labels):
    value = labels.get(LABEL_CHIP_MEMORY)
    if value is None:
        return None
    try:
        return int(str(value).replace("G", "")) * MB_PER_GB
    except ValueError:
        return None


def _fits_shipped(slot, job, memory):
    return (slot["aicore"] + job["aicore_quota"] <= AICORE_BUDGET
            and slot["hbm"] + job["hbm_quota"] <= memory)


def _combined(aicore, hbm, memory):
    return aicore / float(AICORE_BUDGET) + hbm / float(memory)


def _fits_rfc(slot, job, memory):
    used = _combined(slot["aicore"], slot["hbm"], memory)
    return (used <= RFC_COMBINED_LIMIT + 1e-9 and RFC_COMBINED_LIMIT - used >= RFC_THRESHOLD - 1e-9
            and _fits_shipped(slot, job, memory))


def chip_fits(slot, job, memory, rules="shipped"):
    """Can a used chip (``slot``: aicore, hbm, policy) take one replica of ``job``?

    shipped: same policy, used+requested AI core <= 100 AND used+requested HBM <= chip memory
    (two separate limits). rfc: same policy, the chip's AI-core share + HBM share <= 100 %
    combined with at least 25 % of it free (threshold 0.25), and the replica fits the
    remaining AI core and HBM (the RFC's "remaining space meets the request").
    """
    if slot["policy"] != job["policy"]:
        return False
    if rules == "rfc":
        return _fits_rfc(slot, job, memory)
    return _fits_shipped(slot, job, memory)


def _idle_fits(job, memory):
    return job["aicore_quota"] <= AICORE_BUDGET and job["hbm_quota"] <= memory


def _aggregate_ok(node, job, memory):
    """shipped: the node's spare capacity (whole multiples of one replica per chip, AI core and
    HBM counted separately, other jobs' usage only) must cover every replica of the job."""
    quota, hbm = job["aicore_quota"], job["hbm_quota"]
    free_core = free_hbm = 0
    for cid in node["usable"]:
        slot = node["used_other_jobs"].get(cid)
        if slot is None:
            free_core += AICORE_BUDGET // quota * quota
            free_hbm += memory // hbm * hbm
        elif slot["policy"] == job["policy"]:
            free_core += max(AICORE_BUDGET - slot["aicore"], 0) // quota * quota
            free_hbm += max(memory - slot["hbm"], 0) // hbm * hbm
    return quota * job["replicas"] <= free_core and hbm * job["replicas"] <= free_hbm


def filter_node(node, job, rules="shipped"):
    """None when the node passes the filter, else the reason it does not."""
    if node["labels"].get(LABEL_ENABLE) != "true":
        return "node label %s=true is missing" % LABEL_ENABLE
    memory = node["chip_memory"]
    if memory is None:
        return ("node label %s is missing or invalid (the device plugin writes it from the chip "
                "HBM size)" % LABEL_CHIP_MEMORY)
    if not node["usable"]:
        return "no healthy chip with free soft-share capacity"
    if rules == "shipped" and not _aggregate_ok(node, job, memory):
        return ("not enough spare AI core/HBM on same-policy or idle chips for all %d replicas "
                "(%d%% AI core, %d MB HBM each)" % (job["replicas"], job["aicore_quota"],
                                                    job["hbm_quota"]))
    for cid in node["usable"]:
        slot = node["used"].get(cid)
        if slot is None:
            if _idle_fits(job, memory):
                return None
            continue
        if chip_fits(slot, job, memory, rules):
            return None
    if not _idle_fits(job, memory):
        return "hbm_quota %d MB exceeds the chip memory %d MB" % (job["hbm_quota"], memory)
    return "no idle chip and no %s chip with room for %d%% AI core and %d MB HBM" % (
        job["policy"], job["aicore_quota"], job["hbm_quota"])


def score_node(node, job, rules="shipped"):
    """Node score. Best used chip that fits: 200 - (100 - used - requested) (exact fit 200);
    else the number of chips already used by soft-share pods (rfc: at most 15); else 0.

    shipped: the policy check in scoring compares a value with itself, so a fitting chip of
    another policy still scores (the filter and chip choice do exclude it); the result is
    multiplied by 16 (max NPUs per node). rfc: same-policy chips only, no multiplier.
    """
    memory = node["chip_memory"]
    used = node["used"]
    best = 0
    if used:
        for cid in node["usable"]:
            slot = used.get(cid)
            if slot is None:
                continue
            if rules == "shipped":
                fits = _fits_shipped(slot, job, memory)
            else:
                fits = chip_fits(slot, job, memory, rules)
            if fits:
                best = max(best, MAX_SCORE - (AICORE_BUDGET - slot["aicore"] - job["aicore_quota"]))
        if best == 0:
            best = len(used)
            if rules == "rfc":
                best = min(best, RFC_USED_CHIP_SCORE_CAP)
    return best * MAX_NODE_NPU_NUM if rules == "shipped" else best


def choose_chip(node, job, rules="shipped"):
    """Best-fit same-policy used chip (largest used+requested AI core), else the lowest idle
    chip; None when no chip can take the replica."""
    memory = node["chip_memory"]
    best_chip, best_fill = None, -1
    idle = []
    for cid in node["usable"]:
        slot = node["used"].get(cid)
        if slot is None:
            idle.append(cid)
            continue
        if chip_fits(slot, job, memory, rules):
            fill = slot["aicore"] + job["aicore_quota"]
            if fill > best_fill:
                best_chip, best_fill = cid, fill
    if best_chip is not None:
        return best_chip
    if idle and _idle_fits(job, memory):
        return min(idle)
    return None


def normalize_allocations(allocations, hosts=None):
    """Validate current soft-share pods: a list of ``{host, chip, aicore_quota, hbm_quota,
    policy, job?}`` (or a dict host -> list of such entries without ``host``)."""
    if allocations is None:
        return []
    if isinstance(allocations, dict):
        flat = []
        for host in sorted(allocations):
            items = allocations[host] or []
            if not isinstance(items, list):
                raise SoftShareError("allocations[%s]" % host, "must be a list")
            for item in items:
                if not isinstance(item, dict):
                    raise SoftShareError("allocations[%s]" % host, "entries must be dicts")
                entry = dict(item)
                entry["host"] = host
                flat.append(entry)
        allocations = flat
    if not isinstance(allocations, list):
        raise SoftShareError("allocations", "must be a list or a dict of lists")
    out = []
    for index, item in enumerate(allocations):
        source = "allocations[%d]" % index
        if not isinstance(item, dict):
            raise SoftShareError(source, "must be a dict")
        for key in ("host", "chip", "aicore_quota", "hbm_quota", "policy"):
            if item.get(key) is None:
                raise SoftShareError(source, "%s is missing" % key)
        if item["policy"] not in POLICIES:
            raise SoftShareError(source, "policy %r is invalid" % (item["policy"],))
        if hosts is not None and item["host"] not in hosts:
            raise SoftShareError(source, "host %s is not in the fleet" % item["host"])
        out.append({"host": str(item["host"]), "chip": _as_int(item["chip"], source, "chip"),
                    "aicore_quota": _as_int(item["aicore_quota"], source, "aicore_quota"),
                    "hbm_quota": _as_int(item["hbm_quota"], source, "hbm_quota"),
                    "policy": item["policy"], "job": item.get("job")})
    return out


def place(fleet, allocations, job, rules="shipped"):
    """Where each replica of ``job`` would land, or why it cannot (reasons per host).

    ``fleet``: host -> facts. Replicas are placed one by one as Volcano does (filter, score,
    highest score wins; ties go to the first host name, Volcano picks at random among them),
    each placement counting for the next. Volcano schedules the job as a gang: ``placed`` is
    false when any replica has no host, and then none of them would start.
    """
    _check_rules(rules)
    if not isinstance(fleet, dict):
        raise SoftShareError("fleet", "must be a dict of host -> facts")
    job = validate_job(job, rules)
    current = normalize_allocations(allocations, hosts=set(fleet))
    replicas = []
    for index in range(job["replicas"]):
        reasons, scores = {}, {}
        for host in sorted(fleet):
            node = node_state(host, fleet[host], current, job["name"])
            reason = filter_node(node, job, rules)
            if reason is None and choose_chip(node, job, rules) is None:
                reason = "no chip left for this replica"
            if reason is None:
                scores[host] = score_node(node, job, rules)
            else:
                reasons[host] = reason
        entry = {"replica": index, "host": None, "chip": None, "score": None,
                 "scores": scores, "reasons": reasons}
        if scores:
            top = max(scores.values())
            host = sorted(h for h, s in scores.items() if s == top)[0]
            node = node_state(host, fleet[host], current, job["name"])
            chip = choose_chip(node, job, rules)
            entry.update(host=host, chip=chip, score=top)
            current.append({"host": host, "chip": chip, "aicore_quota": job["aicore_quota"],
                            "hbm_quota": job["hbm_quota"], "policy": job["policy"],
                            "job": job["name"]})
        replicas.append(entry)
    return {"rules": rules, "job": job, "placed": all(r["host"] for r in replicas),
            "replicas": replicas, "allocations": current}


# ---------------------------------------------------------------------------------------------
# Device-plugin configuration (DaemonSet manifest, node labels)
# ---------------------------------------------------------------------------------------------

SUPPORTED_DEVICE_TYPES = ("A2", "A3")
SOFTSHARE_MIN_VERSION = (26, 0, 0)
DAEMONSET_NAME = "ascend-device-plugin-daemonset-910-softsharedev"
LOG_FILE = "/var/log/mindx-dl/devicePlugin/devicePlugin.log"
ENPU_DIR = "/etc/enpu/"
# Flags this module sets itself; extra_args may not repeat them.
MANAGED_FLAGS = ("-volcanoType", "-presetVirtualDevice", "-shareDevCount", "-softShareDevConfigDir",
                 "-useSingleDieMode", "-logFile", "-logLevel", "--enable-healthz",
                 "--healthz-address")
# Flags the 26.x plugin refuses or that contradict soft share.
REJECTED_FLAGS = {
    "-useAscendDocker": "not a flag of the 26.x device plugin (it aborts with 'flag provided but "
                        "not defined'); Ascend Docker Runtime is detected from "
                        "ASCEND_DOCKER_RUNTIME",
    "-use310PMixedInsert": "incompatible with Volcano and with shareDevCount > 1",
}


def parse_version(version):
    """``"26.0.0"`` / ``"v26.0.RC1"`` -> (26, 0, 0); non-numeric parts count as 0."""
    text = str(version or "").strip().lstrip("vV")
    if not text or not text[0].isdigit():
        raise SoftShareError("version", "not a MindCluster version: %r" % (version,))
    parts = []
    for piece in text.split(".")[:3]:
        digits = ""
        for char in piece:
            if not char.isdigit():
                break
            digits += char
        parts.append(int(digits) if digits else 0)
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)


def check_root(root):
    """Problems with a soft-share root path (absolute, no '.'/'..', not '/'), as a list."""
    if not isinstance(root, str) or not root:
        return ["root must be a non-empty string"]
    problems = []
    if not root.startswith("/"):
        problems.append("root %s must be absolute" % root)
    if "\x00" in root or "\n" in root or " " in root or '"' in root:
        problems.append("root %r contains a space, quote, newline or NUL" % root)
    parts = [p for p in root.split("/") if p]
    if any(p in (".", "..") for p in parts):
        problems.append("root %s must not contain '.' or '..'" % root)
    if not parts:
        problems.append("root must not be / (the device plugin needs its parent to exist)")
    return problems


def validate_plugin_config(root, device_type, version, share_dev_count=SHARE_DEV_COUNT,
                           volcano_type=True, preset_virtual_device=True, single_die_mode=None,
                           extra_args=None, log_level=0, root_parent_exists=None):
    """The constraints the device plugin enforces for soft share, checked before anything is
    written. Returns the normalised configuration; raises SoftShareError listing every problem.

    ``root_parent_exists``: the caller's answer to "does the root's parent exist on the host"
    (the plugin validates the real path of the parent), None when not checked here.
    """
    problems = list(check_root(root))
    if device_type not in SUPPORTED_DEVICE_TYPES:
        problems.append("device type %r: soft share is supported on Atlas A2 and A3 inference "
                        "hosts only" % (device_type,))
    try:
        parsed = parse_version(version)
        if parsed < SOFTSHARE_MIN_VERSION:
            problems.append("device plugin %s predates soft share (MindCluster 26.0.0)" % version)
    except SoftShareError as err:
        problems.append(err.msg)
    if share_dev_count != SHARE_DEV_COUNT:
        problems.append("shareDevCount must be 100 with -softShareDevConfigDir, got %r"
                        % (share_dev_count,))
    if volcano_type is not True:
        problems.append("volcanoType must be true: soft share works with Volcano only")
    if preset_virtual_device is not True:
        problems.append("presetVirtualDevice must be true: dynamic vNPU requires shareDevCount 1")
    if single_die_mode is None:
        single_die_mode = device_type == "A3"
    if single_die_mode and device_type != "A3":
        problems.append("useSingleDieMode is for A3 only (device type %s)" % (device_type,))
    if device_type == "A3" and not single_die_mode:
        problems.append("A3 soft share needs useSingleDieMode=true (one die per chip)")
    if not isinstance(log_level, int) or isinstance(log_level, bool) or not -1 <= log_level <= 3:
        problems.append("logLevel must be an integer from -1 to 3, got %r" % (log_level,))
    extra = list(extra_args or [])
    for arg in extra:
        if not isinstance(arg, str) or not arg.startswith("-") or any(c in arg for c in " \n\"'"):
            problems.append("extra arg %r must be a single -flag[=value] without spaces or quotes"
                            % (arg,))
            continue
        flag = arg.split("=", 1)[0]
        if flag in REJECTED_FLAGS:
            problems.append("%s: %s" % (flag, REJECTED_FLAGS[flag]))
        elif flag in MANAGED_FLAGS:
            problems.append("%s is set by npuops.fleet; do not pass it in extra args" % flag)
    if root_parent_exists is False:
        problems.append("the parent directory of root %s does not exist on the host" % root)
    if problems:
        raise SoftShareError("device plugin soft-share configuration", "; ".join(problems))
    return {"root": root, "device_type": device_type, "version": str(version),
            "share_dev_count": SHARE_DEV_COUNT, "single_die_mode": bool(single_die_mode),
            "extra_args": extra, "log_level": log_level}


def plugin_args(config):
    """The device-plugin command line for a validated configuration."""
    args = ["device-plugin", "-volcanoType=true", "-presetVirtualDevice=true",
            "-shareDevCount=%d" % SHARE_DEV_COUNT, "-softShareDevConfigDir=%s" % config["root"]]
    if config["single_die_mode"]:
        args.append("-useSingleDieMode=true")
    args.extend(["-logFile=%s" % LOG_FILE, "-logLevel=%d" % config["log_level"],
                 "--enable-healthz=true", "--healthz-address=11251"])
    args.extend(config["extra_args"])
    return " ".join(args)


def node_labels(enable=True, extra=None):
    """Labels a soft-share node needs: the Volcano/plugin enable label and the DaemonSet's
    ``workerselector``. ``enable=False`` marks a node of the same cluster that does not share."""
    labels = {LABEL_ENABLE: "true" if enable else "false", LABEL_WORKER: "dls-worker-node"}
    for key, value in (extra or {}).items():
        labels[str(key)] = str(value)
    return labels


def _host_path_volume(name, path, kind=None):
    volume = {"name": name, "hostPath": {"path": path}}
    if kind:
        volume["hostPath"]["type"] = kind
    return volume


def daemonset(config, image=None, namespace="kube-system"):
    """The soft-share variant of the shipped ``ascendplugin-volcano.yaml`` as Kubernetes objects."""
    image = image or "ascend-k8sdeviceplugin:v%s" % config["version"].lstrip("vV")
    sa_name = "ascend-device-plugin-sa"
    core = [""]
    role = {"kind": "ClusterRole", "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "pods-node-ascend-device-plugin-role"},
            "rules": [
                {"apiGroups": core, "resources": ["pods"],
                 "verbs": ["get", "list", "update", "watch", "patch"]},
                {"apiGroups": core, "resources": ["nodes"], "verbs": ["get", "patch"]},
                {"apiGroups": core, "resources": ["nodes/proxy"], "verbs": ["get"]},
                {"apiGroups": core, "resources": ["nodes/status"], "verbs": ["get", "patch", "update"]},
                {"apiGroups": core, "resources": ["configmaps"],
                 "verbs": ["get", "create", "update", "list", "watch"]},
                {"apiGroups": core, "resources": ["events"], "verbs": ["create"]}]}
    binding = {"kind": "ClusterRoleBinding", "apiVersion": "rbac.authorization.k8s.io/v1",
               "metadata": {"name": "pods-node-ascend-device-plugin-rolebinding"},
               "subjects": [{"kind": "ServiceAccount", "name": sa_name, "namespace": namespace}],
               "roleRef": {"kind": "ClusterRole", "name": "pods-node-ascend-device-plugin-role",
                           "apiGroup": "rbac.authorization.k8s.io"}}
    tolerations = [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    for key in ("huawei.com/Ascend910", "huawei.com/Ascend310", "huawei.com/Ascend310P",
                "huawei.com/npu"):
        tolerations.append({"key": key, "operator": "Exists", "effect": "NoSchedule"})
    tolerations.append({"key": "device-plugin", "operator": "Equal", "value": "v2",
                        "effect": "NoSchedule"})
    root = config["root"]
    mounts = [
        {"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"},
        {"name": "vnpucfg", "mountPath": "/etc/vnpu.cfg"},
        {"name": "vnpu-cut", "mountPath": "/run/vnpu_cfg_lock"},
        {"name": "pod-resource", "mountPath": "/var/lib/kubelet/pod-resources"},
        {"name": "hiai-driver", "mountPath": "/usr/local/Ascend/driver", "readOnly": True},
        {"name": "log-path", "mountPath": "/var/log/mindx-dl/devicePlugin",
         "subPath": "mindx-dl/devicePlugin"},
        {"name": "tmp", "mountPath": "/tmp"},
        {"name": "reset-config-dir", "mountPath": "/user/restore/reset"},
        {"name": "lingqu-log", "mountPath": "/var/log/lingqu"},
        {"name": "data-trace-file-dir", "mountPath": "/user/cluster-info/datatrace-config"},
        {"name": "localtime", "mountPath": "/etc/localtime", "readOnly": True},
        {"name": "enpu", "mountPath": ENPU_DIR},
        {"name": "share-device", "mountPath": root},
    ]
    volumes = [
        _host_path_volume("device-plugin", "/var/lib/kubelet/device-plugins"),
        _host_path_volume("pod-resource", "/var/lib/kubelet/pod-resources"),
        _host_path_volume("hiai-driver", "/usr/local/Ascend/driver"),
        _host_path_volume("log-path", "/var/log", "Directory"),
        _host_path_volume("reset-config-dir", "/user/restore/reset", "DirectoryOrCreate"),
        _host_path_volume("data-trace-file-dir", "/user/cluster-info/datatrace-config",
                          "DirectoryOrCreate"),
        _host_path_volume("vnpu-cut", "/run/vnpu_cfg_lock", "DirectoryOrCreate"),
        _host_path_volume("tmp", "/tmp"),
        # type File: the pod does not start unless /etc/vnpu.cfg already exists on the host.
        _host_path_volume("vnpucfg", "/etc/vnpu.cfg", "File"),
        _host_path_volume("lingqu-log", "/var/log/lingqu", "DirectoryOrCreate"),
        _host_path_volume("localtime", "/etc/localtime"),
        _host_path_volume("enpu", ENPU_DIR, "DirectoryOrCreate"),
        _host_path_volume("share-device", root, "DirectoryOrCreate"),
    ]
    init_cmd = ("mkdir -p /var/log/mindx-dl && chmod 755 /var/log/mindx-dl && chown root:root "
                "/var/log/mindx-dl && mkdir -p /var/log/mindx-dl/devicePlugin && chmod 750 "
                "/var/log/mindx-dl/devicePlugin && chown root:root /var/log/mindx-dl/devicePlugin")
    selector_labels = {"name": "ascend-device-plugin-softsharedev-ds"}
    pod_spec = {
        "tolerations": tolerations,
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "servertype", "operator": "NotIn", "values": ["soc"]}]}]}}},
        "priorityClassName": "system-node-critical",
        "nodeSelector": {LABEL_WORKER: "dls-worker-node", LABEL_ENABLE: "true",
                         "accelerator": "huawei-Ascend910"},
        "serviceAccountName": sa_name,
        "hostPID": True,
        "initContainers": [{
            "name": "init-log-setup", "image": image, "command": ["sh", "-c", init_cmd],
            "securityContext": {"runAsUser": 0, "runAsNonRoot": False},
            "volumeMounts": [{"name": "log-path", "mountPath": "/var/log"}]}],
        "containers": [{
            "image": image, "name": "device-plugin-01",
            "resources": {"requests": {"memory": "500Mi", "cpu": "500m"},
                          "limits": {"memory": "500Mi", "cpu": "500m"}},
            "command": ["/bin/bash", "-c", "--"],
            "args": [plugin_args(config)],
            "livenessProbe": {"httpGet": {"path": "/", "port": 11251, "scheme": "HTTP"},
                              "initialDelaySeconds": 30, "periodSeconds": 15,
                              "timeoutSeconds": 5, "failureThreshold": 3},
            "securityContext": {"privileged": True, "readOnlyRootFilesystem": True},
            "imagePullPolicy": "IfNotPresent",
            "volumeMounts": mounts,
            "env": [{"name": "MOUNT_BY_RUNTIME_FOR_DP", "value": "true"},
                    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}}]}],
        "volumes": volumes,
    }
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
          "metadata": {"name": DAEMONSET_NAME, "namespace": namespace},
          "spec": {"selector": {"matchLabels": selector_labels},
                   "updateStrategy": {"type": "RollingUpdate"},
                   "template": {"metadata": {"annotations": {
                       "scheduler.alpha.kubernetes.io/critical-pod": "",
                       "seccomp.security.alpha.kubernetes.io/pod": "runtime/default"},
                       "labels": selector_labels},
                       "spec": pod_spec}}}
    account = {"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": sa_name, "namespace": namespace}}
    return [account, role, binding, ds]


def render_daemonset(root, device_type, version, image=None, single_die_mode=None,
                     extra_args=None, log_level=0, namespace="kube-system",
                     root_parent_exists=None):
    """The soft-share device-plugin manifest (multi-document YAML text), validated first."""
    config = validate_plugin_config(root, device_type, version, single_die_mode=single_die_mode,
                                    extra_args=extra_args, log_level=log_level,
                                    root_parent_exists=root_parent_exists)
    header = ("# Ascend device plugin, soft-share (chip1-softShareDev) variant for %s hosts.\n"
              "# Rendered by npuops.fleet from the shipped ascendplugin-volcano.yaml.\n"
              % device_type)
    return header + "".join("---\n" + to_yaml(doc) for doc in daemonset(config, image, namespace))


def render_node_labels(node_name, labels):
    """A Node patch holding the soft-share labels (``kubectl patch node --patch-file``)."""
    return to_yaml({"metadata": {"name": node_name, "labels": dict(labels)}})


# ---------------------------------------------------------------------------------------------
# Minimal YAML emitter (block style; strings JSON-quoted, which YAML reads as double-quoted)
# ---------------------------------------------------------------------------------------------

# Plain words YAML 1.1 reads as booleans or null.
_YAML_WORDS = ("true", "false", "yes", "no", "on", "off", "y", "n", "null")
_PLAIN_KEY_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./")


def _yaml_escape(char):
    code = ord(char)
    # Not YAML-printable, or read as a line break inside a double-quoted scalar.
    if 0x7F <= code <= 0x9F or code in (0x2028, 0x2029, 0xFEFF, 0xFFFE, 0xFFFF):
        return "\\u%04x" % code
    return char


def _quote(text):
    # JSON escapes control characters; YAML reads a JSON string as a double-quoted scalar.
    return "".join(_yaml_escape(c) for c in json.dumps(text, ensure_ascii=False))


def _key(key):
    key = str(key)
    if (key and set(key) <= _PLAIN_KEY_CHARS and key[0].isalpha()
            and key.lower() not in _YAML_WORDS):
        return key
    return _quote(key)


def _scalar(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return _quote(str(value))


def _emit(value, indent, lines):
    pad = " " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append("%s%s:" % (pad, _key(key)))
                _emit(item, indent + 2, lines)
            else:
                lines.append("%s%s: %s" % (pad, _key(key), _empty_or_scalar(item)))
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)) and item:
                sub = []
                _emit(item, indent + 2, sub)
                lines.append("%s- %s" % (pad, sub[0][indent + 2:]))
                lines.extend(sub[1:])
            else:
                lines.append("%s- %s" % (pad, _empty_or_scalar(item)))


def _empty_or_scalar(value):
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def to_yaml(value):
    """Block-style YAML for plain data (dicts keep their order)."""
    lines = []
    if isinstance(value, (dict, list)) and value:
        _emit(value, 0, lines)
    else:
        lines.append(_empty_or_scalar(value))
    return "\n".join(lines) + "\n"
