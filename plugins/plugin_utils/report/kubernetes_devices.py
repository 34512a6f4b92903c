# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every device a Kubernetes node hands out, per pod, from what the node itself records.

``device_rows(kube, facts)`` -> ``{pod UID: row}`` for ``report/kubernetes.py``; a row holds the
pod's ``resources``, kubelet device ``devices``, the ``chips`` it really got (Ascend), where
that came from (``chips_from``), the devices' ``device_nodes`` and the kubelet's own hint
nodes (``hint_nodes``), and ``dra`` devices. ``device_findings(rows)`` names what the
Topology Manager did not or could not align.

What the node holds, and what only the API has (the facts run on the node, without credentials):

- device plugins: the kubelet's checkpoint keeps, per container, the ids it chose, their NUMA
  node and the plugin's Allocate response (``AllocResp``). MindCluster's plugin in Volcano mode
  (``-volcanoType=true``) maps the kubelet's ids to the chips Volcano picked
  (``component/ascend-device-plugin/pkg/server/plugin.go`` Allocate -> useVolcano, the pod's
  ``huawei.com/<type>`` annotation) and answers with those chips (``ASCEND_VISIBLE_DEVICES``,
  ``common.go`` SetAscendRuntimeEnv, or ``/dev/davinci<N>``, ``mountDevice``): the answer is
  the record of the chips; the ids are not. The pod's ``huawei.com/AscendReal`` annotation says
  the same, but only through the API. Without a stored answer (a plugin that sends none, or CDI
  devices only) the ids are taken as the chips and the audit says so (``device_chips_unverified``).
- DRA: ``dra_manager_state`` keeps each claim's pods and devices (driver, pool, device name).
  DRA devices give the Topology Manager no hint (``pkg/kubelet/cm/container_manager_linux.go``
  registers the device, CPU and memory managers with ``AddHintProvider``, not the DRA manager,
  which it builds on the kubelet root dir), so the kubelet never aligns CPUs with them
  (``dra_devices_not_aligned``). ResourceSlice attributes live in the API only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.npuops.fleet.plugins.module_utils.kubelet.parse.devices import ascend_device_id

# device-plugin resources audited: Ascend whole chips, static vNPUs (huawei.com/Ascend910-2c),
# the 950 series (huawei.com/npu, ascend-common/api/default_name.go HuaweiNPU), GPUs
DEVICE_RESOURCES = re.compile(
    r"^(huawei\.com/(Ascend[0-9A-Za-z]*(-[0-9A-Za-z.]+)?|npu)\Z"
    r"|nvidia\.com/(gpu|mig-)|amd\.com/gpu)"
)
# HAMi's soft slicing quantities (huawei.com/Ascend910B3-memory, -core) are not devices
NOT_DEVICES = re.compile(r"-(memory|core)\Z")
ASCEND_RESOURCE = re.compile(r"^huawei\.com/")

# which id of the facts' npus the plugin's answer carries, per resource (first match wins)
#  huawei.com/npu: plugin.go getFinalVisibleDevices - on 950 (A5) the ids become logic ids,
#                  and Volcano's huawei.com/npu annotation holds NPU (logic) ids
#  huawei.com/Ascend*: GetDeviceListID of "Ascend910-<phy>" names; /dev/davinci<phy>
VISIBLE_ID = ((re.compile(r"^huawei\.com/npu\Z"), "logic_id"), (re.compile(r"^huawei\.com/"), "phy_id"))
_DAVINCI = re.compile(r"^/dev/davinci([0-9]{1,4})\Z")
_LIST = re.compile(r"^[0-9]{1,4}(,[0-9]{1,4}){0,255}\Z")

# DRA driver -> how its device names name a device of the facts
#  npu.huawei.com: Ascend/mind-cluster component/ascend-dynamic-resource-allocation
#    internal/device/generation_910.go, generation_950.go (DeviceName "%s-%d", released name and
#    phy id; the driver reads the id back after the last "-", cdi_spec_manager.go)
#  gpu.nvidia.com: NVIDIA/k8s-dra-driver-gpu cmd/gpu-kubelet-plugin (CanonicalName "gpu-%d",
#    the device minor; MIG "gpu-<minor>-mig-..."); the facts know a GPU's minor only as "minor"
DRA_DRIVERS = {
    "npu.huawei.com": (re.compile(r"-([0-9]{1,4})\Z"), "npus", "phy_id"),
    "gpu.nvidia.com": (re.compile(r"^gpu-([0-9]{1,4})(-mig-.*)?\Z"), "gpus", "minor"),
}


RECORDS = ("/kubelet_internal_checkpoint", "/dra_manager_state")  # kubelet/model/facts.py paths


def is_device_resource(name):
    return bool(DEVICE_RESOURCES.match(name or "")) and not NOT_DEVICES.search(name or "")


def _npu_node(facts, key, chip):
    for npu in facts.get("npus") or []:
        ident = npu.get(key)
        if key == "phy_id" and ident is None:
            ident = npu.get("logic_id")  # facts without physical ids, as npu_share_dirs does
        if ident is not None and int(ident) == chip:
            return npu.get("numa_node")
    return None


def _phy(facts, key, chip):
    """A chip the answer names by ``key`` as its physical id (the kubelet ids' numbering)."""
    if key != "phy_id":
        for npu in facts.get("npus") or []:
            if npu.get(key) is not None and int(npu[key]) == chip and npu.get("phy_id") is not None:
                return int(npu["phy_id"])
    return chip


def gpu_node(facts, device_id):
    for gpu in facts.get("gpus") or []:
        if device_id in (gpu.get("uuid"), gpu.get("bus_id")):
            return gpu.get("numa_node")
    return None


def _visible_key(resource):
    for pattern, key in VISIBLE_ID:
        if pattern.match(resource):
            return key
    return "phy_id"


def answered_chips(alloc):
    """The chips in a plugin's Allocate answer (ints), or None where it names none: the
    ``ASCEND_VISIBLE_DEVICES`` list, else the ``/dev/davinci<N>`` device specs; vNPUs
    (``ASCEND_RUNTIME_OPTIONS`` VIRTUAL, ``/dev/vdavinci``) name virtual devices, not chips
    (``pkg/common/device.go`` GetDeviceListID: the virtual id under VIRTUAL, else the number
    of the device name; ``pkg/common/constants.go`` VirtualDev)."""
    if not alloc:
        return None
    envs = alloc.get("envs") or {}
    if "VIRTUAL" in (envs.get("ASCEND_RUNTIME_OPTIONS") or "").upper():
        return None
    visible = (envs.get("ASCEND_VISIBLE_DEVICES") or "").replace(" ", "")
    if _LIST.match(visible):
        return sorted(set(int(v) for v in visible.split(",")))
    chips = set()
    for spec in alloc.get("devices") or []:
        match = _DAVINCI.match(spec.get("host_path") or "")
        if match:
            chips.add(int(match.group(1)))
    return sorted(chips) or None


def _new_row(uid):
    return {
        "pod": uid,
        "resources": [],
        "devices": [],
        "chips": [],
        "chips_from": None,
        "device_nodes": set(),
        "hint_nodes": set(),
        "hinted": True,
        "soft_share": False,
        "remapped": False,
        "unverified": False,
        "unnamed": [],
        "record_errors": [],
        "dra": [],
    }


def _ascend_entry(row, entry, facts):
    ids = [i for group in entry.get("devices") or [] for i in group.get("ids") or []]
    shapes = [ascend_device_id(i) for i in ids]
    id_chips = sorted(set(s["chip"] for s in shapes if s)) if shapes and all(shapes) else None
    row["soft_share"] = row["soft_share"] or any(s and s["kind"] == "soft_share" for s in shapes)
    real, key = answered_chips(entry.get("alloc")), _visible_key(entry["resource"])
    # chips are reported by physical id, as the kubelet ids number them
    if entry.get("alloc_error"):
        row["record_errors"].append(entry["alloc_error"])
    if real is not None:
        chips, source = [_phy(facts, key, chip) for chip in real], "allocate_response"
        row["remapped"] = row["remapped"] or (id_chips is not None and set(chips) != set(id_chips))
    elif shapes and all(s and s["kind"] == "vnpu" for s in shapes):
        # static vNPUs are never remapped (plugin.go responseToKubelet: the Volcano branch skips
        # virtual device types); each id names the chip it was carved from
        chips, source = id_chips, "vnpu_ids"
    else:
        chips, source = id_chips or [], "kubelet_ids"
        row["unverified"] = True
        if id_chips is None:
            row["unnamed"].extend(i for i, shape in zip(ids, shapes) if not shape)
    if row["chips_from"] in (None, source):
        row["chips_from"] = source
    else:
        row["chips_from"] = "mixed"
    nodes = [_npu_node(facts, "phy_id", chip) for chip in chips]
    row["chips"].extend(c for c in chips if c not in row["chips"])
    row["device_nodes"].update(n for n in nodes if n is not None)
    return not chips or None in nodes


def _plugin_rows(kube, facts, rows):
    for entry in (kube.get("device_checkpoint") or {}).get("entries") or []:
        resource = entry.get("resource") or ""
        if not is_device_resource(resource):
            continue
        row = rows.setdefault(entry["pod"], _new_row(entry["pod"]))
        if resource not in row["resources"]:
            row["resources"].append(resource)
        hints = set()
        for group in entry.get("devices") or []:
            row["devices"].extend(group.get("ids") or [])
            node = group.get("numa_node")
            if node is None or node < 0:
                row["hinted"] = False
            else:
                hints.add(node)
        row["hint_nodes"] |= hints
        if ASCEND_RESOURCE.match(resource):
            missing = _ascend_entry(row, entry, facts)
            if missing and not row["remapped"]:
                row["device_nodes"] |= hints  # chips the facts do not place: the kubelet's word
            continue
        for group in entry.get("devices") or []:
            node = group.get("numa_node")
            for device in group.get("ids") or []:
                if node is None or node < 0:
                    node_of = gpu_node(facts, device)
                    if node_of is not None:
                        row["device_nodes"].add(node_of)
                else:
                    row["device_nodes"].add(node)


def _dra_node(facts, driver, device):
    rule = DRA_DRIVERS.get(driver)
    match = rule[0].search(device or "") if rule else None
    if not match:
        return None
    ident = int(match.group(1))
    if rule[1] == "npus":
        return _npu_node(facts, rule[2], ident)
    for gpu in facts.get("gpus") or []:
        if gpu.get(rule[2]) is not None and int(gpu[rule[2]]) == ident:
            return gpu.get("numa_node")
    return None


def _dra_rows(kube, facts, rows):
    for claim in (kube.get("dra_state") or {}).get("claims") or []:
        for pod in claim.get("pods") or []:
            row = rows.setdefault(pod, _new_row(pod))
            for device in claim.get("devices") or []:
                node = _dra_node(facts, device["driver"], device.get("device"))
                row["dra"].append(
                    {
                        "driver": device["driver"],
                        "pool": device.get("pool"),
                        "device": device.get("device"),
                        "cdi": device.get("cdi") or [],
                        "claim": "%s/%s" % (claim.get("namespace"), claim.get("name")),
                        "numa_node": node,
                    }
                )
                if node is not None:
                    row["device_nodes"].add(node)
                resource = "%s (DRA)" % device["driver"]
                if resource not in row["resources"]:
                    row["resources"].append(resource)


def device_rows(kube, facts):
    """{pod UID: row} of every pod holding a device, from device plugins and DRA claims."""
    rows = {}
    _plugin_rows(kube, facts or {}, rows)
    _dra_rows(kube, facts or {}, rows)
    for row in rows.values():
        row["device_nodes"] = sorted(row["device_nodes"])
        row["hint_nodes"] = sorted(row["hint_nodes"])
    return rows


def device_names(row):
    return ", ".join(row["devices"] + ["%s/%s" % (d["driver"], d["device"] or ",".join(d["cdi"])) for d in row["dra"]])


def _nodes(nodes):
    return ",".join(str(n) for n in nodes) or "unknown"


def device_findings(rows):
    """``{kind, pod, msg}`` per pod: ids that are not the chips, chips the node cannot name,
    devices the Topology Manager does not align (DRA)."""
    out = []
    for uid in sorted(rows):
        row = rows[uid]
        if row["remapped"]:
            msg = (
                "pod %s: the kubelet's device ids %s are not the chips it got: the device plugin "
                "(Volcano mode) handed out chip(s) %s (its Allocate answer, kept in the kubelet's "
                "checkpoint), on NUMA node(s) %s"
                % (uid, ", ".join(row["devices"]), ",".join(map(str, row["chips"])), _nodes(row["device_nodes"]))
            )
            if row["hint_nodes"] and row["hint_nodes"] != row["device_nodes"]:
                msg += (
                    "; the Topology Manager aligned the pod to node(s) %s, the nodes of ids it "
                    "did not hand out" % _nodes(row["hint_nodes"])
                )
            out.append({"kind": "device_ids_not_chips", "pod": uid, "msg": msg})
        if row["unverified"]:
            why = (
                "its Allocate answer could not be read (%s)" % "; ".join(row["record_errors"])
                if row["record_errors"]
                else "the kubelet kept no Allocate answer naming chips"
            )
            taken = (
                "ids %s name no chip this audit knows (renamed by deviceNameCustomization.json?)"
                % ", ".join(row["unnamed"])
                if row["unnamed"]
                else "ids %s are taken as the chips, which holds only for a device plugin without "
                "-volcanoType%s"
                % (
                    ", ".join(row["devices"]),
                    " (soft-share ids name a chip Volcano may not have picked)" if row["soft_share"] else "",
                )
            )
            out.append(
                {
                    "kind": "device_chips_unverified",
                    "pod": uid,
                    "msg": "pod %s: %s; its %s; the chips really allocated are in the pod's "
                    "huawei.com/AscendReal annotation, readable through the API only" % (uid, why, taken),
                }
            )
        if row["dra"]:
            out.append(
                {
                    "kind": "dra_devices_not_aligned",
                    "pod": uid,
                    "msg": "pod %s holds devices allocated through DRA (%s; claim %s) on NUMA "
                    "node(s) %s: DRA drivers give the Topology Manager no hint, so the "
                    "kubelet does not align the pod's CPUs with them"
                    % (
                        uid,
                        ", ".join("%s/%s" % (d["driver"], d["device"] or ",".join(d["cdi"])) for d in row["dra"]),
                        ", ".join(sorted(set(d["claim"] for d in row["dra"]))),
                        _nodes(sorted(set(d["numa_node"] for d in row["dra"] if d["numa_node"] is not None))),
                    ),
                }
            )
    return out


def record_findings(kube):
    """``device_record_unreadable`` per kubelet device record the facts could not read: its
    devices are not audited (a corrupt record is not taken as an empty one)."""
    out = []
    for error in kube.get("errors") or []:
        source = str(error.get("source") or "")
        if source.endswith(RECORDS):
            out.append(
                {
                    "kind": "device_record_unreadable",
                    "pod": None,
                    "msg": "the kubelet's %s could not be read (%s): the devices it records are "
                    "not audited" % (source, error.get("msg")),
                }
            )
    return out


# kind -> (severity, title, fix) of the fleet report's problem rows
DEVICE_FINDING_ROWS = {
    "device_ids_not_chips": (
        "warning",
        "kubelet device ids are not the chips allocated (Volcano mode)",
        "the kubelet aligns CPUs with the ids it chose, not with the chips Volcano picked: run the "
        "Ascend device plugin without -volcanoType (native scheduler, TopologyInfo) where pods "
        "need NUMA-aligned CPUs, or pin the pod's CPUs to its chips' node yourself",
    ),
    "device_chips_unverified": (
        "info",
        "chips of a device pod not recorded on the node",
        "read the pod's huawei.com/AscendReal annotation through the API (kubectl get pod -o "
        "jsonpath) to know its chips; a MindCluster plugin that answers with "
        "ASCEND_VISIBLE_DEVICES or /dev/davinci devices leaves the record on the node",
    ),
    "device_record_unreadable": (
        "warning",
        "kubelet device record unreadable",
        "look at the file named before the kubelet restarts: with a dra_manager_state it cannot "
        'verify the kubelet does not start ("checkpoint is corrupted"); a device checkpoint it '
        "cannot read is skipped with a warning, and the allocations are forgotten",
    ),
    "dra_devices_not_aligned": (
        "warning",
        "DRA devices not aligned by the Topology Manager",
        "align them yourself: a ResourceClaim constraint on a NUMA attribute (MindCluster's Ascend "
        "DRA driver publishes only deviceType and physicId) or device plugins with TopologyInfo "
        "under the static CPU Manager; docs/kubernetes.md",
    ),
}
