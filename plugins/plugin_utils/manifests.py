# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes manifests as YAML text (controller side, PyYAML).

What the controller writes for ``kubectl`` - the soft-share device-plugin DaemonSet and the
node-label patch (``softshare_daemonset``, ``softshare_node_labels``) - is dumped here with
PyYAML's safe dumper in the layout the manifests always had: keys in the order the objects
were built (never sorted), block style, sequences indented under their key (``kubectl``'s
own layout), no anchors or aliases (a list two objects share is written twice), ASCII only
(other characters escaped: PyYAML writes U+0085 raw, which its reader takes for a line
break), one value per line however long (the device plugin's command line). What hosts must read back without
PyYAML (snapshot.yml, the kubelet's drop-in) stays with ``module_utils/host/yaml_subset``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import yaml

from ansible_collections.npuops.fleet.plugins.module_utils.softshare import plugin_config

# wide enough that no value of a manifest is folded onto a second line
_WIDTH = 1 << 16


class _ManifestDumper(yaml.SafeDumper):
    """SafeDumper with sequences indented under their key and no aliases."""

    def increase_indent(self, flow=False, indentless=False):
        return super(_ManifestDumper, self).increase_indent(flow, False)

    def ignore_aliases(self, data):
        return True


def to_yaml(value):
    """Block-style YAML of one plain document (mappings keep their order)."""
    return yaml.dump(
        value, Dumper=_ManifestDumper, default_flow_style=False, sort_keys=False, allow_unicode=False, width=_WIDTH
    )


def render_daemonset(
    root,
    device_type,
    version,
    image=None,
    single_die_mode=None,
    extra_args=None,
    log_level=0,
    namespace="kube-system",
    root_parent_exists=None,
):
    """The soft-share device-plugin manifest (multi-document YAML text), validated first
    (``softshare/plugin_config.validate_plugin_config``; its ``SoftShareError`` passes up)."""
    config = plugin_config.validate_plugin_config(
        root,
        device_type,
        version,
        single_die_mode=single_die_mode,
        extra_args=extra_args,
        log_level=log_level,
        root_parent_exists=root_parent_exists,
    )
    header = (
        "# Ascend device plugin, soft-share (chip1-softShareDev) variant for %s hosts.\n"
        "# Rendered by npuops.fleet from the shipped ascendplugin-volcano.yaml.\n" % device_type
    )
    docs = plugin_config.daemonset(config, image, namespace)
    return header + "".join("---\n" + to_yaml(doc) for doc in docs)


def render_node_labels(node_name, labels):
    """A Node patch holding the soft-share labels (``kubectl patch node --patch-file``)."""
    return to_yaml({"metadata": {"name": node_name, "labels": dict(labels)}})
