"""Replaying the ranker's last steps on dumped candidates, so a scoring can be judged without re-running retrieval.

``train-ranker`` runs the query pipeline once per labelled question and dumps what the ranker was given: every
candidate's features (``ranking_model.FEATURES``), the hand-set fallback score, its (filing, Item) group and budget,
its pages, the chunks its passage window would hold, and what the modality fallback reads (``FallbackInputs``).
``replay`` then does what the pipeline does after scoring: the two-stage cut (``two_stage_selection``), optionally
the modality fallback (``ReplaySettings.fallback``), the passage windows (a chunk already inside a better passage is
skipped; ``PassageWindow``), optionally one page at most once while another page qualifies, and the top k, and
``replay_metrics`` scores the passages with ``core.evaluation``'s page_hit@k, evidence_complete@k and MRR (and
context words). Fitting and cross-validation (``grouped_folds``: whole companies held out) then cost seconds, not a
retrieval run per try.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from haystack_fin.core.evaluation import Passage, Question, score_question
from haystack_fin.core.retrieval.modality_fallback import FallbackCandidate, FallbackConfig, decide
from haystack_fin.core.retrieval.passage_scoring import PassageScore
from haystack_fin.core.retrieval.ranking_model import CandidateFacts, QuestionFlags, RankingModel, feature_matrix
from haystack_fin.core.retrieval.term_pairs import PairExample, question_words
from haystack_fin.core.retrieval.two_stage_selection import group_budgets, two_stage_select

# A dump holds the features' ingredients (signals, cosines, facts, question flags), not the feature rows, so that a
# new feature needs no new retrieval run.
DUMP_VERSION = 2


@dataclass
class ReplayCandidate:
    """One candidate as dumped: its chunk id, group, budget, own pages and the chunk ids of its passage window."""

    chunk_id: str
    filing_id: str
    item: str | None
    budget_k: int | None
    pages: list[int]
    window: list[str]
    graph_added: bool = False
    modality: str = "text"
    covers: list[str] = field(default_factory=list)  # the question's lexicon concepts its text mentions
    words: list[str] | None = None  # its content words (term_pairs.passage_words); None in older dumps


@dataclass
class FallbackInputs:
    """What the modality fallback reads of a question that a dump does not otherwise hold: the question's lexicon
    concepts (cluster ids), its strongest statement weight, and every window chunk's words (context words)."""

    concepts: list[str]
    statement_weight: float
    chunk_words: dict[str, int]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FallbackInputs:
        return cls(
            concepts=[str(c) for c in data.get("concepts") or []],
            statement_weight=float(data.get("statement_weight") or 0.0),
            chunk_words={str(k): int(v) for k, v in (data.get("chunk_words") or {}).items()},
        )


@dataclass
class ReplayRecord:
    """One labelled question with its dumped candidates: per candidate the fallback's signals, the raw cosine and
    the facts the features read (``features`` rows, computed from them, align with ``candidates``)."""

    question: Question
    company: str
    source_set: str
    candidates: list[ReplayCandidate]
    signals: list[PassageScore]
    cosines: list[float | None]
    facts: list[CandidateFacts]
    flags: QuestionFlags
    hand_scores: np.ndarray
    chunk_pages: dict[str, list[int]] = field(default_factory=dict)  # every window chunk's pages
    # What the modality fallback reads besides the cosines (None: a dump made before it was recorded): the
    # question's lexicon concepts, its strongest statement weight, every window chunk's words.
    fallback_inputs: FallbackInputs | None = None

    def __post_init__(self) -> None:
        self.features = feature_matrix(self.signals, self.facts, self.cosines, self.flags)

    def labels(self) -> np.ndarray:
        """1 for a candidate whose own pages include a gold page."""
        gold = self.question.gold_pages
        return np.array([int(not gold.isdisjoint(c.pages)) for c in self.candidates], dtype=np.int64)

    def pair_example(self) -> PairExample:
        """What the term-pair model reads of this question (``term_pairs``); refused for a dump without the
        candidates' words."""
        if any(c.words is None for c in self.candidates):
            raise ValueError(
                f"question {self.question.financebench_id}: the dump has no candidate words (a dump made before they "
                "were recorded): dump it again, or fit without term pairs"
            )
        return PairExample(
            question=question_words(self.question.question),
            company=self.company,
            passages=[c.words or [] for c in self.candidates],
            modalities=[c.modality for c in self.candidates],
            labels=self.labels().tolist(),
        )

    def model_scores(self, model: RankingModel) -> np.ndarray:
        """``model``'s scores of the candidates, its term pairs read from the dumped words when it has them."""
        if model.term_pairs is None:
            return model.score(self.features)
        example = self.pair_example()
        pairs = model.term_pairs.logits(example.question, example.passages, example.modalities)
        return model.score(self.features, pairs)

    def to_dict(self) -> dict[str, Any]:
        q = self.question
        return {
            "version": DUMP_VERSION,
            "question": {
                "id": q.financebench_id,
                "doc_name": q.doc_name,
                "question_type": q.question_type,
                "question": q.question,
                "gold_pages": sorted(q.gold_pages),
                "roles": {role: sorted(pages) for role, pages in q.evidence_roles.items()},
            },
            "company": self.company,
            "set": self.source_set,
            "flags": asdict(self.flags),
            "candidates": [
                {
                    "id": c.chunk_id,
                    "filing_id": c.filing_id,
                    "item": c.item,
                    "budget_k": c.budget_k,
                    "pages": c.pages,
                    "window": c.window,
                    "graph_added": c.graph_added,
                    "modality": c.modality,
                    "covers": c.covers,
                    **({"words": c.words} if c.words is not None else {}),
                    "signals": {k: _round(v) for k, v in asdict(signal).items()},
                    "cosine": _round(cosine),
                    "facts": {k: _round(v) if isinstance(v, float) else v for k, v in asdict(fact).items()},
                }
                for c, signal, cosine, fact in zip(self.candidates, self.signals, self.cosines, self.facts, strict=True)
            ],
            "hand_scores": [round(float(v), 6) for v in self.hand_scores],
            "chunk_pages": self.chunk_pages,
            **({"fallback": asdict(self.fallback_inputs)} if self.fallback_inputs else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReplayRecord:
        if data.get("version") != DUMP_VERSION:
            raise ValueError(f"ranking dump version {data.get('version')!r} is not {DUMP_VERSION}")
        q = data["question"]
        question = Question(
            financebench_id=str(q["id"]),
            doc_name=str(q["doc_name"]),
            question_type=str(q["question_type"]),
            question=str(q["question"]),
            gold_pages={int(p) for p in q["gold_pages"]},
            evidence_roles={str(r): {int(p) for p in pages} for r, pages in (q.get("roles") or {}).items()},
        )
        rows = data["candidates"]
        candidates = [
            ReplayCandidate(
                chunk_id=str(c["id"]),
                filing_id=str(c["filing_id"]),
                item=None if c.get("item") is None else str(c["item"]),
                budget_k=None if c.get("budget_k") is None else int(c["budget_k"]),
                pages=[int(p) for p in c["pages"]],
                window=[str(i) for i in c["window"]],
                graph_added=bool(c.get("graph_added", False)),
                modality=str(c.get("modality") or "text"),
                covers=[str(x) for x in c.get("covers") or []],
                words=None if c.get("words") is None else [str(w) for w in c["words"]],
            )
            for c in rows
        ]
        return cls(
            question=question,
            company=str(data["company"]),
            source_set=str(data["set"]),
            candidates=candidates,
            signals=[PassageScore(**c["signals"]) for c in rows],
            cosines=[None if c.get("cosine") is None else float(c["cosine"]) for c in rows],
            facts=[CandidateFacts(**c["facts"]) for c in rows],
            flags=QuestionFlags(**data.get("flags", {})),
            hand_scores=np.asarray(data["hand_scores"], dtype=np.float64),
            chunk_pages={str(k): [int(p) for p in v] for k, v in (data.get("chunk_pages") or {}).items()},
            fallback_inputs=FallbackInputs.from_dict(data["fallback"]) if data.get("fallback") else None,
        )


def _round(value: Any) -> Any:
    return round(float(value), 6) if isinstance(value, float) else value


def write_dump(records: Iterable[ReplayRecord], path: str | Path) -> int:
    """Write records as gzipped JSON lines; returns how many."""
    n = 0
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record.to_dict(), separators=(",", ":")) + "\n")
            n += 1
    return n


def read_dump(path: str | Path) -> list[ReplayRecord]:
    """Records of a dump written by ``write_dump``."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [ReplayRecord.from_dict(json.loads(line)) for line in handle if line.strip()]


@dataclass(frozen=True)
class ReplaySettings:
    """The pipeline's knobs after scoring: the ranker's ``top_k`` (its cut before the windows), passages returned,
    whether the per-Item stage-1 cut applies, whether a graph-added passage raises its Item's budget, and whether a
    passage whose pages are all already shown waits while another passage adds a page."""

    ranker_top_k: int = 20
    k: int = 10
    stage1: bool = True
    graph_budget_raise: bool = True
    distinct_pages: bool = False
    fallback: FallbackConfig | None = None  # the modality fallback between the ranker's cut and the windows


def _budgets(record: ReplayRecord, settings: ReplaySettings) -> list[int | None]:
    if settings.graph_budget_raise:
        return [c.budget_k for c in record.candidates]
    # Without the raise a graph-added candidate carries its Item's incoming budget (none when the Item had none).
    incoming: dict[tuple[str, str | None], int] = {}
    for c in record.candidates:
        if not c.graph_added and c.budget_k:
            key = (c.filing_id, c.item)
            incoming[key] = max(incoming.get(key, 0), c.budget_k)
    return [incoming.get((c.filing_id, c.item)) if c.graph_added else c.budget_k for c in record.candidates]


@dataclass
class PassageCut:
    """What the pipeline does with candidates offered best first: a chunk already inside a shown passage is skipped,
    each candidate becomes its passage window, and (``distinct_pages``) a passage whose pages are all shown waits
    while another adds a page."""

    record: ReplayRecord
    settings: ReplaySettings
    covered: set[str] = field(default_factory=set)
    shown: set[tuple[str, int]] = field(default_factory=set)
    passages: list[Passage] = field(default_factory=list)
    deferred: list[Passage] = field(default_factory=list)
    words: list[int] = field(default_factory=list)  # per passage, then per deferred one
    deferred_words: list[int] = field(default_factory=list)

    def offer(self, index: int) -> bool:
        """Take candidate ``index``; True when it was shown as a new passage."""
        cand = self.record.candidates[index]
        if cand.chunk_id in self.covered:
            return False
        window = [cid for cid in cand.window if cid not in self.covered] or [cand.chunk_id]
        self.covered.update(window)
        own = {cand.chunk_id: cand.pages}
        pages = sorted({p for cid in window for p in self.record.chunk_pages.get(cid, own.get(cid, []))})
        passage = Passage(cand.filing_id, pages, "")
        inputs = self.record.fallback_inputs
        words = sum(inputs.chunk_words.get(cid, 0) for cid in window) if inputs else 0
        page_keys = {(cand.filing_id, p) for p in pages}
        if self.settings.distinct_pages and page_keys and page_keys <= self.shown:
            self.deferred.append(passage)
            self.deferred_words.append(words)
            return False
        self.shown |= page_keys
        self.passages.append(passage)
        self.words.append(words)
        return True

    def full(self) -> bool:
        return len(self.passages) >= self.settings.k

    def passages_out(self) -> list[Passage]:
        """The passages shown, then the ones that waited, at most ``settings.k``."""
        return (self.passages + self.deferred)[: self.settings.k]

    def words_out(self) -> list[int]:
        """The words of each passage ``passages_out`` returns: the sum of its chunks' words, a little more than the
        passage's own (the overlap of consecutive chunks counts twice); 0 without ``fallback_inputs``."""
        return (self.words + self.deferred_words)[: self.settings.k]


def best_first(scores: Sequence[float], k: int) -> list[int]:
    """The indices of the ``k`` best scores, best first, ties by position (the ranker's order)."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]


def replay(record: ReplayRecord, scores: Sequence[float], settings: ReplaySettings = ReplaySettings()) -> list[Passage]:
    """The passages the pipeline would return for these candidate scores (best first, at most ``settings.k``)."""
    return replay_cut(record, scores, settings).passages_out()


def replay_cut(
    record: ReplayRecord, scores: Sequence[float], settings: ReplaySettings = ReplaySettings()
) -> PassageCut:
    """``replay``'s passages with their words: the ranker's cut, the modality fallback when ``settings`` has one,
    then the windows."""
    if len(scores) != len(record.candidates):
        raise ValueError(f"{len(scores)} scores for {len(record.candidates)} candidates")
    cut = PassageCut(record, settings)
    if not record.candidates:
        return cut
    keys = [(c.filing_id, c.item) for c in record.candidates]
    if settings.stage1:
        budgets = group_budgets(keys, settings.ranker_top_k, _budgets(record, settings))
        selected = [r.index for r in two_stage_select(list(scores), keys, budgets, settings.ranker_top_k).selected]
    else:
        selected = best_first(scores, settings.ranker_top_k)
    if settings.fallback is not None:
        selected = fallback_kept(record, selected, settings.fallback)
    for i in selected:
        cut.offer(i)
        if cut.full():
            break
    return cut


def fallback_kept(record: ReplayRecord, ranked: Sequence[int], config: FallbackConfig) -> list[int]:
    """The candidates (indexes, best first) the modality fallback keeps of the ranker's output ``ranked``, judged
    as ``ModalityThresholdFallback`` judges them: recorded cosines, modality, the concepts each text mentions."""
    inputs = record.fallback_inputs
    if inputs is None:
        raise ValueError(
            f"question {record.question.financebench_id}: its dump holds no modality fallback inputs "
            "(written before they were recorded); dump it again"
        )
    candidates = [
        FallbackCandidate(
            modality=record.candidates[i].modality,
            embedding=None,
            text="",
            cosine=record.cosines[i],
            covers=frozenset(record.candidates[i].covers),
        )
        for i in ranked
    ]
    decision = decide(
        candidates,
        None,
        config,
        [(cid, []) for cid in inputs.concepts],
        {"strongest": inputs.statement_weight},
    )
    return [ranked[j] for j in decision.keep]


def replay_metrics(
    records: Sequence[ReplayRecord],
    scores: Sequence[Sequence[float]],
    settings: ReplaySettings = ReplaySettings(),
    ks: tuple[int, ...] = (5,),
) -> dict[str, float]:
    """Means over ``records``: page_hit@k, mrr, evidence_complete@k over questions needing 2+ roles (or pages),
    context_words@k when every record holds its chunks' words, and the number of questions of each kind."""
    hits: dict[int, list[float]] = {k: [] for k in ks}
    complete: dict[int, list[float]] = {k: [] for k in ks}
    mrr: list[float] = []
    words: dict[int, list[float]] = {k: [] for k in ks}
    for record, record_scores in zip(records, scores, strict=True):
        cut = replay_cut(record, record_scores, settings)
        row = score_question(record.question, cut.passages_out(), (*ks, 10))
        for k in ks:
            hits[k].append(row[f"page_hit@{k}"])
            words[k].append(float(sum(cut.words_out()[:k])))
            if len(record.question.required_pages()) >= 2:
                complete[k].append(row[f"evidence_complete@{k}"])
        mrr.append(row["mrr"])
    out: dict[str, float] = {"n": float(len(records))}
    for k in ks:
        out[f"page_hit@{k}"] = float(np.mean(hits[k])) if hits[k] else 0.0
        out[f"evidence_complete@{k}_2plus"] = float(np.mean(complete[k])) if complete[k] else 0.0
        if all(r.fallback_inputs for r in records):
            out[f"context_words@{k}"] = float(np.mean(words[k])) if words[k] else 0.0
    out["n_2plus"] = float(len(complete[ks[0]])) if ks else 0.0
    out["mrr"] = float(np.mean(mrr)) if mrr else 0.0
    return out


def grouped_folds(
    groups: Sequence[str], n_splits: int = 5, seed: int | None = None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Train/test index pairs with every group (company) wholly on one side (scikit-learn's ``GroupKFold``: folds
    of balanced size; with ``seed``, companies are dealt to folds at random, for repeated cross-validation)."""
    from sklearn.model_selection import GroupKFold

    n_groups = len(set(groups))
    if n_groups < 2:
        raise ValueError(f"company-grouped folds need at least 2 companies, got {n_groups}")
    if seed is None:
        splitter = GroupKFold(n_splits=min(n_splits, n_groups))
    else:
        splitter = GroupKFold(n_splits=min(n_splits, n_groups), shuffle=True, random_state=seed)
    index = np.arange(len(groups))
    return [(train, test) for train, test in splitter.split(index, groups=list(groups))]


def stack(records: Sequence[ReplayRecord]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All candidates' feature rows, labels and question numbers (position in ``records``), one matrix."""
    kept = [(i, r) for i, r in enumerate(records) if len(r.candidates)]
    if not kept:
        raise ValueError("no candidates to fit on")
    rows = np.vstack([r.features for _, r in kept])
    labels = np.concatenate([r.labels() for _, r in kept])
    questions = np.concatenate([np.full(len(r.candidates), i) for i, r in kept])
    return rows, labels, questions


def evidence_role_ids(records: Sequence[ReplayRecord]) -> np.ndarray:
    """Per row of ``stack``: the evidence role a relevant candidate holds (the first of its question's required page
    sets its pages meet; a question without roles has one per gold page), -1 for the other candidates."""
    out: list[int] = []
    for record in (r for r in records if len(r.candidates)):
        required = record.question.required_pages()
        for candidate, label in zip(record.candidates, record.labels(), strict=True):
            pages = set(candidate.pages)
            hit = next((i for i, role in enumerate(required) if role & pages), len(required)) if label else -1
            out.append(hit)
    return np.array(out, dtype=np.int64)


Scorer = Callable[[ReplayRecord], Sequence[float]]


def cross_validate(
    records: Sequence[ReplayRecord],
    fit: Callable[[Sequence[ReplayRecord]], Scorer],
    baselines: Mapping[str, Scorer],
    settings: ReplaySettings = ReplaySettings(),
    n_splits: int = 5,
    ks: tuple[int, ...] = (5,),
    seed: int | None = None,
) -> dict[str, Any]:
    """Company-grouped cross-validation (``grouped_folds``; ``seed``: a random dealing of companies to folds): per
    fold, ``fit`` on the other companies' records and score the held-out ones with the fitted scorer and with every
    fixed ``baselines`` scorer (e.g. the hand-set weights), same folds.

    Returns ``{"folds": [{"companies", "n", "<name>": metrics}], "overall": {"<name>": metrics over all held-out
    questions}, "by_set": {set: {"<name>": metrics}}, "by_type": {question_type: {...}}}``; the fitted scorer is
    named "learned".
    """
    groups = [r.company for r in records]
    folds = grouped_folds(groups, n_splits, seed)
    names = ["learned", *baselines]
    held_scores: dict[str, list[Sequence[float]]] = {name: [None] * len(records) for name in names}  # type: ignore[list-item]
    fold_rows: list[dict[str, Any]] = []
    for train, test in folds:
        scorer = fit([records[i] for i in train])
        test_records = [records[i] for i in test]
        row: dict[str, Any] = {"companies": sorted({r.company for r in test_records}), "n": len(test_records)}
        for name in names:
            score = scorer if name == "learned" else baselines[name]
            fold_scores = [score(r) for r in test_records]
            for i, s in zip(test, fold_scores, strict=True):
                held_scores[name][i] = s
            row[name] = replay_metrics(test_records, fold_scores, settings, ks)
        fold_rows.append(row)
    overall = {name: replay_metrics(records, held_scores[name], settings, ks) for name in names}
    breakdown: dict[str, dict[str, dict[str, dict[str, float]]]] = {"by_set": {}, "by_type": {}}
    for key, attribute in (("by_set", "source_set"), ("by_type", "question_type")):
        values = sorted({_attribute(r, attribute) for r in records})
        for value in values:
            chosen = [i for i, r in enumerate(records) if _attribute(r, attribute) == value]
            breakdown[key][value] = {
                name: replay_metrics([records[i] for i in chosen], [held_scores[name][i] for i in chosen], settings, ks)
                for name in names
            }
    return {"folds": fold_rows, "overall": overall, **breakdown}


def _attribute(record: ReplayRecord, name: str) -> str:
    return record.source_set if name == "source_set" else record.question.question_type
