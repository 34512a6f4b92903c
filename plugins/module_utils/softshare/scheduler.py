# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NPU soft-share (软切分) scheduling: the Volcano ``chip1-softShareDev`` rules and the
placement what-if (where each replica of a job would land, or why not, host by host).

Pure functions over plain data. Two rule sets exist and both are implemented:

- ``shipped``: what MindCluster 26.x code does (device plugin + ascend-for-volcano);
- ``rfc``: the differing rules of the RFC text (combined usage <= 100 %, threshold 0.25,
  used-chip score capped at 15).

A chip's health and the host's capacity follow ``model/rules.py`` (the device plugin's own
rules). Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.errors import InputError, SoftShareError
from ansible_collections.npuops.fleet.plugins.module_utils.model import schema
from ansible_collections.npuops.fleet.plugins.module_utils.model.rules import is_healthy


RULES = ("shipped", "rfc")
POLICIES = ("fixed-share", "elastic", "best-effort")
AICORE_BUDGET = 100  # percent of one chip's AI cores
MAX_SCORE = 200  # exact-fit score (shipped and RFC)
MAX_NODE_NPU_NUM = 16  # shipped: node score x max NPUs per node
RFC_COMBINED_LIMIT = 1.0  # RFC: a chip's AI-core share + HBM share <= 100 %
RFC_THRESHOLD = 0.25  # RFC: ... with at least 25 % of that combined share free
RFC_USED_CHIP_SCORE_CAP = 15  # RFC: "used chips x 1, at most 15"
MB_PER_GB = 1024
MAX_INT = (1 << 31) - 1
# replicas of one job placed one by one (each placement counts for the next): bounded so a
# typo (replicas: 10000000) is a message, not hours and gigabytes
MAX_REPLICAS = 4096

LABEL_ENABLE = "huawei.com/scheduler.chip1softsharedev.enable"
LABEL_CHIP_MEMORY = "mind-cluster/npu-chip-memory"
LABEL_WORKER = "workerselector"
JOB_LABEL_AICORE = "huawei.com/scheduler.softShareDev.aicoreQuota"
JOB_LABEL_HBM = "huawei.com/scheduler.softShareDev.hbmQuota"
JOB_LABEL_POLICY = "huawei.com/scheduler.softShareDev.policy"


def _check_rules(rules):
    if rules not in RULES:
        raise SoftShareError("rules", "must be one of %s, got %r" % (", ".join(RULES), rules))


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _as_int(value, source, what):
    text = str(value).strip() if isinstance(value, (int, str)) and not isinstance(value, bool) else ""
    try:
        number = int(text) if 0 < len(text) <= 11 else None
    except ValueError:
        number = None
    if number is None or abs(number) > MAX_INT:
        raise SoftShareError(
            source, "%s must be an integer from %d to %d, got %s" % (what, -MAX_INT, MAX_INT, _short(value))
        )
    return number


def check_fleet(fleet):
    """``fleet`` (host -> facts) in the shape the rules read: each host's topology as
    ``model/schema`` checks it, its ``node_labels`` a mapping of text to text."""
    if not isinstance(fleet, dict):
        raise SoftShareError("fleet", "must be a dict of host -> facts")
    for host, entry in fleet.items():
        source = "fleet[%s]" % _short(host)
        topo = topology_of(entry)
        if not isinstance(topo, dict):
            raise SoftShareError(
                source, "must be the host's npu_topology facts (a mapping), got %s" % type(entry).__name__
            )
        try:
            schema.check_topology(topo, source)
        except InputError as err:
            raise SoftShareError(source, err.msg)
        labels = entry.get("node_labels")
        if labels is not None and not (
            isinstance(labels, dict)
            and all(
                isinstance(k, str) and isinstance(v, (str, int)) and not isinstance(v, bool) for k, v in labels.items()
            )
        ):
            raise SoftShareError(source, "node_labels must map label names to text")


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
    raw = {
        "aicore_quota": _pick(job, "aicore_quota", "aicoreQuota", JOB_LABEL_AICORE),
        "hbm_quota": _pick(job, "hbm_quota", "hbmQuota", JOB_LABEL_HBM),
    }
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
            problems.append(
                "request %d must equal aicore_quota %d (the device plugin rejects the "
                "pod otherwise)" % (request, values["aicore_quota"])
            )
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
                problems.append("tasks[%d] asks for %s vNPUs; a replica holds exactly one" % (index, task.get("vnpus")))
        if len(policies) > 1:
            problems.append(
                "replicas use different policies %s; all replicas of a job share one"
                % ", ".join(sorted(str(p) for p in policies))
            )
        elif policies:
            policy = policies.pop()
        replicas = len(tasks) or 1
    if policy not in POLICIES:
        problems.append("policy %r is invalid (one of %s)" % (policy, ", ".join(POLICIES)))
    try:
        replicas = _as_int(replicas, source, "replicas")
        if not 1 <= replicas <= MAX_REPLICAS:
            problems.append("replicas must be from 1 to %d, got %d" % (MAX_REPLICAS, replicas))
    except SoftShareError as err:
        problems.append(err.msg)
    vnpus = _as_int_or(job.get("vnpus_per_replica", 1), None)
    if vnpus != 1:
        problems.append(
            "vnpus_per_replica %r: a replica holds exactly one soft-share vNPU" % job.get("vnpus_per_replica")
        )
    if problems:
        raise SoftShareError(source, "; ".join(problems))
    return {"name": name, "aicore_quota": aicore, "hbm_quota": hbm, "policy": policy, "replicas": replicas}


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


def topology_of(entry):
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
    topo = topology_of(entry) or {}
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
    return {
        "host": host,
        "labels": labels,
        "device_type": topo.get("device_type"),
        "usable": sorted(chips),
        "used": used,
        "used_other_jobs": used_other,
        "chip_memory": _label_memory(labels),
    }


def _label_memory(labels):
    value = labels.get(LABEL_CHIP_MEMORY)
    if value is None:
        return None
    try:
        return int(str(value).replace("G", "")) * MB_PER_GB
    except ValueError:
        return None


def _fits_shipped(slot, job, memory):
    return slot["aicore"] + job["aicore_quota"] <= AICORE_BUDGET and slot["hbm"] + job["hbm_quota"] <= memory


def _combined(aicore, hbm, memory):
    return aicore / float(AICORE_BUDGET) + hbm / float(memory)


def _fits_rfc(slot, job, memory):
    used = _combined(slot["aicore"], slot["hbm"], memory)
    return (
        used <= RFC_COMBINED_LIMIT + 1e-9
        and RFC_COMBINED_LIMIT - used >= RFC_THRESHOLD - 1e-9
        and _fits_shipped(slot, job, memory)
    )


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
        return (
            "node label %s is missing or invalid (the device plugin writes it from the chip "
            "HBM size)" % LABEL_CHIP_MEMORY
        )
    if not node["usable"]:
        return "no healthy chip with free soft-share capacity"
    if rules == "shipped" and not _aggregate_ok(node, job, memory):
        return (
            "not enough spare AI core/HBM on same-policy or idle chips for all %d replicas "
            "(%d%% AI core, %d MB HBM each)" % (job["replicas"], job["aicore_quota"], job["hbm_quota"])
        )
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
        job["policy"],
        job["aicore_quota"],
        job["hbm_quota"],
    )


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
        out.append(
            {
                "host": str(item["host"]),
                "chip": _as_int(item["chip"], source, "chip"),
                "aicore_quota": _as_int(item["aicore_quota"], source, "aicore_quota"),
                "hbm_quota": _as_int(item["hbm_quota"], source, "hbm_quota"),
                "policy": item["policy"],
                "job": item.get("job"),
            }
        )
    return out


def place(fleet, allocations, job, rules="shipped"):
    """Where each replica of ``job`` would land, or why it cannot (reasons per host).

    ``fleet``: host -> facts. Replicas are placed one by one as Volcano does (filter, score,
    highest score wins; ties go to the first host name, Volcano picks at random among them),
    each placement counting for the next. Volcano schedules the job as a gang: ``placed`` is
    false when any replica has no host, and then none of them would start.
    """
    _check_rules(rules)
    check_fleet(fleet)
    job = validate_job(job, rules)
    current = normalize_allocations(allocations, hosts=set(fleet))
    replicas = []
    for index in range(job["replicas"]):
        if replicas and replicas[-1]["host"] is None:
            # nothing was placed for the last one, so nothing changed: the rest fail the same way
            last = replicas[-1]
            replicas.append(dict(last, replica=index, scores={}, reasons=dict(last["reasons"])))
            continue
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
        entry = {"replica": index, "host": None, "chip": None, "score": None, "scores": scores, "reasons": reasons}
        if scores:
            top = max(scores.values())
            host = sorted(h for h, s in scores.items() if s == top)[0]
            node = node_state(host, fleet[host], current, job["name"])
            chip = choose_chip(node, job, rules)
            entry.update(host=host, chip=chip, score=top)
            current.append(
                {
                    "host": host,
                    "chip": chip,
                    "aicore_quota": job["aicore_quota"],
                    "hbm_quota": job["hbm_quota"],
                    "policy": job["policy"],
                    "job": job["name"],
                }
            )
        replicas.append(entry)
    return {
        "rules": rules,
        "job": job,
        "placed": all(r["host"] for r in replicas),
        "replicas": replicas,
        "allocations": current,
    }
