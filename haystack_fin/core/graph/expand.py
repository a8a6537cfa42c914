"""Graph expansion of a candidate list: which passages a question's evidence still lacks, found by the graph.

Anchors are the chunks that hold the question's entities: a fact whose row metric and column period are the
question's (exact keys), else chunks mentioning them; a question key the graph lacks falls back to a normalized
match (a fiscal year matches its quarters). From the anchors and the top incoming candidates the expansion follows
chunk-to-chunk edges up to ``max_hops``. Every reached chunk is scored
``w_entity * entity hit + w_hop * hop proximity + w_vector * cosine`` where hop proximity is the product of the
path's edge confidences divided by its length in hops (1.0 for an anchor).

Intents add what similarity cannot find (``QuestionIntent``): a ratio brings a block of each input statement, a
comparison a fact of each compared period, a "why" the paragraph that introduces a candidate table and the table a
candidate paragraph points to.
"""

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from haystack_fin.core import schema
from haystack_fin.core.graph.build import FilingGraph
from haystack_fin.core.graph.edges import Edge
from haystack_fin.core.graph.entities import FiscalCalendar
from haystack_fin.core.graph.explain import path_words
from haystack_fin.core.lexicon import Lexicon, normalize_term
from haystack_fin.core.retrieval.question_scope import QuestionScope, parse_question_scope

_COMPARISON = re.compile(
    r"\b(?:compar\w*|versus|vs\.?|change[sd]?|increase[sd]?|decrease[sd]?|grow(?:th|n)?|grew|decline[sd]?|"
    r"year[\s-]over[\s-]year|yoy|from\s+\S+\s+to)\b",
    re.IGNORECASE,
)
_WHY = re.compile(
    r"^\s*why\b|\bwhat\s+(?:drove|caused|explains?)\b|\breasons?\b|\bdrivers?\b|\bdue\s+to\s+what\b", re.I
)


@dataclass(frozen=True)
class QuestionIntent:
    """What the question asks for, in graph keys: metrics (lexicon cluster ids), periods (``FY2018``,
    ``FY2024Q2``), the statements a ratio is computed from, and whether it compares periods or asks why."""

    metrics: tuple[str, ...] = ()
    periods: tuple[str, ...] = ()
    ratio_statements: tuple[str, ...] = ()
    comparison: bool = False
    why: bool = False
    terms: tuple[str, ...] = ()  # the question's metric terms as written, for normalized matching of row labels

    def to_dict(self) -> dict[str, Any]:
        return {
            "metrics": list(self.metrics),
            "periods": list(self.periods),
            "ratio_statements": list(self.ratio_statements),
            "comparison": self.comparison,
            "why": self.why,
        }


def _period_keys(scope: QuestionScope, calendar: FiscalCalendar) -> list[str]:
    keys: list[str] = []
    for p in scope.periods:
        if p.year is None or p.forward:
            continue
        # A calendar year in a question about a 10-K is read as the fiscal year named after it (the convention
        # of FinanceBench-style questions and of filers' own column headers).
        keys.append(f"FY{p.year}Q{p.quarter}" if p.quarter else f"FY{p.year}")
    for d in scope.dates:
        if not d.forward:
            keys.append(calendar.period_of_date(d.value.year, d.value.month, None))
    return list(dict.fromkeys(keys))


def question_intent(
    question: str,
    lexicon: Lexicon,
    calendar: FiscalCalendar | None = None,
    clusters: Sequence[Any] | None = None,
    scope: QuestionScope | None = None,
) -> QuestionIntent:
    """Read a question into graph keys. ``clusters`` (``TermCluster``s of a ``QuestionAnalysis``) and ``scope``
    are used when given, so the expander reads the question as the other query stages did."""
    calendar = calendar or FiscalCalendar()
    if clusters is None:
        matches = lexicon.find_terms(question)
        ids = list(dict.fromkeys(m.cluster_id for m in matches))
        cluster_objs = [lexicon.cluster(i) for i in ids]
        terms = tuple(m.text for m in matches)
    else:
        cluster_objs = list(clusters)
        terms = tuple(t for c in cluster_objs for t in c.terms)
    scope = scope or parse_question_scope(question)
    periods = _period_keys(scope, calendar)
    statements = tuple(dict.fromkeys(s for c in cluster_objs for s in c.statements))
    return QuestionIntent(
        metrics=tuple(c.id for c in cluster_objs),
        periods=tuple(periods),
        ratio_statements=statements,
        comparison=len(periods) >= 2 or bool(_COMPARISON.search(question)),
        why=bool(_WHY.search(question)),
        terms=terms,
    )


@dataclass
class Expansion:
    """A passage the graph adds (or scores among the candidates): its score parts and the path that reached it."""

    chunk_id: str
    score: float
    entity_hit: float
    hop_proximity: float
    vector: float
    hops: int
    path: list[Edge] = field(default_factory=list)
    reason: str = "graph"
    anchors: list[str] = field(default_factory=list)
    required: bool = False

    def to_meta(self) -> dict[str, Any]:
        """JSON for ``meta["graph"]``: score parts, hops, reason and the path's edges (source, target, type,
        kind, confidence, evidence)."""
        return {
            "score": round(self.score, 4),
            "entity_hit": round(self.entity_hit, 4),
            "hop_proximity": round(self.hop_proximity, 4),
            "vector": round(self.vector, 4),
            "hops": self.hops,
            "reason": self.reason,
            "anchors": list(self.anchors),
            "path": [e.to_dict() for e in self.path],
        }


@dataclass(frozen=True)
class ExpansionParams:
    w_entity: float = 0.5
    w_hop: float = 0.3
    w_vector: float = 0.2
    max_hops: int = 2
    max_added: int = 4
    min_score: float = 0.25
    max_anchors: int = 6
    seed_candidates: int = 8


def _chunk_keys(fg: FilingGraph, chunk_id: str) -> tuple[set[str], set[str], set[tuple[str, str]]]:
    """(metrics, periods, (metric, period) fact pairs) of a chunk."""
    info = fg.chunks[chunk_id]
    metrics = {e.key for e in info.entities if e.kind == "metric"}
    periods = {e.key for e in info.entities if e.kind == "period"}
    pairs = set()
    for fact in info.facts:
        if fact.metric:
            metrics.add(fact.metric)
        if fact.period:
            periods.add(fact.period)
        if fact.metric and fact.period:
            pairs.add((fact.metric, fact.period))
    return metrics, periods, pairs


def resolve_keys(fg: FilingGraph, intent: QuestionIntent) -> tuple[set[str], set[str], str]:
    """The question's metric and period keys as the graph knows them: exact keys first; a key the graph lacks is
    matched normalized (a fiscal year to its quarters and halves; a metric term to row labels that contain it).
    Returns (metrics, periods, "exact" | "normalized")."""
    known_metrics = {k for kind, k in fg.chunks_by_entity if kind == "metric"}
    known_periods = {k for kind, k in fg.chunks_by_entity if kind == "period"}
    metrics = {m for m in intent.metrics if m in known_metrics}
    periods = {p for p in intent.periods if p in known_periods}
    how = "exact"
    for p in intent.periods:
        if p not in periods:
            year = p.split("Q")[0]
            near = {k for k in known_periods if k.startswith(year)}
            if near:
                periods |= near
                how = "normalized"
    missing_terms = [normalize_term(t) for t in intent.terms if t]
    if len(metrics) < len(intent.metrics) and missing_terms:
        for info in fg.chunks.values():
            for fact in info.facts:
                label = f" {normalize_term(fact.label)} "
                if fact.metric and any(f" {t} " in label for t in missing_terms):
                    metrics.add(fact.metric)
                    how = "normalized"
    return metrics, periods, how


def entity_hit(fg: FilingGraph, chunk_id: str, metrics: set[str], periods: set[str]) -> float:
    """How much of the question a chunk holds, in [0, 1]: a fact with a question metric in a question period
    counts fully for that metric; mentions count 0.8 (named, not necessarily given)."""
    if not metrics and not periods:
        return 0.0
    c_metrics, c_periods, pairs = _chunk_keys(fg, chunk_id)
    parts = []
    if metrics:
        parts.append(len(metrics & c_metrics) / len(metrics))
    if periods:
        parts.append(min(1.0, len(periods & c_periods) / len(periods)))
    mention = 0.8 * sum(parts) / len(parts)
    if metrics and periods:
        fact_hit = sum(1 for m in metrics if any((m, p) in pairs for p in periods)) / len(metrics)
        return max(mention, fact_hit)
    return mention


def _cosine(query: Sequence[float] | None, vector: Sequence[float] | np.ndarray | None) -> float:
    if query is None or vector is None or len(query) == 0 or len(query) != len(vector):
        return 0.0
    q = np.asarray(query, dtype=np.float32)
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(q) * np.linalg.norm(v))
    return max(0.0, float(q @ v) / norm) if norm > 0 else 0.0


def expand(
    fg: FilingGraph,
    intent: QuestionIntent,
    candidate_ids: Sequence[str],
    params: ExpansionParams | None = None,
    query_embedding: Sequence[float] | None = None,
    vectors: Mapping[str, Sequence[float] | np.ndarray] | None = None,
) -> tuple[list[Expansion], dict[str, Any]]:
    """Passages to add to ``candidate_ids`` (incoming order, best first), best first, at most ``max_added``;
    intent-required ones come first. Returns (expansions, trace)."""
    p = params or ExpansionParams()
    vectors = vectors or {}
    metrics, periods, how = resolve_keys(fg, intent)
    incoming = [c for c in candidate_ids if c in fg.chunks]
    present = set(incoming)

    def vector_of(chunk_id: str) -> float:
        return _cosine(query_embedding, vectors.get(chunk_id))

    # Anchors: fact hits first, then chunks that mention the question's keys.
    hits: dict[str, float] = {}
    for m in metrics:
        for period in periods:
            for node in fg.facts_by_key.get((m, period), ()):
                chunk = fg.fact(node).chunk_id
                hits.setdefault(chunk, entity_hit(fg, chunk, metrics, periods))
    if not hits:
        pool: set[str] = set()
        for m in metrics:
            pool |= set(fg.chunks_by_entity.get(("metric", m), ()))
        for chunk in pool:
            score = entity_hit(fg, chunk, metrics, periods)
            if score >= 0.8:
                hits[chunk] = score
    anchors = sorted(hits, key=lambda c: (-hits[c], -vector_of(c), c))[: p.max_anchors]

    # Breadth-first from anchors and the top candidates; the best path (highest confidence per hop) wins.
    best: dict[str, tuple[int, float, list[Edge], str]] = {}
    frontier: list[tuple[str, float, list[Edge], str]] = [(a, 1.0, [], a) for a in anchors]
    frontier += [(c, 1.0, [], c) for c in incoming[: p.seed_candidates]]
    for a in anchors:
        best[a] = (0, 1.0, [], a)
    for hop in range(1, p.max_hops + 1):
        nxt: list[tuple[str, float, list[Edge], str]] = []
        for node, conf, path, origin in frontier:
            for other, edge in fg.chunk_edges(node):
                c = conf * edge.confidence
                if other == origin or any(other in (e.source, e.target) for e in path[:-1]):
                    continue
                prox = c / hop
                if other not in best or best[other][1] / max(best[other][0], 1) < prox:
                    best[other] = (hop, c, [*path, edge], origin)
                    nxt.append((other, c, [*path, edge], origin))
        frontier = nxt

    def expansion(chunk_id: str, reason: str, required: bool = False) -> Expansion:
        reached = chunk_id in best
        hops, conf, path, origin = best.get(chunk_id, (0, 0.0, [], chunk_id))
        hit = entity_hit(fg, chunk_id, metrics, periods)
        # An intent-required passage the walk did not reach has no path: no proximity credit.
        prox = (1.0 if hops == 0 else conf / hops) if reached else 0.0
        vec = vector_of(chunk_id)
        score = p.w_entity * hit + p.w_hop * prox + p.w_vector * vec
        return Expansion(chunk_id, score, hit, prox, vec, hops, path, reason, [origin], required)

    chosen: dict[str, Expansion] = {}
    required = _required(fg, intent, incoming, metrics, periods, best, vector_of)
    for chunk_id, reason in required:
        if chunk_id not in present and chunk_id not in chosen:
            chosen[chunk_id] = expansion(chunk_id, reason, True)
    scored = [expansion(c, "anchor" if best[c][0] == 0 else "path") for c in best if c not in present]
    scored.sort(key=lambda e: (-e.score, e.chunk_id))
    for exp in scored:
        if len(chosen) >= p.max_added:
            break
        if exp.chunk_id not in chosen and exp.score >= p.min_score:
            chosen[exp.chunk_id] = exp
    out = sorted(chosen.values(), key=lambda e: (not e.required, -e.score, e.chunk_id))[: p.max_added]
    trace = {
        "intent": intent.to_dict(),
        "matched": {"metrics": sorted(metrics), "periods": sorted(periods), "how": how},
        "anchors": anchors,
        "reached": len(best),
        "required": [c for c, _ in required],
        "added": [e.chunk_id for e in out],
    }
    return out, trace


def _required(
    fg: FilingGraph,
    intent: QuestionIntent,
    incoming: Sequence[str],
    metrics: set[str],
    periods: set[str],
    best: Mapping[str, Any],
    vector_of: Any,
) -> list[tuple[str, str]]:
    """Passages the intent needs that the top candidates lack, as (chunk id, reason)."""
    out: list[tuple[str, str]] = []
    top = list(incoming[:5])

    def rank(chunks: Iterable[str]) -> list[str]:
        return sorted(chunks, key=lambda c: (-entity_hit(fg, c, metrics, periods), -vector_of(c), c))

    for kind in intent.ratio_statements:
        blocks = fg.statements.get(kind, [])
        if blocks and not any(c in blocks for c in top):
            out.append((rank(blocks)[0], f"ratio input: {kind}"))
    if intent.comparison and metrics and len(periods) >= 2:
        for period in sorted(periods):
            have = [c for c in top if any((m, period) in _chunk_keys(fg, c)[2] for m in metrics)]
            if have:
                continue
            holders = {fg.fact(n).chunk_id for m in metrics for n in fg.facts_by_key.get((m, period), ())}
            if holders:
                out.append((rank(holders)[0], f"comparison: {period}"))
    if intent.why:
        for chunk_id in top[:3]:
            for other, edge in fg.chunk_edges(chunk_id):
                if edge.kind == "caption" or (edge.type == "explicit" and edge.kind == "table"):
                    out.append((other, f"why: {edge.kind} of a candidate"))
    return list(dict(reversed(out)).items())[::-1]  # first reason per chunk, in order


# --- one filing's expansion of a candidate list, as the query component applies it --------------------------------


@dataclass(frozen=True)
class Seed:
    """An incoming candidate as the expansion reads it: its retrieval score, Item and budget (``budget_k``)."""

    chunk_id: str
    score: float | None
    item: str
    budget_k: int | None


@dataclass
class Added:
    """A passage the graph adds: its score and the meta entries to merge into its chunk's meta (``graph`` with the
    path in plain words, ``retrieval``, ``budget_k``)."""

    chunk_id: str
    score: float
    meta: dict[str, Any]


@dataclass
class FilingExpansion:
    """One filing's expansion: the entity hit of each incoming candidate in the graph, the passages added and the
    trace."""

    entity_hits: dict[str, float]
    added: list[Added]
    trace: dict[str, Any]


def _item_budgets(seeds: Iterable[Seed]) -> dict[str, int]:
    budgets: dict[str, int] = {}
    for seed in seeds:
        if isinstance(seed.budget_k, int) and not isinstance(seed.budget_k, bool):
            budgets[seed.item] = max(budgets.get(seed.item, 0), seed.budget_k)
    return budgets


def expand_filing(
    fg: FilingGraph,
    intent: QuestionIntent,
    seeds: Sequence[Seed],
    params: ExpansionParams,
    query_embedding: Sequence[float] | None,
    vectors: Mapping[str, Sequence[float] | np.ndarray],
    item_of: Callable[[str], str],
    present: set[str],
    raise_budgets: bool = True,
) -> FilingExpansion:
    """Expand one filing's incoming ``seeds`` (``expand``, seeded best retrieval score first whatever their order)
    and say what to add: passages not in ``present`` (which gains them), each with the Item budget of the incoming
    candidates plus, with ``raise_budgets``, the passages added to that Item so far, so that the ranker's per-Item
    cut keeps room for them. ``item_of``: a chunk id's Item."""
    ranked = [s.chunk_id for s in sorted(seeds, key=lambda s: -(s.score or 0.0))]
    expansions, trace = expand(fg, intent, ranked, params, query_embedding, vectors)
    metrics, periods, _ = resolve_keys(fg, intent)
    hits = {s.chunk_id: entity_hit(fg, s.chunk_id, metrics, periods) for s in seeds if s.chunk_id in fg.chunks}
    budgets = _item_budgets(seeds)
    new_per_item: dict[str, int] = {}
    added: list[Added] = []
    for exp in expansions:
        if exp.chunk_id in present:
            continue
        item = item_of(exp.chunk_id)
        new_per_item[item] = new_per_item.get(item, 0) + 1
        meta = {
            # "explain": the path in plain words, for `ask --explain` and other readers of the passage.
            schema.GRAPH: {**exp.to_meta(), "explain": path_words(exp.chunk_id, exp.path, fg.chunks, exp.reason)},
            schema.RETRIEVAL: {"mode": "graph", "reason": exp.reason},
            schema.BUDGET_K: budgets.get(item, 0) + (new_per_item[item] if raise_budgets else 0),
        }
        added.append(Added(exp.chunk_id, exp.score, meta))
        present.add(exp.chunk_id)
    return FilingExpansion(hits, added, trace)
