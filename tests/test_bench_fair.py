"""A fair benchmark: every arm on one device in one precision, reported as tokens/s and MFU
against that device's peak (a datasheet table for known GPUs, else a measured matmul rate)."""

from __future__ import annotations

import pytest

from mlmlib import bench


@pytest.mark.parametrize("name, peak", [
    ("NVIDIA H100 80GB HBM3", 989.4),  # the SXM part's name
    ("NVIDIA H100 SXM5 80GB", 989.4),
    ("NVIDIA H100 PCIe", 756.5),
    ("NVIDIA H100 NVL", 835.5),
    ("NVIDIA H200", 989.4),
    ("NVIDIA H200 NVL", 835.5),
    ("NVIDIA A100-SXM4-80GB", 312.0),
    ("NVIDIA A100 80GB PCIe", 312.0),
    ("NVIDIA H100", None),  # a variant the table cannot tell: measured instead, never guessed
    ("Tesla V100-SXM2-16GB", None),
    (None, None),
])
def test_the_peak_table_knows_each_variant(name, peak):
    found = bench.table_peak(name)
    assert (found[0] if found else None) == peak
    if found:
        assert "datasheet" in found[1] and f"{peak:g}" in found[1]


def test_a_known_gpu_in_bf16_takes_the_table_anything_else_is_measured():
    def never(*_):
        raise AssertionError("measured although the table knows it")

    assert bench.device_peak("cuda", "bf16", "NVIDIA H100 PCIe", measure=never)[0] == 756.5
    measured = lambda device, precision: {"cuda": 400.0, "cpu": 0.05}[device]  # noqa: E731
    peak, source = bench.device_peak("cuda", "fp32", "NVIDIA H100 PCIe", measure=measured)
    assert peak == 400.0 and source.startswith("measured: best fp32 matmul")
    assert bench.device_peak("cuda", "bf16", "Tesla V100", measure=measured)[0] == 400.0
    assert bench.device_peak("cpu", "fp32", None, measure=measured) == (0.05, "measured: best fp32 matmul rate on this cpu")


def test_mfu_arithmetic_by_hand():
    # 2e5 tokens/s at 4,000 tokens a step = 50 steps/s; 2e12 FLOP a step -> 1e14 FLOP/s;
    # of an H100 PCIe's 756.5 TFLOP/s that is 13.22%
    assert bench.mfu(2e5, 4000, 2e12, 756.5) == pytest.approx(100 / 756.5)
    assert bench.mfu(2e5, 4000, 2e12, 100.0) == pytest.approx(1.0)


def test_bad_device_or_precision_is_refused():
    with pytest.raises(ValueError, match="precision must be one of"):
        bench.resolve("auto", "fp16")
    with pytest.raises(ValueError, match="device must be auto, cpu or cuda"):
        bench.resolve("tpu", "auto")
    assert bench.resolve("auto", "auto") == ("cpu", "fp32")  # no GPU here


@pytest.mark.parametrize("precision, ran_on", [("bf16", "cpu/bfloat16"), ("fp32", "cpu/float32")])
def test_every_arm_runs_on_the_same_device_in_the_same_precision(precision, ran_on):
    """The Trainer, the plain ELECTRA and mlmlib's loop are each seen (their first linear layer's
    output) running on the benchmark's device in its precision; MFU uses one peak for all."""
    result = bench.run(vocab=120, hidden=32, layers=1, heads=2, seq=16, batch_size=8, measure=2,
                       repeats=1, threads=1, precision=precision,
                       peak=lambda device, prec, name: (0.5, f"test peak of {device}/{prec}"))
    assert result["machine"]["device"] == "cpu" and result["machine"]["precision"] == precision
    assert result["machine"]["peak_source"] == f"test peak of cpu/{precision}"
    assert {(r["task"], r["method"]) for r in result["rows"]} == {
        ("mlm", "hf_trainer"), ("mlm", "mlmlib"), ("electra", "hf_plain"), ("electra", "mlmlib")}
    assert {r["ran_on"] for r in result["rows"]} == {ran_on}
    for row in result["rows"]:
        assert row["mfu"] == pytest.approx(row["gflops"] / 500.0)
    for s in result["summary"]:
        assert s["ran_on"] == [ran_on] and s["mfu"] > 0


def test_every_arm_counts_the_same_flops_for_the_same_step():
    """The HF recipes project every position onto the vocabulary, mlmlib only the masked ones: MFU
    counts what the objective needs in both, so FLOPs per token are equal within each task, and
    ELECTRA's factorised embeddings are built at the width asked."""
    result = bench.run(vocab=120, hidden=32, embedding_size=16, layers=1, heads=2, seq=16,
                       batch_size=8, measure=2, repeats=1, threads=1, precision="fp32",
                       peak=lambda device, prec, name: (0.5, "test peak"))
    per_token = {}
    for row in result["rows"]:
        per_token.setdefault(row["task"], []).append(row["gflops"] / row["tokens_per_s"])
    assert set(per_token) == {"mlm", "electra"}
    for task, values in per_token.items():
        assert values[0] == pytest.approx(values[1]), task
    assert per_token["electra"][0] != pytest.approx(per_token["mlm"][0])  # two objectives differ
    assert result["setup"]["embedding_size"] == 16


def test_the_benchmark_times_one_gpu_only(monkeypatch):
    monkeypatch.setattr(bench.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(bench.torch.cuda, "device_count", lambda: 4)
    with pytest.raises(ValueError, match="4 GPUs visible.*CUDA_VISIBLE_DEVICES to one GPU"):
        bench.resolve("auto", "fp32")


def test_the_shape_presets_and_bad_sizes():
    from mlmlib import configs
    from mlmlib.bench_config import BENCH_PRESETS, BenchShape

    paper = BenchShape(preset="paper")
    assert paper.sizes() == {k: v for k, v in BENCH_PRESETS["paper"].items()}
    assert (paper.vocab, paper.embedding_size, paper.hidden) == (30522, 128, 256)  # ELECTRA-small
    assert BenchShape(preset="paper", repeats=1).sizes()["repeats"] == 1
    assert configs.resolve(BenchShape, {"preset": "tiny"})["vocab"] == 200
    with pytest.raises(ValueError, match="shape: preset must be one of"):
        configs.build(BenchShape, {"preset": "huge"}, "shape")
    with pytest.raises(ValueError, match="measure must be an int >= 1"):
        BenchShape(measure=0)
    with pytest.raises(ValueError, match="divisible by heads"):
        BenchShape(hidden=30, heads=4)


def test_the_command_line_takes_a_preset_and_overrides(monkeypatch):
    seen = {}

    def fake_run(**kwargs):
        seen.update(kwargs)
        return {"machine": {}, "summary": []}

    monkeypatch.setattr(bench, "run", fake_run)
    assert bench.main(["--preset", "paper", "--repeats", "1", "--threads", "2"]) == 0
    assert seen["vocab"] == 30522 and seen["repeats"] == 1 and seen["threads"] == 2
    assert seen["embedding_size"] == 128
