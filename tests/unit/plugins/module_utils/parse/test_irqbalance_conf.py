# -*- coding: utf-8 -*-
"""irqbalance_conf.parse_config: the irqbalance environment file as data (text fixtures in
tests/fixtures/irqbalance/), the same parser render/irqbalance.render_irqbalance_config rewrites with."""

import os

import pytest
from hypothesis import given, settings, strategies as st

from npuops_testing import REPO
from ansible_collections.npuops.fleet.plugins.module_utils.parse import irqbalance_conf
from ansible_collections.npuops.fleet.plugins.module_utils.errors import ParseError
from ansible_collections.npuops.fleet.plugins.module_utils.render import irqbalance

FIXTURES = os.path.join(REPO, "tests", "fixtures", "irqbalance")


def text(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return handle.read()


def test_stock_file_bans_nothing():
    got = irqbalance_conf.parse_config(text("stock.env"), "/etc/default/irqbalance")
    assert got == {
        "args_line": None,
        "marker_line": None,
        "args": [],
        "ours": [],
        "banned_irqs": [],
        "banned_cpus": None,
        "banned_cpus_from": None,
    }


def test_our_bans_with_marker_and_user_options_kept():
    got = irqbalance_conf.parse_config(text("ours.env"))
    assert got["ours"] == [100, 102, 200, 202]
    assert got["banned_irqs"] == [5, 100, 102, 200, 202]  # the user's own ban counts too
    assert got["args"][:2] == ["--journal", "--policyscript=/usr/local/sbin/irq-policy.sh"]
    assert (got["marker_line"], got["args_line"]) == (3, 4)
    assert got["banned_cpus"] is None  # IRQBALANCE_BANNED_CPUS= set but empty


def test_hand_written_quoting_forms_and_last_assignment():
    got = irqbalance_conf.parse_config(text("user.env"), "/etc/sysconfig/irqbalance")
    # the later IRQBALANCE_ARGS wins: --banirq=1 is gone; every ban form counts, --banirq=abc not
    assert got["banned_irqs"] == [300, 301, 302]
    assert got["args"] == ["--hintpolicy=ignore", "-i", "300", "--banirq", "301", "-i302", "--banirq=abc"]
    assert got["ours"] == [] and got["marker_line"] is None and got["args_line"] == 6
    # a non-empty mask wins over the cpulist (irqbalance's setup_banned_cpus, cputree.c)
    assert (got["banned_cpus"], got["banned_cpus_from"]) == ("0-3", "IRQBALANCE_BANNED_CPUS")


@pytest.mark.parametrize(
    "body,cpus,source",
    [
        ("IRQBALANCE_BANNED_CPUS=\nIRQBALANCE_BANNED_CPULIST=8-9\n", "8-9", "IRQBALANCE_BANNED_CPULIST"),
        ("IRQBALANCE_BANNED_CPULIST=8-9\nIRQBALANCE_BANNED_CPUS=00000003\n", "0-1", "IRQBALANCE_BANNED_CPUS"),
        # set but empty: bans nothing, and the kernel's isolated CPUs are not banned either
        ("IRQBALANCE_BANNED_CPULIST=\n", "", "IRQBALANCE_BANNED_CPULIST"),
        # a non-empty mask decides even when it is all zeros
        ("IRQBALANCE_BANNED_CPUS=00000000\nIRQBALANCE_BANNED_CPULIST=4\n", "", "IRQBALANCE_BANNED_CPUS"),
        ("# nothing set\n", None, None),
    ],
)
def test_banned_cpus_follow_irqbalance_precedence(body, cpus, source):
    got = irqbalance_conf.parse_config(body)
    assert (got["banned_cpus"], got["banned_cpus_from"]) == (cpus, source)


def test_banned_cpus_from_the_mask_and_skipped_on_request():
    got = irqbalance_conf.parse_config('IRQBALANCE_BANNED_CPUS="00000001,0000000f"\n')
    assert got["banned_cpus"] == "0-3,32"
    bad = "IRQBALANCE_BANNED_CPULIST=0-99999999999\n"
    assert irqbalance_conf.parse_config(bad, cpus=False)["banned_cpus"] is None


@pytest.mark.parametrize(
    "bad, match",
    [
        ('IRQBALANCE_ARGS="--banirq=1\n', "IRQBALANCE_ARGS cannot be parsed"),
        ("IRQBALANCE_BANNED_CPULIST=0-99999999999\n", "is not a cpulist"),
        ("IRQBALANCE_BANNED_CPULIST='0-3 8'\n", "is not a cpulist"),
        ("IRQBALANCE_BANNED_CPULIST=0-3 8\n", "is not one cpulist"),
        ("IRQBALANCE_BANNED_CPULIST=7-3\n", "descending range"),
        ("IRQBALANCE_BANNED_CPUS=xyz\n", "is not a CPU mask"),
    ],
)
def test_bad_values_name_the_file_and_variable(bad, match):
    with pytest.raises(ParseError, match=match) as err:
        irqbalance_conf.parse_config(bad, "/etc/default/irqbalance")
    assert str(err.value).startswith("/etc/default/irqbalance")


def test_render_rewrites_what_parse_reads():
    """render/irqbalance.py writes through the same parser: its output parses back to the wanted bans."""
    out = irqbalance.render_irqbalance_config(text("ours.env"), [200, 202, 300])
    got = irqbalance_conf.parse_config(out)
    assert got["ours"] == [200, 202, 300]
    assert got["banned_irqs"] == [5, 200, 202, 300]  # 100/102 were ours: unbanned; 5 kept
    assert got["args"][:2] == ["--journal", "--policyscript=/usr/local/sbin/irq-policy.sh"]
    # an IRQ the user banned in another form is not banned twice
    again = irqbalance.render_irqbalance_config("IRQBALANCE_ARGS='-i 300'\n", [300])
    assert irqbalance_conf.parse_config(again)["args"] == ["-i", "300"]


_LINE = st.one_of(
    st.text(max_size=40),
    st.builds(
        lambda k, v: "%s=%s" % (k, v),
        st.sampled_from(
            ["IRQBALANCE_ARGS", "export IRQBALANCE_ARGS", "IRQBALANCE_BANNED_CPULIST", "IRQBALANCE_BANNED_CPUS"]
        ),
        st.text(alphabet="\"' -=,0123456789abcdefi#\\banirq\t", max_size=40),
    ),
    st.builds(lambda v: irqbalance_conf.BAN_MARKER + v, st.text(max_size=30)),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINE, max_size=8))
def test_fuzz_only_parse_error_escapes(lines):
    try:
        got = irqbalance_conf.parse_config("\n".join(lines), "fuzz")
    except ParseError as err:
        assert str(err).startswith("fuzz: ")
        return
    assert all(isinstance(i, int) and i >= 0 for i in got["banned_irqs"] + got["ours"])
    assert got["banned_cpus"] is None or isinstance(got["banned_cpus"], str)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_fuzz_any_text(value):
    try:
        irqbalance_conf.parse_config(value, "fuzz")
    except ParseError:
        pass
