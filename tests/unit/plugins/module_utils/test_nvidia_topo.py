# -*- coding: utf-8 -*-
"""nvidia_topo.parse on every real `nvidia-smi topo -m` fixture, mangled variants, fuzz;
read_rdma_nics on a fake sysfs."""

import pytest
from hypothesis import given, settings, strategies as st

from helpers import fixture_text
from ansible_collections.npuops.fleet.plugins.module_utils.parse import nvidia_topo
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.host.hostio import HostIO

NV = "nvidia/"
DELLA = NV + "della-a100-pcie_2gpu_old-format-mlx5-in-header_nvidia-smi-topo-m.txt"
DGXA100 = NV + "dgx-a100-class_8xA100-SXM_epyc7742-nps4_10nic_drv525_nvidia-smi-topo-m.txt"
B200 = NV + "dgx-b200-class_16nic_fused-cells_drv570_nccl-tests-333_nvidia-smi-topo-m.txt"
BREV = NV + "h100-4gpu-vm_brev_no-nic_partial-cpu-affinity_nvidia-smi-topo-m.txt"
DELL_MP = NV + "h100-8gpu-12nic-dell_topo-mp-pci-only_cgroup-affinity_deepep-397_nvidia-smi-topo-mp.txt"
TPG7 = NV + "h100-8gpu-12nic_numa-off_host-0007_nvidia-smi-topo-m.txt"
TPG8 = NV + "h100-8gpu-12nic_numa-off_host-0008_fused-cells_nvidia-smi-topo-m.txt"
PLI = NV + "h100-8gpu-6nic_princeton-pli_cgroup-limited-affinity_drv545_nvidia-smi-topo-m.txt"
ONENIC = NV + "h100-8gpu_1nic-sys-to-all_drv535_vllm-collect-env_nvidia-smi-topo-m.txt"
V17516 = NV + "h100-class_10nic_PARTIAL_fused-affinity-columns_vllm-17516_nvidia-smi-topo-m.txt"
H200 = NV + "h200-8gpu-9nic_bond_blog-reformatted_nvidia-smi-topo-m.txt"
SNC = NV + "hgx-h-class_9nic_snc4-4-numa-nodes_PARTIAL_sglang-13973_nvidia-smi-topo-m.txt"
JUWELS = NV + "juwels-booster_4xA100_old-format-mlx5-in-header_nps4_nvidia-smi-topo-mp.txt"
PCIE8 = NV + "pcie-8gpu_no-nvlink_no-nic_odd-cpu-range_nvidia-smi-topo-m.txt"

ALL = [DELLA, DGXA100, B200, BREV, DELL_MP, TPG7, TPG8, PLI, ONENIC, V17516, H200, SNC,
       JUWELS, PCIE8]

# fixture: (gpus, nics, numa_off, numa nodes by GPU, affinities by GPU index {i: aff},
#           exact cells {(gpu, peer): cell}, first nic names)
EXPECTED = {
    DELLA: (2, 2, False, [0, 1], {0: "0-63", 1: "64-127"},
            {(0, "GPU1"): "SYS", (0, "mlx5_0"): "NODE", (1, "mlx5_1"): "NODE",
             (1, "mlx5_0"): "SYS"}, ["mlx5_0", "mlx5_1"]),
    DGXA100: (8, 10, False, [3, 3, 1, 1, 7, 7, 5, 5],
              {0: "48-63,176-191", 2: "16-31,144-159", 4: "112-127,240-255",
               7: "80-95,208-223"},
              {(0, "GPU1"): "NV12", (0, "mlx5_0"): "PXB", (0, "mlx5_1"): "PXB",
               (7, "mlx5_7"): "PXB", (7, "mlx5_9"): "SYS", (3, "mlx5_8"): "SYS"},
              ["mlx5_0", "mlx5_1", "mlx5_2"]),
    B200: (8, 16, False, [0, 0, 0, 0, 1, 1, 1, 1],
           {0: "0-55,112-167", 7: "56-111,168-223"},
           {(0, "mlx5_4"): "PXB", (1, "mlx5_7"): "PXB", (2, "mlx5_8"): "PXB",
            (2, "mlx5_9"): "NODE",  # fused "PXBNODE"
            (4, "mlx5_8"): "SYS", (4, "mlx5_9"): "SYS",  # fused "SYSSYS"
            (4, "mlx5_10"): "PXB", (7, "mlx5_15"): "PXB", (0, "GPU7"): "NV18"},
           ["mlx5_0", "mlx5_1"]),
    BREV: (4, 0, False, [0, 1, 1, 1], {0: "44-51,148-155", 1: None, 3: None},
           {(0, "GPU3"): "NV18"}, []),
    DELL_MP: (8, 12, False, [0, 0, 0, 0, 1, 1, 1, 1],
              {0: "0,2,4,6,8,10", 4: "1,3,5,7,9,11"},
              {(0, "GPU1"): "NODE", (0, "GPU4"): "SYS", (0, "mlx5_0"): "PIX",
               (0, "mlx5_2"): "PIX", (1, "mlx5_3"): "PIX", (4, "mlx5_8"): "PIX",
               (7, "mlx5_11"): "PIX"}, ["mlx5_0"]),
    TPG7: (8, 12, True, [0] * 8, {0: "0-191", 7: "0-191"},
           {(3, "mlx5_5"): "PIX", (4, "mlx5_6"): "PIX", (7, "mlx5_11"): "PIX",
            (0, "mlx5_3"): "NODE"}, ["mlx5_0"]),
    TPG8: (8, 12, True, [0] * 8, {5: "0-191"},
           {(5, "mlx5_7"): "PIX", (5, "mlx5_8"): "NODE", (6, "mlx5_8"): "PIX"}, ["mlx5_0"]),
    PLI: (8, 6, False, [0, 0, 0, 0, 1, 1, 1, 1], {0: None, 3: None, 4: "1", 7: "1"},
          {(0, "mlx5_0"): "PIX", (0, "mlx5_1"): "PIX", (3, "mlx5_2"): "PIX",
           (4, "mlx5_3"): "PIX", (6, "mlx5_5"): "PIX", (1, "mlx5_0"): "NODE"},
          ["mlx5_0"]),
    ONENIC: (8, 1, False, [0, 0, 0, 0, 1, 1, 1, 1], {0: "0-103", 4: "104-207"},
             {(0, "mlx5_0"): "SYS", (7, "mlx5_0"): "SYS"}, ["mlx5_0"]),
    V17516: (7, 10, False, [0, 0, 0, 0, 1, 1, 1],
             {0: "0-55,112-167", 4: "56-111,168-223", 6: "56-111,168-223"},
             {(0, "NIC0"): "PIX", (6, "NIC6"): "PIX", (6, "GPU7"): "NV18",
              (6, "NIC9"): "SYS"}, ["NIC0"]),
    H200: (8, 9, False, [0, 0, 0, 0, 1, 1, 1, 1], {0: "0,2-47,96-143", 5: "48-95,144-191"},
           {(0, "mlx5_0"): "PIX", (1, "mlx5_3"): "PIX", (7, "mlx5_9"): "PIX",
            (0, "mlx5_bond_0"): "NODE", (4, "mlx5_bond_0"): "SYS"},
           ["mlx5_0", "mlx5_3"]),
    SNC: (6, 9, False, [0, 0, 0, 1, 2, 2], {0: "0-23,96-119", 3: "24-47,120-143"},
          {(3, "NIC4"): "PIX", (3, "NIC3"): "NODE", (4, "NIC5"): "PIX", (5, "NIC8"): "SYS"},
          ["NIC0"]),
    JUWELS: (4, 4, False, [3, 1, 7, 5], {0: "18-23,66-71", 3: "30-35,78-83"},
             {(0, "mlx5_0"): "PIX", (1, "mlx5_1"): "PIX", (1, "GPU0"): "SYS",
              (3, "mlx5_3"): "PIX"}, ["mlx5_0"]),
    PCIE8: (8, 0, False, [0, 0, 0, 0, 1, 1, 1, 1], {0: "0-31,64-95", 4: "32-63,96-123"},
            {(0, "GPU3"): "NODE", (0, "GPU4"): "SYS"}, []),
}


def _check(result, expected):
    n_gpus, n_nics, numa_off, nodes, affinities, cells, first_nics = expected
    assert len(result["gpus"]) == n_gpus
    assert len(result["nics"]) == n_nics
    assert result["numa_off"] is numa_off
    assert [gpu["numa_node"] for gpu in result["gpus"]] == nodes
    by_index = dict((gpu["index"], gpu) for gpu in result["gpus"])
    for index, affinity in affinities.items():
        assert by_index[index]["affinity"] == affinity, index
    for (index, peer), cell in cells.items():
        assert by_index[index]["links"][peer] == cell, (index, peer)
    assert [nic["name"] for nic in result["nics"]][:len(first_nics)] == first_nics


@pytest.mark.parametrize("rel", ALL)
def test_every_real_fixture(rel):
    result = nvidia_topo.parse(fixture_text(rel))
    _check(result, EXPECTED[rel])
    for gpu in result["gpus"]:
        assert gpu["name"] == "GPU%d" % gpu["index"]
        assert gpu["name"] not in gpu["links"]
        # every GPU row names every other column exactly once
        if "PARTIAL" not in rel:
            assert len(gpu["links"]) == EXPECTED[rel][0] + EXPECTED[rel][1] - 1


@pytest.mark.parametrize("rel", [DGXA100, B200, DELL_MP, PLI, TPG7, PCIE8, BREV])
def test_tabs_expanded_to_spaces_read_the_same(rel):
    text = fixture_text(rel)
    tabbed = nvidia_topo.parse(text)
    spaced = nvidia_topo.parse("\n".join(line.expandtabs(8) for line in text.split("\n")))
    assert spaced["gpus"] == tabbed["gpus"]
    assert spaced["nics"] == tabbed["nics"]


@pytest.mark.parametrize("prefix,suffix", [("\x1b[4m", "\x1b[0m"), ("[4m", "[0m")])
def test_ansi_underlined_header(prefix, suffix):
    # R590 captures underline the header row; archives drop the ESC byte
    text = fixture_text(B200)
    lines = text.split("\n")
    lines[0] = prefix + lines[0] + suffix
    assert nvidia_topo.parse("\n".join(lines))["gpus"] == nvidia_topo.parse(text)["gpus"]


def test_nic_legend_maps_names_not_indices():
    result = nvidia_topo.parse(fixture_text(H200))
    assert result["nics"][1] == {"legend": "NIC1", "name": "mlx5_3"}
    assert result["nics"][8] == {"legend": "NIC8", "name": "mlx5_bond_0"}


def test_old_format_legend_is_the_rdma_name():
    assert nvidia_topo.parse(fixture_text(JUWELS))["nics"][0] == {
        "legend": "mlx5_0", "name": "mlx5_0"}


def test_partial_captures_warn_about_what_is_missing():
    snc = nvidia_topo.parse(fixture_text(SNC))
    assert any("GPU6" in w and "no row" in w for w in snc["warnings"])
    assert any("NIC Legend" in w for w in snc["warnings"])
    cut = nvidia_topo.parse(fixture_text(V17516))
    assert any("no header" in w for w in cut["warnings"])
    assert any("GPU7" in w for w in cut["warnings"])
    assert any("fused" in w and "GPU4" in w for w in cut["warnings"])


def test_clean_capture_has_no_warnings():
    assert nvidia_topo.parse(fixture_text(DGXA100))["warnings"] == []


def test_blank_cpu_affinity_is_reported():
    result = nvidia_topo.parse(fixture_text(PLI))
    assert sum("blank" in w for w in result["warnings"]) == 4


def test_numa_affinity_na_means_numa_off():
    text = fixture_text(PCIE8).replace("\t0\t\tN/A", "\tN/A\t\tN/A").replace(
        "\t1\t\tN/A", "\tN/A\t\tN/A")
    result = nvidia_topo.parse(text)
    assert result["numa_off"] is True
    assert all(gpu["numa_node"] is None for gpu in result["gpus"])


def test_gpu_numa_id_is_read_when_numeric():
    text = fixture_text(BREV).replace("\t0\t\tN/A", "\t0\t\t4")
    assert nvidia_topo.parse(text)["gpus"][0]["gpu_numa_id"] == 4


@pytest.mark.parametrize("text", ["", "\n\n", "Legend:\n  X = Self\n", "GPU0 is fine\n",
                                  "\tGPU0\tGPU1\tCPU Affinity\n"])
def test_nothing_parseable_raises_parse_error_naming_source(text):
    with pytest.raises(ParseError) as err:
        nvidia_topo.parse(text, source="nvidia-smi topo -m")
    assert "nvidia-smi topo -m" in str(err.value)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(ALL), st.integers(min_value=0, max_value=6000), st.data())
def test_truncated_or_corrupted_real_text_only_raises_parse_error(rel, cut, data):
    text = fixture_text(rel)[:cut]
    if data.draw(st.booleans()):
        pos = data.draw(st.integers(min_value=0, max_value=max(0, len(text))))
        text = text[:pos] + data.draw(st.text(alphabet="\t X-,0123456789NVPIXSYODEHB/A\n",
                                              max_size=12)) + text[pos:]
    try:
        result = nvidia_topo.parse(text)
    except ParseError:
        return
    assert result["gpus"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_random_text_only_raises_parse_error(text):
    try:
        nvidia_topo.parse(text)
    except ParseError:
        pass


class FakeSysfs(HostIO):
    """A few sysfs entries: {path: text} files, {path: [names]} dirs, {path: target} links."""

    def __init__(self, files=None, dirs=None, links=None):
        self.files, self.dirs, self.links = files or {}, dirs or {}, links or {}

    def read_text(self, path):
        return self.files.get(path)

    def listdir(self, path):
        return self.dirs.get(path)

    def exists(self, path):
        return path in self.files or path in self.dirs or path in self.links

    def realpath(self, path):
        return self.links.get(path)

    def getenv(self, name):
        return None

    def run(self, argv, timeout=30):
        raise AssertionError("read_rdma_nics must not run commands")


def test_read_rdma_nics_from_sysfs():
    ib = "/sys/class/infiniband"
    io = FakeSysfs(
        dirs={ib: ["mlx5_1", "mlx5_0", "mlx5_bond_0"],
              ib + "/mlx5_0/device/net": ["ibp24s0"],
              ib + "/mlx5_bond_0/device/net": ["bond0", "eth0"]},
        files={ib + "/mlx5_0/device/numa_node": "0\n", ib + "/mlx5_1/device/numa_node": "-1\n",
               ib + "/mlx5_bond_0/device/numa_node": "garbage"},
        links={ib + "/mlx5_0/device": "/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0",
               ib + "/mlx5_1/device": "/sys/devices/pci0000:3f/0000:3F:01.0/0000:40:00.1",
               ib + "/mlx5_bond_0/device": None})
    assert nvidia_topo.read_rdma_nics(io) == [
        {"name": "mlx5_0", "netdev": "ibp24s0", "bus_id": "0000:18:00.0", "numa_node": 0},
        {"name": "mlx5_1", "netdev": None, "bus_id": "0000:40:00.1", "numa_node": None},
        {"name": "mlx5_bond_0", "netdev": "bond0", "bus_id": None, "numa_node": None},
    ]


def test_read_rdma_nics_without_infiniband_class():
    assert nvidia_topo.read_rdma_nics(FakeSysfs()) == []
