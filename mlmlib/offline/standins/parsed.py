"""Stand-ins of the parsed test sets (paper A's phrase level): SST's PTB trees and MultiNLI's parses."""

from __future__ import annotations

from mlmlib.offline.standins.hub_sets import (
    GLUE_LABELS,
    MNLI_SPLITS,
    dataset_dict,
    features_of,
    pair_row,
)
from mlmlib.offline.standins.texts import (
    GLUE_SPLITS,
    first_sentence,
    reviews,
    rows_in,
    split_tokens,
    vader,
)


def _sentiment(score: float) -> int:
    """A VADER score on SST's 0..4 scale."""
    return 0 if score <= -2 else 1 if score < 0 else 2 if score == 0 else 3 if score < 2 else 4


def _sst_tree(tokens: list[str], root: int) -> str:
    """A balanced binary PTB tree over the tokens with SST's sentiment labels (see the module docstring)."""

    def build(part: list[str]) -> tuple[str, int]:
        if len(part) == 1:
            label = _sentiment(vader().get(part[0].lower(), 0.0))
            return f"({label} {part[0]})", label
        left, a = build(part[:len(part) // 2])
        right, b = build(part[len(part) // 2:])
        label = round((a + b) / 2)
        return f"({label} {left} {right})", label

    text, _ = build(tokens)
    return f"({root}{text[text.index(' '):]}"  # the root's label is the sentence's


def sst_ptb():
    """SST's `ptb` config: one column, ptb_tree, in train, validation and test."""
    splits = {}
    for split in GLUE_SPLITS:
        trees = []
        for i, (text, label) in enumerate(reviews(split)[:rows_in(split)]):
            root = 2 if i % 10 == 9 else 4 if label else 0
            trees.append(_sst_tree(split_tokens(first_sentence(text)), root))
        splits[split] = {"ptb_tree": trees}
    return dataset_dict(splits, features_of({"ptb_tree": "string"}))


_DETERMINERS = {"a", "an", "the", "this", "that", "these", "those", "his", "her", "their", "my", "our"}


def _tag(token: str) -> str:
    """A stand-in part-of-speech tag: punctuation as itself, determiners DT, every other word NN."""
    if not token[0].isalnum():
        return "." if token in ".!?" else token
    return "DT" if token.lower() in _DETERMINERS else "NN"


def _parses(sentence: str) -> tuple[str, str]:
    """(parse, binary parse) in MultiNLI's formats, over a fixed NP / VP bracketing of the tokens."""
    tokens = split_tokens(sentence)
    end = tokens[-1] if not tokens[-1][0].isalnum() else None
    words = tokens[:-1] if end else tokens
    split = max(1, min(3, len(words) // 3))

    def leaf(token: str, tag: str | None = None) -> str:
        return f"({tag or _tag(token)} {token})"

    subject = f"(NP {' '.join(leaf(t) for t in words[:split])})"
    head, rest = words[split:split + 1], words[split + 1:]
    verb = " ".join(leaf(t, "VB") for t in head)
    predicate = f"(VP {verb}{' (NP ' + ' '.join(leaf(t) for t in rest) + ')' if rest else ''})" if head else ""
    closing = f" {leaf(end)}" if end else ""
    parse = f"(ROOT (S {subject}{' ' + predicate if predicate else ''}{closing}))"
    groups = [words[:split], head + rest]
    binary = " ".join(f"( {' '.join(g)} )" if len(g) > 1 else g[0] for g in groups if g)
    return parse, f"( ( {binary} ){' ' + end if end else ''} )"


_MULTI_NLI_COLUMNS = {"promptID": "int32", "pairID": "string", "premise": "string",
                      "premise_binary_parse": "string", "premise_parse": "string", "hypothesis": "string",
                      "hypothesis_binary_parse": "string", "hypothesis_parse": "string", "genre": "string",
                      "label": GLUE_LABELS["mnli"]}


def multi_nli():
    """MultiNLI with its parses: train, validation_matched, validation_mismatched; the pairs are GLUE
    MNLI's stand-in rows, so its matched validation is the same set of pairs, as on the hub."""
    splits = {}
    for split in MNLI_SPLITS[:3]:
        rows = [pair_row("mnli", split, i) for i in range(rows_in(split))]
        columns: dict[str, list] = {c: [] for c in _MULTI_NLI_COLUMNS}
        for i, (premise, hypothesis, label) in enumerate(rows):
            (p_parse, p_binary), (h_parse, h_binary) = _parses(premise), _parses(hypothesis)
            prompt = 10_000 * MNLI_SPLITS.index(split) + i
            values = [prompt, f"{prompt}{'enc'[label]}", premise, p_binary, p_parse, hypothesis, h_binary,
                      h_parse, "fiction" if split != "validation_mismatched" else "letters", label]
            for column, value in zip(columns, values):
                columns[column].append(value)
        splits[split] = columns
    return dataset_dict(splits, features_of(_MULTI_NLI_COLUMNS))
