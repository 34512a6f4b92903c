# -*- coding: utf-8 -*-
# Copyright: npuops.fleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SMT cores of CPU sequences: group CPUs by physical core, split and cut in whole cores.

``cores`` is ``{cpu: core id}`` for the CPUs that have SMT siblings (``model.rules.smt_cores``,
read from ``thread_siblings_list``, never guessed from CPU numbers); a CPU it does not list is a
core of its own. An empty or None ``cores`` means one CPU per core, and every function then
takes the plain path (CpuSeq slices).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.npuops.fleet.plugins.module_utils.cpus.cpuset import CpuSeq


def groups(cpus, cores):
    """The CPUs of ``cpus`` (in order) grouped by core, cores in order of first appearance,
    each group a list in the order of ``cpus``."""
    if not cores:
        return [[cpu] for cpu in cpus]
    out = []
    index = {}
    for cpu in cpus:
        core = cores.get(cpu, ("cpu", cpu))
        where = index.get(core)
        if where is None:
            index[core] = len(out)
            out.append([cpu])
        else:
            out[where].append(cpu)
    return out


def core_order(cpus, cores):
    """``cpus`` reordered so that the threads of a core are adjacent (cores in order of their
    first CPU): ``0-3,64-67`` with siblings N / N+64 -> ``0,64,1,65,2,66,3,67``."""
    if not cores:
        return CpuSeq.from_cpus(cpus)
    return CpuSeq.from_cpus([cpu for group in groups(cpus, cores) for cpu in group])


def split(cpus, owners, cores):
    """``{owner: CpuSeq}``: ``cpus`` cut into consecutive shares of whole cores, one per owner
    (in order), the remainder one core each to the first owners. Fewer cores than owners:
    the cores are split into CPUs."""
    count = len(owners)
    if not cores:
        # (``cpus`` may also be a list of units: the 950 clusters of a node)
        shares, start = {}, 0
        base, extra = divmod(len(cpus), count)
        for index, owner in enumerate(owners):
            take = base + (1 if index < extra else 0)
            shares[owner] = cpus[start : start + take]
            start += take
        return shares
    units = groups(cpus, cores)
    if len(units) < count:
        units = [[cpu] for unit in units for cpu in unit]
    base, extra = divmod(len(units), count)
    shares, start = {}, 0
    for index, owner in enumerate(owners):
        take = base + (1 if index < extra else 0)
        shares[owner] = CpuSeq.from_cpus([cpu for unit in units[start : start + take] for cpu in unit])
        start += take
    return shares


def take(cpus, count, cores):
    """The first ``count`` CPUs of ``cpus`` in whole cores (as many whole cores as fit; when
    not even one fits, the first ``count`` CPUs)."""
    cpus = CpuSeq.from_cpus(cpus)
    if count >= len(cpus):
        return cpus
    if not cores:
        return cpus[:count]
    chosen = []
    for unit in groups(cpus, cores):
        if len(chosen) + len(unit) > count:
            break
        chosen.extend(unit)
    if not chosen:
        return cpus[:count]
    return CpuSeq.from_cpus(chosen)


def spread_roles(pool, cores):
    """A pool in core order with the ACL (``pool[-2]``) and release (``pool[-1]``) CPUs on two
    different cores where the pool allows: when the last two CPUs are siblings, the nearest
    earlier CPU of another core (not an IRQ position) takes the ACL position."""
    if not cores or len(pool) < 5:
        return pool
    ids = list(pool)
    last = cores.get(ids[-1], ("cpu", ids[-1]))
    if cores.get(ids[-2], ("cpu", ids[-2])) != last:
        return pool
    for pos in range(len(ids) - 3, 1, -1):
        if cores.get(ids[pos], ("cpu", ids[pos])) != last:
            ids[pos], ids[-2] = ids[-2], ids[pos]
            return CpuSeq.from_cpus(ids)
    return pool


def core_sizes(cores):
    """``{core id: how many CPUs}`` of a cores map."""
    sizes = {}
    for core in (cores or {}).values():
        sizes[core] = sizes.get(core, 0) + 1
    return sizes


def count(cpus, cores):
    """How many cores ``cpus`` touch."""
    if not cores:
        return len(cpus)
    return len(groups(cpus, cores))
