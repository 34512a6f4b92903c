# -*- coding: utf-8 -*-
"""nvidia_topo.parse on every real `nvidia-smi topo -m` fixture (row invariants here, the
expected values in cases/nvidia_topo.yml), mangled variants, fuzz; read_rdma_nics on a fake
sysfs."""

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.npuops.fleet.plugins.module_utils.parse import nvidia_topo
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.host.hostio import HostIO
from npuops_testing import fixture_text
from npuops_testing.gpu_hosts import ALL, B200, BREV, DELL_MP, DGXA100, H200, JUWELS, PCIE8, PLI, SNC, TPG7, V17516

# The fixture -> expected values table (counts, numa=off, NUMA node per GPU, affinities, matrix
# cells, first NIC names) is cases/nvidia_topo.yml, run by test_fixture_cases.py.


@pytest.mark.parametrize("rel", ALL)
def test_every_gpu_row_names_every_other_column_once(rel):
    result = nvidia_topo.parse(fixture_text(rel))
    for gpu in result["gpus"]:
        assert gpu["name"] == "GPU%d" % gpu["index"]
        assert gpu["name"] not in gpu["links"]
        # every GPU row names every other column exactly once
        if "PARTIAL" not in rel:
            assert len(gpu["links"]) == len(result["gpus"]) + len(result["nics"]) - 1


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
    assert nvidia_topo.parse(fixture_text(JUWELS))["nics"][0] == {"legend": "mlx5_0", "name": "mlx5_0"}


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
    text = fixture_text(PCIE8).replace("\t0\t\tN/A", "\tN/A\t\tN/A").replace("\t1\t\tN/A", "\tN/A\t\tN/A")
    result = nvidia_topo.parse(text)
    assert result["numa_off"] is True
    assert all(gpu["numa_node"] is None for gpu in result["gpus"])


def test_gpu_numa_id_is_read_when_numeric():
    text = fixture_text(BREV).replace("\t0\t\tN/A", "\t0\t\t4")
    assert nvidia_topo.parse(text)["gpus"][0]["gpu_numa_id"] == 4


@pytest.mark.parametrize(
    "text", ["", "\n\n", "Legend:\n  X = Self\n", "GPU0 is fine\n", "\tGPU0\tGPU1\tCPU Affinity\n"]
)
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
        text = text[:pos] + data.draw(st.text(alphabet="\t X-,0123456789NVPIXSYODEHB/A\n", max_size=12)) + text[pos:]
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
        dirs={
            ib: ["mlx5_1", "mlx5_0", "mlx5_bond_0"],
            ib + "/mlx5_0/device/net": ["ibp24s0"],
            ib + "/mlx5_bond_0/device/net": ["bond0", "eth0"],
        },
        files={
            ib + "/mlx5_0/device/numa_node": "0\n",
            ib + "/mlx5_1/device/numa_node": "-1\n",
            ib + "/mlx5_bond_0/device/numa_node": "garbage",
        },
        links={
            ib + "/mlx5_0/device": "/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0",
            ib + "/mlx5_1/device": "/sys/devices/pci0000:3f/0000:3F:01.0/0000:40:00.1",
            ib + "/mlx5_bond_0/device": None,
        },
    )
    no_port = {"ports": [], "state": None, "rate": None, "link_layer": None}
    assert topology.read_rdma_nics(io) == [
        dict(
            no_port,
            name="mlx5_0",
            netdev="ibp24s0",
            bus_id="0000:18:00.0",
            numa_node=0,
            card="0000:18:00",
            card_nics=["mlx5_0"],
        ),
        dict(
            no_port,
            name="mlx5_1",
            netdev=None,
            bus_id="0000:40:00.1",
            numa_node=None,
            card="0000:40:00",
            card_nics=["mlx5_1"],
        ),
        dict(no_port, name="mlx5_bond_0", netdev="bond0", bus_id=None, numa_node=None, card=None, card_nics=None),
    ]


def test_read_rdma_nics_ports_and_cards():
    """Port state, rate (Gb/s) and link layer from ports/<n>/; two functions of one PCI slot
    are the ports of one card; an unparsable attribute is an error, the NIC stays."""
    ib = "/sys/class/infiniband"
    files = {}
    for name, port, state, rate, layer in (
        ("mlx5_0", "1", "4: ACTIVE\n", "200 Gb/sec (4X HDR)\n", "InfiniBand\n"),
        ("mlx5_1", "1", "1: DOWN\n", "2.5 Gb/sec (1X SDR)\n", "Ethernet\n"),
        ("mlx5_2", "1", "garbage\n", "fast\n", "Ethernet\n"),
    ):
        base = "%s/%s/ports/%s/" % (ib, name, port)
        files.update({base + "state": state, base + "rate": rate, base + "link_layer": layer})
    io = FakeSysfs(
        dirs={
            ib: ["mlx5_0", "mlx5_1", "mlx5_2"],
            ib + "/mlx5_0/ports": ["1"],
            ib + "/mlx5_1/ports": ["1"],
            ib + "/mlx5_2/ports": ["1"],
        },
        files=files,
        links={
            ib + "/mlx5_0/device": "/sys/devices/pci0000:e0/0000:e0:01.0/0000:e1:00.0",
            ib + "/mlx5_1/device": "/sys/devices/pci0000:e0/0000:e0:01.0/0000:e1:00.1",
            ib + "/mlx5_2/device": "/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0",
        },
    )
    errors = []
    nics = dict((n["name"], n) for n in topology.read_rdma_nics(io, errors))
    assert (nics["mlx5_0"]["state"], nics["mlx5_0"]["rate"], nics["mlx5_0"]["link_layer"]) == (
        "ACTIVE",
        200,
        "InfiniBand",
    )
    assert (nics["mlx5_1"]["state"], nics["mlx5_1"]["rate"]) == ("DOWN", 2.5)
    assert nics["mlx5_0"]["card_nics"] == nics["mlx5_1"]["card_nics"] == ["mlx5_0", "mlx5_1"]
    assert nics["mlx5_2"]["card_nics"] == ["mlx5_2"] and nics["mlx5_2"]["state"] is None
    assert nics["mlx5_0"]["ports"] == [{"port": 1, "state": "ACTIVE", "rate": 200, "link_layer": "InfiniBand"}]
    assert sorted(e["source"].rsplit("/", 1)[-1] for e in errors) == ["rate", "state"]


def test_read_rdma_nics_without_infiniband_class():
    assert topology.read_rdma_nics(FakeSysfs()) == []


def _headerless(rel, cut_from=None):
    """A real capture with its header row taken out (and cut from a row on, when given)."""
    lines = fixture_text(rel).split("\n")
    header = [i for i, line in enumerate(lines) if "GPU0" in line and "CPU" in line][0]
    lines = lines[:header] + lines[header + 1 :]
    if cut_from is not None:
        lines = lines[: [i for i, line in enumerate(lines) if line.startswith(cut_from)][0]]
    return "\n".join(lines)


def test_headerless_cut_gpu_row_makes_no_nic_of_its_column():
    # PCIe host, no NVLink, no NIC: the GPU7 row and everything after it cut away. Column 7
    # can be neither named a NIC (no NIC row, no legend) nor proven a GPU: left out.
    result = nvidia_topo.parse(_headerless(PCIE8, cut_from="GPU7"))
    assert [g["name"] for g in result["gpus"]] == ["GPU%d" % i for i in range(7)]
    assert result["nics"] == []
    assert all(not any(k.startswith("NIC") for k in g["links"]) for g in result["gpus"])
    assert any("columns 7-7" in w for w in result["warnings"])


def test_headerless_nvlink_column_is_a_gpu_and_nic_rows_set_the_boundary():
    # DGX A100 without its header and its GPU7 row: the NV12 cells make column 7 GPU7, the
    # NIC rows' X cells put NIC0 at column 8; the 10 NICs keep their legend names.
    text = "\n".join(line for line in _headerless(DGXA100).split("\n") if not line.startswith("GPU7"))
    result = nvidia_topo.parse(text)
    assert len(result["gpus"]) == 7 and len(result["nics"]) == 10
    assert result["gpus"][0]["links"]["GPU7"] == "NV12"
    assert result["gpus"][0]["links"]["mlx5_0"] == "PXB"
    assert [n["name"] for n in result["nics"]][:2] == ["mlx5_0", "mlx5_1"]
    # cut from GPU7 on (no NIC row, no legend): the GPUs are joined pairwise by NVLink, so
    # the columns past the NV# cells are the 10 NICs (by legend id), column 7 still GPU7
    cut = nvidia_topo.parse(_headerless(DGXA100, cut_from="GPU7"))
    assert [n["name"] for n in cut["nics"]] == ["NIC%d" % i for i in range(10)]
    assert cut["gpus"][0]["links"]["GPU7"] == "NV12"
    assert cut["gpus"][0]["links"]["NIC0"] == "PXB" and "GPU8" not in cut["gpus"][0]["links"]


def test_grace_node_list_is_read_not_refused():
    text = (
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
        "GPU0\t X \tNV18\t0-71\t0,3-9\t\t2\n"
        "GPU1\tNV18\t X \t72-143\t1,10-16\t\t10\n"
    )
    result = nvidia_topo.parse(text)
    assert [g["numa_node"] for g in result["gpus"]] == [0, 1]
    assert result["gpus"][1]["numa_nodes"] == [1, 10, 11, 12, 13, 14, 15, 16]
    assert result["numa_off"] is False and not result["warnings"]
    # a list that is not one (ids past the node bound, repeats) is still refused by name
    bad = nvidia_topo.parse(text.replace("0,3-9", "0,3-9999"))
    assert bad["gpus"][0]["numa_node"] is None
    assert any("not a NUMA id" in w for w in bad["warnings"])
