# -*- coding: utf-8 -*-
"""``FakeIO``: a HostIO that answers from dicts, for the facts tests that need a host no
snapshot records (no lscpu, a cgroup cpuset, a board-only device id...)."""

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio


class FakeIO(hostio.HostIO):
    """``files``: {host path: text}; ``commands``: {"argv joined by spaces": stdout text, a
    CommandResult kwargs dict, or a callable(argv, timeout)}; a command not listed is missing;
    ``links``: {path: realpath}; ``env``: environment variables."""

    hostname, arch = "fake", "aarch64"

    def __init__(self, files=None, commands=None, links=None, env=None):
        self.files = dict(files or {})
        self.commands = dict(commands or {})
        self.links = dict(links or {})
        self.env = dict(env or {})

    def read_text(self, path, limit=None):
        text = self.files.get(path)
        return text if text is None or limit is None else text[:limit]

    def listdir(self, path):
        prefix = path.rstrip("/") + "/"
        names = sorted(set(p[len(prefix) :].split("/")[0] for p in self.files if p.startswith(prefix)))
        return names or None

    def exists(self, path):
        return path in self.files or bool(self.listdir(path))

    def realpath(self, path):
        return self.links.get(path)

    def getenv(self, name):
        return self.env.get(name)

    def which(self, name):
        return None

    def run(self, argv, timeout=30):
        res = self.commands.get(" ".join(argv))
        if res is None:
            return hostio.CommandResult(argv, rc=127, missing=True)
        if callable(res):
            return res(argv, timeout)
        if isinstance(res, str):
            return hostio.CommandResult(argv, rc=0, stdout=res)
        return hostio.CommandResult(argv, **res)

    def add_tree(self, mapping):
        """Add files given as {host path: text}; returns self."""
        self.files.update(mapping)
        return self


def cpu_tree(nodes, siblings=None, packages=None, distance=None, online=None):
    """sysfs files of a CPU layout: ``nodes`` {node: cpulist}; ``siblings`` {cpu: cpulist};
    ``packages`` {cpu: id}; ``distance`` {node: "10 21"} rows."""
    files = {}
    for node, cpus in nodes.items():
        files["/sys/devices/system/node/node%s/cpulist" % node] = cpus + "\n"
    for node, row in (distance or {}).items():
        files["/sys/devices/system/node/node%s/distance" % node] = row + "\n"
    for cpu, text in (siblings or {}).items():
        files["/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list" % cpu] = text + "\n"
    for cpu, pkg in (packages or {}).items():
        files["/sys/devices/system/cpu/cpu%d/topology/physical_package_id" % cpu] = "%d\n" % pkg
    if online:
        files["/sys/devices/system/cpu/online"] = online + "\n"
    return files
