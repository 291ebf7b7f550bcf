"""The task's training text as C1 measures it: tokenized as the continued MLM sees it, every word
type scored against the task word list.

The steps run in a fixed order, which the C1 records depend on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlmlib.papers.selective_masking import experiment as se
from mlmlib.papers.selective_masking.config import MaskingConfig, TaskText, WordList
from mlmlib.papers.selective_masking.lexicons import TaskScores


@dataclass
class ScoredText:
    """The training corpus, its words' task scores and the list words that were scored."""

    texts: int              # training texts tokenized
    corpus: se.TokenizedCorpus
    scores: TaskScores      # one per word type of the corpus, in its order
    list_words: list[str]   # the list's words with a vector (a sample of it with word_list_size)

    @property
    def in_list(self) -> np.ndarray:
        """Per word type of the corpus: is it a word of the list?"""
        listed = set(self.list_words)
        return np.array([w in listed for w in self.corpus.words])

    @property
    def has_vector(self) -> np.ndarray:
        """Per word type of the corpus: could it be scored (words without a vector score 0)?"""
        missing = set(self.scores.missing)
        return np.array([w not in missing for w in self.corpus.words])

    @property
    def list_token_share(self) -> float:
        """The list words' share of the corpus' tokens: what random masking masks of them."""
        counts = self.corpus.token_counts
        return float(counts[self.in_list].sum() / counts.sum())

    def summary(self, task: str, words: WordList) -> str:
        """The text and the list, in one line."""
        return (f"{task}: {self.texts} training texts, {self.corpus.n_tokens} maskable tokens, "
                f"{len(self.corpus.words)} word types; "
                f"word list {words.label}: {len(self.list_words)} words with a vector"
                + (f" (a sample drawn with seed {words.seed})" if words.size else ""))

    def list_coverage(self) -> str:
        """How much of the corpus the list covers, and how much could not be scored."""
        return (f"list words are {self.in_list.sum()} of {len(self.corpus.words)} word types and "
                f"{self.list_token_share:.1%} of tokens; "
                f"{self.scores.n_missing} word types have no vector (score 0)")


def score_task_text(task: str, tokenizer, words: WordList, masking: MaskingConfig,
                    text: TaskText) -> ScoredText:
    """Tokenize the task's training texts (the first `text.train_size` of a fixed shuffle, or all)
    and score their word types against `words`."""
    from mlmlib.data import load_task

    train = load_task(task)["train"]
    texts = (train if not text.train_size else
             train.shuffle(seed=0).select(range(text.train_size)))["text"]
    corpus = se.tokenized_corpus(tokenizer, texts, max_length=text.max_length,
                                 truncation=text.truncation)
    scores, list_words = se.score_corpus(corpus, words, masking)
    return ScoredText(len(texts), corpus, scores, list_words)
