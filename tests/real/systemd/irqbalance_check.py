# -*- coding: utf-8 -*-
"""The irqbalance part of the real-systemd tier (run on the controller, the collection importable).

    irqbalance_check.py render ROOT ENVFILES_TEXT CPUS   -> writes the config, prints its path
    irqbalance_check.py compare CONFIG OUTPUT            -> exit 0 when irqbalance did what the
                                                            parser predicts

``render`` writes the environment file irqbalance's unit reads last (``irq.irqbalance_config_path``
on ``systemctl show -p EnvironmentFiles``) with the collection's own renderer
(``irqbalance.render_irqbalance_config``, what npu_irq_affinity writes): ``--banirq=N`` for the first
numeric IRQs of the real ``/proc/interrupts`` of this machine (the container sees the VM's), a
user's own ``-i N`` ban kept, and ``IRQBALANCE_BANNED_CPULIST=CPUS``.

``compare`` reads that file back with ``parse/irqbalance_conf.parse_config`` and irqbalance's own
``--oneshot --debug`` output ("Banned CPUs: <mask>", "IRQ <n> was BANNED.", the CPUs of its
balancing tree), and prints them side by side.
"""

from __future__ import print_function

import os
import re
import sys

from ansible_collections.npuops.fleet.plugins.module_utils.apply import irq
from ansible_collections.npuops.fleet.plugins.module_utils.cpus import cpulist
from ansible_collections.npuops.fleet.plugins.module_utils.parse import interrupts, irqbalance_conf
from ansible_collections.npuops.fleet.plugins.module_utils.render import irqbalance


def render(root, envfiles_text, cpus):
    path = irq.irqbalance_config_path(root, irqbalance_conf.unit_environment_files(envfiles_text))
    with open("/proc/interrupts") as handle:
        table = interrupts.parse_interrupts(handle.read())
    numbers = sorted(table)  # numeric rows only
    if len(numbers) < 5:
        raise SystemExit("/proc/interrupts: fewer than 5 numeric IRQs")
    ours, user = numbers[-3:], numbers[-4]
    host_path = os.path.join(root, path.lstrip("/"))
    with open(host_path) as handle:
        current = handle.read()
    # the operator's own ban, in irqbalance's short form, stays
    current += '\nIRQBALANCE_ARGS="-i %d"\n' % user
    warnings = []
    text = irqbalance.render_irqbalance_config(current, ours, source=path, banned_cpus=cpus, warnings=warnings)
    with open(host_path, "w") as handle:
        handle.write(text)
    for line in warnings:
        print("warning: %s" % line, file=sys.stderr)
    print(path)


def compare(config, output):
    with open(config) as handle:
        parsed = irqbalance_conf.parse_config(handle.read(), config)
    with open(output) as handle:
        text = handle.read()
    masks = re.findall(r"Banned CPUs: ([0-9a-fA-F,]+)", text)
    seen_cpus = cpulist.format(cpulist.from_mask(masks[-1], "irqbalance")) if masks else None
    seen_irqs = sorted(set(int(n) for n in re.findall(r"IRQ (\d+) was BANNED\.", text)))
    known = set(int(n) for n in re.findall(r"Adding IRQ (\d+) to database", text)) | set(seen_irqs)
    tree_cpus = sorted(set(int(n) for n in re.findall(r"CPU number (\d+)", text)))
    want_cpus = parsed["banned_cpus"]
    want_irqs = [n for n in parsed["banned_irqs"] if n in known]
    print("%-28s %-24s %s" % ("", "parser (parse_config)", "irqbalance --oneshot --debug"))
    print("%-28s %-24s %s" % ("banned CPUs", "%s (%s)" % (want_cpus, parsed["banned_cpus_from"]), seen_cpus))
    print("%-28s %-24s %s" % ("banned IRQs", ",".join(map(str, parsed["banned_irqs"])), ",".join(map(str, seen_irqs))))
    print("%-28s %-24s %s" % ("CPUs in its balancing tree", "not " + str(want_cpus), ",".join(map(str, tree_cpus))))
    banned = set(cpulist.parse(want_cpus, "parser")) if want_cpus else set()
    ok = seen_cpus == want_cpus and seen_irqs == want_irqs and tree_cpus and not banned & set(tree_cpus)
    print("MATCH" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "render":
        render(sys.argv[2], sys.argv[3], sys.argv[4])
        sys.exit(0)
    sys.exit(compare(sys.argv[2], sys.argv[3]))
