"""Paper A's hub resources: the phrase-level perturbations parse their test inputs and paraphrase
by back-translation, so a run with one of them needs the parsed test set and both translators.

Read by the mirror and the rehearsal (mlmlib.offline.resources); torch is imported only when a
run asks for phrases (the names live with the code that loads them, in perturb).
"""

from __future__ import annotations

from mlmlib.data.hub_resources import Resource, RunParameters

PHRASE_LEVELS = ("long-phrase", "short-phrase")  # the perturbations that parse and back-translate


def hub_resources(p: RunParameters) -> list[Resource]:
    """The parsed test inputs of the run's task and the two wmt19 translators, for phrase levels."""
    if not set(PHRASE_LEVELS) & set(p.named("perturbations")):
        return []
    from mlmlib.papers.distributional.perturb import PARSED_TESTS, BackTranslator

    found = []
    for task in p.named("task"):
        if task in PARSED_TESTS:
            path, config, _ = PARSED_TESTS[task]
            found.append(Resource("dataset", path, config, why=f"parsed test inputs of {task}"))
    for name in (BackTranslator.forward, BackTranslator.backward):
        found.append(Resource("model", name, parts=(("model", "FSMTForConditionalGeneration"),
                                                    ("tokenizer", "FSMTTokenizer")), why="translation model"))
    return found
