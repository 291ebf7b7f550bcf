"""The compute benchmark's verdicts: mlmlib's speed-up per task against its target."""

from mlmlib import bench

SUMMARY = [
    {"task": "mlm", "method": "hf-trainer", "speedup": 1.0},
    {"task": "mlm", "method": "mlmlib", "speedup": 3.1},
    {"task": "electra", "method": "hf-plain", "speedup": 1.0},
    {"task": "electra", "method": "mlmlib", "speedup": 1.5},
]


def test_speedups_are_mlmlibs_rows_in_task_order():
    assert bench.speedups(SUMMARY) == {"mlm": 3.1, "electra": 1.5}


def test_each_task_is_judged_against_its_own_target():
    lines = bench.speedup_verdicts(bench.speedups(SUMMARY)).splitlines()
    assert lines == ["* **mlm**: mlmlib is **3.10x** the Hugging Face recipe (target 2.5x: met)",
                     "* **electra**: mlmlib is **1.50x** the Hugging Face recipe (target 2.0x: not met)"]
    assert "not met" in bench.speedup_verdicts({"mlm": 2.49})
    assert "(target 2.5x: met)" in bench.speedup_verdicts({"mlm": 2.5})
