"""Data for the book: the embedded offline bundle and the hub datasets, behind one API.

Every loader returns `datasets.Dataset`/`DatasetDict` (or a small table object) whether the
data is embedded (works offline, the smoke profile) or downloaded (paper scale). Hub loaders
fail at once, naming the embedded alternative, when there is no network.
"""

from mlmlib.data.corpora import EMBEDDED_CORPORA, HUB_CORPORA, load_corpus
from mlmlib.data.hub import HubUnavailableError
from mlmlib.data.synonyms import SynonymTable, load_synonyms
from mlmlib.data.tasks import EMBEDDED_TASKS, HUB_TASKS, WORDNET_LEXNAMES, load_task, task_splits
from mlmlib.data.vectors import WordVectors, load_vectors
from mlmlib.data.wordlists import WORD_LISTS, load_word_list

__all__ = [
    "EMBEDDED_CORPORA",
    "EMBEDDED_TASKS",
    "HUB_CORPORA",
    "HUB_TASKS",
    "WORDNET_LEXNAMES",
    "WORD_LISTS",
    "HubUnavailableError",
    "SynonymTable",
    "WordVectors",
    "load_corpus",
    "load_synonyms",
    "load_task",
    "load_vectors",
    "load_word_list",
    "task_splits",
]
