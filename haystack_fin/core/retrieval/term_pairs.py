"""A learned lexical interaction score: which words in a passage make it evidence for which words of a question.

Dense cosine and BM25 reward a passage for repeating the question's words. Analysts ask the same kinds of question
of every company ("the geographies it operates in", "major acquisitions", "what drove the margin change"), and the
evidence uses other words than the question ("international", "acquired", "partially offset by"). This model
learns those pairs from labelled questions of several companies: a logistic model over (question word, passage
word) pairs, with a passage's modality as one more passage word. Its log-odds is added to the ranking model's
(``RankingModel.term_pairs``).

Only words that generalize take part: question words asked about three companies or more (a company's own names
drop out) and passage words that neither almost every candidate nor only a few hold.

Usage example:
```python
pairs = fit_term_pairs(examples, c=3.0)
logits = pairs.text_logits("What drove gross margin?", texts, ["text"] * len(texts))
```
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

_WORD = re.compile(r"[a-z]{3,}")
# A passage is read up to this many content words: a chunk's opening says what it is about.
PASSAGE_WORD_LIMIT = 400
# The vocabulary rules: set once before any fold was run and not tuned (the folds chose the regularization, the blend
# weight and the smallest pair weight kept, docs/ranking.md).
MIN_COMPANIES = 3
MIN_PASSAGES = 30
MAX_PASSAGE_SHARE = 0.3
MODALITY_PREFIX = "__"


@cache
def english_stop_words() -> frozenset[str]:
    """scikit-learn's English stop words: what a fit reads words with. A fitted model keeps the list it was fitted
    with, so that the query side reads words the same way without importing scikit-learn (which the torch-free query
    path must not load)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def _content_words(text: str, stop_words: frozenset[str] | None) -> list[str]:
    stop = english_stop_words() if stop_words is None else stop_words
    return [w for w in _WORD.findall(text.lower()) if w not in stop]


def question_words(question: str, stop_words: frozenset[str] | None = None) -> list[str]:
    """The question's content words (lower case, 3+ letters, not a stop word), sorted, each once; ``stop_words``
    default to ``english_stop_words()``."""
    return sorted(set(_content_words(question, stop_words)))


def passage_words(text: str, limit: int = PASSAGE_WORD_LIMIT, stop_words: frozenset[str] | None = None) -> list[str]:
    """The passage's content words among its first ``limit`` ones, sorted, each once (``stop_words`` as for
    ``question_words``)."""
    return sorted(set(_content_words(text, stop_words)[:limit]))


@dataclass(frozen=True)
class PairExample:
    """One question's candidates for fitting: the question's words and company, each candidate's words, modality
    and label (1: holds a gold page)."""

    question: Sequence[str]
    company: str
    passages: Sequence[Sequence[str]]
    modalities: Sequence[str]
    labels: Sequence[int]


@dataclass
class TermPairModel:
    """Weights of (question word, passage word) pairs; a candidate's logit is the sum over the pairs it forms."""

    question_vocabulary: tuple[str, ...]
    passage_vocabulary: tuple[str, ...]
    pairs: np.ndarray  # (n, 3): question word index, passage word index, weight
    info: dict[str, Any] = field(default_factory=dict)
    stop_words: frozenset[str] = frozenset()  # the stop words the vocabularies were read with

    def __post_init__(self) -> None:
        self.pairs = np.asarray(self.pairs, dtype=np.float64).reshape(-1, 3)
        nq, np_ = len(self.question_vocabulary), len(self.passage_vocabulary)
        qi, pi = self.pairs[:, 0].astype(np.int64), self.pairs[:, 1].astype(np.int64)
        if len(self.pairs) and (qi.min() < 0 or qi.max() >= nq or pi.min() < 0 or pi.max() >= np_):
            raise ValueError(f"term pairs index outside the vocabularies ({nq} question, {np_} passage words)")
        self._question_index = {w: i for i, w in enumerate(self.question_vocabulary)}
        self._passage_index = {w: i for i, w in enumerate(self.passage_vocabulary)}
        rows: dict[int, dict[int, float]] = {}
        for q, p, w in zip(qi.tolist(), pi.tolist(), self.pairs[:, 2].tolist(), strict=True):
            rows.setdefault(q, {})[p] = w
        self._rows = rows

    def logits(
        self, question: Sequence[str], passages: Sequence[Sequence[str]], modalities: Sequence[str]
    ) -> np.ndarray:
        """The pair score of each passage (its words and modality) for the question's words."""
        known = (self._question_index.get(w) for w in question)
        rows = [self._rows[i] for i in known if i is not None and i in self._rows]
        out = np.zeros(len(passages), dtype=np.float64)
        if not rows:
            return out
        # each passage word's weight summed over the question's words once, so a passage costs one lookup a word
        weight: dict[int, float] = {}
        for row in rows:
            for p, w in row.items():
                weight[p] = weight.get(p, 0.0) + w
        for n, (words, modality) in enumerate(zip(passages, modalities, strict=True)):
            out[n] = sum(weight.get(p, 0.0) for p in self._passage_ids(words, modality))
        return out

    def text_logits(self, question: str, texts: Sequence[str], modalities: Sequence[str]) -> np.ndarray:
        """``logits`` of the question's and the passages' texts, read with the model's stop words."""
        stop = self.stop_words
        return self.logits(
            question_words(question, stop), [passage_words(t, stop_words=stop) for t in texts], modalities
        )

    def _passage_ids(self, words: Sequence[str], modality: str) -> list[int]:
        known = (self._passage_index.get(w) for w in [*words, MODALITY_PREFIX + modality])
        return [i for i in known if i is not None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "question_vocabulary": list(self.question_vocabulary),
            "passage_vocabulary": list(self.passage_vocabulary),
            "pairs": [[int(q), int(p), round(float(w), 5)] for q, p, w in self.pairs.tolist()],
            "stop_words": sorted(self.stop_words),
            "info": self.info,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TermPairModel:
        try:
            return cls(
                question_vocabulary=tuple(str(w) for w in data["question_vocabulary"]),
                passage_vocabulary=tuple(str(w) for w in data["passage_vocabulary"]),
                pairs=np.asarray(data["pairs"], dtype=np.float64).reshape(-1, 3),
                info=dict(data.get("info") or {}),
                stop_words=frozenset(str(w) for w in data["stop_words"]),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"malformed term pairs: {type(err).__name__}: {err}") from None


def vocabularies(examples: Sequence[PairExample]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The words that take part: question words of ``MIN_COMPANIES`` companies or more; passage words held by at
    least ``MIN_PASSAGES`` candidates and at most ``MAX_PASSAGE_SHARE`` of them; the modalities."""
    companies: dict[str, set[str]] = {}
    for ex in examples:
        for w in ex.question:
            companies.setdefault(w, set()).add(ex.company)
    held: Counter[str] = Counter()
    for ex in examples:
        for words in ex.passages:
            held.update(words)
    total = sum(len(ex.passages) for ex in examples)
    question = tuple(sorted(w for w, cs in companies.items() if len(cs) >= MIN_COMPANIES))
    passage = sorted(w for w, n in held.items() if MIN_PASSAGES <= n <= MAX_PASSAGE_SHARE * total)
    modalities = sorted({MODALITY_PREFIX + m for ex in examples for m in ex.modalities})
    return question, tuple(passage + modalities)


def fit_term_pairs(examples: Sequence[PairExample], c: float = 3.0, min_weight: float = 0.0) -> TermPairModel:
    """An L2-regularized logistic model over the pairs each candidate forms, every question weighing the same (its
    relevant candidates one unit, its others one unit); pairs whose weight is below ``min_weight`` are dropped."""
    from scipy import sparse
    from sklearn.linear_model import LogisticRegression

    question_vocab, passage_vocab = vocabularies(examples)
    qindex = {w: i for i, w in enumerate(question_vocab)}
    pindex = {w: i for i, w in enumerate(passage_vocab)}
    width = len(passage_vocab)
    indptr: list[int] = [0]
    indices: list[int] = []
    labels: list[int] = []
    weights: list[float] = []
    for ex in examples:
        y = np.asarray(ex.labels, dtype=np.int64)
        if not len(y):
            continue
        positives = max(1, int(y.sum()))
        negatives = max(1, len(y) - int(y.sum()))
        qs = [qindex[w] for w in ex.question if w in qindex]
        for words, modality, label in zip(ex.passages, ex.modalities, y.tolist(), strict=True):
            ps = [pindex[w] for w in [*words, MODALITY_PREFIX + modality] if w in pindex]
            indices.extend(q * width + p for q in qs for p in ps)
            indptr.append(len(indices))
            labels.append(label)
            weights.append(1.0 / positives if label else 1.0 / negatives)
    y_all = np.asarray(labels, dtype=np.int64)
    if len(set(y_all.tolist())) < 2:
        raise ValueError("the labelled candidates need both relevant and irrelevant ones to fit term pairs")
    x = sparse.csr_matrix(
        (np.ones(len(indices)), np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
        shape=(len(labels), max(1, len(question_vocab) * width)),
    )
    model = LogisticRegression(C=c, solver="liblinear", max_iter=200)
    model.fit(x, y_all, sample_weight=np.asarray(weights))
    coef = model.coef_[0]
    kept = np.flatnonzero(np.abs(coef) > min_weight)
    pairs = np.column_stack([kept // width, kept % width, coef[kept]]) if len(kept) else np.zeros((0, 3))
    info = {"c": c, "min_weight": min_weight, "questions": len(examples), "candidates": len(labels)}
    return TermPairModel(question_vocab, passage_vocab, pairs, info, english_stop_words())
