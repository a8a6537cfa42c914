"""The term-pair model: which passage words make a passage evidence for which question words, learned across
companies, and its place in the ranking model and the replay."""

import json

import numpy as np
import pytest

from haystack_fin.core.evaluation import Question
from haystack_fin.core.retrieval import term_pairs as tp
from haystack_fin.core.retrieval.passage_scoring import PassageScore
from haystack_fin.core.retrieval.ranking_model import (
    FEATURES,
    PAIRS_MODEL_VERSION,
    CandidateFacts,
    QuestionFlags,
    RankingModel,
)
from haystack_fin.core.retrieval.ranking_replay import ReplayCandidate, ReplayRecord

# Evidence of "where does it operate" says "international"; of "acquisitions", "acquired": words the question
# does not use. Every question also names its company, which must not become a learned word.
_KINDS = {
    "geographies": ("What are the geographies {co} operates in?", "international"),
    "acquisitions": ("What major acquisitions did {co} make?", "acquired"),
}


def _examples(companies: int = 16) -> list[tp.PairExample]:
    """Two relevant candidates of twelve a question: 32 hold each evidence word, enough to enter the vocabulary."""
    out = []
    filler = ["dividends", "lease", "pension", "goodwill", "warrants", "commodity"]
    for c in range(companies):
        co = "zorblax" + "abcdefghijklmnop"[c]
        for template, evidence in _KINDS.values():
            passages, labels = [], []
            for i in range(12):
                relevant = i < 2
                words = [filler[i % len(filler)], "company", co, "fiscal"]
                words += [evidence] if relevant else []
                passages.append(sorted(set(words)))
                labels.append(int(relevant))
            out.append(tp.PairExample(tp.question_words(template.format(co=co)), co, passages, ["text"] * 12, labels))
    return out


def test_words_are_lower_case_content_words_each_once() -> None:
    assert tp.question_words("What drove the Gross Margin change in FY2022, and why?") == [
        "change", "drove", "gross", "margin",
    ]  # fmt: skip
    assert tp.passage_words("Revenue rose; revenue fell. The net revenue of 12 units", limit=3) == ["revenue", "rose"]


def test_the_vocabularies_keep_words_that_generalize() -> None:
    examples = _examples()
    question, passage = tp.vocabularies(examples)
    assert {"geographies", "acquisitions", "operates"} <= set(question)
    assert not any(w.startswith("zorblax") for w in question)  # a company's own name: one company each
    assert "international" in passage and "__text" in passage
    assert "company" not in passage  # every candidate holds it
    assert "zorblaxa" not in passage  # too few candidates hold it


def test_a_fitted_model_ranks_the_evidence_words_first_and_round_trips() -> None:
    model = tp.fit_term_pairs(_examples(), c=3.0)
    q = tp.question_words("Which geographies does Unseenco operate in?")
    passages = [["acquired", "lease"], ["international", "lease"], ["dividends"]]
    logits = model.logits(q, passages, ["text"] * 3)
    assert logits[1] > logits[0] and logits[1] > logits[2]
    again = tp.TermPairModel.from_dict(json.loads(json.dumps(model.to_dict())))
    assert np.allclose(again.logits(q, passages, ["text"] * 3), logits, atol=1e-4)
    assert model.logits(["unknown"], passages, ["text"] * 3).tolist() == [0.0, 0.0, 0.0]
    pruned = tp.fit_term_pairs(_examples(), c=3.0, min_weight=0.3)
    assert 0 < len(pruned.pairs) < len(model.pairs) and np.all(np.abs(pruned.pairs[:, 2]) > 0.3)


def test_a_model_reads_texts_with_the_stop_words_it_was_fitted_with() -> None:
    model = tp.fit_term_pairs(_examples(), c=3.0)
    assert model.stop_words == tp.english_stop_words() and "which" in model.stop_words
    again = tp.TermPairModel.from_dict(json.loads(json.dumps(model.to_dict())))
    assert again.stop_words == model.stop_words
    texts = ["Our international operations grew.", "We acquired a lease."]
    words = [tp.passage_words(t) for t in texts]
    question = "Which geographies does Unseenco operate in?"
    expected = model.logits(tp.question_words(question), words, ["text", "text"])
    assert np.allclose(again.text_logits(question, texts, ["text", "text"]), expected, rtol=0, atol=1e-4)
    # the stop words decide which words a passage's word limit reaches
    assert tp.passage_words("the the the revenue", limit=1, stop_words=frozenset()) == ["the"]


def test_term_pair_refusals() -> None:
    with pytest.raises(ValueError, match="index outside the vocabularies"):
        tp.TermPairModel(("a",), ("b",), np.array([[0, 1, 0.5]]))
    with pytest.raises(ValueError, match="malformed term pairs"):
        tp.TermPairModel.from_dict({"question_vocabulary": ["a"]})
    one_class = [tp.PairExample(["a"], "co", [["b"]], ["text"], [0])]
    with pytest.raises(ValueError, match="both relevant and irrelevant"):
        tp.fit_term_pairs(one_class)


def _model(pairs: tp.TermPairModel | None, weight: float) -> RankingModel:
    coefficients = np.zeros(len(FEATURES))
    coefficients[FEATURES.index("dense")] = 1.0
    return RankingModel(FEATURES, coefficients, term_pairs=pairs, term_pair_weight=weight)


def test_the_ranking_model_adds_the_pair_logits_and_round_trips(tmp_path) -> None:
    pairs = tp.TermPairModel(("margin",), ("drove", "__table"), np.array([[0, 0, 2.0]]))
    model = _model(pairs, 0.5)
    x = np.zeros((2, len(FEATURES)))
    pair_logits = pairs.logits(["gross", "margin"], [["drove"], ["revenue"]], ["text", "table"])
    assert pair_logits.tolist() == [2.0, 0.0]
    assert np.allclose(model.logits(x, pair_logits), [1.0, 0.0])
    path = tmp_path / "m.json"
    model.save(path)
    data = json.loads(path.read_text())
    assert data["version"] == PAIRS_MODEL_VERSION and data["term_pair_weight"] == 0.5
    assert np.allclose(RankingModel.load(path).score(x, pair_logits), model.score(x, pair_logits))
    with pytest.raises(ValueError, match="give the candidates' pair logits"):
        model.score(x)
    with pytest.raises(ValueError, match="no term pairs"):
        _model(None, 0.0).score(x, pair_logits)
    with pytest.raises(ValueError, match="2 pair logits for 3 candidates"):
        model.score(np.zeros((3, len(FEATURES))), pair_logits)
    with pytest.raises(ValueError, match="positive exactly when there are term pairs"):
        _model(pairs, 0.0)
    with pytest.raises(ValueError, match="term pairs exactly when its version is 3"):
        RankingModel.from_dict({**data, "version": 1, "trees": None})
    with pytest.raises(ValueError, match="term pairs exactly when its version is 3"):
        RankingModel.from_dict({k: v for k, v in data.items() if k != "term_pairs"})


def _record(words: list[list[str]] | None) -> ReplayRecord:
    cands = [
        ReplayCandidate(f"F#chunk-{i}", "F", "7", None, [i + 1], [f"F#chunk-{i}"], words=None if words is None else w)
        for i, w in enumerate(words or [[], []])
    ]
    signals = [PassageScore(0.5, dense=0.5, lexical=0.0, table=None)] * 2
    facts = [CandidateFacts("tree", item="7"), CandidateFacts("tree", item="7")]
    question = Question("q1", "F", "t", "What drove the margin?", {2})
    return ReplayRecord(question, "co", "set", cands, signals, [0.5, 0.5], facts, QuestionFlags(), np.zeros(2))


def test_a_replay_record_scores_with_its_dumped_words() -> None:
    model = _model(tp.TermPairModel(("margin",), ("drove",), np.array([[0, 0, 2.0]])), 1.0)
    record = _record([["revenue"], ["drove"]])
    scores = record.model_scores(model)
    assert scores[1] > scores[0]
    assert record.pair_example().labels == [0, 1] and record.pair_example().question == ["drove", "margin"]
    again = ReplayRecord.from_dict(json.loads(json.dumps(record.to_dict())))
    assert [c.words for c in again.candidates] == [["revenue"], ["drove"]]
    old = _record(None)
    assert ReplayRecord.from_dict(old.to_dict()).candidates[0].words is None
    with pytest.raises(ValueError, match="question q1: the dump has no candidate words"):
        old.model_scores(model)
    assert np.allclose(old.model_scores(_model(None, 0.0)), _model(None, 0.0).score(old.features))
