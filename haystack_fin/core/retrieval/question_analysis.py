"""One analysis of a question, shared by every query stage.

The query stages each read the question for their own purpose: FilingScope for its periods, dates, form hints and
8-K topics (``question_scope``, ``filing_ranking``), FlamRouter for its lexicon terms and their clusters (``flam``),
DualTreeRetriever and TwoStageRanker for the financial statements it names or implies (``statements``), and the
ranker's fallback scorer for its content terms and whether it asks for a number (``passage_scoring``).
``analyze_question`` runs each of those existing functions once, with one lexicon, and ``QuestionAnalysis`` carries
the results as plain JSON from one pipeline stage to the next (``to_dict``/``from_dict``).

What stays with the components because it is not about the question alone: which indexed company the question
names (``CompanyIndex`` is built from the store's filing profiles) and the company names cut out of the ranker's
terms (they come from the candidate passages).

FLAM needs two facts about the question's clusters from the lexicon besides the matches: their names (routing
explanation) and their Item priors (routing when a filing has no term counts). ``clusters`` carries them, so a
router fed an analysis needs no lexicon of its own, and a custom lexicon configured on the analyzer reaches it.
Likewise ``synonyms`` carries every term of those clusters, for the modality fallback's coverage check (a passage
says "purchases of property and equipment" where the question says "capex").

``analysis_or_own`` is the one way a query component reads a question: the analysis it was given, else its own
analysis (with the built-in lexicon unless the component has one for its chunks), so no query component keeps a
second lexicon in step with the analyzer's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from haystack_fin.core.lexicon import Lexicon, TermCluster
from haystack_fin.core.retrieval.bm25 import content_terms
from haystack_fin.core.retrieval.filing_ranking import question_event_topics
from haystack_fin.core.retrieval.flam import QueryTerm, cluster_ids, detect_query_clusters
from haystack_fin.core.retrieval.passage_scoring import asks_for_number
from haystack_fin.core.retrieval.question_scope import (
    DateMention,
    FormHint,
    PeriodMention,
    QuestionScope,
    TextSpan,
    parse_question_scope,
)
from haystack_fin.core.statements import statements_in_query

# Bumped when the dict layout changes, so that a stored analysis of another layout is refused, not misread.
ANALYSIS_VERSION = 1


@dataclass(frozen=True)
class QuestionAnalysis:
    """Everything the query stages read from one question (see the module docstring).

    ``terms``: the lexicon terms FLAM matches (typo-tolerant, longest first); ``clusters``: the lexicon clusters of
    those terms in first-seen order (name, category, Item priors, statements; ``terms`` cut to the terms the
    question matched); ``statements``: ``statements_in_query``'s ``{kind: weight}``; ``content_terms``: the
    reranker's normalized question terms; ``asks_for_number``: the reranker's table-prior switch; ``scope``: the
    question's periods, dates, form hints and capitalized spans; ``event_topics``: 8-K Item -> topic word;
    ``synonyms``: cluster id -> all the lexicon terms of that cluster (matched or not).
    """

    question: str
    terms: tuple[QueryTerm, ...] = ()
    clusters: tuple[TermCluster, ...] = ()
    statements: Mapping[str, float] = field(default_factory=dict)
    content_terms: tuple[str, ...] = ()
    asks_for_number: bool = False
    scope: QuestionScope | None = None
    event_topics: Mapping[str, str] = field(default_factory=dict)
    synonyms: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def question_scope(self) -> QuestionScope:
        """The parsed scope (an analysis built without one parses the question now)."""
        return self.scope if self.scope is not None else parse_question_scope(self.question)

    def cluster_lexicon(self) -> Lexicon:
        """The question's clusters as a small ``Lexicon``, for code that looks cluster facts (names, Item priors) up
        in a lexicon, e.g. ``flam.route``; it only knows the matched terms, so it is no lexicon to match with."""
        return Lexicon(self.clusters)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (str, numbers, bools, lists, dicts); ``from_dict`` restores an equal analysis."""
        return {
            "version": ANALYSIS_VERSION,
            "question": self.question,
            "terms": [term.to_dict() for term in self.terms],
            "clusters": [cluster.to_dict() for cluster in self.clusters],
            "statements": dict(self.statements),
            "content_terms": list(self.content_terms),
            "asks_for_number": self.asks_for_number,
            "scope": _scope_to_dict(self.scope) if self.scope is not None else None,
            "event_topics": dict(self.event_topics),
            "synonyms": {cid: list(terms) for cid, terms in self.synonyms.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QuestionAnalysis:
        """Inverse of ``to_dict``; a dict of another layout raises ``ValueError`` naming the problem."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a question analysis must be a dict, got {type(data).__name__}")
        if data.get("version") != ANALYSIS_VERSION:
            raise ValueError(
                f"question analysis version {data.get('version')!r} is not {ANALYSIS_VERSION} (made by another "
                "haystack-fin version?)"
            )
        missing = [key for key in ("question", "terms", "clusters", "statements") if key not in data]
        if missing:
            raise ValueError(f"question analysis lacks {missing}")
        try:
            return cls(
                question=str(data["question"]),
                terms=tuple(
                    QueryTerm(str(t["term"]), str(t["cluster"]), str(t["match_type"]), str(t.get("text", "")))
                    for t in data["terms"]
                ),
                clusters=tuple(TermCluster.from_dict(c) for c in data["clusters"]),
                statements={str(k): float(v) for k, v in data["statements"].items()},
                content_terms=tuple(str(t) for t in data.get("content_terms") or ()),
                asks_for_number=bool(data.get("asks_for_number", False)),
                scope=_scope_from_dict(data["scope"], str(data["question"])) if data.get("scope") is not None else None,
                event_topics={str(k): str(v) for k, v in (data.get("event_topics") or {}).items()},
                synonyms={str(k): tuple(str(t) for t in v) for k, v in (data.get("synonyms") or {}).items()},
            )
        except (KeyError, TypeError, AttributeError) as err:
            raise ValueError(f"malformed question analysis: {type(err).__name__}: {err}") from None


def analyze_question(question: str, lexicon: Lexicon) -> QuestionAnalysis:
    """Analyse ``question`` once with ``lexicon``, by the same functions the query stages call on their own."""
    terms = detect_query_clusters(question, lexicon)
    matched: dict[str, list[str]] = {}
    for term in terms:
        surfaces = matched.setdefault(term.cluster_id, [])
        if term.term not in surfaces:
            surfaces.append(term.term)
    clusters = []
    for cluster_id in cluster_ids(terms):
        full = lexicon.cluster(cluster_id)
        # The definition stays out: nothing downstream reads it. The unmatched synonyms go in ``synonyms`` only,
        # so ``terms`` still says what the question matched. The section titles go along: the retriever and the
        # ranker look chunks' headings up in them.
        clusters.append(
            TermCluster(
                id=full.id,
                name=full.name,
                category=full.category,
                terms=tuple(matched[cluster_id]),
                items=full.items,
                statements=full.statements,
                sections=full.sections,
            )
        )
    return QuestionAnalysis(
        question=question,
        terms=tuple(terms),
        clusters=tuple(clusters),
        statements=statements_in_query(question, lexicon),
        content_terms=tuple(content_terms(question)),
        asks_for_number=asks_for_number(question),
        scope=parse_question_scope(question),
        event_topics=question_event_topics(question),
        synonyms={cid: tuple(lexicon.cluster(cid).terms) for cid in matched},
    )


def analysis_for(query: str, analysis: Mapping[str, Any] | None) -> QuestionAnalysis | None:
    """The analysis a component received with ``query``, parsed; None when none was given.

    Refuses an analysis of another question: a miswired pipeline would otherwise route, scope and rank by the
    wrong question without a sign.
    """
    if analysis is None:
        return None
    parsed = QuestionAnalysis.from_dict(analysis)
    if parsed.question != query:
        raise ValueError(f"the question analysis is of {parsed.question!r}, not of the query {query!r}")
    return parsed


def analysis_or_own(query: str, analysis: Mapping[str, Any] | None, lexicon: Lexicon | None = None) -> QuestionAnalysis:
    """The analysis a component received with ``query`` (``analysis_for``), else its own analysis of ``query`` with
    ``lexicon`` (default: the built-in lexicon): the one way a query stage reads a question, in a pipeline or
    alone. In a pipeline the lexicon is the ``QueryAnalyzer``'s, configured once."""
    received = analysis_for(query, analysis)
    if received is not None:
        return received
    return analyze_question(query, lexicon if lexicon is not None else Lexicon.load_default())


# --- QuestionScope <-> JSON (lossless: QuestionScope.to_dict is an explanation and drops the spans) --------------


def _span_dict(text: str, start: int, end: int) -> dict[str, Any]:
    return {"text": text, "start": start, "end": end}


def _scope_to_dict(scope: QuestionScope) -> dict[str, Any]:
    return {
        "periods": [
            {
                **_span_dict(p.text, p.start, p.end),
                "year": p.year,
                "quarter": p.quarter,
                "fiscal": p.fiscal,
                "anchored": p.anchored,
                "forward": p.forward,
            }
            for p in scope.periods
        ],
        "dates": [
            {
                **_span_dict(d.text, d.start, d.end),
                "date": d.value.isoformat(),
                "precision": d.precision,
                "anchored": d.anchored,
                "forward": d.forward,
            }
            for d in scope.dates
        ],
        "forms": [{**_span_dict(f.text, f.start, f.end), "form": f.form, "weak": f.weak} for f in scope.forms],
        "company_spans": [_span_dict(s.text, s.start, s.end) for s in scope.company_spans],
    }


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _scope_from_dict(data: Mapping[str, Any], question: str) -> QuestionScope:
    return QuestionScope(
        question=question,
        periods=tuple(
            PeriodMention(
                str(p["text"]),
                int(p["start"]),
                int(p["end"]),
                _opt_int(p.get("year")),
                _opt_int(p.get("quarter")),
                bool(p.get("fiscal", False)),
                bool(p.get("anchored", False)),
                bool(p.get("forward", False)),
            )
            for p in _seq(data, "periods")
        ),
        dates=tuple(
            DateMention(
                str(d["text"]),
                int(d["start"]),
                int(d["end"]),
                date.fromisoformat(str(d["date"])),
                "month" if d.get("precision") == "month" else "day",
                bool(d.get("anchored", False)),
                bool(d.get("forward", False)),
            )
            for d in _seq(data, "dates")
        ),
        forms=tuple(
            FormHint(str(f["form"]), str(f["text"]), int(f["start"]), int(f["end"]), bool(f.get("weak", False)))
            for f in _seq(data, "forms")
        ),
        company_spans=tuple(
            TextSpan(str(s["text"]), int(s["start"]), int(s["end"])) for s in _seq(data, "company_spans")
        ),
    )


def _seq(data: Mapping[str, Any], key: str) -> Sequence[Mapping[str, Any]]:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise ValueError(f"question analysis scope: {key!r} must be a list, got {type(value).__name__}")
    return value
