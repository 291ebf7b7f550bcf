"""Meaning-preserving perturbations of test inputs, for paper A's real-text analysis.

Three kinds, as in the paper's code:
* `word`: up to `n_replace` important nouns, verbs or adjectives, each replaced (one
  perturbed example per word) by a WordNet synonym of the same part of speech, re-inflected
  with lemminflect; kept only when the inflection exists in lemminflect's lexicon.
* `long-phrase`: the longest NP/VP/ADJP constituent, paraphrased by back-translation
  en->de->en (wmt19 FSMT models; needs the network).
* `short-phrase`: the shortest constituent of at most 4 words whose masking flips the
  prediction, paraphrased the same way.

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

from mlmlib.tokenize import encode

PERTURBATION_KINDS = ("word", "long-phrase", "short-phrase")
PHRASE_LABELS = ("NP", "VP", "ADJP")
WORDNET_TO_UPOS = {"n": "NOUN", "v": "VERB", "a": "ADJ"}
_WORD = re.compile(r"[A-Za-z]+")
# Closed-class words never count as content words (lemminflect lists "it" as a noun).
_EXTRA_STOP = {"someone", "somebody", "don", "didn", "doesn", "isn", "wasn", "t", "s", "ll", "ve", "re", "d", "m"}
_DETERMINERS = {"a", "an", "the", "this", "that", "these", "those", "my", "your", "his", "her", "its",
                "our", "their", "some", "any", "no", "every", "each", "another", "such", "of"}
_VERB_CUES = {"to", "i", "we", "you", "they", "will", "would", "can", "could", "should", "may",
              "might", "must", "do", "does", "did", "don", "didn", "doesn", "not", "never", "just"}
_ADJ_CUES = {"very", "so", "too", "really", "quite", "extremely", "pretty", "is", "are", "was",
             "were", "be", "been", "more", "most", "less", "least", "seems", "looks", "tastes"}


def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS) | _EXTRA_STOP


def check_kind(kind: str) -> str:
    """Validate a perturbation kind name."""
    if kind not in PERTURBATION_KINDS:
        raise ValueError(f"perturbation kind={kind!r} is unknown; allowed: {', '.join(PERTURBATION_KINDS)}")
    return kind


# ---------------------------------------------------------------- word level

@dataclass(frozen=True)
class Word:
    """A content word of a text: its character span, guessed WordNet POS, lemma and Penn tag."""

    start: int
    end: int
    text: str
    pos: str      # WordNet letter: n, v, a
    lemma: str
    tag: str      # Penn Treebank tag of the form (NN, NNS, VBD, JJR, ...)


def _candidates(form: str, synonyms) -> dict[str, str]:
    """The WordNet parts of speech (with lemma) lemminflect and WordNet both allow for a form."""
    from lemminflect import getAllLemmas

    out = {}
    for pos, upos in WORDNET_TO_UPOS.items():
        lemmas = getAllLemmas(form, upos=upos).get(upos, ())
        for lemma in lemmas:
            if pos in synonyms.pos_of(lemma):
                out[pos] = lemma
                break
    return out


def _choose_pos(cands: dict[str, str], prev: str, next_cands: dict[str, str]) -> str:
    """Break a part-of-speech tie with the previous word (and whether the next can be a noun)."""
    if len(cands) == 1:
        return next(iter(cands))
    if prev in _ADJ_CUES and "a" in cands:
        return "a"
    if prev in _VERB_CUES and "v" in cands:
        return "v"
    if prev in _DETERMINERS:
        if "a" in cands and "n" in next_cands:
            return "a"
        if "n" in cands:
            return "n"
    for pos in ("a", "n", "v"):  # no cue: adjective, then noun, then verb
        if pos in cands:
            return pos
    raise AssertionError("unreachable: cands is not empty")


def penn_tag(form: str, lemma: str, pos: str) -> str | None:
    """The Penn tag under which lemminflect inflects `lemma` to `form`, or None."""
    from lemminflect import getAllInflections

    forms = getAllInflections(lemma, upos=WORDNET_TO_UPOS[pos])
    for tag, variants in forms.items():  # a canonical form first ("food" is NN before NNS)
        if variants and variants[0] == form:
            return tag
    for tag, variants in forms.items():
        if form in variants:
            return tag
    return None


def content_words(text: str, synonyms) -> list[Word]:
    """The nouns, verbs and adjectives of a text (POS guessed as the module docstring says)."""
    stop = _stop_words()
    tokens = list(_WORD.finditer(text))
    lower = [m.group().lower() for m in tokens]
    cands = [{} if w in stop else _candidates(w, synonyms) for w in lower]
    out = []
    for i, m in enumerate(tokens):
        if not cands[i]:
            continue
        prev = lower[i - 1] if i else ""
        nxt = cands[i + 1] if i + 1 < len(tokens) else {}
        pos = _choose_pos(cands[i], prev, nxt)
        lemma = cands[i][pos]
        tag = penn_tag(lower[i], lemma, pos)
        if tag is None:
            continue
        out.append(Word(m.start(), m.end(), m.group(), pos, lemma, tag))
    return out


def inflect(lemma: str, tag: str) -> str | None:
    """The form of `lemma` for a Penn tag, from lemminflect's lexicon only (None if it has none)."""
    from lemminflect import getInflection

    forms = getInflection(lemma, tag=tag, inflect_oov=False)
    return forms[0] if forms else None


def synonym_replacement(word: Word, synonyms, rng: np.random.Generator) -> str | None:
    """A re-inflected WordNet synonym of the same POS that differs from the word, or None."""
    options = []
    for syn in sorted(synonyms.synonyms(word.lemma, word.pos)):
        form = inflect(syn, word.tag)
        if form and form.isalpha() and form.lower() != word.text.lower():
            options.append(form)
    if not options:
        return None
    form = options[int(rng.integers(len(options)))]
    return form.capitalize() if word.text[0].isupper() else form


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


def word_importance(model, tokenizer, text: str, words: list[Word], max_length: int,
                    text_pair: str | None = None) -> np.ndarray:
    """How far masking each word lowers the probability of the original prediction (as the paper's code)."""
    masked = [replace_span(text, w.start, w.end, tokenizer.mask_token) for w in words]
    pairs = None if text_pair is None else [text_pair] * (len(masked) + 1)
    probs = class_probs(model, tokenizer, [text, *masked], max_length, text_pairs=pairs)
    label = int(probs[0].argmax())
    return probs[0, label] - probs[1:, label]


@dataclass
class Perturbation:
    """One perturbed test example: which unit of which sentence became what."""

    sentence: int       # index of the original test example
    kind: str
    text: str           # the original input
    perturbed: str      # the input with the unit replaced
    original: str       # the replaced unit (word or phrase)
    replacement: str
    pos: str            # WordNet letter (word level) or constituent label (phrase level)
    importance: float   # word level: drop of the predicted class's probability when masked
    label: int = -1     # the gold label of the original example
    text_pair: str | None = None  # the unperturbed second text of a pair task (MNLI's hypothesis)


def word_perturbations(
    model, tokenizer, texts: list[str], synonyms, *, n_replace: int = 4, max_length: int = 64,
    seed: int = 0, labels: list[int] | None = None, text_pairs: list[str] | None = None,
) -> tuple[list[Perturbation], dict[str, int]]:
    """Word-level perturbations of each text (the first text of a pair), with counts of what was kept and why not."""
    if not isinstance(n_replace, int) or n_replace < 1:
        raise ValueError(f"n_replace must be an int >= 1, got {n_replace!r}")
    rng = np.random.default_rng(seed)
    counts: Counter = Counter()
    out: list[Perturbation] = []
    for i, text in enumerate(texts):
        counts["sentences"] += 1
        words = content_words(text, synonyms)
        if not words:
            counts["sentences without a content word"] += 1
            continue
        pair = None if text_pairs is None else text_pairs[i]
        importance = word_importance(model, tokenizer, text, words, max_length, pair)
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
                label=-1 if labels is None else int(labels[i]), text_pair=pair,
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


def phrases(tree: Tree, labels: tuple[str, ...] | None = PHRASE_LABELS) -> list[tuple[int, int, str]]:
    """Proper constituents (start, end word index, label), optionally only those with given labels.

    labels=None takes every constituent: SST's trees carry sentiment, not syntactic labels.
    """
    out: list[tuple[int, int, str]] = []

    def walk(node: Tree, start: int, top: bool) -> int:
        end = start
        for child in node.children:
            end = end + 1 if isinstance(child, str) else walk(child, end, False)
        is_preterminal = len(node.children) == 1 and isinstance(node.children[0], str)
        if not top and not is_preterminal and (labels is None or node.label in labels):
            out.append((start, end, node.label))
        return end

    walk(tree, 0, True)
    return out


def longest_phrase(tree: Tree, labels: tuple[str, ...] | None = PHRASE_LABELS) -> tuple[int, int, str] | None:
    """The longest proper constituent with one of `labels` (the first one on ties), or None."""
    found = phrases(tree, labels)
    return max(found, key=lambda p: (p[1] - p[0], -p[0])) if found else None


def shortest_flipping_phrase(model, tokenizer, tree: Tree, *, max_words: int = 4, max_length: int = 128,
                             labels: tuple[str, ...] | None = PHRASE_LABELS) -> tuple[int, int, str] | None:
    """The shortest constituent of <= max_words words whose masking flips the prediction, or None."""
    words = tree.leaves()
    found = sorted((p for p in phrases(tree, labels) if p[1] - p[0] <= max_words), key=lambda p: (p[1] - p[0], p[0]))
    if not found:
        return None
    masked = [" ".join(words[:s] + [tokenizer.mask_token] + words[e:]) for s, e, _ in found]
    probs = class_probs(model, tokenizer, [" ".join(words), *masked], max_length)
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
            model = FSMTForConditionalGeneration.from_pretrained(name).to(self.device).eval()
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
) -> tuple[list[Perturbation], dict[str, int]]:
    """Phrase-level perturbations: the chosen constituent of each tree replaced by its back-translation."""
    check_kind(kind)
    if kind == "word":
        raise ValueError("phrase_perturbations: kind='word' is word level; use word_perturbations")
    counts: Counter = Counter()
    chosen = []
    for i, text in enumerate(trees):
        counts["sentences"] += 1
        tree = parse_tree(text)
        span = (longest_phrase(tree, labels) if kind == "long-phrase" else
                shortest_flipping_phrase(model, tokenizer, tree, max_words=max_words, max_length=max_length,
                                         labels=labels))
        if span is None:
            counts["no qualifying phrase"] += 1
            continue
        chosen.append((i, tree.leaves(), span))
    paraphrases = translate([" ".join(w[s:e]) for _, w, (s, e, _) in chosen]) if chosen else []
    out = []
    for (i, words, (s, e, label)), new in zip(chosen, paraphrases):
        old = " ".join(words[s:e])
        if new.strip().lower() == old.lower() or not new.strip():
            counts["paraphrase equals the phrase"] += 1
            continue
        counts["kept"] += 1
        out.append(Perturbation(
            sentence=i, kind=kind, text=" ".join(words), perturbed=" ".join(words[:s] + [new.strip()] + words[e:]),
            original=old, replacement=new.strip(), pos=label, importance=float("nan"),
            label=-1 if gold is None else int(gold[i]),
        ))
    return out, dict(counts)


def load_parsed_test(task: str, limit: int | None = None) -> dict[str, list]:
    """Parsed test inputs for the phrase level (hub, needs the network): trees, labels, text pairs.

    mnli: MultiNLI's matched validation set with its premise parses (the hypothesis is kept as
    the pair). sst2: SST's PTB trees of the validation sentences; their node labels are
    sentiment (0-4), not syntactic, so use `labels=None` in phrase_perturbations there; the root
    label gives the binary SST-2 label (neutral sentences dropped).
    """
    from mlmlib.data.hub import load_hub_dataset

    alternative = 'perturbation kind "word" on task "amazon-food"'
    if task == "mnli":
        ds = load_hub_dataset("task 'mnli' with parses", alternative, "nyu-mll/multi_nli", None,
                              split="validation_matched")
        ds = ds.filter(lambda r: r["label"] >= 0)
        if limit:
            ds = ds.select(range(min(limit, len(ds))))
        return {"trees": ds["premise_parse"], "labels": ds["label"], "text_pairs": ds["hypothesis"]}
    if task == "sst2":
        ds = load_hub_dataset("task 'sst2' with trees", alternative, "stanfordnlp/sst", "ptb", split="validation")
        trees, labels = [], []
        for text in ds["ptb_tree"]:
            root = int(parse_tree(text).label)
            if root != 2:
                trees.append(text)
                labels.append(int(root > 2))
        if limit:
            trees, labels = trees[:limit], labels[:limit]
        return {"trees": trees, "labels": labels, "text_pairs": None}
    raise ValueError(f"load_parsed_test: task={task!r} has no parses; allowed: mnli, sst2")
