# -*- coding: utf-8 -*-
"""Soft-share inputs for the filter tests: ``facts()`` (an Ascend host's npu_topology facts as
the soft-share filters read them) and ``JOB`` (a fixed-share job of two replicas)."""


def facts(chips=8, healths=None, device_type="A2", hbm=65536):
    healths = healths or ["OK"] * chips
    return {
        "device_type": device_type,
        "npus": [
            {"npu_id": i, "logic_id": i, "phy_id": i, "health": healths[i], "hbm_total_mb": hbm} for i in range(chips)
        ],
    }


JOB = {"name": "qwen", "aicore_quota": 50, "hbm_quota": 16384, "policy": "fixed-share", "replicas": 2}
