# -*- coding: utf-8 -*-
"""Sandbox host trees: the /proc and /sys files host-side code reads, under a test's tmp_path."""


def irq_sandbox(root, interrupts, msi, affinity="0-3"):
    """Build the host paths the IRQ code reads under ``root`` (a pathlib.Path): proc/interrupts,
    sys/bus/pci/devices/<bus>/msi_irqs/<n> for ``msi`` ({bus: [irq, ...]}) and
    proc/irq/<n>/smp_affinity_list = ``affinity`` for every IRQ. Returns ``root``."""
    (root / "proc").mkdir(parents=True, exist_ok=True)
    (root / "proc" / "interrupts").write_text(interrupts)
    for bus, irqs in msi.items():
        msi_dir = root / "sys" / "bus" / "pci" / "devices" / bus / "msi_irqs"
        msi_dir.mkdir(parents=True)
        for number in irqs:
            (msi_dir / str(number)).write_text("msi\n")
            irq_dir = root / "proc" / "irq" / str(number)
            irq_dir.mkdir(parents=True, exist_ok=True)
            (irq_dir / "smp_affinity_list").write_text(affinity + "\n")
    return root
