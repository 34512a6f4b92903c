# -*- coding: utf-8 -*-
"""render/irqbalance.py: irqbalance's environment file with the planned IRQs and worker CPUs
banned, the user's lines and options kept (the parser it reads back with is tested in
parse/test_irqbalance_conf.py, the file irqbalance's unit really reads in apply/test_irq.py)."""

import pytest

from ansible_collections.npuops.fleet.plugins.module_utils.errors import NpuopsError
from ansible_collections.npuops.fleet.plugins.module_utils.render import irqbalance

DEBIAN_DEFAULT = """# irqbalance is a daemon process that distributes interrupts across
# CPUS on SMP systems.
#IRQBALANCE_ONESHOT=
#IRQBALANCE_BANNED_CPULIST=
#IRQBALANCE_ARGS=
"""


def test_irqbalance_ban_added_keeping_lines():
    text = irqbalance.render_irqbalance_config(DEBIAN_DEFAULT, [102, 100])
    assert text.startswith(DEBIAN_DEFAULT)
    assert text.endswith('# npuops.fleet banned IRQs: 100 102\nIRQBALANCE_ARGS="--banirq=100 --banirq=102"\n')
    assert irqbalance.render_irqbalance_config(text, [100, 102]) == text


def test_irqbalance_keeps_user_options_and_unbans_stale():
    current = 'IRQBALANCE_ONESHOT=0\nIRQBALANCE_ARGS="--policyscript=/x.sh --banirq=5"\nOTHER=1\n'
    first = irqbalance.render_irqbalance_config(current, [100])
    assert ('IRQBALANCE_ARGS="--policyscript=/x.sh --banirq=5 --banirq=100"') in first
    assert "IRQBALANCE_ONESHOT=0\n" in first and "OTHER=1\n" in first
    second = irqbalance.render_irqbalance_config(first, [200])
    assert 'IRQBALANCE_ARGS="--policyscript=/x.sh --banirq=5 --banirq=200"' in second
    assert "--banirq=100" not in second  # ours, no longer wanted
    kept = irqbalance.render_irqbalance_config(first, [200], keep_previous=True)
    assert "--banirq=100 --banirq=200" in kept


def test_irqbalance_unsafe_user_args_refused():
    with pytest.raises(NpuopsError, match="cannot be rewritten safely"):
        irqbalance.render_irqbalance_config("IRQBALANCE_ARGS='--x=$(id)'\n", [1])
    with pytest.raises(NpuopsError, match="cannot be parsed"):
        irqbalance.render_irqbalance_config('IRQBALANCE_ARGS="--x\n', [1])


def test_worker_cpus_are_banned_for_other_irqs_honouring_irqbalance_precedence():
    warnings = []
    text = irqbalance.render_irqbalance_config(DEBIAN_DEFAULT, [100, 102], banned_cpus="0-23,48-71", warnings=warnings)
    assert text.endswith(irqbalance.CPU_MARKER + "\nIRQBALANCE_BANNED_CPULIST=0-23,48-71\n")
    assert warnings == []
    # idempotent, and a new plan replaces our own line
    assert irqbalance.render_irqbalance_config(text, [100, 102], banned_cpus="0-23,48-71") == text
    moved = irqbalance.render_irqbalance_config(text, [100, 102], banned_cpus="24-47")
    assert "IRQBALANCE_BANNED_CPULIST=24-47\n" in moved
    assert moved.count("\nIRQBALANCE_BANNED_CPULIST=") == 1
    # the user's own list is kept, with a warning
    users = "IRQBALANCE_BANNED_CPULIST=0-1\n"
    warnings = []
    kept = irqbalance.render_irqbalance_config(users, [100], banned_cpus="2-9", warnings=warnings)
    assert "IRQBALANCE_BANNED_CPULIST=0-1\n" in kept and "2-9" not in kept
    assert "user's own" in warnings[0]
    # a non-empty mask wins in irqbalance: our list would be ignored, so it is not written
    warnings = []
    masked = irqbalance.render_irqbalance_config(
        "IRQBALANCE_BANNED_CPUS=0000000f\n", [100], banned_cpus="8-9", warnings=warnings
    )
    assert "BANNED_CPULIST" not in masked and "IRQBALANCE_BANNED_CPUS is set" in warnings[0]
