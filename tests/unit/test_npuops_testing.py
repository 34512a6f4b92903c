# -*- coding: utf-8 -*-
"""The shared test helpers themselves (tests/lib/npuops_testing): fixture_text, the collection
link, and the parser case selectors of npuops_testing.cases."""

import os

import pytest

from npuops_testing import COLLECTION_LINK, REPO, cases, fixture_text


def _first_sourced_fixture():
    root = os.path.join(REPO, "tests", "fixtures", "real")
    for dirpath, _dirs, files in sorted(os.walk(root)):
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8", errors="replace") as handle:
                if handle.read(9) == "# Source:":
                    return os.path.relpath(path, root)
    pytest.fail("no fixture under tests/fixtures/real starts with a '# Source:' line")


def test_fixture_text_strips_the_source_line():
    rel = _first_sourced_fixture()
    with open(os.path.join(REPO, "tests", "fixtures", "real", rel), encoding="utf-8") as handle:
        raw = handle.read()
    text = fixture_text(rel)
    assert raw.startswith("# Source:")
    assert not text.startswith("# Source:")
    assert text == raw.split("\n", 1)[1]


def test_collection_is_importable_by_fqcn():
    from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist

    assert os.path.realpath(cpulist.__file__).startswith(os.path.realpath(REPO))


def test_collection_link_points_at_this_checkout():
    assert os.path.islink(COLLECTION_LINK)
    assert os.path.realpath(COLLECTION_LINK) == os.path.realpath(REPO)


RESULT = {
    "version": "1.0",
    "flag": False,
    "count": 0,
    "chips": [
        {"npu": 0, "name": "a", "links": {"NPU1": "HCCS"}},
        {"npu": 1, "name": "b", "links": {}},
        {"npu": 2, "name": "b", "links": {}},
    ],
    "nodes": {"1": "0-3", "0": "4-7"},
    "fields": {"Health Status": "OK"},
}


@pytest.mark.parametrize(
    "selector, value",
    [
        ("version", "1.0"),
        ("chips.0.name", "a"),
        ("chips[].name", ["a", "b", "b"]),
        ("chips[:2].npu", [0, 1]),
        ("chips[npu=0].links.NPU1", "HCCS"),
        ("chips[?name=b].npu", [1, 2]),
        ("chips[?name=zz].npu", []),
        ("len(chips)", 3),
        ("set(chips[].name)", ["a", "b"]),
        ("keys(nodes)", ["1", "0"]),
        ("fields.Health Status", "OK"),
    ],
)
def test_selectors(selector, value):
    assert cases.select(RESULT, selector) == value
    assert cases.mismatches(RESULT, {selector: value}) == []


@pytest.mark.parametrize(
    "selector, want, words",
    [
        ("version", "1.1", "got '1.0'"),
        ("flag", 0, "got False"),  # booleans are not the integers they equal
        ("count", False, "got 0"),
        ("missing", 1, "no key 'missing'"),
        ("chips.7", 1, "out of range"),
        ("chips[name=b].npu", 1, "2 items with name=b"),
        ("version[]", [], "not a list"),
    ],
)
def test_mismatches_name_the_selector(selector, want, words):
    problems = cases.mismatches(RESULT, {selector: want})
    assert len(problems) == 1 and words in problems[0], problems
    with pytest.raises(AssertionError, match="missing"):
        cases.check(RESULT, {"version": "1.0", "missing": 1})


def test_case_files_load_with_defaults(tmp_path):
    path = tmp_path / "demo.yml"
    path.write_text(
        "module: npu_smi\nfunction: parse_info\ncases:\n"
        "  - fixture: ascend/x.txt\n    expected: {version: '1'}\n"
        "  - fixture: ascend/y.txt\n    id: why\n    function: parse_map\n"
        "    expected: {map: {}}\n"
    )
    first, second = cases.load(str(path))
    assert (first.source, first.module, first.function, first.id) == ("demo", "npu_smi", "parse_info", "x")
    assert (second.function, second.id, second.expected) == ("parse_map", "why", {"map": {}})
    path.write_text("module: m\ncases:\n  - fixture: a.txt\n    expect: {x: 1}\n")
    with pytest.raises(ValueError, match="unknown keys"):
        cases.load(str(path))
