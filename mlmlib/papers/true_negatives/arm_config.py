"""One pretraining arm: 'objective/method[@source]' and the correction settings it runs with."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from mlmlib.papers.true_negatives import negatives as neg
from mlmlib.papers.true_negatives.config import Correction
from mlmlib.papers.true_negatives.sources import check_source

OBJECTIVES = ("electra", "mlm")


@dataclass
class ArmConfig:
    """One pretraining arm: objective, correction method and its settings (config.Correction's
    fields, flat, as a training checkpoint's identity holds them: NegativesMonitor.identity)."""

    objective: str = "electra"
    method: str = neg.NONE  # a name of negatives.METHODS or a '+' combination
    lam: float = Correction.lam
    eps: float = Correction.eps
    tau: float = Correction.tau
    apply_to: str = Correction.apply_to
    whole_words: bool = Correction.whole_words
    source: str | None = None  # None: the run's table source

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        neg.parse_method(self.method)  # the registry's names, or a message naming them
        self.correction()  # lam and apply_to, checked where the group checks them
        if self.objective == "mlm" and self.apply_to in ("disc", "both"):
            raise ValueError("apply_to must be 'auto' or 'mlm' for objective 'mlm' (no discriminator)")
        if self.source is not None:
            check_source(self.source)

    def correction(self) -> Correction:
        """The arm's correction settings as the notebooks' `correction` group."""
        return Correction(lam=self.lam, eps=self.eps, tau=self.tau, apply_to=self.apply_to,
                          whole_words=self.whole_words)

    @property
    def target(self) -> str:
        """Where HC acts: the hook's apply_to."""
        if self.apply_to != "auto":
            return self.apply_to
        # Reconstructed: in ELECTRA the false negative is a discriminator label; the generator's
        # CE is on the original token, not on its own sample.
        return "disc" if self.objective == "electra" else "mlm"

    @property
    def name(self) -> str:
        """'objective/method[@source]', as in the notebooks' `arms` parameter."""
        return f"{self.objective}/{self.method}" + (f"@{self.source}" if self.source else "")


def parse_arm(spec: str, correction: Correction = Correction()) -> ArmConfig:
    """Parse 'electra/shield', 'mlm/none' or 'electra/shield@glove-6b-50d' into an ArmConfig
    with the `correction` settings."""
    if not isinstance(spec, str) or "/" not in spec:
        raise ValueError(f"arm must look like 'objective/method[@source]' with objective in "
                         f"{OBJECTIVES}, got {spec!r}")
    objective, rest = spec.split("/", 1)
    method, _, source = rest.partition("@")
    return ArmConfig(objective=objective, method=method, source=source or None,
                     **dataclasses.asdict(correction))
