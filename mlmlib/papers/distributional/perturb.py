"""Meaning-preserving perturbations of test inputs, for paper A's real-text analysis.

Three kinds, as in the paper's code:
* `word`: up to `n_replace` important nouns, verbs or adjectives, each replaced (one
  perturbed example per word) by a WordNet synonym of the same part of speech, re-inflected
  with lemminflect; kept only when the inflection exists in lemminflect's lexicon.
* `long-phrase`: the longest NP/VP/ADJP constituent, paraphrased by back-translation
  en->de->en (wmt19 FSMT models; needs the network).
* `short-phrase`: the shortest constituent of at most 4 words whose masking flips the
  prediction, paraphrased the same way.

A pair task (MNLI) has each of its texts perturbed, one at a time, as the paper's code does
(`side` "text" is the premise, "text_pair" the hypothesis); every classification of a perturbed
or masked text keeps the other text of its pair.

Offline there is no POS tagger with shipped data (NLTK's and spaCy's taggers download
theirs), so the word level guesses the part of speech: lemminflect's lexicon lists the
parts of speech a form can have, WordNet must list the lemma under it, and a few context
cues (a determiner, "to", a degree adverb or copula before the word) break ties. It is a
heuristic, stated in the book; an important word whose guess fails is skipped and counted.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass

import numpy as np
import torch

from mlmlib.data.content_words import (  # noqa: F401 - inflect, penn_tag: part of the word level's API
    Word,
    content_words,
    inflect,
    penn_tag,
    synonym_replacement,
)
from mlmlib.tokenize import encode

PERTURBATION_KINDS = ("word", "long-phrase", "short-phrase")
SIDES = ("text", "text_pair")  # which text of a pair input is perturbed: the first (premise) or the second
PHRASE_LABELS = ("NP", "VP", "ADJP")
def check_kind(kind: str) -> str:
    """Validate a perturbation kind name."""
    if kind not in PERTURBATION_KINDS:
        raise ValueError(f"perturbation kind={kind!r} is unknown; allowed: {', '.join(PERTURBATION_KINDS)}")
    return kind


def check_sides(sides, text_pairs) -> tuple[str, ...]:
    """The sides to perturb: both texts of a pair task by default, the only text otherwise."""
    if sides is None:
        return SIDES if text_pairs is not None else ("text",)
    sides = tuple(sides)
    if not sides or any(side not in SIDES for side in sides):
        raise ValueError(f"sides={sides!r}: allowed a non-empty list of {', '.join(SIDES)}")
    if text_pairs is None and "text_pair" in sides:
        raise ValueError("sides lists 'text_pair', but the inputs are single texts (text_pairs is None)")
    return sides


def ordered(own: str, other: str | None, side: str) -> tuple[str, str | None]:
    """A classifier input (first text, second text or None) from the perturbed side's text and the other."""
    return (own, other) if side == "text" else (other, own)


# ---------------------------------------------------------------- word level

def replace_span(text: str, start: int, end: int, new: str) -> str:
    """Text with characters [start, end) replaced."""
    return text[:start] + new + text[end:]


def fit_text(tokenizer, text: str, max_tokens: int) -> str:
    """Cut a text at a word boundary so it holds at most `max_tokens` WordPiece tokens."""
    # the whole text is tokenized on purpose (to find where to cut it): no length warning
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    offsets = enc["offset_mapping"]
    if len(offsets) <= max_tokens:
        return text
    cut = offsets[max_tokens][0]
    words = enc.word_ids()
    if words[max_tokens] is not None and words[max_tokens] == words[max_tokens - 1]:
        # do not split a word into pieces: cut before its first piece
        first = max_tokens
        while first > 0 and words[first - 1] == words[max_tokens]:
            first -= 1
        cut = offsets[first][0]
    return text[:cut].rstrip()


def words_within(tokenizer, words: list[str], max_tokens: int) -> int:
    """How many leading words fit, joined by spaces, in `max_tokens` WordPiece tokens (fit_text's cut)."""
    cut = len(fit_text(tokenizer, " ".join(words), max_tokens))
    end, n = -1, 0
    for word in words:
        end += 1 + len(word)
        if end > cut:
            break
        n += 1
    return n


@torch.no_grad()
def class_probs(model, tokenizer, texts: list[str], max_length: int, batch_size: int = 256,
                text_pairs: list[str] | None = None) -> np.ndarray:
    """A fine-tuned classifier's class probabilities (N, C) on raw texts."""
    model.eval()
    device = next(model.parameters()).device
    out = []
    for s in range(0, len(texts), batch_size):
        pair = text_pairs[s:s + batch_size] if text_pairs is not None else None
        enc = encode(tokenizer, texts[s:s + batch_size], max_length=max_length, text_pair=pair)
        enc.pop("special_tokens_mask")
        enc.pop("word_ids")
        logits = model(**{k: v.to(device) for k, v in enc.items()}).logits.float()
        out.append(torch.softmax(logits, -1).cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, model.config.num_labels))


def input_probs(model, tokenizer, inputs: list[tuple[str, str | None]], max_length: int) -> np.ndarray:
    """class_probs of (first text, second text or None) inputs, all single texts or all pairs."""
    firsts, seconds = [a for a, _ in inputs], [b for _, b in inputs]
    missing = sum(b is None for b in seconds)
    if 0 < missing < len(seconds):
        raise ValueError(f"input_probs: {missing} of {len(seconds)} inputs lack the second text of their pair")
    return class_probs(model, tokenizer, firsts, max_length, text_pairs=None if missing else seconds)


def word_importance(model, tokenizer, text: str, words: list[Word], max_length: int,
                    text_pair: str | None = None, side: str = "text") -> np.ndarray:
    """How far masking each word lowers the probability of the original prediction (as the paper's code).

    text is the perturbed side of the input, text_pair the other text of a pair, kept in every input.
    """
    masked = [replace_span(text, w.start, w.end, tokenizer.mask_token) for w in words]
    probs = input_probs(model, tokenizer, [ordered(t, text_pair, side) for t in (text, *masked)], max_length)
    label = int(probs[0].argmax())
    return probs[0, label] - probs[1:, label]


@dataclass
class Perturbation:
    """One perturbed test example: which unit of which sentence became what."""

    sentence: int       # index of the original test example
    kind: str
    text: str           # the original text of the perturbed side
    perturbed: str      # that text with the unit replaced
    original: str       # the replaced unit (word or phrase)
    replacement: str
    pos: str            # WordNet letter (word level) or constituent label (phrase level)
    importance: float   # word level: drop of the predicted class's probability when masked
    label: int = -1     # the gold label of the original example
    text_pair: str | None = None  # the other, unperturbed text of a pair input
    side: str = "text"  # "text": the first text (premise) is perturbed; "text_pair": the second

    def __post_init__(self) -> None:
        if self.side not in SIDES:
            raise ValueError(f"side={self.side!r}; allowed: {', '.join(SIDES)}")
        if self.side == "text_pair" and self.text_pair is None:
            raise ValueError("side='text_pair' needs the other text of the pair (text_pair)")

    def original_input(self) -> tuple[str, str | None]:
        """The classifier's input before the perturbation: (first text, second text or None)."""
        return ordered(self.text, self.text_pair, self.side)

    def perturbed_input(self) -> tuple[str, str | None]:
        """The classifier's input after the perturbation: (first text, second text or None)."""
        return ordered(self.perturbed, self.text_pair, self.side)


def word_perturbations(
    model, tokenizer, texts: list[str], synonyms, *, n_replace: int = 4, max_length: int = 64,
    seed: int = 0, labels: list[int] | None = None, text_pairs: list[str] | None = None,
    sides: list[str] | None = None,
) -> tuple[list[Perturbation], dict[str, int]]:
    """Word-level perturbations of each text (both texts of a pair, one at a time), with counts of what was
    kept and why not."""
    if not isinstance(n_replace, int) or n_replace < 1:
        raise ValueError(f"n_replace must be an int >= 1, got {n_replace!r}")
    sides = check_sides(sides, text_pairs)
    rng = np.random.default_rng(seed)
    counts: Counter = Counter()
    out: list[Perturbation] = []
    for i, side in ((i, side) for i in range(len(texts)) for side in sides):
        counts["sentences"] += 1
        first, second = texts[i], None if text_pairs is None else text_pairs[i]
        text, pair = (first, second) if side == "text" else (second, first)
        words = content_words(text, synonyms)
        if not words:
            counts["sentences without a content word"] += 1
            continue
        importance = word_importance(model, tokenizer, text, words, max_length, pair, side)
        order = np.argsort(-importance, kind="stable")[:n_replace]
        for j in order:
            word = words[j]
            counts["important words tried"] += 1
            new = synonym_replacement(word, synonyms, rng)
            if new is None:
                counts["no synonym with that inflection"] += 1
                continue
            counts["kept"] += 1
            out.append(Perturbation(
                sentence=i, kind="word", text=text, perturbed=replace_span(text, word.start, word.end, new),
                original=word.text, replacement=new, pos=word.pos, importance=float(importance[j]),
                label=-1 if labels is None else int(labels[i]), text_pair=pair, side=side,
            ))
    return out, dict(counts)


def as_rows(perturbations: list[Perturbation]) -> list[dict]:
    """Perturbations as plain dicts (for tables and records)."""
    return [asdict(p) for p in perturbations]


# ---------------------------------------------------------------- phrase level (needs the network)

@dataclass
class Tree:
    """A constituency tree node: a label and children (subtrees or leaf strings)."""

    label: str
    children: list

    def leaves(self) -> list[str]:
        """The words under this node, in order."""
        return [w for c in self.children for w in ([c] if isinstance(c, str) else c.leaves())]


def parse_tree(text: str) -> Tree:
    """Parse a bracketed (Penn Treebank style) tree, e.g. MNLI's `premise_parse` or SST's `ptb_tree`."""
    tokens = re.findall(r"\(|\)|[^\s()]+", text)
    if not tokens or tokens[0] != "(":
        raise ValueError(f"parse_tree: not a bracketed tree: {text[:60]!r}")
    pos = 0

    def node() -> Tree:
        nonlocal pos
        pos += 1  # "("
        label = ""
        if pos < len(tokens) and tokens[pos] not in "()":
            label = tokens[pos]
            pos += 1
        children: list = []
        while pos < len(tokens) and tokens[pos] != ")":
            if tokens[pos] == "(":
                children.append(node())
            else:
                children.append(tokens[pos])
                pos += 1
        if pos >= len(tokens):
            raise ValueError(f"parse_tree: unbalanced brackets in {text[:60]!r}")
        pos += 1  # ")"
        return Tree(label, children)

    tree = node()
    while tree.label in ("", "ROOT") and len(tree.children) == 1 and isinstance(tree.children[0], Tree):
        tree = tree.children[0]  # unwrap ( (S ...) ) and (ROOT (S ...))
    return tree


def phrases(tree: Tree, labels: tuple[str, ...] | None = PHRASE_LABELS,
            within: int | None = None) -> list[tuple[int, int, str]]:
    """Proper constituents (start, end word index, label), optionally only those with given labels.

    labels=None takes every constituent: SST's trees carry sentiment, not syntactic labels.
    within: only constituents inside the first `within` words (a text cut to fit the model).
    """
    out: list[tuple[int, int, str]] = []

    def walk(node: Tree, start: int, top: bool) -> int:
        end = start
        for child in node.children:
            end = end + 1 if isinstance(child, str) else walk(child, end, False)
        is_preterminal = len(node.children) == 1 and isinstance(node.children[0], str)
        inside = within is None or end <= within
        if not top and not is_preterminal and inside and (labels is None or node.label in labels):
            out.append((start, end, node.label))
        return end

    walk(tree, 0, True)
    return out


def longest_phrase(tree: Tree, labels: tuple[str, ...] | None = PHRASE_LABELS,
                   within: int | None = None) -> tuple[int, int, str] | None:
    """The longest proper constituent with one of `labels` (the first one on ties), or None."""
    found = phrases(tree, labels, within)
    return max(found, key=lambda p: (p[1] - p[0], -p[0])) if found else None


def shortest_flipping_phrase(model, tokenizer, tree: Tree, *, max_words: int = 4, max_length: int = 128,
                             labels: tuple[str, ...] | None = PHRASE_LABELS, within: int | None = None,
                             text_pair: str | None = None, side: str = "text") -> tuple[int, int, str] | None:
    """The shortest constituent of <= max_words words whose masking flips the prediction, or None.

    The tree is the perturbed side of the input, cut to its first `within` words; text_pair, the
    other text of a pair, is kept in every classification.
    """
    words = tree.leaves()[:within]
    found = sorted((p for p in phrases(tree, labels, within) if p[1] - p[0] <= max_words),
                   key=lambda p: (p[1] - p[0], p[0]))
    if not found:
        return None
    masked = [" ".join(words[:s] + [tokenizer.mask_token] + words[e:]) for s, e, _ in found]
    texts = [" ".join(words), *masked]
    probs = input_probs(model, tokenizer, [ordered(t, text_pair, side) for t in texts], max_length)
    flipped = probs[1:].argmax(1) != probs[0].argmax()
    return found[int(np.flatnonzero(flipped)[0])] if flipped.any() else None


@dataclass
class BackTranslator:
    """Paraphrase by translation en->de->en with the wmt19 FSMT models (downloads them: needs the network)."""

    forward: str = "facebook/wmt19-en-de"
    backward: str = "facebook/wmt19-de-en"
    num_beams: int = 5
    batch_size: int = 32
    device: str = "auto"  # cuda when there is one

    def __post_init__(self) -> None:
        if self.device == "auto":
            self.device = "cuda" if torch.cuda.is_available() else "cpu"
        from transformers import FSMTForConditionalGeneration, FSMTTokenizer

        from mlmlib.data.hub import load_hub_pretrained

        try:
            import sacremoses  # noqa: F401 - FSMT's tokenizer needs it
        except ImportError as err:
            raise RuntimeError("BackTranslator needs `pip install sacremoses` (FSMT's tokenizer)") from err
        alternative = 'perturbation kind "word" (no translation model needed)'
        self._models = {}
        for name in (self.forward, self.backward):
            tok = load_hub_pretrained(f"translation model {name!r}", alternative, FSMTTokenizer.from_pretrained, name)
            model = load_hub_pretrained(f"translation model {name!r}", alternative,
                                        FSMTForConditionalGeneration.from_pretrained, name)
            model = model.to(self.device).eval()
            self._models[name] = (tok, model)

    @torch.no_grad()
    def _translate(self, name: str, texts: list[str]) -> list[str]:
        tok, model = self._models[name]
        out = []
        for s in range(0, len(texts), self.batch_size):
            enc = tok(texts[s:s + self.batch_size], return_tensors="pt", padding=True).to(self.device)
            gen = model.generate(**enc, num_beams=self.num_beams, max_new_tokens=64)
            out += tok.batch_decode(gen, skip_special_tokens=True)
        return out

    def __call__(self, texts: list[str]) -> list[str]:
        """Back-translate each text en->de->en."""
        return self._translate(self.backward, self._translate(self.forward, list(texts)))


def phrase_perturbations(
    model, tokenizer, trees: list[str], kind: str, translate, *, max_words: int = 4, max_length: int = 128,
    labels: tuple[str, ...] | None = PHRASE_LABELS, gold: list[int] | None = None,
    text_pairs: list[str] | None = None, side: str = "text", max_text_tokens: int | None = None,
) -> tuple[list[Perturbation], dict[str, int]]:
    """Phrase-level perturbations: the chosen constituent of each tree replaced by its back-translation.

    The trees are one side of the inputs; text_pairs (aligned with them) the other text of a pair
    input, kept unperturbed, and `side` says which side the trees are. max_text_tokens cuts both
    texts to that many tokens (the tree to its leading words that fit) before any phrase is chosen.
    """
    check_kind(kind)
    if kind == "word":
        raise ValueError("phrase_perturbations: kind='word' is word level; use word_perturbations")
    check_sides([side], text_pairs)
    counts: Counter = Counter()
    chosen = []
    for i, text in enumerate(trees):
        counts["sentences"] += 1
        tree = parse_tree(text)
        within = words_within(tokenizer, tree.leaves(), max_text_tokens) if max_text_tokens else None
        pair = None if text_pairs is None else text_pairs[i]
        if pair is not None and max_text_tokens:
            pair = fit_text(tokenizer, pair, max_text_tokens)
        span = (longest_phrase(tree, labels, within) if kind == "long-phrase" else
                shortest_flipping_phrase(model, tokenizer, tree, max_words=max_words, max_length=max_length,
                                         labels=labels, within=within, text_pair=pair, side=side))
        if span is None:
            counts["no qualifying phrase"] += 1
            continue
        chosen.append((i, tree.leaves()[:within], span, pair))
    paraphrases = translate([" ".join(w[s:e]) for _, w, (s, e, _), _ in chosen]) if chosen else []
    out = []
    for (i, words, (s, e, label), pair), new in zip(chosen, paraphrases):
        old = " ".join(words[s:e])
        if new.strip().lower() == old.lower() or not new.strip():
            counts["paraphrase equals the phrase"] += 1
            continue
        counts["kept"] += 1
        out.append(Perturbation(
            sentence=i, kind=kind, text=" ".join(words), perturbed=" ".join(words[:s] + [new.strip()] + words[e:]),
            original=old, replacement=new.strip(), pos=label, importance=float("nan"),
            label=-1 if gold is None else int(gold[i]), text_pair=pair, side=side,
        ))
    return out, dict(counts)


def parsed_perturbations(model, tokenizer, parsed: dict, kind: str, translate, *, sides: list[str] | None = None,
                         **options) -> tuple[list[Perturbation], dict[str, int]]:
    """Phrase-level perturbations of `load_parsed_test`'s inputs: each side of a pair in turn, counts summed."""
    sides = check_sides(sides, parsed["text_pairs"])
    out: list[Perturbation] = []
    counts: Counter = Counter()
    for side in sides:
        trees, others = ((parsed["trees"], parsed["text_pairs"]) if side == "text" else
                         (parsed["pair_trees"], parsed["texts"]))
        found, count = phrase_perturbations(model, tokenizer, trees, kind, translate, gold=parsed["labels"],
                                            text_pairs=others, side=side, **options)
        out += found
        counts.update(count)
    return out, dict(counts)


# task -> (hub path, config, split) of its parsed test inputs; the hub mirror command reads it too
PARSED_TESTS = {"mnli": ("nyu-mll/multi_nli", None, "validation_matched"),
                "sst2": ("stanfordnlp/sst", "ptb", "validation")}


def load_parsed_test(task: str, limit: int | None = None) -> dict[str, list]:
    """Parsed test inputs for the phrase level (hub, needs the network): trees, labels, text pairs.

    mnli: MultiNLI's matched validation set with the parses of premise (`trees`) and hypothesis
    (`pair_trees`) and both texts (`texts`, `text_pairs`). sst2: SST's PTB trees of the validation sentences; their node labels are
    sentiment (0-4), not syntactic, so use `labels=None` in phrase_perturbations there; the root
    label gives the binary SST-2 label (neutral sentences dropped).
    """
    from mlmlib.data.hub import load_hub_dataset

    alternative = 'perturbation kind "word" on task "amazon-food"'
    if task not in PARSED_TESTS:
        raise ValueError(f"load_parsed_test: task={task!r} has no parses; allowed: {', '.join(PARSED_TESTS)}")
    path, config, split = PARSED_TESTS[task]
    if task == "mnli":
        ds = load_hub_dataset("task 'mnli' with parses", alternative, path, config, split=split)
        ds = ds.filter(lambda r: r["label"] >= 0)
        if limit:
            ds = ds.select(range(min(limit, len(ds))))
        return {"trees": ds["premise_parse"], "pair_trees": ds["hypothesis_parse"], "texts": ds["premise"],
                "text_pairs": ds["hypothesis"], "labels": ds["label"]}
    ds = load_hub_dataset("task 'sst2' with trees", alternative, path, config, split=split)
    trees, labels = [], []
    for text in ds["ptb_tree"]:
        root = int(parse_tree(text).label)
        if root != 2:
            trees.append(text)
            labels.append(int(root > 2))
    if limit:
        trees, labels = trees[:limit], labels[:limit]
    return {"trees": trees, "labels": labels, "text_pairs": None}  # single texts: no pair_trees
