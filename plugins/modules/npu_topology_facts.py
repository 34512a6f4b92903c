#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: npu_topology_facts
short_description: Gather Ascend NPU / NVIDIA GPU / CPU / NUMA / RDMA NIC topology of a host
version_added: 0.1.0
description:
  - Reads an accelerator host - live, or replayed from a recorded host snapshot - and returns
    C(ansible_facts.npu_topology) (schema 2). C(changed) is false unless O(save_snapshot) writes
    a snapshot.
  - "Commands, all run concurrently with C(LC_ALL=C) and no shell, each under O(timeout):
    C(npu-smi info), C(npu-smi info -m), C(npu-smi info -t topo), C(lscpu), C(lscpu -e=CPU,NODE),
    C(nvidia-smi topo -m), C(nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader),
    C(systemctl is-active irqbalance), C(rocm-smi --showtopo), C(rocm-smi --showbus) (AMD
    Instinct hosts; rocm-smi prints no NIC, so GPU<->NIC cells are C(NODE)/C(SYS) from the sysfs
    NUMA nodes). Only when needed - C(numactl -H) (no sysfs node distances),
    C(npu-smi info -t board -i <npu>) (no Huawei PCI device id in sysfs)."
  - Files read are C(/proc/self/status) (C(Cpus_allowed_list)), the service cpuset
    (C(/sys/fs/cgroup/system.slice/cpuset.cpus.effective), else the root cpuset),
    C(/sys/devices/system/cpu/{online,isolated,nohz_full}),
    C(/sys/devices/system/cpu/cpu<N>/topology/{physical_package_id,thread_siblings_list}),
    C(/sys/devices/system/node/node*/{cpulist,distance}),
    C(/sys/bus/pci/devices/<bdf>/{numa_node,vendor,device,msi_irqs/}),
    C(/proc/interrupts), C(/sys/class/infiniband/*) (with C(ports/<n>/{state,rate,link_layer}))
    and the irqbalance environment file C(/etc/sysconfig/irqbalance) or
    C(/etc/default/irqbalance). Tools looked up on C(PATH) are npu-smi, nvidia-smi, migratepages,
    taskset, systemctl and irqbalance.
  - A source that fails (non-zero exit, timeout, unparsable text, a missing sysfs file) is listed
    in C(errors) with the reason and its fact is null; a tool that is not installed is not an
    error (see C(tools)). A host without CPU data still returns its NPU / GPU facts (an C(errors)
    entry C(cpu)); the module fails only when nothing usable was read.
  - The device type (A2, A3, A5 for Ascend 950, 310P, 910A, unknown) is derived from the evidence,
    strongest first - Huawei PCI device ids, chip names, dies per NPU, the C(Phy-ID) column;
    C(device_type_evidence) says why and a warning names evidence that disagrees (rules in the
    notes).
options:
  snapshot:
    description:
      - Replay this recorded host snapshot directory (C(snapshot.yml) + C(fs/)) instead of
        reading the host. Nothing on the host is read. The format is in the notes.
    type: path
  snapshot_overlay:
    description:
      - With O(snapshot), a sandbox root whose files win over the snapshot's - what a play wrote
        into the sandbox (the irqbalance bans, IRQ affinities) is read back instead of the
        recorded values; commands still come from the snapshot. The demo reads its hosts this way
        after C(site.yml). C(/) or unset reads the snapshot alone.
    type: path
  save_snapshot:
    description:
      - Record everything read into this directory (created when missing), so the host can be
        replayed later with O(snapshot). C(changed) is true.
      - An existing directory that holds anything is refused unless O(overwrite_snapshot) is
        true; the snapshot being replayed (O(snapshot), a directory inside it or holding it) is
        always refused. Checked before anything is read, in check mode too.
      - Directories are created 0700 and files written 0600 (process tables, environment and
        device data of the host are in it).
      - An existing directory must belong to root or the user the module runs as and be
        writable by nobody else; a symlink on the way is followed only when it and its directory
        are equally trusted. Inside, no symlink is followed and every file is written atomically
        (temporary file and rename), so a link planted there is replaced, never written through.
      - Not written in check mode (C(changed) says it would be).
    type: path
  overwrite_snapshot:
    description:
      - Replace the files of an existing, non-empty O(save_snapshot) directory. Files of the
        earlier snapshot that this one does not write stay; save to a new directory for a clean
        snapshot.
    type: bool
    default: false
  timeout:
    description:
      - Seconds each command may run. It bounds the whole call - the command runs in its own
        process group, which is killed at the deadline (children that hold its output included),
        and reading stops there - and is reported in C(errors).
      - A command that prints more than 8 MiB (stdout or stderr) is killed too and reported.
    type: int
    default: 30
  vllm_ascend_paths:
    description:
      - Python environments (a venv or conda root, or a C(site-packages) directory) where
        vllm-ascend may be installed; C(vllm_ascend) in the facts gives the version found and
        where. Nothing is imported; the version the interpreter would import is read, the
        package's own C(vllm_ascend/_version.py) (which also names the commit of a build from a
        checkout), else the C(Version:) of C(vllm_ascend-*.dist-info/METADATA), else of
        C(egg-info/PKG-INFO). Another record naming another version (a stale egg-info) is a
        warning.
      - vLLM itself is read from the same places by the same rules (C(vllm/_version.py), else
        C(vllm-*.dist-info/METADATA)) into C(vllm) in the facts, from which the launch wrapper
        and the audit pick vLLM's flags (C(docs/vllm-versions.md)).
      - A worker's root is a container image, so only the first 64 KiB of a file, 8 records of a
        directory and 12 distinct C(site-packages) of a root are read; what one root cannot
        give is one C(errors) row, never a failed task.
      - Searched after the root of every running NPU worker (C(/proc/<pid>/root), containers
        included - its interpreter's environment, then the usual site-packages) and before the
        host's usual C(site-packages) (C(/usr/local/lib), C(/usr/lib), C(/usr/lib64),
        C(/opt/conda/lib), C(/root/.local/lib)).
    type: list
    elements: path
extends_documentation_fragment:
  - npuops.fleet.module
  - npuops.fleet.attributes
  - npuops.fleet.attributes.facts
attributes:
  check_mode:
    support: full
    details:
      - Reads the host as in a real run; O(save_snapshot) is not written (C(changed) says it
        would be). Nothing else on the host is ever modified.
  diff_mode:
    support: none
    details:
      - The only change is a snapshot written with O(save_snapshot); no diff is shown for it.
  facts:
    support: full
notes:
  - NUMA nodes come from sysfs, else C(lscpu -e), else the C(lscpu) summary; C(cpu.numa_source)
    says which.
  - "C(cpu.allowed) is the set a systemd service gets - the cgroup v2 C(system.slice)
    C(cpuset.cpus.effective), else the root cpuset (v2 C(/sys/fs/cgroup/cpuset.cpus.effective), v1
    C(cpuset.effective_cpus) / C(cpuset.cpus)), else the gathering process's own
    C(Cpus_allowed_list), else the online CPUs; C(cpu.allowed_source) says which
    (C(system.slice), C(cgroup root), C(self), C(online)) and C(cpu.allowed_self) keeps the
    process's own list (an SSH session or a job may run in a narrower cpuset; a warning says so).
    A C(system.slice) held by the host CPU partition (npu_cpu_partition) is skipped: the
    instances run in their own slice."
  - "C(cpu_partition) - the host CPU partition as the host has it: C(applied), each slice's
    C(cpuset.cpus) / C(cpuset.cpus.effective) (C(system.slice), C(user.slice), C(init.scope),
    C(npuops-vllm.slice)), C(manager_affinity) (PID 1), C(workqueue), C(default_smp_affinity),
    C(tuned_profile), C(cmdline) (the running kernel's C(isolcpus) / C(nohz_full) / C(rcu_nocbs)),
    C(kernel_cmdline_wanted) and C(reboot_pending)."
  - "C(cpu.numa_distance) - C({node: {node: distance}}) (SLIT, 10 = local) from
    C(/sys/devices/system/node/node<N>/distance), else C(numactl -H); C(cpu.packages) - C({node:
    physical package}) from C(physical_package_id) of the node's first and last CPU (-1, firmware
    that names no package, is an error; a node spanning packages a warning);
    C(cpu.smt_siblings) - the groups of C(thread_siblings_list) with more than one CPU (C([]) when
    no CPU has a sibling; never guessed from CPU numbering); C(cpu.isolated) / C(cpu.nohz_full) -
    cpulists (C(\"\") when none). Each is null, with an C(errors) entry, when its source is
    missing."
  - "RDMA NICs (C(nics[])) carry C(ports) (C({port, state, rate, link_layer}) of
    C(ports/<n>/): C(ACTIVE), Gb/s, C(InfiniBand) / C(Ethernet)), C(state) / C(rate) /
    C(link_layer) of the first ACTIVE port, C(card) (the PCI slot) and C(card_nics) (the RDMA
    devices on that card)."
  - NPU IRQs (C(npus[].irqs)) are found by name, the chip's C(msi_irqs) entries matched in
    C(/proc/interrupts) - the first C(sq_send_trigger_irq) and the first C(cq_update_irq), not
    SQ + 1 as vllm-ascend assumes.
  - NIC IRQs (C(nics[].irqs)) are the NIC's C(mlx5_comp*) completion IRQs, found by
    C(@pci:<bus id>) in the name, else by its C(msi_irqs) - the IRQs
    M(npuops.fleet.npu_irq_affinity) pins for a paired GPU; null when C(/proc/interrupts) or the
    bus id is unknown.
  - "irqbalance (C(irqbalance)): C(active) comes from C(systemctl is-active); C(config) is the
    environment file read, null when there is none - C(/etc/sysconfig/irqbalance) when it
    exists, else C(/etc/default/irqbalance), the one that
    O(npuops.fleet.npu_irq_affinity#module:irqbalance=ban) writes; C(banned_irqs) the IRQs its C(IRQBALANCE_ARGS) bans
    (C(--banirq=N), C(--banirq N), C(-i N); ours and the user's alike); C(banned_cpus) the cpulist
    of C(IRQBALANCE_BANNED_CPULIST) (or of the mask C(IRQBALANCE_BANNED_CPUS)), null when unset."
  - "An irqbalance file that cannot be parsed (an unclosed quote) is listed in C(errors) under its
    path and bans nothing. The fleet audit uses C(banned_irqs) to tell whether irqbalance can
    still move the planned IRQs. After O(npuops.fleet.npu_irq_affinity#module:irqbalance=ban)
    ran on the real A2 host the facts read
    C({installed: true, active: true, config: /etc/default/irqbalance, banned_irqs: [1024, 1026, 1028, ..., 1054], banned_cpus: null})."
  - Device type rules (C(device_type_evidence) says which applied), strongest evidence first - PCI
    device id (sysfs, else C(npu-smi info -t board)) C(19e5:d801), C(d802), C(d803), C(d500) ->
    910A, A2, A3, 310P; then the chip name C(Ascend950*) -> A5, C(310P*) -> 310P, C(910B<n>) -> A2
    (vllm-ascend's mapping), C(Ascend910), C(9391), C(9392), ... -> A3, C(910A), C(910ProB) ->
    910A; then two dies per NPU with their own bus ids -> A3; then the C(Chip  Phy-ID) header ->
    A3 (npu-smi prints it for 0xd803, but A2 tables with it exist). Weaker evidence that names
    another type gives a warning naming both.
  - The C(npu-smi info -t topo) CPU Affinity is keyed by logical NPU id (as vllm-ascend reads it)
    and keeps the order npu-smi printed (C(48-59,0-11) stays so - vllm-ascend's role split is
    positional). A3 and Ascend 950 topo matrices have no affinity column; C(affinity) is null
    there.
  - Soft-share capacity (C(softshare.capacity)) is healthy chips x 100; A3 counts dies.
  - "C(cgroup) is the host's cgroup mode from C(/proc/self/mounts): C(version) C(2) (unified),
    C(hybrid) (v1 controllers plus an empty C(cgroup2) on C(/sys/fs/cgroup/unified)), C(1), or
    null when unknown; C(cpuset_controller) is true when the unified hierarchy has the C(cpuset)
    controller (C(/sys/fs/cgroup/cgroup.controllers)). Only then does systemd enforce a unit's
    C(AllowedCPUs=); elsewhere a vLLM tree is held only by C(CPUAffinity=) at start and the
    binder and reconciler."
  - Beyond the product schema the facts carry C(device_type_evidence), C(numa_off) (NVIDIA, from
    the C(nvidia-smi topo -m) parser), C(warnings), C(cpu.numa_source), C(cpu.allowed_source)
    and C(cpu.model).
  - Ad hoc audit of a fleet, C(ansible all -m npuops.fleet.npu_topology_facts -a timeout=10).
  - Snapshot format (O(save_snapshot) writes it, O(snapshot) replays it) - a directory with
    C(snapshot.yml), C(cmd/<slug>.txt) (multi-line command outputs, named by C(stdout_file)) and
    C(fs/...), a mirror of the host paths read (C(fs/proc/self/status), C(fs/sys/...)). The last
    example shows a C(snapshot.yml).
  - "C(snapshot.yml) keys: C(schema) (1), C(hostname), C(captured_at), C(arch), C(env) (the
    visible-device variables), C(commands) (command line to its result), C(links) (extension,
    answers for realpath(); the longest entry that prefixes a path resolves it) and C(tools)
    (extension, answers for which(); absent or null means not installed)."
  - "A path absent from C(fs/) does not exist on that host; a command absent from C(commands), or
    with C(missing: true), is not installed. Command fields are C(rc), C(stdout) or C(stdout_file)
    (relative, inside the snapshot), C(stderr), C(missing), C(timed_out), C(seconds)."
  - Empty directories hold a C(.snapshot-keep) marker (never listed). Replay refuses C(..),
    relative paths, C(stdout_file) outside the snapshot, and any symlink, FIFO or device below
    the snapshot directory (C(cmd), C(fs) and C(snapshot.yml) included); no file is read past
    64 MiB.
  - "On disk a host path component is escaped so that no snapshot path holds a C(:) -
    C(%) is written C(%25) and C(:) C(%3A) (C(fs/sys/bus/pci/devices/0000%3Ac1%3A00.0/numa_node)).
    Replay tries the escaped path first, then the path as it is, so older snapshots still read."
  - "Bounds on what is read (a host or a snapshot beyond them is reported, never a traceback) -
    CPU ids up to 8191 (Linux C(NR_CPUS) is at most 8192), at most 32768 ids in one cpulist,
    NUMA node ids up to 1023, C(snapshot.yml) nested at most 32 levels, integers of at most 20
    digits."
  - C(snapshot.yml) is read without PyYAML, as a strict YAML subset (block mappings and
    sequences, flow mappings and sequences, plain / single- / double-quoted scalars with JSON
    escapes, ints, floats, bools, null, C(|) literal blocks, comments) or one JSON object.
    Anything else fails with the file and line. The writer emits JSON-style double-quoted strings.
  - Recorded hosts for tests and the demo fleet live in the collection's C(tests/snapshots/) (its
    README says what is real and what is synthesised); C(scripts/gen_snapshots.py) rebuilds them.
seealso:
  - module: npuops.fleet.npu_cpu_plan
"""

EXAMPLES = r"""
- name: Gather NPU/GPU topology
  npuops.fleet.npu_topology_facts:

- name: Show the NUMA node of every NPU
  ansible.builtin.debug:
    msg: "{{ ansible_facts.npu_topology.npus | map(attribute='numa_node') | list }}"

- name: Record this host for offline planning and tests
  npuops.fleet.npu_topology_facts:
    save_snapshot: /var/lib/npuops/snapshots/{{ inventory_hostname }}

- name: Replay a recorded host (nothing on the target is read)
  npuops.fleet.npu_topology_facts:
    snapshot: "{{ playbook_dir }}/snapshots/a2-910b3x8"
  delegate_to: localhost

- name: Fail fast on wedged drivers
  npuops.fleet.npu_topology_facts:
    timeout: 5

# A snapshot directory:
#   <snapshot>/snapshot.yml
#   <snapshot>/cmd/<slug>.txt   # multi-line command outputs (stdout_file)
#   <snapshot>/fs/...           # mirror of host paths read: fs/proc/self/status, fs/sys/...
# and its snapshot.yml:
#   schema: 1
#   hostname: a2-node-01
#   captured_at: "2026-11-30T05:00:00Z"
#   arch: aarch64
#   env: {ASCEND_RT_VISIBLE_DEVICES: "0,1"}
#   commands:
#     "npu-smi info": {rc: 0, stdout_file: cmd/npu-smi-info.txt}
#     "systemctl is-active irqbalance": {rc: 3, stdout: "inactive\n"}
#     "nvidia-smi topo -m": {missing: true}
#     "npu-smi info -t topo": {rc: -9, timed_out: true, seconds: 30.0}
#   links:      # extension: answers for realpath()
#     "/sys/class/infiniband/mlx5_0/device": "/sys/devices/pci0000:17/0000:17:00.0/0000:18:00.0"
#   tools:      # extension: answers for which(); absent or null = not installed
#     migratepages: /usr/bin/migratepages
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: success
  type: dict
  contains:
    npu_topology:
      description:
        - Host topology, schema 2 (see the collection's C(docs/dev/facts-schema.md)); schema 2
          added C(cpu.allowed_self), C(cpu.allowed_source), C(cpu.numa_distance),
          C(cpu.packages), C(cpu.smt_siblings), C(cpu.isolated), C(cpu.nohz_full) and the NIC
          port keys, and C(cpu.allowed) became the CPUs a service gets.
        - Keys C(schema_version), C(hostname), C(arch), C(vendor) (ascend, nvidia, amd, none),
          C(device_type), C(device_type_evidence), C(cpu) (allowed, allowed_self, allowed_source,
          online, threads_per_core, numa_nodes, numa_source, model, numa_distance, packages,
          smt_siblings, isolated, nohz_full), C(npus), C(npu_map), C(npu_process_layout), C(gpus), C(numa_off), C(nics),
          C(tools), C(irqbalance), C(visible_devices), C(vllm_ascend), C(vllm), C(softshare), C(cgroup),
          C(kubernetes), C(versions), C(warnings), C(errors).
        - C(npu_process_layout) - how C(npu-smi info) lists processes, C(npu_chip) (card and
          chip) or C(npu_id) (card only; a card of two chips then lists each process under
          both); null without npu-smi. vllm-ascend's parsers depend on it (C(docs/policies.md)).
        - "The inventory columns (null: the tool did not answer; C(warnings) names it). Each
          C(npus) entry: C(name) (model), C(health) (npu-smi's Health), C(hbm_total_mb),
          C(driver) (the C(Version:) of C(npu-smi info)'s first table line, else the board's
          C(Software Version)) and C(firmware) (C(Firmware Version) of
          C(npu-smi info -t board -i <card>), asked per card). Each C(gpus) entry: C(model),
          C(health) (NVIDIA - C(OK) when the GPU counted no uncorrectable ECC error since the
          driver loaded, C(Warning) when it did; null on AMD hosts: no health source is read),
          C(memory_mb), C(driver) and C(vbios) (C(nvidia-smi --query-gpu=...,driver_version,vbios_version);
          AMD - C(rocm-smi --showdriverversion --showvbios --showproductname): the amdgpu driver,
          the VBIOS, the C(Card series) as the model)."
        - "C(versions) - the host's C(npu_driver), C(npu_firmware), C(cann) (C(version=) of
          C(/usr/local/Ascend/ascend-toolkit/latest/<arch>-linux/ascend_toolkit_install.info),
          whose path is C(cann_source)), C(nvidia_driver), C(amd_driver); devices of one host
          that report different versions give both, comma-separated, and a warning. A device
          whose health no tool reported is never counted healthy: the fleet report shows it as
          C(unknown) with a warning naming the source."
        - C(gpus) entries of a Grace host (GH200, GB200, GB300, whose nvidia-smi prints NUMA
          Affinity as a node list) carry C(memory_nodes), the GPU's memory-only NUMA nodes;
          C(numa_node) is the listed node that has CPUs, the PCI device's sysfs node where
          they disagree.
        - Where npu-smi printed a table no parser can read, C(vendor) stays C(ascend) with
          C(npus) empty and an C(errors) entry naming the table (a plan then fails naming it);
          a Bus-Id masked as C(0000:xx:00.0) or C(NA) keeps its chip with C(bus_id) null.
        - C(kubernetes) - on a host with a kubelet, its configuration (file, drop-ins, the merged
          C(effective) one), C(cpu_manager_state), C(memory_manager_state), the device-plugin
          checkpoint with each container's Allocate answer, and C(dra_state), the DRA manager's
          claims (C(docs/kubernetes.md)); null elsewhere.
        - The sample is C(tests/snapshots/a2-910b3x8) with one of its eight NPUs (its distance
          table is the 4-socket Kunpeng table, paired, not captured; its firmware names no
          package, hence the error).
      returned: success
      type: dict
      sample:
        schema_version: 2
        hostname: a2-910b3x8
        arch: aarch64
        vendor: ascend
        device_type: A2
        device_type_evidence: ["chip name '910B3' -> A2", "PCI device 19e5:d802 -> A2"]
        cpu: {allowed: "0-191", allowed_self: "0-191", allowed_source: self, online: "0-191",
              threads_per_core: 1, numa_source: sysfs, model: Kunpeng-920,
              numa_nodes: {"0": "0-23", "1": "24-47", "2": "48-71", "3": "72-95", "4": "96-119",
                           "5": "120-143", "6": "144-167", "7": "168-191"},
              numa_distance: {"6": {"0": 24, "1": 25, "2": 24, "3": 25, "4": 24, "5": 25,
                                    "6": 10, "7": 11}},
              packages: null, smt_siblings: [], isolated: "", nohz_full: ""}
        npus:
          - {npu_id: 0, chip_id: 0, logic_id: 0, phy_id: null, name: 910B3, bus_id: "0000:c1:00.0",
             numa_node: 6, affinity: "144-167", health: OK, hbm_total_mb: 65536, hbm_used_mb: 3338,
             processes: [], irqs: {sq: 1024, cq: 1026}, driver: 23.0.7, firmware: null}
        npu_map: {"0": {"0": "0"}, "1": {"0": "1"}, "2": {"0": "2"}, "3": {"0": "3"},
                  "4": {"0": "4"}, "5": {"0": "5"}, "6": {"0": "6"}, "7": {"0": "7"}}
        npu_process_layout: npu_chip
        gpus: []
        numa_off: null
        nics: []
        tools: {npu-smi: true, nvidia-smi: false, migratepages: true, taskset: true,
                systemctl: true}
        irqbalance: {installed: true, active: true, config: null, banned_irqs: [],
                     banned_cpus: null}
        visible_devices: {ASCEND_RT_VISIBLE_DEVICES: null, CUDA_VISIBLE_DEVICES: null}
        vllm_ascend: {version: 0.23.0.post1, source: /usr/local/lib/python3.11/site-packages/vllm_ascend-0.23.0.post1.dist-info/METADATA}
        vllm: {version: 0.34.0, source: /usr/local/lib/python3.11/site-packages/vllm-0.34.0.dist-info/METADATA}
        softshare: {chips_total: 8, chips_healthy: 8, capacity: 800}
        cgroup: {version: null, cpuset_controller: null}
        versions: {npu_driver: 23.0.7, npu_firmware: null, cann: null, cann_source: null,
                   nvidia_driver: null, amd_driver: null}
        warnings: ["NPU firmware unknown for card 0, 1, 2, 3, 4, 5, 6, 7: npu-smi info -t board -i <card> gave no
                   answer (not run on this host, or not recorded in its snapshot); run it on the host to see
                   the firmware"]
        errors: [{source: cpu.packages, msg: "/sys/devices/system/cpu/cpu0/topology/physical_package_id: -1 (the firmware names no package)"}]
snapshot_saved:
  description: Directory the snapshot was written to.
  returned: when O(save_snapshot) is set and not in check mode
  type: str
  sample: /var/lib/npuops/snapshots/node-01
"""

from ansible_collections.npuops.fleet.plugins.module_utils.apply.module_runner import run
from ansible_collections.npuops.fleet.plugins.module_utils.apply import snapshot_save
from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology


def gather(module):
    params = module.params
    if params["timeout"] <= 0:
        raise NpuopsError("timeout must be a positive number of seconds, got %d" % params["timeout"])
    result = dict(changed=False)
    if params["snapshot"]:
        source = hostio.SnapshotHostIO(params["snapshot"])
        if params["snapshot_overlay"] and params["snapshot_overlay"] != "/":
            source = hostio.OverlayHostIO(source, params["snapshot_overlay"])
    else:
        source = hostio.LiveHostIO()
    recorder = snapshot_save.recorder(source, params["save_snapshot"], params["overwrite_snapshot"])
    facts = topology.gather(
        recorder or source, timeout=params["timeout"], vllm_ascend_paths=params.get("vllm_ascend_paths")
    )
    snapshot_save.save(recorder, params["save_snapshot"], module.check_mode, result, params["overwrite_snapshot"])
    result["ansible_facts"] = dict(npu_topology=facts)
    return result


def main():
    run(
        dict(
            snapshot=dict(type="path"),
            snapshot_overlay=dict(type="path"),
            save_snapshot=dict(type="path"),
            overwrite_snapshot=dict(type="bool", default=False),
            timeout=dict(type="int", default=30),
            vllm_ascend_paths=dict(type="list", elements="path"),
        ),
        gather,
    )


if __name__ == "__main__":
    main()
