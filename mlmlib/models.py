"""BERT and ELECTRA models built from transformers configs: tiny by default, hub names at paper scale."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn
from transformers import (
    BertConfig,
    BertForMaskedLM,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    ElectraConfig,
    ElectraForMaskedLM,
    ElectraForPreTraining,
    ElectraForQuestionAnswering,
    ElectraForSequenceClassification,
    PreTrainedModel,
)

ATTENTION = "sdpa"  # PyTorch's fused scaled-dot-product attention, on CPU and GPU
POOLINGS = ("cls", "mean")  # what a sequence classifier reads: the [CLS] state or the token mean


@dataclass
class ModelSize:
    """Shape of a small transformer encoder; `intermediate` defaults to 4 * hidden."""

    vocab_size: int
    hidden: int = 128
    layers: int = 2
    heads: int = 2
    intermediate: int | None = None
    max_len: int = 128
    dropout: float = 0.1
    embedding_size: int | None = None  # ELECTRA factorised embeddings; None -> hidden
    pad_id: int = 0

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden", "layers", "heads", "max_len"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"ModelSize.{name} must be a positive int, got {getattr(self, name)!r}")
        if self.hidden % self.heads:
            raise ValueError(
                f"ModelSize.hidden ({self.hidden}) must be divisible by heads ({self.heads})"
            )
        if self.intermediate is None:
            self.intermediate = 4 * self.hidden
        if self.intermediate < 1:
            raise ValueError(f"ModelSize.intermediate must be >= 1, got {self.intermediate}")
        if self.embedding_size is not None and self.embedding_size < 1:
            raise ValueError(f"ModelSize.embedding_size must be >= 1 or None, got {self.embedding_size}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"ModelSize.dropout must be in [0, 1), got {self.dropout}")
        if not 0 <= self.pad_id < self.vocab_size:
            raise ValueError(f"ModelSize.pad_id must be in [0, vocab_size), got {self.pad_id}")


def _common(size: ModelSize) -> dict:
    """Config keyword arguments shared by BERT and ELECTRA."""
    return {
        "vocab_size": size.vocab_size,
        "hidden_size": size.hidden,
        "num_hidden_layers": size.layers,
        "num_attention_heads": size.heads,
        "intermediate_size": size.intermediate,
        "max_position_embeddings": size.max_len,
        "hidden_dropout_prob": size.dropout,
        "attention_probs_dropout_prob": size.dropout,
        "pad_token_id": size.pad_id,
        "attn_implementation": ATTENTION,
    }


def bert_config(size: ModelSize, **extra) -> BertConfig:
    """Return the BertConfig of a ModelSize."""
    if size.embedding_size not in (None, size.hidden):
        raise ValueError("ModelSize.embedding_size must be None or equal hidden for BERT")
    return BertConfig(**_common(size), **extra)


def electra_config(size: ModelSize, **extra) -> ElectraConfig:
    """Return the ElectraConfig of a ModelSize."""
    return ElectraConfig(**_common(size), embedding_size=size.embedding_size or size.hidden, **extra)


@contextmanager
def _seeded(seed: int | None) -> Iterator[None]:
    """Seed weight init with `seed` without disturbing the caller's global RNG."""
    if seed is None:
        yield
        return
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def _check_size(size_or_name) -> None:
    if not isinstance(size_or_name, (ModelSize, str)):
        raise TypeError(
            f"size_or_name must be a ModelSize or a hub model name, got {type(size_or_name).__name__}"
        )


def from_hub(cls, name: str, **kwargs) -> PreTrainedModel:
    """`cls.from_pretrained(name)` through mlmlib.data.hub: from the hub mirror when one is set,
    with one clear error at once when the hub cannot be reached."""
    from mlmlib.data.hub import load_hub_pretrained

    return load_hub_pretrained(f"model {name!r}", 'base model "embedded" (or a ModelSize)', cls.from_pretrained,
                               name, attn_implementation=ATTENTION, **kwargs)


def bert_mlm(size_or_name: ModelSize | str, *, seed: int | None = None) -> BertForMaskedLM:
    """A BERT masked-LM: freshly initialised from a ModelSize, or pretrained by hub name."""
    _check_size(size_or_name)
    if isinstance(size_or_name, str):  # paper scale: from the hub (the network) or its mirror
        return from_hub(BertForMaskedLM, size_or_name)
    with _seeded(seed):
        return BertForMaskedLM(bert_config(size_or_name))


def _encoder_state(from_encoder, prefix: str) -> dict[str, torch.Tensor]:
    """Encoder weights (keys under `prefix.`) from a model, a state dict or a save_model folder."""
    if isinstance(from_encoder, (str, Path)):
        from_encoder = load_state(from_encoder)
    if isinstance(from_encoder, ElectraPair):
        from_encoder = from_encoder.discriminator
    state = from_encoder.state_dict() if isinstance(from_encoder, nn.Module) else dict(from_encoder)
    out = {k: v for k, v in state.items() if k.startswith(prefix + ".")}
    if not out:
        raise ValueError(f"from_encoder holds no '{prefix}.*' weights to initialise the encoder from")
    return out


def _load_encoder(model: PreTrainedModel, from_encoder, prefix: str) -> None:
    """Copy pretrained encoder weights into a classifier; only its new head stays random."""
    state = _encoder_state(from_encoder, prefix)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if k.startswith(prefix + ".") and ".pooler." not in k]
    if missing or unexpected:
        raise ValueError(
            f"from_encoder does not match the classifier: missing {missing[:5]}, unexpected {unexpected[:5]}"
        )


def _new_classifier(cls, make_config, size_or_name, num_labels: int, seed: int | None, pooling: str):
    """A sequence classifier of class `cls`: from the hub by name, or fresh from a ModelSize."""
    _check_size(size_or_name)
    if not isinstance(num_labels, int) or num_labels < 1:
        raise ValueError(f"num_labels must be an int >= 1, got {num_labels!r}")
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    if isinstance(size_or_name, str):
        return from_hub(cls, size_or_name, num_labels=num_labels)
    with _seeded(seed):
        return cls(make_config(size_or_name, num_labels=num_labels))


class MeanPooledClassifier(nn.Module):
    """A sequence classifier on the mean of the encoder's token states (padding left out).

    Why our own head: transformers' BERT and ELECTRA classifiers read the [CLS] state, which
    bert-base learns through next-sentence prediction. Our small MLM-only models never train
    [CLS] (it is never masked nor predicted), and in the smoke runs a [CLS] head fine-tuned on
    a few hundred labels stayed at the class prior where the mean-pooled head learned.
    The encoder is the HF classifier's own (`bert` or `electra`), so weights load as usual.
    """

    def __init__(self, classifier: PreTrainedModel, prefix: str, seed: int | None = None) -> None:
        super().__init__()
        self.config = classifier.config
        self.encoder = getattr(classifier, prefix)
        if getattr(self.encoder, "pooler", None) is not None:
            self.encoder.pooler = None  # the [CLS] pooler is unused here
        with _seeded(seed):
            self.dropout = nn.Dropout(self.config.hidden_dropout_prob)
            self.head = nn.Linear(self.config.hidden_size, self.config.num_labels)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None):
        from transformers.modeling_outputs import SequenceClassifierOutput

        states = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state
        keep = (torch.ones_like(input_ids) if attention_mask is None else attention_mask)
        keep = keep.unsqueeze(-1).to(states.dtype)
        pooled = (states * keep).sum(1) / keep.sum(1).clamp_min(1.0)
        return SequenceClassifierOutput(logits=self.head(self.dropout(pooled)))


def _pooled(model: PreTrainedModel, prefix: str, pooling: str, seed: int | None) -> nn.Module:
    """The classifier as transformers built it ("cls"), or its encoder under a mean-pooled head."""
    return model if pooling == "cls" else MeanPooledClassifier(model, prefix, seed)


def bert_classifier(
    size_or_name: ModelSize | str,
    num_labels: int,
    from_encoder: nn.Module | dict | str | Path | None = None,
    *,
    seed: int | None = None,
    pooling: str = "cls",
) -> BertForSequenceClassification | MeanPooledClassifier:
    """A BERT sequence classifier (num_labels=1: regression), its encoder optionally pretrained.

    `from_encoder` is a BertForMaskedLM (or any model with `bert.*` weights), its state dict,
    or a folder written by `save_model`; the pooler and the classification head stay random.
    `pooling`: "cls" (transformers' head on [CLS]) or "mean" (MeanPooledClassifier).
    """
    model = _new_classifier(BertForSequenceClassification, bert_config, size_or_name, num_labels, seed,
                            pooling)
    if from_encoder is not None:
        _load_encoder(model, from_encoder, "bert")
    return _pooled(model, "bert", pooling, seed)


def electra_classifier(
    size_or_name: ModelSize | str,
    num_labels: int,
    from_encoder: nn.Module | dict | str | Path | None = None,
    *,
    seed: int | None = None,
    pooling: str = "cls",
) -> ElectraForSequenceClassification | MeanPooledClassifier:
    """An ELECTRA sequence classifier, its encoder optionally from a pretrained discriminator.

    `from_encoder` is an ElectraPair (its discriminator is used, as in ELECTRA), an
    ElectraForPreTraining, a state dict with `electra.*` keys, or a `save_model` folder.
    `pooling`: "cls" (transformers' head on [CLS]) or "mean" (MeanPooledClassifier).
    """
    model = _new_classifier(ElectraForSequenceClassification, electra_config, size_or_name,
                            num_labels, seed, pooling)
    if from_encoder is not None:
        _load_encoder(model, _discriminator_state(from_encoder), "electra")
    return _pooled(model, "electra", pooling, seed)


def _discriminator_state(from_encoder):
    """A `save_model` folder's weights with a saved ElectraPair's discriminator unwrapped (it keeps
    them under "discriminator."); a model or state dict is passed on as it is."""
    if not isinstance(from_encoder, (str, Path)):
        return from_encoder
    state = load_state(from_encoder)
    if any(k.startswith("discriminator.") for k in state):
        state = {k[len("discriminator."):]: v for k, v in state.items() if k.startswith("discriminator.")}
    return state


def question_answerer(
    size_or_name: ModelSize | str,
    from_encoder: nn.Module | dict | str | Path | None = None,
    *,
    kind: str = "electra",
    seed: int | None = None,
) -> BertForQuestionAnswering | ElectraForQuestionAnswering:
    """An extractive question-answering model (a start and an end logit per token), its encoder
    optionally pretrained, as the classifiers above: only the span head stays random.

    kind "electra": ElectraForQuestionAnswering, `from_encoder` an ElectraPair (its discriminator),
    an ElectraForPreTraining, `electra.*` weights or a `save_model` folder; kind "bert":
    BertForQuestionAnswering on `bert.*` weights (a BertForMaskedLM). A hub name loads that model.
    """
    _check_size(size_or_name)
    kinds = {"electra": (ElectraForQuestionAnswering, electra_config), "bert": (BertForQuestionAnswering, bert_config)}
    if kind not in kinds:
        raise ValueError(f"kind must be one of {tuple(kinds)}, got {kind!r}")
    cls, make_config = kinds[kind]
    if isinstance(size_or_name, str):
        model = from_hub(cls, size_or_name)
    else:
        with _seeded(seed):
            model = cls(make_config(size_or_name, num_labels=2))  # the two logits: start and end
    if from_encoder is not None:
        _load_encoder(model, _discriminator_state(from_encoder) if kind == "electra" else from_encoder, kind)
    return model


class ElectraPair(nn.Module):
    """ELECTRA's generator (masked LM) and discriminator (replaced-token detection), embeddings tied."""

    def __init__(self, generator: ElectraForMaskedLM, discriminator: ElectraForPreTraining) -> None:
        super().__init__()
        self.generator = generator
        self.discriminator = discriminator
        # As in ELECTRA: one embedding module (tokens, positions, types, its LayerNorm) for both;
        # the generator's output projection stays tied to the shared token embeddings.
        generator.electra.embeddings = discriminator.electra.embeddings
        generator.generator_lm_head.weight = discriminator.electra.embeddings.word_embeddings.weight
        self.generator_encoder_frozen = False

    def freeze_generator_encoder(self) -> None:
        """Stop training the generator's transformer layers: its head (and the shared embeddings)
        still train, and the training loop runs those layers without building a graph."""
        for param in self.generator.electra.encoder.parameters():
            param.requires_grad = False
        self.generator_encoder_frozen = True

    def get_input_embeddings(self) -> nn.Embedding:
        """The shared token embedding layer."""
        return self.discriminator.get_input_embeddings()

    @property
    def config(self) -> ElectraConfig:
        """The discriminator's config (the model that is fine-tuned)."""
        return self.discriminator.config


def electra(
    size_or_name: ModelSize | str,
    generator_fraction: float = 0.25,
    *,
    seed: int | None = None,
    generator_name: str | None = None,
) -> ElectraPair:
    """An ELECTRA generator + discriminator pair; the generator is `generator_fraction` as wide.

    With a hub name (e.g. google/electra-small-discriminator) the discriminator is loaded
    pretrained and the generator from `generator_name` (default: the matching -generator).
    """
    _check_size(size_or_name)
    if isinstance(size_or_name, str):
        gen_name = generator_name or size_or_name.replace("-discriminator", "-generator")
        disc = from_hub(ElectraForPreTraining, size_or_name)
        gen = from_hub(ElectraForMaskedLM, gen_name)
        return ElectraPair(gen, disc)
    if not isinstance(generator_fraction, (int, float)) or not 0 < generator_fraction <= 1:
        raise ValueError(f"generator_fraction must be in (0, 1], got {generator_fraction!r}")
    size = size_or_name
    gen_hidden = max(1, round(size.hidden * generator_fraction))
    gen_heads = max(1, round(size.heads * generator_fraction))
    while gen_hidden % gen_heads:  # keep the head size whole
        gen_heads -= 1
    gen_size = ModelSize(
        vocab_size=size.vocab_size,
        hidden=gen_hidden,
        layers=size.layers,  # same depth, as in ELECTRA
        heads=gen_heads,
        intermediate=max(1, round(size.intermediate * generator_fraction)),
        max_len=size.max_len,
        dropout=size.dropout,
        embedding_size=size.embedding_size or size.hidden,  # tied embeddings share one width
        pad_id=size.pad_id,
    )
    with _seeded(seed):
        disc = ElectraForPreTraining(electra_config(size))
        gen = ElectraForMaskedLM(electra_config(gen_size))
    return ElectraPair(gen, disc)


def size_of(config) -> ModelSize:
    """The ModelSize of a BERT or ELECTRA config (a pretrained model's geometry)."""
    return ModelSize(vocab_size=config.vocab_size, hidden=config.hidden_size,
                     layers=config.num_hidden_layers, heads=config.num_attention_heads,
                     intermediate=config.intermediate_size, max_len=config.max_position_embeddings,
                     dropout=config.hidden_dropout_prob, pad_id=config.pad_token_id or 0)


GENERATORS = ("fresh", "copy")  # electra_from_bert: a new narrower generator, or the BERT MLM itself


def electra_from_bert(bert: PreTrainedModel, generator_fraction: float = 0.25, *,
                      seed: int | None = None, generator: str = "fresh") -> ElectraPair:
    """An ELECTRA pair whose discriminator starts from a pretrained BERT's encoder.

    ELECTRA without factorised embeddings is BERT's encoder under another name: embeddings and
    layers copy one to one (`bert.*` -> `electra.*`; BERT's pooler has no counterpart). The
    discriminator's head starts fresh. `generator="fresh"`: a new generator `generator_fraction`
    as wide, sharing the (pretrained) embeddings, as in ELECTRA. `generator="copy"`: the
    generator is `bert` itself, a BertForMaskedLM, as wide as the discriminator (its MLM head maps
    one to one: BERT's transform is ELECTRA's generator_predictions, its decoder bias the LM
    head's bias, the decoder tied to the shared embeddings in both). Why our own: transformers
    converts BERT checkpoints to BERT classes only.
    """
    if generator not in GENERATORS:
        raise ValueError(f"generator must be one of {GENERATORS}, got {generator!r}")
    pair = electra(size_of(bert.config), 1.0 if generator == "copy" else generator_fraction, seed=seed)
    encoder = {"electra." + k.split(".", 1)[1]: v for k, v in bert.state_dict().items()
               if k.startswith("bert.") and ".pooler." not in k}
    if not encoder:
        raise ValueError("electra_from_bert: the model holds no 'bert.*' encoder weights")
    _load_part(pair.discriminator, encoder, "electra.", "the BERT encoder")
    if generator == "copy":
        head = bert.state_dict()
        if "cls.predictions.bias" not in head:
            raise ValueError("electra_from_bert: generator='copy' needs a BertForMaskedLM (an MLM head)")
        if bert.config.hidden_act != "gelu":  # ELECTRA's generator head applies GELU whatever its config
            raise ValueError(f"electra_from_bert: generator='copy' needs a GELU head, got {bert.config.hidden_act!r}")
        heads = {f"generator_predictions.{part}": head[f"cls.predictions.transform.{part}"]
                 for part in ("dense.weight", "dense.bias", "LayerNorm.weight", "LayerNorm.bias")}
        heads["generator_lm_head.bias"] = head["cls.predictions.bias"]
        _load_part(pair.generator, encoder | heads, "", "the BERT masked LM")
    return pair


def _load_part(model: nn.Module, state: dict, prefix: str, what: str) -> None:
    """Load `state` into `model`; every parameter under `prefix` (all: "") must be in it."""
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if k.startswith(prefix) and not k.endswith("generator_lm_head.weight")]
    if missing or unexpected:
        raise ValueError(f"electra_from_bert: {what} does not match ELECTRA's: "
                         f"missing {missing[:5]}, unexpected {unexpected[:5]}")


# ---- final weights in the ecosystem's format: transformers' save_pretrained folders ----
#
# A transformers model is saved with `save_pretrained` (config.json + model.safetensors, and the
# tokenizer's files when one is given), so `from_pretrained` and the Auto classes load it. Our
# ElectraPair is no transformers model: each half is saved as its own, in the subfolders below,
# and load_model ties their embeddings again.

PAIR_PARTS = ("generator", "discriminator")
CONFIG = "config.json"
WEIGHTS = "model.safetensors"
OLD_CONFIG = "mlmlib_model.json"  # marks a folder in a format save_model does not write


def saved_files(folder: str = "model") -> tuple[str, ...]:
    """What a complete saved model is (relative): its folder, which save_model writes whole and then
    renames into place (the cache checks that each weights file under it opens)."""
    return (folder,)


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """Hide transformers' progress bars and notices while saving or loading: every page would
    show a "Loading weights" bar for each model it loads."""
    from transformers.utils import logging

    verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()


def save_model(model: nn.Module, path: str | Path, tokenizer=None) -> Path:
    """Save a transformers model (or each half of an ElectraPair) with `save_pretrained`, with
    `tokenizer` beside it when given, so transformers' `from_pretrained` loads it.

    Atomic: the folder is written under a temporary name and renamed into place, so a run killed
    while saving leaves no half-written model (and an earlier one at `path` is replaced whole).
    """
    import os
    import shutil

    from mlmlib.atomic import remove_dead_temps, temp_name

    if isinstance(model, ElectraPair):
        parts = {part: getattr(model, part) for part in PAIR_PARTS}
    elif isinstance(model, PreTrainedModel):
        parts = {"": model}
    else:
        raise TypeError(f"save_model needs a transformers model or ElectraPair, got {type(model).__name__}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_temps(path)
    tmp, old = temp_name(path), temp_name(path, "replaced")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        with quiet_transformers():
            for part, half in parts.items():
                half.save_pretrained(tmp / part)
                if tokenizer is not None:
                    tokenizer.save_pretrained(tmp / part)
        if path.exists():  # a folder cannot be renamed onto another: the earlier one steps aside
            shutil.rmtree(old, ignore_errors=True)
            os.replace(path, old)
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return path


_CLASSES = {
    cls.__name__: cls
    for cls in (
        BertForMaskedLM,
        BertForQuestionAnswering,
        BertForSequenceClassification,
        ElectraForMaskedLM,
        ElectraForPreTraining,
        ElectraForQuestionAnswering,
        ElectraForSequenceClassification,
    )
}


def _check_format(path: Path) -> None:
    """Refuse a folder that holds OLD_CONFIG: its files are not what load_model reads, and reading
    them anyway would misread the weights."""
    if (path / OLD_CONFIG).exists():
        raise ValueError(
            f"{path}: saved in mlmlib's earlier model format ({OLD_CONFIG}), which save_model does "
            "not write and load_model does not read; rebuild it (cached models are rebuilt by "
            "the run that needs them)")


def _is_pair(path: Path) -> bool:
    return all((path / part / CONFIG).exists() for part in PAIR_PARTS)


def load_state(path: str | Path) -> dict[str, torch.Tensor]:
    """Read the raw weights of a `save_model` folder (a pair's under "generator." and
    "discriminator.", as in its state dict), or of one safetensors file."""
    from safetensors.torch import load_file

    path = Path(path)
    if path.is_dir():
        _check_format(path)
        if _is_pair(path):
            return {f"{part}.{k}": v for part in PAIR_PARTS for k, v in load_state(path / part).items()}
        path = path / WEIGHTS
    if not path.exists():
        raise FileNotFoundError(f"{path}: no saved weights (write them with save_model)")
    return load_file(str(path))


def load_model(path: str | Path) -> nn.Module:
    """Load a model saved by `save_model`: a transformers model, or an ElectraPair from its halves.

    It comes back in training mode, as a freshly built model does (from_pretrained's default is
    evaluation mode): the callers that evaluate switch modes themselves.
    """
    path = Path(path)
    _check_format(path)
    if _is_pair(path):
        model: nn.Module = ElectraPair(*(_from_pretrained(path / part) for part in PAIR_PARTS))
    elif (path / CONFIG).exists():
        model = _from_pretrained(path)
    else:
        raise FileNotFoundError(f"{path}: not a folder written by save_model (no {CONFIG})")
    return model.train()


def _from_pretrained(folder: Path) -> PreTrainedModel:
    """The class the folder's config names (its `architectures`), loaded with SDPA attention."""
    import json

    names = json.loads((folder / CONFIG).read_text()).get("architectures") or []
    known = [name for name in names if name in _CLASSES]
    if not known:
        raise ValueError(f"{folder}: model class {names} is none of mlmlib's {sorted(_CLASSES)}")
    with quiet_transformers():  # quiet, so checked below: every weight must match
        model, info = _CLASSES[known[0]].from_pretrained(str(folder), attn_implementation=ATTENTION,
                                                         output_loading_info=True)
    wrong = {kind: keys for kind, keys in info.items() if keys}
    if wrong:
        raise ValueError(f"{folder}: its weights do not match {known[0]}: {wrong}")
    return model


def describe(model: nn.Module) -> dict:
    """Parameter counts (all and without token embeddings): inputs for FLOP estimates."""
    params = {id(p): p for p in model.parameters()}  # count tied tensors once
    total = sum(p.numel() for p in params.values())
    emb = model.get_input_embeddings().weight.numel()
    return {"params": total, "params_nonembedding": total - emb}


def size_dict(size: ModelSize) -> dict:
    """A ModelSize as a plain dict (for records)."""
    return asdict(size)
