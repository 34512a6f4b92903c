# -*- coding: utf-8 -*-
"""The wrapper shown in vllm_launch_wrapper's EXAMPLES is the one its tasks write (the
example showed devices 0,2 for npus [0, 1]): the example's plan and last task, rendered on the
recorded A2 host it names, give exactly the commented wrapper (its exec line unwrapped)."""

import os
import re

import yaml

from ansible_collections.npuops.fleet.plugins.module_utils.host import hostio
from ansible_collections.npuops.fleet.plugins.module_utils.model import topology
from ansible_collections.npuops.fleet.plugins.module_utils.plan import dispatch
from ansible_collections.npuops.fleet.plugins.module_utils.render import launch
from npuops_testing import REPO, SNAPSHOTS, module_string

MODULE = os.path.join(REPO, "plugins", "modules", "vllm_launch_wrapper.py")


def _examples():
    return module_string(MODULE, "EXAMPLES")


def _commented_wrapper(examples):
    lines = examples.split("#   #!/usr/bin/env bash", 1)[1].split("\n#\n# and these units", 1)[0]
    out = ["#!/usr/bin/env bash"]
    for line in lines.splitlines()[1:]:
        out.append(re.sub(r"^#(   )?", "", line))
    text = "\n".join(out).strip() + "\n"
    return re.sub(r" \\\n  +", " ", text)  # the exec line is one line, wrapped in the comment


def test_the_commented_wrapper_is_what_the_example_writes():
    examples = _examples()
    tasks = yaml.safe_load(examples)
    plan_task = [t for t in tasks if "npuops.fleet.npu_cpu_plan" in t][0]["npuops.fleet.npu_cpu_plan"]
    launch_task = [t for t in tasks if "npuops.fleet.vllm_launch_wrapper" in t][-1]["npuops.fleet.vllm_launch_wrapper"]
    facts = topology.gather(hostio.SnapshotHostIO(os.path.join(SNAPSHOTS, "a2-910b3x8")))
    plan = dispatch.make_plan(facts, instances=plan_task["instances"])
    view = launch.instance_view(plan, launch_task["name"], launch_task["npus"])
    written = launch.render_wrapper(view, launch_task["command"], launch_task["env"], "host")
    assert "# devices: %s " % ",".join(str(n) for n in launch_task["npus"]) in written
    assert written == _commented_wrapper(examples)
