"""Reranking without a cross-encoder: the fallback scorer of candidate passages.

Fallback scorer
---------------
When no cross-encoder is configured (none ships offline), each candidate passage gets a convex combination of
signals that are each normalized to [0, 1]:

``score = (w_dense * dense + w_lexical * lexical + w_table * table) / (sum of the weights of the signals in use)``

* ``dense``: cosine between the query embedding and the passage embedding (the bi-encoder that retrieved it; the
  retriever's recorded cosine when the passage carries one), clipped at 0 and divided by the best cosine among the
  candidates.
* ``lexical``: BM25 of the query's content terms over the candidate set, divided by the best BM25 among the
  candidates. Terms and IDF are the tree search's too (``bm25.py``: ``content_terms``, Lucene's IDF); the names of
  the question's companies are cut out of its terms here, because every candidate is from their filings.
* ``table``: a prior used only when the question asks for a number (``asks_for_number``): for a table passage, the
  share of the question's content terms found in its row labels and column headers, period words ("second
  quarter", "fiscal year": every statement's column headers have them) aside; 0 for other passages. Filing
  metrics live in statements, and a bi-encoder embeds a grid of numbers poorly, so an exact row-label match is
  strong evidence the embedding under-rates.
* ``statement``: a prior used only when the question names a primary statement or one of its line items
  (``haystack_fin.core.statements.statements_in_query``): for a block of that statement (``meta["statement"]``, set
  at indexing from the table's title), the question's weight for it (1.0 named, 0.5 implied); 0 for other
  passages. The statements are where FinanceBench-style metric questions are answered, and their pages are the
  ones dense retrieval misses most.
* ``section``: a prior used only when the question's lexicon concepts name the headings they are reported under
  (``TermCluster.sections``, matched by ``haystack_fin.core.retrieval.sections.section_match``): 1.0 for a passage
  under such a heading (its ``section_path``), 0 for the others. A note title ("Income Taxes", "Acquisitions") or
  an MD&A subsection says where an analyst reads the answer more surely than the words of a passage do.
* ``consolidated``: a prior used only when the question asks for a number and names no segment, geography or
  product line (no lexicon cluster of the ``segments`` family): 0 for a passage about one part of the company (its
  nearest heading or, for a table, its caption names a segment or geography, ``segment_specific``), 1 for the
  others. A question that names no segment asks for the consolidated figure (Regulation S-X: the statements are
  consolidated; segment tables restate parts of them), yet the segment tables of MD&A and the segment note share
  its row labels ("Revenue") and its words, so the other signals cannot tell them apart.

Why this shape: convex combination of per-signal scores, each scaled by its theoretical minimum (0) and the
observed maximum of the result set, is the fusion Bruch, Gai and Ingber ("An Analysis of Fusion Functions for
Hybrid Retrieval", ACM TOIS 2023) found more robust than reciprocal rank fusion and than min-max with the observed
minimum; it keeps score magnitudes, which RRF throws away, and needs one weight per signal. A signal that is not
available for a passage (no embedding) is left out of that passage's denominator, i.e. imputed by the others,
instead of counting as 0. Scores are therefore relative to the candidate set (the best candidate on every signal
gets 1.0), deterministic, and in [0, 1]; they rank candidates, they are not calibrated probabilities.

The two-stage cut that follows this scorer is ``two_stage_selection.py``.
"""

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from haystack_fin.core.lexicon import normalize_term
from haystack_fin.core.retrieval.bm25 import LuceneBM25, content_terms
from haystack_fin.core.retrieval.sections import section_match

# An embedding as a list (a Document's) or an array (an in-memory tree's row).
Vector: TypeAlias = Sequence[float] | npt.NDArray[Any]

# Cues that a question wants a figure: quantity phrasing, units, and the metric words of financial statements.
_NUMERIC_CUE = re.compile(
    r"\bhow (?:much|many)\b|[$%€£¥]|\b(?:amount|total|sum|number|value|ratio|rate|margin|percent(?:age)?|"
    r"growth|change|increase|decrease|decline|average|revenues?|sales|income|earnings|eps|profit|loss|expenses?|"
    r"costs?|cogs|capex|expenditures?|cash|assets?|liabilit(?:y|ies)|equity|debt|inventor(?:y|ies)|payables?|"
    r"receivables?|dividends?|ebit(?:da|dar)?|turnover|millions?|billions?|thousands?|usd|per share)\b",
    re.IGNORECASE,
)


def drop_phrases(terms: Sequence[str], phrases: Sequence[Sequence[str]]) -> list[str]:
    """``terms`` without every occurrence of each phrase as a contiguous run (longest phrases first), so
    "Bank of America" goes from "bank of america deposits at bank branches" and the second "bank" stays."""
    out = list(terms)
    for phrase in sorted({tuple(p) for p in phrases if p}, key=len, reverse=True):
        n, i, kept = len(phrase), 0, []
        while i < len(out):
            if tuple(out[i : i + n]) == phrase:
                i += n
                continue
            kept.append(out[i])
            i += 1
        out = kept
    return out


def asks_for_number(query: str) -> bool:
    """True when the question asks for a figure or metric (quantity phrasing, a unit, a statement line item)."""
    return bool(_NUMERIC_CUE.search(query))


# ---------------------------------------------------------------------------------------------------------------
# Fallback scorer
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FallbackWeights:
    """Weights of the fallback scorer's signals (non-negative; only their ratios matter).

    Defaults checked on the FinanceBench dev slice (38 questions, 22 filings, bundled MiniLM, FilingSplitter
    chunks; candidates = RRF of the filing's dense top-30 and BM25 top-30, ~51 per question; relevant = a chunk on
    an evidence page), hit@5 / MRR@10: dense alone 0.45 / 0.36, BM25 alone 0.50 / 0.35, 0.5/0.5 fused 0.55 / 0.41,
    0.7/0.3 fused 0.58 / 0.44, 0.7/0.3 + table 0.3 0.68 / 0.50 (the candidates' own RRF order: 0.55 / 0.41). Dense
    0.6-0.8 with table 0.15-0.5 all lie within 0.05 hit@5 of each other, so these are a plateau, not a tuned peak;
    the table prior is the one large effect (+0.10 hit@5, mostly on metric questions). Adding the chunk's context
    line to the BM25 text did not help (``meta_fields_to_embed`` stays opt-in). ``statement`` was set equal to
    ``table`` before it was measured (results in the README), ``section`` equal to ``statement`` before it was
    measured, and ``consolidated`` equal to them after the README's example ("total revenue in Q2 FY2024" on the
    Best Buy 10-Q fixture, whose store-count tables of each segment match "total" and "2024") showed that half of
    it does not put a consolidated table first; before it was measured on the evaluation sets.
    """

    dense: float = 0.7
    lexical: float = 0.3
    table: float = 0.3
    statement: float = 0.3
    section: float = 0.3
    consolidated: float = 0.3

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
                raise ValueError(f"fallback weight {name!r} must be a finite number >= 0, got {value!r}")
        if self.dense == 0 and self.lexical == 0:
            raise ValueError("at least one of the fallback weights 'dense' and 'lexical' must be > 0")

    @classmethod
    def from_dict(cls, data: Mapping[str, float] | None) -> "FallbackWeights":
        """Weights from a partial mapping (missing keys keep their default); unknown keys are an error."""
        if not data:
            return cls()
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(
                f"unknown fallback weight(s) {sorted(unknown)}; allowed: {sorted(cls.__dataclass_fields__)}"
            )
        return cls(**{k: float(v) for k, v in data.items()})

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class Passage:
    """What the fallback scorer needs of one candidate.

    ``text`` is what BM25 indexes (content, optionally with a context line); ``cosine`` is the passage's cosine to
    the query when its retriever recorded one (else computed from ``embedding``); ``table_labels`` are a table's row
    labels and column headers (empty: the table's ``text`` is used instead); ``statement`` is the primary
    statement a table block belongs to, if any; ``section_path`` the headings above the passage, the Item's title
    first.
    """

    text: str
    embedding: Sequence[float] | None = None
    cosine: float | None = None
    is_table: bool = False
    table_labels: Sequence[str] = ()
    statement: str | None = None
    section_path: Sequence[str] = ()


@dataclass(frozen=True)
class PassageScore:
    """A fallback score and the normalized signals it was made of (``None``: signal not used for this passage)."""

    score: float
    dense: float | None
    lexical: float | None
    table: float | None
    statement: float | None = None
    section: float | None = None
    consolidated: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return asdict(self)


def lexical_scores(query_terms: Sequence[str], passage_terms: Sequence[Sequence[str]]) -> list[float]:
    """BM25 of ``query_terms`` (each counted once) over the candidate set, divided by the best candidate's score."""
    if not passage_terms or not query_terms or not any(passage_terms):  # rank-bm25 divides by the mean length
        return [0.0] * len(passage_terms)
    raw = LuceneBM25([list(t) for t in passage_terms]).scores(query_terms)
    best = float(raw.max())
    return [float(s) / best if best > 0 else 0.0 for s in raw]


def cosines(query_embedding: Sequence[float], embeddings: Sequence[Vector | None]) -> list[float | None]:
    """Raw cosine of each embedding with the query (None where an embedding is missing); the modality fallback
    thresholds these, the fallback scorer's dense signal rescales them.

    :raises ValueError: an embedding of another dimension than the query's (two different embedders).
    """
    q = np.asarray(query_embedding, dtype=np.float64)
    q_norm = float(np.linalg.norm(q))
    out: list[float | None] = []
    for i, emb in enumerate(embeddings):
        if emb is None or len(emb) == 0:
            out.append(None)
            continue
        v = np.asarray(emb, dtype=np.float64)
        if v.shape != q.shape:
            raise ValueError(
                f"passage {i} has an embedding of dimension {v.shape[0]} but the query embedding has {q.shape[0]}: "
                "query and passages must come from the same embedder"
            )
        denom = q_norm * float(np.linalg.norm(v))
        out.append(float(q @ v) / denom if denom > 0 else 0.0)
    return out


def query_cosines(
    query_embedding: Sequence[float] | None,
    embeddings: Sequence[Vector | None],
    given: Sequence[float | None] | None = None,
) -> list[float | None]:
    """Each passage's raw cosine to the query: the one its retriever recorded (``given``) where there is one, else
    computed from its embedding; None without either.

    :raises ValueError: when an embedding's dimension differs from the query's (two different embedders).
    """
    out: list[float | None] = list(given) if given is not None else [None] * len(embeddings)
    todo = [i for i, c in enumerate(out) if c is None and embeddings[i] is not None]
    if todo and query_embedding is not None and len(query_embedding) > 0:
        for i, c in zip(todo, cosines(query_embedding, [embeddings[i] for i in todo]), strict=True):
            out[i] = c
    return out


def dense_scores(raw_cosines: Sequence[float | None]) -> list[float | None]:
    """Raw cosines clipped at 0 and divided by the best; ``None`` where missing."""
    clipped = [None if c is None else max(c, 0.0) for c in raw_cosines]
    best = max((c for c in clipped if c is not None), default=0.0)
    return [None if c is None else (c / best if best > 0 else 0.0) for c in clipped]


# Words every statement's column headers share ("Three Months Ended", "Second Quarter", "Fiscal Year"): a match on
# them says nothing about which table holds the figure, so the table prior ignores them (years still count).
_PERIOD_WORDS = frozenset(
    normalize_term(
        """first second third fourth quarter quarters quarterly year years annual fiscal month months ended ending
        period periods three six nine twelve"""
    ).split()
)


def table_prior(query_terms: Sequence[str], passage: Passage) -> float:
    """Share of the distinct query terms (period words aside) that appear in a table's row labels / column headers
    (0 for non-tables)."""
    wanted = set(query_terms) - _PERIOD_WORDS
    if not passage.is_table or not wanted:
        return 0.0
    labels = passage.table_labels or [passage.text]
    label_terms = {t for label in labels for t in content_terms(label)}
    return len(wanted & label_terms) / len(wanted)


# A heading or caption about one part of the company: "Segment Performance Summary", "11. Segments", "Selected
# financial data for the Domestic segment", "Revenue by reportable segment", "Geographic Information".
_SEGMENT_CUE = re.compile(r"\b(?:segments?|geographic(?:al)?|by (?:region|geography|geographic area))\b", re.IGNORECASE)
# The word before "segment" names it ("the Domestic segment"); these words do not.
_SEGMENT_NAME = re.compile(r"\b([A-Za-z]\w*) segments?\b")
_GENERIC_SEGMENT_WORDS = frozenset(
    ("reportable", "operating", "business", "each", "our", "the", "its", "by", "all", "other", "and", "of", "for")
)
_CAPTION_CHARS = 200


SEGMENT_CATEGORY = "segments"  # the lexicon's topic family of segments, geographies, regions and product lines


def names_segment(categories: Iterable[str]) -> bool:
    """Whether a question whose lexicon clusters have these ``category`` values names a part of the company."""
    return SEGMENT_CATEGORY in set(categories)


def segment_specific(passage: Passage, query_terms: Sequence[str] = ()) -> bool:
    """True when the passage is about one segment or geography and the question does not name it.

    The passage's nearest heading (the last of ``section_path``) and, for a table, its caption (the text before
    the first cell, at most 200 characters) are read; a segment named there ("the Domestic segment") that is one of
    ``query_terms`` makes the passage the question's own segment, not a part of the asked whole.
    """
    parts = [passage.section_path[-1]] if passage.section_path else []
    if passage.is_table:
        parts.append(passage.text[:_CAPTION_CHARS].split("|", 1)[0])
    wanted = set(query_terms)
    for part in parts:
        if not _SEGMENT_CUE.search(part):
            continue
        found = (m.group(1) for m in _SEGMENT_NAME.finditer(part))
        names = {normalize_term(name) for name in found if name.lower() not in _GENERIC_SEGMENT_WORDS}
        if not names & wanted:
            return True
    return False


def score_passages(
    query: str,
    passages: Sequence[Passage],
    query_embedding: Sequence[float] | None = None,
    weights: FallbackWeights | None = None,
    statements: Mapping[str, float] | None = None,
    ignore_phrases: Sequence[Sequence[str]] = (),
    query_terms: Sequence[str] | None = None,
    wants_number: bool | None = None,
    sections: Mapping[str, str] | None = None,
    segment_question: bool | None = None,
) -> list[PassageScore]:
    """Fallback relevance of each passage to ``query`` in [0, 1], aligned with ``passages`` (see module docstring).

    ``statements`` are the question's statement weights (``statements_in_query``); empty or None leaves the
    statement signal out. ``ignore_phrases`` (term sequences, e.g. ``content_terms("Best Buy")``) are cut out of
    the query's terms wherever they occur in sequence (``drop_phrases``): the names of the filings' companies say
    which filing is meant (FilingScope's job) but not where in it the answer is, and "Best Buy" in a Best Buy
    question otherwise favours the tables whose rows are labelled "Best Buy".

    ``sections`` are the question's heading titles (``sections.question_sections``); empty or None leaves the
    section signal out.

    ``query_terms`` (``content_terms(query)``) and ``wants_number`` (``asks_for_number(query)``) may be passed when
    the question was analysed once upstream (a QueryAnalyzer); None computes them from ``query``.

    ``segment_question`` says whether the question names a segment, geography or product line (a lexicon cluster of
    the ``segments`` family); None (or True) leaves the consolidated signal out.

    Deterministic: the same inputs give the same floats. Without query terms and embeddings every score is 0, so
    the caller's tie-break (original rank) keeps the retriever's order.
    """
    weights = weights or FallbackWeights()
    if not passages:
        return []
    q_terms = drop_phrases(content_terms(query) if query_terms is None else query_terms, ignore_phrases)
    number = asks_for_number(query) if wants_number is None else wants_number
    use_lexical = weights.lexical > 0 and bool(q_terms)
    use_table = weights.table > 0 and bool(q_terms) and number
    use_statement = weights.statement > 0 and bool(statements)
    use_section = weights.section > 0 and bool(sections)
    use_consolidated = weights.consolidated > 0 and number and segment_question is False

    lexical = lexical_scores(q_terms, [content_terms(p.text) for p in passages]) if use_lexical else None
    dense = (
        dense_scores(query_cosines(query_embedding, [p.embedding for p in passages], [p.cosine for p in passages]))
        if weights.dense > 0
        else [None] * len(passages)
    )
    results: list[PassageScore] = []
    for i, passage in enumerate(passages):
        parts: list[tuple[float, float]] = []
        d = dense[i]
        if d is not None:
            parts.append((weights.dense, d))
        lex = lexical[i] if lexical is not None else None
        if lex is not None:
            parts.append((weights.lexical, lex))
        tab = table_prior(q_terms, passage) if use_table else None
        if tab is not None:
            parts.append((weights.table, tab))
        stm = (statements or {}).get(passage.statement or "", 0.0) if use_statement else None
        if stm is not None:
            parts.append((weights.statement, stm))
        sec = (1.0 if section_match(passage.section_path, sections or {}) else 0.0) if use_section else None
        if sec is not None:
            parts.append((weights.section, sec))
        cons = (0.0 if segment_specific(passage, q_terms) else 1.0) if use_consolidated else None
        if cons is not None:
            parts.append((weights.consolidated, cons))
        total = sum(w for w, _ in parts)
        score = sum(w * x for w, x in parts) / total if total > 0 else 0.0
        results.append(
            PassageScore(
                score=min(max(score, 0.0), 1.0),
                dense=d,
                lexical=lex,
                table=tab,
                statement=stm,
                section=sec,
                consolidated=cons,
            )
        )
    return results
