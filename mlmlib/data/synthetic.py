"""Paper A's synthetic languages: synonym sets with two alphabets, two Markov chains, pattern labels.

Read from the authors' released generator (see the paper notes); every size is a parameter, and
the sizes the pages use are named presets (`LANGUAGES`). Token ids: alphabet A is 0..n_sets-1,
alphabet B is n_sets..2*n_sets-1 (token a + n_sets is the synonym of a), and [MASK] is 2*n_sets.
A label depends only on synonym-set ids, so swapping alphabets never changes it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np

TEST_SETS = ("A-D1", "B-D1", "A-D2", "B-D2")
CORPORA = ("mix", "shift")
# The sizes that make a language (with a seed and p_next, its LanguageConfig).
SIZE_FIELDS = ("n_sets", "n_states", "n_patterns", "pattern_length", "pattern_set_size")


def _check_sizes(n_sets: int, n_states: int, pattern_length: int, pattern_set_size: int) -> None:
    if n_sets < 2:
        raise ValueError(f"n_sets must be >= 2, got {n_sets}")
    if n_states < n_sets:
        raise ValueError(f"n_states ({n_states}) must be >= n_sets ({n_sets})")
    if pattern_length * pattern_set_size > n_sets:
        raise ValueError("pattern_length * pattern_set_size must be <= n_sets "
                         f"({pattern_length} * {pattern_set_size} > {n_sets})")


@dataclass(frozen=True)
class LanguageSizes:
    """The sizes of one synthetic language: what a preset of `LANGUAGES` names."""

    n_sets: int             # synonym sets; each has one token in alphabet A and one in B
    n_states: int           # hidden states per Markov chain
    n_patterns: int         # label patterns
    pattern_length: int     # ordered slots per pattern
    pattern_set_size: int   # synonym sets per pattern slot

    def __post_init__(self) -> None:
        for name in SIZE_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        _check_sizes(self.n_sets, self.n_states, self.pattern_length, self.pattern_set_size)

    def config(self, seed: int = 0) -> LanguageConfig:
        """The generator's config of the language drawn from `seed`."""
        return LanguageConfig(**asdict(self), seed=seed)


# The named languages; every page and plan chooses one by name (its sizes can be overridden one
# by one). Corpus and labelled-set sizes are each page's own: they differ between testbeds on the
# same language.
LANGUAGES: dict[str, LanguageSizes] = {
    # the test plan's and the rehearsals': seconds per page
    "tiny": LanguageSizes(n_sets=12, n_states=60, n_patterns=2, pattern_length=2,
                          pattern_set_size=1),
    # B4's smoke and cpu language: half the smoke language's sets and states (B4 pretrains
    # ELECTRA's generator and discriminator from scratch on it)
    "small": LanguageSizes(n_sets=50, n_states=250, n_patterns=4, pattern_length=2,
                           pattern_set_size=2),
    # paper A's and C4's smoke and cpu language: shorter, easier patterns than the paper's, so
    # that a tiny encoder learns the task
    "smoke": LanguageSizes(n_sets=100, n_states=500, n_patterns=4, pattern_length=2,
                           pattern_set_size=2),
    # the authors' constants
    "paper": LanguageSizes(n_sets=1000, n_states=5000, n_patterns=5, pattern_length=3,
                           pattern_set_size=12),
}


def language_sizes(name: str, parameter: str = "language",
                   **overrides: int | None) -> LanguageSizes:
    """The preset `name` with the sizes given in `overrides` replacing its own (None: the
    preset's); a ValueError naming `parameter` for an unknown name or size, or a bad size."""
    if not isinstance(name, str) or name not in LANGUAGES:
        raise ValueError(f"{parameter} = {name!r} is not a synthetic language; the presets: "
                         f"{list(LANGUAGES)}")
    unknown = sorted(set(overrides) - set(SIZE_FIELDS))
    if unknown:
        raise ValueError(f"{parameter}: {unknown} are not sizes of a language; its sizes: "
                         f"{list(SIZE_FIELDS)}")
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return replace(LANGUAGES[name], **given)
    except ValueError as exc:
        raise ValueError(f"{parameter} {name!r} with {given}: {exc}") from None


def check_not_pilot(language: int, pilots: tuple[int, ...], parameter: str) -> None:
    """Stop a recorded run on a language a pilot drew (`pilots`), naming the `parameter` that
    chose it: no setting may be judged on the languages that chose it."""
    if language in pilots:
        raise ValueError(f"parameter {parameter}: language {language} is a pilot language "
                         f"{pilots}; a recorded run must use another, so that no setting is "
                         "judged on the languages that chose it")


def set_language(group) -> LanguageSizes:
    """Fill a parameter group's sizes (its SIZE_FIELDS; None: the preset's) from the preset its
    `language` field names, frozen groups too; the sizes, or a ValueError as `language_sizes`."""
    sizes = language_sizes(group.language, **{k: getattr(group, k) for k in SIZE_FIELDS})
    for name in SIZE_FIELDS:
        object.__setattr__(group, name, getattr(sizes, name))
    return sizes


def preset_fields(values: dict) -> dict:
    """A group's fields (`values`, as mlmlib.configs.resolve holds them) with each size left None
    taken from the preset `values["language"]` names: what the group stands for. An unknown name
    leaves them None (building the group names the error)."""
    name = values.get("language")
    preset = LANGUAGES.get(name) if isinstance(name, str) else None
    if preset is None:
        return values
    return {**values, **{k: getattr(preset, k) for k in SIZE_FIELDS if values.get(k) is None}}


_PAPER = LANGUAGES["paper"]


@dataclass
class LanguageConfig:
    """Sizes and seed of one synthetic language; defaults are the authors' constants."""

    n_sets: int = _PAPER.n_sets              # synonym sets; one token in alphabet A, one in B
    n_states: int = _PAPER.n_states          # hidden states per Markov chain
    p_next: float = 0.9  # probability of stepping to state i+1 (else to a fixed neighbour)
    n_patterns: int = _PAPER.n_patterns      # label patterns
    pattern_length: int = _PAPER.pattern_length      # ordered sets per pattern
    pattern_set_size: int = _PAPER.pattern_set_size  # synonym sets per pattern slot
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.p_next <= 1.0:
            raise ValueError(f"p_next must be in [0, 1], got {self.p_next}")
        _check_sizes(self.n_sets, self.n_states, self.pattern_length, self.pattern_set_size)

    @property
    def mask_id(self) -> int:
        """Id of the [MASK] token."""
        return 2 * self.n_sets

    @property
    def vocab_size(self) -> int:
        """Both alphabets plus [MASK]."""
        return 2 * self.n_sets + 1


@dataclass
class MarkovChain:
    """A random chain: state i emits set perm[i mod n_sets]; steps to i+1 or to i+r_i."""

    emit: np.ndarray  # (n_states,) synonym-set id emitted by each state
    jump: np.ndarray  # (n_states,) the fixed random neighbour of each state

    def sample(self, n: int, length: int, p_next: float, rng: np.random.Generator) -> np.ndarray:
        """Sample n sequences of synonym-set ids, shape (n, length)."""
        n_states = len(self.emit)
        states = rng.integers(0, n_states, size=n)
        out = np.empty((n, length), dtype=np.int64)
        for t in range(length):
            out[:, t] = self.emit[states]
            step = rng.random(n) < p_next
            states = np.where(step, (states + 1) % n_states, self.jump[states])
        return out


@dataclass
class Language:
    """The two chains (D1, D2) and the label patterns of one synthetic language."""

    config: LanguageConfig
    chains: dict[str, MarkovChain] = field(default_factory=dict)
    patterns: np.ndarray | None = None  # (n_patterns, pattern_length, pattern_set_size)


def make_language(config: LanguageConfig) -> Language:
    """Draw the chains D1, D2 and the label patterns from the config's seed."""
    rng = np.random.default_rng(config.seed)
    chains = {}
    for name in ("D1", "D2"):  # each chain has its own permutation and jumps
        perm = rng.permutation(config.n_sets)
        emit = perm[np.arange(config.n_states) % config.n_sets]
        offsets = rng.integers(1, config.n_states, size=config.n_states)
        jump = (np.arange(config.n_states) + offsets) % config.n_states
        chains[name] = MarkovChain(emit=emit, jump=jump)
    patterns = np.stack([
        rng.choice(config.n_sets, size=config.pattern_length * config.pattern_set_size, replace=False)
        .reshape(config.pattern_length, config.pattern_set_size)
        for _ in range(config.n_patterns)
    ])
    return Language(config=config, chains=chains, patterns=patterns)


def label(set_ids: np.ndarray, patterns: np.ndarray) -> np.ndarray:
    """Label 1 where some pattern's slots occur in order (gaps allowed), else 0; on set ids."""
    n, length = set_ids.shape
    positions = np.arange(length)
    positive = np.zeros(n, dtype=bool)
    for pattern in patterns:
        after = np.full(n, -1)  # position of the last matched slot (greedy earliest match)
        found = np.ones(n, dtype=bool)
        for slot in pattern:
            hit = np.isin(set_ids, slot) & (positions[None, :] > after[:, None])
            found &= hit.any(axis=1)
            after = np.where(hit.any(axis=1), hit.argmax(axis=1), length)
        positive |= found
    return positive.astype(np.int64)


def to_alphabet(set_ids: np.ndarray, alphabet: str, n_sets: int) -> np.ndarray:
    """Write set ids as surface tokens of alphabet 'A' (ids as is) or 'B' (ids + n_sets)."""
    if alphabet not in ("A", "B"):
        raise ValueError(f"alphabet must be 'A' or 'B', got {alphabet!r}")
    return set_ids if alphabet == "A" else set_ids + n_sets


def swap_alphabet(tokens: np.ndarray, n_sets: int) -> np.ndarray:
    """Replace every token by its synonym in the other alphabet."""
    return np.where(tokens < n_sets, tokens + n_sets, tokens - n_sets)


def pretraining_corpus(
    lang: Language, kind: str, n: int, length: int, seed: int
) -> np.ndarray:
    """Pretraining sequences (n, length): half from D1, half from D2.

    `mix` (WITH the distributional property): each token switched to its B synonym with
    probability 0.5, drawn once. `shift` (WITHOUT): D1 written in alphabet A, D2 in B, so a
    and its synonym a + n_sets never share contexts.
    """
    if kind not in CORPORA:
        raise ValueError(f"corpus kind must be one of {CORPORA}, got {kind!r}")
    rng = np.random.default_rng(seed)
    cfg = lang.config
    halves = []
    for name, alphabet in (("D1", "A"), ("D2", "B")):
        ids = lang.chains[name].sample(n // 2 + (n % 2 if name == "D1" else 0), length, cfg.p_next, rng)
        if kind == "mix":
            halves.append(np.where(rng.random(ids.shape) < 0.5, ids + cfg.n_sets, ids))
        else:
            halves.append(to_alphabet(ids, alphabet, cfg.n_sets))
    corpus = np.concatenate(halves)
    return corpus[rng.permutation(len(corpus))]


def labelled_set(
    lang: Language, test_set: str, n: int, length: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Labelled sequences for a set named '<alphabet>-<chain>' (e.g. 'B-D1'): tokens, labels."""
    if test_set not in TEST_SETS:
        raise ValueError(f"test set must be one of {TEST_SETS}, got {test_set!r}")
    alphabet, chain = test_set.split("-")
    rng = np.random.default_rng(seed)
    ids = lang.chains[chain].sample(n, length, lang.config.p_next, rng)
    return to_alphabet(ids, alphabet, lang.config.n_sets), label(ids, lang.patterns)


# Balanced sets draw in chunks of this many times the requested size, for at most this many
# chunks: enough for a class as rare as about 1 in 100 (ours; then the error below).
BALANCE_CHUNK = 4
BALANCE_MAX_CHUNKS = 25


def balanced_labelled_set(
    lang: Language, test_set: str, n: int, length: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """`labelled_set` with each class half of the n sequences (class 1 gets the odd one).

    Sequences are drawn from the same chain with the same label function, in chunks from one
    generator seeded by `seed`, and kept in draw order until each class has its half: a
    rejection draw, so every kept sequence has the label the unbalanced generator gives it (the
    first chunk is exactly `labelled_set(lang, test_set, BALANCE_CHUNK * n, length, seed)`).
    A class the patterns rarely produce stops with an error naming the pattern settings.
    """
    if test_set not in TEST_SETS:
        raise ValueError(f"test set must be one of {TEST_SETS}, got {test_set!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"a balanced set needs n >= 2 sequences, got {n!r}")
    alphabet, chain = test_set.split("-")
    rng = np.random.default_rng(seed)
    need = {0: n // 2, 1: n - n // 2}
    kept_ids, kept_labels, drawn = [], [], 0
    for _ in range(BALANCE_MAX_CHUNKS):
        ids = lang.chains[chain].sample(BALANCE_CHUNK * n, length, lang.config.p_next, rng)
        labels = label(ids, lang.patterns)
        drawn += len(ids)
        take = np.zeros(len(ids), dtype=bool)
        for cls in (0, 1):
            rows = np.flatnonzero(labels == cls)[: need[cls]]
            take[rows] = True
            need[cls] -= len(rows)
        kept_ids.append(ids[take])
        kept_labels.append(labels[take])
        if not any(need.values()):
            return (to_alphabet(np.concatenate(kept_ids), alphabet, lang.config.n_sets),
                    np.concatenate(kept_labels))
    cfg = lang.config
    short = {cls: k for cls, k in need.items() if k}
    raise ValueError(
        f"{test_set}: {drawn} sequences of length {length} drawn and class(es) {sorted(short)} still "
        f"lack {sorted(short.values())} of the {n // 2} needed: the patterns (n_patterns="
        f"{cfg.n_patterns}, pattern_length={cfg.pattern_length}, pattern_set_size="
        f"{cfg.pattern_set_size}) rarely give that label at this length; change them or the "
        "length, or ask for fewer examples")


def context_vectors(tokens: np.ndarray, vocab_size: int, window: int = 1) -> np.ndarray:
    """Count, for each token, the tokens within `window` positions of it: (vocab, vocab)."""
    counts = np.zeros((vocab_size, vocab_size), dtype=np.float64)
    for offset in range(1, window + 1):
        left, right = tokens[:, :-offset].ravel(), tokens[:, offset:].ravel()
        np.add.at(counts, (left, right), 1.0)
        np.add.at(counts, (right, left), 1.0)
    return counts


def synonym_context_similarity(
    tokens: np.ndarray, n_sets: int, window: int = 1, seed: int = 0
) -> dict[str, np.ndarray]:
    """Cosine of context-count vectors for synonym pairs (a, a+n_sets) and random non-synonym pairs."""
    counts = context_vectors(tokens, 2 * n_sets, window)
    norms = np.linalg.norm(counts, axis=1)
    norms[norms == 0] = 1.0
    unit = counts / norms[:, None]
    a = np.arange(n_sets)
    rng = np.random.default_rng(seed)
    other = (a + rng.integers(1, n_sets, size=n_sets)) % n_sets  # a different set, either alphabet
    other = other + n_sets * rng.integers(0, 2, size=n_sets)
    return {
        "synonyms": (unit[a] * unit[a + n_sets]).sum(axis=1),
        "random pairs": (unit[a] * unit[other]).sum(axis=1),
    }
