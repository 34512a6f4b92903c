# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Ascend device plugin's soft-share configuration: validated flags, the DaemonSet
manifest and the node labels, as Kubernetes objects (plain data). The controller writes them
as YAML (``plugin_utils/manifests``, PyYAML); nothing here needs a YAML writer.

Standard library only; importable on Python 3.7.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.errors import SoftShareError
from ansible_collections.npuops.fleet.plugins.module_utils.model.rules import SHARE_DEV_COUNT
from ansible_collections.npuops.fleet.plugins.module_utils.parse import device_type as device_types
from ansible_collections.npuops.fleet.plugins.module_utils.softshare.scheduler import LABEL_ENABLE, LABEL_WORKER

SOFTSHARE_MIN_VERSION = (26, 0, 0)
DAEMONSET_NAME = "ascend-device-plugin-daemonset-910-softsharedev"
LOG_FILE = "/var/log/mindx-dl/devicePlugin/devicePlugin.log"
ENPU_DIR = "/etc/enpu/"
# Flags this module sets itself; extra_args may not repeat them.
MANAGED_FLAGS = (
    "-volcanoType",
    "-presetVirtualDevice",
    "-shareDevCount",
    "-softShareDevConfigDir",
    "-useSingleDieMode",
    "-logFile",
    "-logLevel",
    "--enable-healthz",
    "--healthz-address",
)
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
    if not text or text[0] not in "0123456789":
        raise SoftShareError("version", "not a MindCluster version: %r" % (version,))
    parts = []
    for piece in text.split(".")[:3]:
        digits = ""
        for char in piece[:9]:  # ASCII digits, bounded for int()
            if char not in "0123456789":
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


def validate_plugin_config(
    root,
    device_type,
    version,
    share_dev_count=SHARE_DEV_COUNT,
    volcano_type=True,
    preset_virtual_device=True,
    single_die_mode=None,
    extra_args=None,
    log_level=0,
    root_parent_exists=None,
):
    """The constraints the device plugin enforces for soft share, checked before anything is
    written. Returns the normalised configuration; raises SoftShareError listing every problem.

    ``root_parent_exists``: the caller's answer to "does the root's parent exist on the host"
    (the plugin validates the real path of the parent), None when not checked here.
    """
    problems = list(check_root(root))
    kind = device_types.row(device_type)
    if not kind.softshare:
        problems.append(
            "device type %r: soft share is supported on Atlas %s inference "
            "hosts only" % (device_type, " and ".join(device_types.names_where(lambda r: r.softshare)))
        )
    try:
        parsed = parse_version(version)
        if parsed < SOFTSHARE_MIN_VERSION:
            problems.append("device plugin %s predates soft share (MindCluster 26.0.0)" % version)
    except SoftShareError as err:
        problems.append(err.msg)
    if share_dev_count != SHARE_DEV_COUNT:
        problems.append("shareDevCount must be 100 with -softShareDevConfigDir, got %r" % (share_dev_count,))
    if volcano_type is not True:
        problems.append("volcanoType must be true: soft share works with Volcano only")
    if preset_virtual_device is not True:
        problems.append("presetVirtualDevice must be true: dynamic vNPU requires shareDevCount 1")
    # the plugin's -useSingleDieMode: for the types whose NPUs hold several dies (A3) only
    multi_die = kind.multi_die
    if single_die_mode is None:
        single_die_mode = multi_die
    if single_die_mode and not multi_die:
        problems.append(
            "useSingleDieMode is for %s only (device type %s)"
            % (" and ".join(device_types.names_where(lambda r: r.multi_die)), device_type)
        )
    if multi_die and not single_die_mode:
        problems.append("%s soft share needs useSingleDieMode=true (one die per chip)" % device_type)
    if not isinstance(log_level, int) or isinstance(log_level, bool) or not -1 <= log_level <= 3:
        problems.append("logLevel must be an integer from -1 to 3, got %r" % (log_level,))
    extra = list(extra_args or [])
    for arg in extra:
        if not isinstance(arg, str) or not arg.startswith("-") or any(c in arg for c in " \n\"'"):
            problems.append("extra arg %r must be a single -flag[=value] without spaces or quotes" % (arg,))
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
    return {
        "root": root,
        "device_type": device_type,
        "version": str(version),
        "share_dev_count": SHARE_DEV_COUNT,
        "single_die_mode": bool(single_die_mode),
        "extra_args": extra,
        "log_level": log_level,
    }


def plugin_args(config):
    """The device-plugin command line for a validated configuration."""
    args = [
        "device-plugin",
        "-volcanoType=true",
        "-presetVirtualDevice=true",
        "-shareDevCount=%d" % SHARE_DEV_COUNT,
        "-softShareDevConfigDir=%s" % config["root"],
    ]
    if config["single_die_mode"]:
        args.append("-useSingleDieMode=true")
    args.extend(
        [
            "-logFile=%s" % LOG_FILE,
            "-logLevel=%d" % config["log_level"],
            "--enable-healthz=true",
            "--healthz-address=11251",
        ]
    )
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
    role = {
        "kind": "ClusterRole",
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": {"name": "pods-node-ascend-device-plugin-role"},
        "rules": [
            {"apiGroups": core, "resources": ["pods"], "verbs": ["get", "list", "update", "watch", "patch"]},
            {"apiGroups": core, "resources": ["nodes"], "verbs": ["get", "patch"]},
            {"apiGroups": core, "resources": ["nodes/proxy"], "verbs": ["get"]},
            {"apiGroups": core, "resources": ["nodes/status"], "verbs": ["get", "patch", "update"]},
            {"apiGroups": core, "resources": ["configmaps"], "verbs": ["get", "create", "update", "list", "watch"]},
            {"apiGroups": core, "resources": ["events"], "verbs": ["create"]},
        ],
    }
    binding = {
        "kind": "ClusterRoleBinding",
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": {"name": "pods-node-ascend-device-plugin-rolebinding"},
        "subjects": [{"kind": "ServiceAccount", "name": sa_name, "namespace": namespace}],
        "roleRef": {
            "kind": "ClusterRole",
            "name": "pods-node-ascend-device-plugin-role",
            "apiGroup": "rbac.authorization.k8s.io",
        },
    }
    tolerations = [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    for key in ("huawei.com/Ascend910", "huawei.com/Ascend310", "huawei.com/Ascend310P", "huawei.com/npu"):
        tolerations.append({"key": key, "operator": "Exists", "effect": "NoSchedule"})
    tolerations.append({"key": "device-plugin", "operator": "Equal", "value": "v2", "effect": "NoSchedule"})
    root = config["root"]
    mounts = [
        {"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"},
        {"name": "vnpucfg", "mountPath": "/etc/vnpu.cfg"},
        {"name": "vnpu-cut", "mountPath": "/run/vnpu_cfg_lock"},
        {"name": "pod-resource", "mountPath": "/var/lib/kubelet/pod-resources"},
        {"name": "hiai-driver", "mountPath": "/usr/local/Ascend/driver", "readOnly": True},
        {"name": "log-path", "mountPath": "/var/log/mindx-dl/devicePlugin", "subPath": "mindx-dl/devicePlugin"},
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
        _host_path_volume("data-trace-file-dir", "/user/cluster-info/datatrace-config", "DirectoryOrCreate"),
        _host_path_volume("vnpu-cut", "/run/vnpu_cfg_lock", "DirectoryOrCreate"),
        _host_path_volume("tmp", "/tmp"),
        # type File: the pod does not start unless /etc/vnpu.cfg already exists on the host.
        _host_path_volume("vnpucfg", "/etc/vnpu.cfg", "File"),
        _host_path_volume("lingqu-log", "/var/log/lingqu", "DirectoryOrCreate"),
        _host_path_volume("localtime", "/etc/localtime"),
        _host_path_volume("enpu", ENPU_DIR, "DirectoryOrCreate"),
        _host_path_volume("share-device", root, "DirectoryOrCreate"),
    ]
    init_cmd = (
        "mkdir -p /var/log/mindx-dl && chmod 755 /var/log/mindx-dl && chown root:root "
        "/var/log/mindx-dl && mkdir -p /var/log/mindx-dl/devicePlugin && chmod 750 "
        "/var/log/mindx-dl/devicePlugin && chown root:root /var/log/mindx-dl/devicePlugin"
    )
    selector_labels = {"name": "ascend-device-plugin-softsharedev-ds"}
    pod_spec = {
        "tolerations": tolerations,
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "servertype", "operator": "NotIn", "values": ["soc"]}]}
                    ]
                }
            }
        },
        "priorityClassName": "system-node-critical",
        "nodeSelector": {LABEL_WORKER: "dls-worker-node", LABEL_ENABLE: "true", "accelerator": "huawei-Ascend910"},
        "serviceAccountName": sa_name,
        "hostPID": True,
        "initContainers": [
            {
                "name": "init-log-setup",
                "image": image,
                "command": ["sh", "-c", init_cmd],
                "securityContext": {"runAsUser": 0, "runAsNonRoot": False},
                "volumeMounts": [{"name": "log-path", "mountPath": "/var/log"}],
            }
        ],
        "containers": [
            {
                "image": image,
                "name": "device-plugin-01",
                "resources": {
                    "requests": {"memory": "500Mi", "cpu": "500m"},
                    "limits": {"memory": "500Mi", "cpu": "500m"},
                },
                "command": ["/bin/bash", "-c", "--"],
                "args": [plugin_args(config)],
                "livenessProbe": {
                    "httpGet": {"path": "/", "port": 11251, "scheme": "HTTP"},
                    "initialDelaySeconds": 30,
                    "periodSeconds": 15,
                    "timeoutSeconds": 5,
                    "failureThreshold": 3,
                },
                "securityContext": {"privileged": True, "readOnlyRootFilesystem": True},
                "imagePullPolicy": "IfNotPresent",
                "volumeMounts": mounts,
                "env": [
                    {"name": "MOUNT_BY_RUNTIME_FOR_DP", "value": "true"},
                    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
                ],
            }
        ],
        "volumes": volumes,
    }
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": DAEMONSET_NAME, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": selector_labels},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {
                    "annotations": {
                        "scheduler.alpha.kubernetes.io/critical-pod": "",
                        "seccomp.security.alpha.kubernetes.io/pod": "runtime/default",
                    },
                    "labels": selector_labels,
                },
                "spec": pod_spec,
            },
        },
    }
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa_name, "namespace": namespace}}
    return [account, role, binding, ds]
