"""The speed group: how a page's training runs (precision, torch.compile, CPU threads).

A page takes it as `speed = {}` (overrides of `Speed`'s fields, mlmlib.configs). `compile` and
`torch_threads` change how fast a run goes, not what it computes; `precision` "bf16" computes in
bfloat16 (autocast), so it is part of what a checkpoint must match to be resumed. Standard
library only, so the plan loader can check a plan's `speed:` block without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass

# "bf16" on a CPU runs by autocast (correct, slower for models this small: "auto" keeps fp32 there)
PRECISIONS = ("auto", "fp32", "bf16")


@dataclass(frozen=True)
class Speed:
    """Precision, torch.compile and CPU threads of a page's training."""

    precision: str = "auto"  # "auto": bf16 on a GPU that has it, else fp32 (paper: "bf16")
    compile: bool = False  # torch.compile the training step (GPU; refused where torch cannot)
    torch_threads: int = 0  # 0: torch's default; 1 is far faster on a shared, loaded CPU

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if not isinstance(self.compile, bool):
            raise ValueError(f"compile must be true or false, got {self.compile!r}")
        threads = self.torch_threads
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
            raise ValueError(f"torch_threads must be an int >= 0 (0: torch's default), got {threads!r}")

    def apply_threads(self) -> None:
        """Set torch's CPU threads (torch_threads 0 leaves torch's default)."""
        if self.torch_threads:
            import torch

            torch.set_num_threads(self.torch_threads)
