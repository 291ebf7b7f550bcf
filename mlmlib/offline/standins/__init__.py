"""Tiny stand-ins for the hub resources a plan needs, built offline, to rehearse the plan end to end.

`build_standins(root, resources)` (build.py) writes, for each resource the mirror at root lacks, a tiny copy in
the mirror layout (mlmlib.data.hub) with the hub copy's own schema: the same split names (GLUE's
hidden test labels as -1), columns, ClassLabel names, `idx` columns, model classes and tokenizers.
The real loaders read them unchanged, so `python -m mlmlib run --profile paper --rehearse` can walk
every code path of the paper plan (hub names, tokenizers, schemas) at tiny size without the network.

THESE ARE STAND-INS FOR REHEARSING CODE PATHS, NEVER RESULTS. Nothing trained or scored on them
says anything about the papers. What they are made of:

* Texts come from the embedded bundle only: Jane Austen's sentences and the amazon-food reviews.
* Sentiment labels (GLUE SST-2, IMDb, the root of SST's trees) are the reviews' own labels
  (5 stars = positive). Every other label is a deterministic function of how the row was built,
  balanced by row number, not a human judgement:
  - CoLA: acceptable = an Austen sentence as written; unacceptable = its words in a seeded shuffle.
  - MNLI (GLUE and multi_nli): entailment = a word window of the premise; neutral = a window of
    the next sentence; contradiction = "It is not true that" + a window of the premise.
  - RTE: entailment = a window of the first sentence; not_entailment = a window of another one.
  - QNLI: the question asks about a window of a sentence; entailment when the sentence given is
    that one, not_entailment when it is another.
  - MRPC and QQP: equivalent/duplicate = the text with one word dropped; not = another sentence.
  - Hate speech: a review sentence as a "tweet"; every fourth gets a word of better-profanity's
    list appended, and the label is whether the tweet holds a listed word.
* SST's PTB trees are a balanced binary bracketing of the tokens (no parser), node labels the
  rounded mean of the children's, leaves from VADER's score, the root from the review's label
  (every tenth root neutral, 2, so the neutral-dropping path runs). MultiNLI's parses are a fixed
  NP / VP bracketing (first words, then a head word and the rest), not a parse.
* SQuAD: contexts of four consecutive Austen sentences; each question is one sentence with its
  last words replaced by "what?", the answer those words, at their character offset.
* OpenWebText: paragraphs of Austen sentences and whole reviews.
* Models are randomly initialised (seeded): a tiny BERT (MLM head, pooler) with bert-base-uncased's
  real tokenizer (the vocabulary shipped with the MiniLM package), and tiny FSMT translators with
  a character-level vocabulary of English stand-in text (no BPE merges), the same on both sides (they
  "translate" into garbage, which is all a rehearsal needs).
* Vectors have the real dimensionality (300) over the stand-in texts' words and the task word
  lists; each word's vector is a seeded random direction, plus a shared direction for words of
  one sentiment polarity and one for words that share their first five letters, so the
  nearest-neighbour and task-score code finds some neighbours.
"""

from mlmlib.offline.standins.build import RECIPES, build_standins, recipe_labels

__all__ = ["RECIPES", "build_standins", "recipe_labels"]
