"""Throughput benchmark: mlmlib's loop vs the Hugging Face recipes, on one model, data and masking.

MLM: transformers' Trainer + DataCollatorForLanguageModeling (the run_mlm.py recipe) vs
mlmlib.pretrain. ELECTRA: a plain composition of ElectraForMaskedLM and ElectraForPreTraining
(full-vocabulary logits, Hugging Face losses) vs mlmlib.pretrain(objective="electra").
Repetitions are interleaved (A, B, B, A, ...) and summarised by medians, because a shared
machine is noisy. Every arm runs on the same device in the same precision (the Trainer with its
`bf16` switch, the plain ELECTRA under the same autocast, mlmlib through `PretrainConfig`), and
each arm's first linear layer reports what it actually ran on, so a mismatch shows in the rows.
Each arm is reported as tokens/s and as MFU: its FLOP rate over the device's peak in that
precision (the dense bf16 table below for known GPUs, else a measured matmul rate, and says which).

Approximate FLOPs of one training step (forward + backward = 3x forward, a multiply-add = 2):
  6 * P_enc * T + 12 * layers * L * H * T + 6 * (H*H + H*V) * T_pred
with P_enc the encoder's non-embedding parameters, T tokens, L sequence length, H width,
V vocabulary and T_pred the positions projected onto the vocabulary. Every arm's MFU counts the
FLOPs its objective needs, the masked positions' projections (T_pred = the masked count), so the
same step has the same FLOPs in every arm: a Hugging Face recipe that projects all T positions
does more arithmetic for the same step and shows it as a lower MFU, not as more work. ELECTRA
sums generator and discriminator terms (the discriminator's head: 6 * (H*H + H) * T).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import io
import statistics
import tempfile
import time

import torch
from torch import nn

from mlmlib.masking import ELECTRA_SPLIT, mask_tokens
from mlmlib.models import ModelSize, bert_mlm, electra
from mlmlib.objectives import ELECTRA_DISC_WEIGHT, MASK_RATE
from mlmlib.pretrain import PretrainConfig, param_groups, pretrain
from mlmlib.speed import PRECISIONS

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
NUM_SPECIAL = 5

# Dense bf16 tensor-core peaks in TFLOP/s, matched on torch.cuda.get_device_name() (lower case:
# every substring of a row must be in it; the first matching row wins, so variants come first).
# NVIDIA's datasheets give bf16 "with sparsity", twice the dense figure.
PEAK_BF16_TFLOPS = [
    (("h200", "nvl"), 835.5, "NVIDIA H200 NVL datasheet: 1,671 TFLOPS bf16 with sparsity = 835.5 dense"),
    (("h200",), 989.4, "NVIDIA H200 SXM datasheet: 1,979 TFLOPS bf16 with sparsity = 989.4 dense"),
    (("h100", "nvl"), 835.5, "NVIDIA H100 NVL datasheet: 1,671 TFLOPS bf16 with sparsity = 835.5 dense"),
    (("h100", "pcie"), 756.5, "NVIDIA H100 PCIe datasheet: 1,513 TFLOPS bf16 with sparsity = 756.5 dense"),
    (("h100", "hbm3"), 989.4, "NVIDIA H100 SXM datasheet: 1,979 TFLOPS bf16 with sparsity = 989.4 dense"),
    (("h100", "sxm"), 989.4, "NVIDIA H100 SXM datasheet: 1,979 TFLOPS bf16 with sparsity = 989.4 dense"),
    (("a100",), 312.0, "NVIDIA A100 datasheet: 624 TFLOPS bf16 with sparsity = 312 dense (SXM and PCIe)"),
]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def table_peak(device_name: str | None) -> tuple[float, str] | None:
    """(dense bf16 peak in TFLOP/s, its source) of a GPU the table knows, else None."""
    if not device_name:
        return None
    name = device_name.lower()
    for parts, peak, source in PEAK_BF16_TFLOPS:
        if all(part in name for part in parts):
            return peak, source
    return None


def matmul_tflops(device: str = "cpu", precision: str = "fp32", n: int = 1536, repeats: int = 3) -> float:
    """The measured matmul rate of this device in this precision, TFLOP/s (best of n x n products)."""
    dtype = DTYPES[precision]
    if device == "cuda":
        n = max(n, 8192)  # a GPU needs large products to reach its rate
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    best = float("inf")
    for _ in range(repeats + 1):  # the first is a warm-up
        if device == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        a @ b
        if device == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e12


def matmul_gflops(n: int = 1536, repeats: int = 3) -> float:
    """This machine's fp32 CPU matmul rate in GFLOP/s (best of a few n x n products)."""
    return 1e3 * matmul_tflops("cpu", "fp32", n, repeats)


def device_peak(device: str, precision: str, device_name: str | None = None,
                measure=matmul_tflops) -> tuple[float, str]:
    """(peak TFLOP/s, where it comes from) of a device in a precision: the datasheet table for a
    known GPU in bf16, else this device's measured matmul rate in that precision."""
    if device == "cuda" and precision == "bf16":
        known = table_peak(device_name)
        if known is not None:
            return known
    return measure(device, precision), f"measured: best {precision} matmul rate on this {device}"


def mfu(tokens_per_s: float, tokens_per_step: int, step_flops: float, peak_tflops: float) -> float:
    """Model FLOPs utilisation: steps/s x FLOPs per step over the device's peak."""
    return tokens_per_s / tokens_per_step * step_flops / (peak_tflops * 1e12)


def resolve(device: str, precision: str) -> tuple[str, str]:
    """The device and precision every arm of a benchmark runs with ('auto' made concrete)."""
    if device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, got {device!r}")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    cuda = torch.cuda.is_available()
    if device == "cuda" and not cuda:
        raise ValueError("device='cuda': torch sees no GPU")
    if device == "cpu" and cuda:
        # mlmlib.pretrain trains on the GPU whenever it sees one: hide it to time the CPU
        raise ValueError("device='cpu' on a machine with a GPU: run with CUDA_VISIBLE_DEVICES= instead")
    device = "cuda" if cuda else "cpu"
    if device == "cuda" and torch.cuda.device_count() > 1:
        # the Trainer would spread its batches over every visible GPU (DataParallel) while the
        # tokens are counted for one, inflating its rate against the one-device arms
        raise ValueError(f"bench: {torch.cuda.device_count()} GPUs visible; the benchmark times "
                         "one device: set CUDA_VISIBLE_DEVICES to one GPU")
    if precision == "auto":
        precision = "bf16" if device == "cuda" and torch.cuda.is_bf16_supported() else "fp32"
    return device, precision


@contextlib.contextmanager
def observed(model: nn.Module, into: dict):
    """Record the device and dtype of the first linear layer's output of `model` (what an arm
    really ran with: its device, and whether autocast took)."""
    first = next(m for m in model.modules() if isinstance(m, nn.Linear))

    def hook(_module, _inputs, output):
        into.setdefault("device", output.device.type)
        into.setdefault("dtype", str(output.dtype).replace("torch.", ""))

    handle = first.register_forward_hook(hook)
    try:
        yield into
    finally:
        handle.remove()


def make_data(vocab: int, seq: int, n: int, seed: int = 0) -> dict:
    """Random full-length sequences [CLS] ... [SEP] (no padding), with a special-tokens mask."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(NUM_SPECIAL, vocab, (n, seq), generator=g)
    ids[:, 0], ids[:, -1] = CLS, SEP
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids),
            "special_tokens_mask": special.long()}


def encoder_flops_per_token(hidden: int, layers: int, intermediate: int, seq: int) -> float:
    """Training FLOPs per token of the encoder layers: weights plus attention scores."""
    p_enc = layers * (4 * hidden * hidden + 2 * hidden * intermediate)
    return 6 * p_enc + 12 * layers * seq * hidden


def mlm_step_flops(size: ModelSize, seq: int, tokens: int, predicted: float) -> float:
    """Training FLOPs of one BERT MLM step projecting `predicted` positions onto the vocabulary."""
    enc = encoder_flops_per_token(size.hidden, size.layers, size.intermediate, seq) * tokens
    return enc + 6 * (size.hidden**2 + size.hidden * size.vocab_size) * predicted


def electra_step_flops(pair, seq: int, tokens: int, predicted: float) -> float:
    """Training FLOPs of one ELECTRA step (generator + discriminator)."""
    g, d = pair.generator.config, pair.discriminator.config
    gen = encoder_flops_per_token(g.hidden_size, g.num_hidden_layers, g.intermediate_size, seq)
    disc = encoder_flops_per_token(d.hidden_size, d.num_hidden_layers, d.intermediate_size, seq)
    gen_head = 6 * (g.hidden_size * g.embedding_size + g.embedding_size * g.vocab_size)
    disc_head = 6 * (d.hidden_size**2 + d.hidden_size)
    return (gen + disc + disc_head) * tokens + gen_head * predicted


def _tokenizer(vocab: int):
    """A word-level fast tokenizer with BERT's special tokens (the collator needs one)."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    names = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = {w: i for i, w in enumerate(names + [f"w{i}" for i in range(NUM_SPECIAL, vocab)])}
    tok = Tokenizer(models.WordLevel(words, unk_token="[UNK]"))
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


def trainer_mlm(model, data: dict, batch_size: int, measure: int, lr: float = 5e-4,
                device: str = "cpu", precision: str = "fp32") -> float:
    """Tokens/s of transformers' Trainer + DataCollatorForLanguageModeling (steps measure..2*measure),
    on `device` in `precision` (the Trainer's own bf16 switch)."""
    from datasets import Dataset
    from transformers import (
        DataCollatorForLanguageModeling,
        Trainer,
        TrainerCallback,
        TrainingArguments,
    )

    tokens_per_step = batch_size * data["input_ids"].shape[1]
    dataset = Dataset.from_dict({k: v.tolist() for k, v in data.items()})
    collator = DataCollatorForLanguageModeling(_tokenizer(model.config.vocab_size),
                                               mlm_probability=MASK_RATE)
    times = {}

    class Clock(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step in (measure, 2 * measure):
                times[state.global_step] = time.perf_counter()

    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out, per_device_train_batch_size=batch_size, max_steps=2 * measure,
            learning_rate=lr, weight_decay=0.01, warmup_steps=0, max_grad_norm=1.0,
            report_to="none", save_strategy="no", eval_strategy="no", logging_strategy="no",
            disable_tqdm=True, use_cpu=device == "cpu", dataloader_num_workers=0,
            seed=0, bf16=precision == "bf16",
        )
        trainer = Trainer(model=model, args=args, train_dataset=dataset, data_collator=collator,
                          callbacks=[Clock()])
        with contextlib.redirect_stdout(io.StringIO()):
            trainer.train()
    return measure * tokens_per_step / (times[2 * measure] - times[measure])


def mlmlib_tokens_per_s(model, data: dict, objective: str, batch_size: int, measure: int,
                        precision: str = "fp32") -> float:
    """Tokens/s of mlmlib.pretrain over steps measure..2*measure (its device: the GPU if any)."""
    config = PretrainConfig(objective=objective, steps=2 * measure, log_every=measure,
                            batch_size=batch_size, warmup_frac=0.0, precision=precision)
    with contextlib.redirect_stdout(io.StringIO()):
        history = pretrain(model, data, config, mask_id=MASK, num_special=NUM_SPECIAL,
                           progress=False)
    return history[1]["tokens_per_s"]


def plain_electra(pair, data: dict, batch_size: int, measure: int, lr: float = 5e-4,
                  device: str = "cpu", precision: str = "fp32") -> float:
    """Tokens/s of a plain ELECTRA step: HF models with labels, full-vocabulary logits, on
    `device` under the same autocast as mlmlib's loop."""
    pair.to(device)
    pair.train()
    optimizer = torch.optim.AdamW(param_groups(pair, 0.01), lr=lr, fused=True)
    g = torch.Generator().manual_seed(0)  # masking on the CPU, as mlmlib's loop does
    sample_gen = torch.Generator(device=device).manual_seed(1)
    n = data["input_ids"].shape[0]
    t0 = None
    for step in range(2 * measure):
        if step == measure:
            if device == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
        idx = torch.randint(n, (batch_size,), generator=g)
        ids, attention = data["input_ids"][idx], data["attention_mask"][idx]
        corrupted, masked = mask_tokens(ids, MASK_RATE, generator=g, mask_id=MASK,
                                        vocab_size=pair.config.vocab_size,
                                        special_mask=data["special_tokens_mask"][idx].bool(),
                                        split=ELECTRA_SPLIT)
        ids, attention = ids.to(device), attention.to(device)
        corrupted, masked = corrupted.to(device), masked.to(device)
        with torch.autocast(device, dtype=torch.bfloat16, enabled=precision == "bf16"):
            gen = pair.generator(input_ids=corrupted, attention_mask=attention,
                                 labels=ids.masked_fill(~masked, -100))
            with torch.no_grad():  # Gumbel-max sampling, as in the ELECTRA reference code
                logits = gen.logits[masked].float()
                u = torch.rand(logits.shape, generator=sample_gen, device=device).clamp_(1e-9, 1.0)
                samples = (logits - torch.log(-torch.log(u))).argmax(-1)
            disc_input = ids.masked_scatter(masked, samples)
            disc = pair.discriminator(input_ids=disc_input, attention_mask=attention,
                                      labels=(disc_input != ids).long())
            loss = gen.loss + ELECTRA_DISC_WEIGHT * disc.loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(pair.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    if device == "cuda":
        torch.cuda.synchronize()
    return measure * batch_size * data["input_ids"].shape[1] / (time.perf_counter() - t0)


def run(vocab: int = 8000, hidden: int = 128, layers: int = 2, heads: int = 2, seq: int = 64,
        batch_size: int = 32, measure: int = 6, repeats: int = 3, threads: int | None = None,
        tasks=("mlm", "electra"), seed: int = 0, device: str = "auto", precision: str = "auto",
        peak=device_peak, embedding_size: int = 0) -> dict:
    """Run the interleaved benchmark; returns {"rows": [...], "summary": [...], "machine": {...}}.

    Every arm runs on `device` in `precision` ("auto": the GPU if any, bf16 where it has it);
    each row says what its arm was seen to run with (`ran_on`). `embedding_size`: ELECTRA's
    factorised embedding width (0: `hidden`); the BERT MLM has none. The sizes of a page or plan
    are a `mlmlib.bench_config.BenchShape`."""
    device, precision = resolve(device, precision)
    if threads:
        torch.set_num_threads(threads)
    size = ModelSize(vocab_size=vocab, hidden=hidden, layers=layers, heads=heads, max_len=seq)
    data = make_data(vocab, seq, max(batch_size * 4 * measure, 256), seed)
    base_mlm = bert_mlm(size, seed=seed)
    base_pair = electra(dataclasses.replace(size, embedding_size=embedding_size or None), seed=seed)
    masked_per_step = MASK_RATE * batch_size * (seq - 2)
    tokens = batch_size * seq
    methods = []
    if "mlm" in tasks:
        methods += [
            ("mlm", "hf_trainer", base_mlm, lambda m: trainer_mlm(m, data, batch_size, measure,
                                                                  device=device, precision=precision),
             mlm_step_flops(size, seq, tokens, masked_per_step)),  # what the objective needs
            ("mlm", "mlmlib", base_mlm, lambda m: mlmlib_tokens_per_s(m, data, "mlm", batch_size,
                                                                      measure, precision),
             mlm_step_flops(size, seq, tokens, masked_per_step)),
        ]
    if "electra" in tasks:
        methods += [
            ("electra", "hf_plain", base_pair, lambda m: plain_electra(m, data, batch_size, measure,
                                                                       device=device, precision=precision),
             electra_step_flops(base_pair, seq, tokens, masked_per_step)),
            ("electra", "mlmlib", base_pair, lambda m: mlmlib_tokens_per_s(m, data, "electra", batch_size,
                                                                           measure, precision),
             electra_step_flops(base_pair, seq, tokens, masked_per_step)),
        ]
    gpu_name = torch.cuda.get_device_name() if device == "cuda" else None
    peak_tflops, peak_source = peak(device, precision, gpu_name)
    rows = []
    for rep in range(repeats):
        # interleave, and swap the order every repetition: slow phases hit both methods
        pairs = [methods[i:i + 2] for i in range(0, len(methods), 2)]
        for pair in pairs:
            for task, method, base, fn, flops in (pair if rep % 2 == 0 else pair[::-1]):
                model, seen = copy.deepcopy(base), {}
                with observed(model, seen):
                    tps = fn(model)
                del model
                rows.append({"rep": rep, "task": task, "method": method, "tokens_per_s": tps,
                             "gflops": tps / tokens * flops / 1e9,
                             "mfu": mfu(tps, tokens, flops, peak_tflops),
                             "ran_on": f"{seen.get('device')}/{seen.get('dtype')}"})
    summary = []
    for task in dict.fromkeys(r["task"] for r in rows):
        sub = [r for r in rows if r["task"] == task]
        base_name, ours = sub[0]["method"] if sub[0]["method"] != "mlmlib" else sub[1]["method"], "mlmlib"
        by = {m: [r for r in sub if r["method"] == m] for m in (base_name, ours)}
        ratios = [o["tokens_per_s"] / b["tokens_per_s"] for o, b in zip(by[ours], by[base_name])]
        for m in (base_name, ours):
            summary.append({
                "task": task, "method": m,
                "tokens_per_s": statistics.median(r["tokens_per_s"] for r in by[m]),
                "gflops": statistics.median(r["gflops"] for r in by[m]),
                "speedup": statistics.median(ratios) if m == ours else 1.0,
                "mfu": statistics.median(r["mfu"] for r in by[m]),
                "ran_on": sorted({r["ran_on"] for r in by[m]}),
            })
    for s in summary:
        s["share_of_matmul_peak"] = s["gflops"] / (peak_tflops * 1e3)
    machine = {"threads": torch.get_num_threads(), "matmul_gflops": peak_tflops * 1e3,
               "torch": torch.__version__, "device": device, "precision": precision,
               "gpu": gpu_name, "peak_tflops": peak_tflops, "peak_source": peak_source}
    setup = {"vocab": vocab, "hidden": hidden, "embedding_size": embedding_size or hidden,
             "layers": layers, "heads": heads, "seq": seq, "batch_size": batch_size,
             "measure_steps": measure, "repeats": repeats}
    return {"rows": rows, "summary": summary, "machine": machine, "setup": setup}


TARGETS = {"mlm": 2.5, "electra": 2.0}  # the speed-ups on a CPU that this loop was built to reach


def speedups(summary: list[dict]) -> dict[str, float]:
    """mlmlib's median speed-up over the Hugging Face recipe, per task (from run()'s summary)."""
    return {s["task"]: float(s["speedup"]) for s in summary if s["method"] == "mlmlib"}


def speedup_verdicts(speedups: dict[str, float], targets: dict[str, float] = TARGETS) -> str:
    """One markdown bullet per task: mlmlib's speed-up and whether it met the task's target."""
    return "\n".join(
        f"* **{task}**: mlmlib is **{x:.2f}x** the Hugging Face recipe "
        f"(target {targets[task]}x: {'met' if x >= targets[task] else 'not met'})"
        for task, x in speedups.items())


def main(argv: list[str] | None = None) -> int:
    """Command line: python -m mlmlib bench [--preset paper] [--threads N] [--out results.json]."""
    from mlmlib.bench_config import BENCH_PRESETS, BenchShape

    parser = argparse.ArgumentParser(prog="mlmlib bench", description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="smoke", choices=list(BENCH_PRESETS),
                        help="a BenchShape preset; the size options below override its fields")
    for name in ("vocab", "hidden", "embedding-size", "layers", "heads", "seq", "batch-size",
                 "measure", "repeats"):
        parser.add_argument(f"--{name}", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--tasks", default="mlm,electra")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                        help="where every arm runs (auto: the GPU if any)")
    parser.add_argument("--precision", default="auto", choices=PRECISIONS,
                        help="every arm's precision (auto: bf16 on a GPU that has it, else fp32)")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    a = parser.parse_args(argv)
    try:
        given = {k: v for k, v in vars(a).items() if k in BenchShape.__dataclass_fields__}
        shape = BenchShape(**given)
        result = run(**shape.sizes(), threads=a.threads, tasks=tuple(a.tasks.split(",")),
                     device=a.device, precision=a.precision)
    except ValueError as exc:
        parser.error(str(exc))
    print(f"machine: {result['machine']}")
    for s in result["summary"]:
        print(f"{s['task']:8s} {s['method']:11s} {s['tokens_per_s']:9.0f} tok/s "
              f"{s['gflops']:8.1f} GFLOP/s MFU {s['mfu']:.1%} ({','.join(s['ran_on'])}) "
              f"speed-up x{s['speedup']:.2f}")
    if a.out:
        from mlmlib.atomic import write_json
        write_json(a.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
