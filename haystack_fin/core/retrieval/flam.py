"""FLAM (FinGEAR's Financial Lexicon-Aware Mapping): which SEC Items to search, and how much of the budget each gets.

A question's financial terms are found with the lexicon and mapped to their synonym clusters. Each Item of a filing
is scored by how often its text mentions those clusters, relative to how many lexicon terms it mentions at all
(FinGEAR's relative frequency), and the retrieval budget ``k`` is split across Items in proportion:

    w_i = score_i / sum_j score_j,   score_i = c_i / (T_i + smoothing)   (mode "relative")

where ``c_i`` counts occurrences of the query's clusters in Item ``i`` and ``T_i`` all lexicon term occurrences in
it. The counts come from the filing node, written at indexing time with ``Lexicon.count_cluster_terms``:
``meta["item_term_counts"] = {item: {cluster_id: count}}`` and ``meta["item_term_totals"] = {item: total}``.

Routing rules (each is a choice; the reasons are next to the code):
- Items without chunks get weight 0 (nothing to retrieve there); the "cover" section (cover page and table of
  contents) is routed to only when a filing has no other Item with chunks, or when one of the question's clusters
  names "cover" in its Item prior for the filing's form (the securities registered under Section 12(b), shares
  outstanding, filer status are reported there and nowhere else): its text lists every Item title, so it mentions
  many concepts without reporting any of them.
- ``smoothing`` adds a pseudo-count to every Item's total ``T_i`` (default 10). FinGEAR's plain ratio (smoothing 0)
  lets a two-line Item ("Item 1B. Unresolved Staff Comments: None") with one incidental mention outrank the
  financial statements; 10 is about the term count of such placeholder Items (title plus "None" / "Not
  applicable"), so it only changes the ratio where the ratio rests on a handful of words.
- Fallback when the counts carry no signal: no lexicon term in the question -> uniform over the Items with chunks
  (there is no evidence for any Item, and the retriever then ranks freely); terms found but none of their clusters
  counted in any eligible Item (or the filing was indexed without counts) -> the lexicon's Item priors for those
  clusters (most typical Item first, rank-discounted 1, 1/2, 1/3, ...), and uniform when the priors name no Item
  of the filing (earnings releases, exhibits).
- ``idf`` (off by default) multiplies each cluster's counts by ``log(1 + N / df)`` over the filing's N eligible
  Items, down-weighting concepts mentioned in every Item ("revenue", "tax"). It only changes anything when a
  question has several clusters, and a df over ~20 Items is a noisy statistic; on the FinanceBench dev slice (38
  questions, k=5) it changed whether the gold Item got budget for at most one question in any mode, so the
  paper's plain frequency stays the default.
- Several filings: the budget is first split across filings (uniform, or by given filing weights; ties go to the
  earlier filing, i.e. the better scope rank), then each filing's share across its Items. Relative frequencies are
  not comparable across filings of different length and form (a 2-page 8-K would out-score a 10-K's Items), and
  a question about "2022 vs 2023" needs every filing it names to get some budget.

Sections below the Item (``route_sections``): the filing node also carries the counts and totals of the headings
of the first two levels under each Item title (``section_term_counts``, ``section_term_totals``: the notes, MD&A's
subsections). Each Item that gets budget has its sections scored with the same relative frequency
``c_s / (T_s + smoothing)``; the sections more concentrated in the question's concepts than their Item as a whole
(score above the Item's own ``c_i / (T_i + smoothing)``: the Item's search already covers the average) share the
Item's budget ``k_i`` in proportion to their scores (``allocate_budget``, as Items share a filing's), and those
whose share rounds to at least one passage are routed, with that many passages. So at most ``k_i`` sections per
Item, none when the Item's mentions are spread evenly, and a filing indexed without section statistics routes
none.

Measured on that slice (k=5; gold Item = the Item holding the evidence page; not tuned beyond these options): the
gold Item got budget for 34/38 questions with "relative" (31/38 without smoothing), 37/38 with "log", 36/38 with
"softmax" (T=1), against 33/38 for budget proportional to chunk counts and ~17/38 for 5 random Items. "log"
spreads the budget over more Items (3.3 vs 2.6 on average), which is where its extra coverage comes from; the
default stays the paper's "relative" until a retrieval benchmark (not just Item coverage) says otherwise.
"""

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from haystack_fin.core import schema
from haystack_fin.core.ingest.items import COVER_CODE, ITEMS_8K_PREDECESSOR
from haystack_fin.core.lexicon import Lexicon
from haystack_fin.core.log import get_logger
from haystack_fin.core.retrieval.filing_profile import form_family
from haystack_fin.core.validation import check_int

logger = get_logger(__name__)

WeightMode = Literal["relative", "log", "softmax", "uniform"]
# "uniform" ignores the question: every Item with chunks gets an equal share (the FLAM ablation).
MODES: tuple[str, ...] = ("relative", "log", "softmax", "uniform")
DEFAULT_MODE = "relative"
DEFAULT_SMOOTHING = 10.0

# What the weights of a filing rest on (reported in explanations).
BASIS_COUNTS = "term_counts"
BASIS_PRIORS = "item_priors"
BASIS_UNIFORM = "uniform"


@dataclass(frozen=True)
class QueryTerm:
    """A lexicon term found in a question: the lexicon's surface ``term``, its ``cluster_id``, how it matched
    ("exact", "normalized", "fuzzy") and the ``text`` as written in the question."""

    term: str
    cluster_id: str
    match_type: str
    text: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"term": self.term, "cluster": self.cluster_id, "match_type": self.match_type, "text": self.text}


def detect_query_clusters(question: str, lexicon: Lexicon, fuzzy: bool = True) -> list[QueryTerm]:
    """The question's lexicon terms (longest-first, non-overlapping, typo-tolerant), each with its cluster.

    Routing works on clusters, not terms: "capex" in a question counts every "purchases of property and
    equipment" in the filing because both are terms of the ``capex`` cluster.
    """
    return [QueryTerm(m.term, m.cluster_id, m.match_type, m.text) for m in lexicon.find_terms(question, fuzzy=fuzzy)]


def cluster_ids(query_clusters: Iterable[str | QueryTerm]) -> list[str]:
    """Distinct cluster ids in first-seen order (a cluster named twice in a question counts once)."""
    ids: dict[str, None] = {}
    for entry in query_clusters:
        ids[entry.cluster_id if isinstance(entry, QueryTerm) else str(entry)] = None
    return list(ids)


def cluster_item_priors(clusters: Iterable[str], lexicon: Lexicon, form: str) -> dict[str, float]:
    """Item prior weights from the lexicon: each cluster's typical Items for ``form``, discounted by rank
    (1, 1/2, 1/3, ...), summed over clusters, and for an 8-K the same weight on the pre-2004 number of each Item.
    Unknown clusters and forms without an Item catalog add nothing."""
    family = form_family(form)
    priors: dict[str, float] = {}
    for cluster_id in clusters:
        if cluster_id not in lexicon:
            continue
        for rank, item in enumerate(lexicon.item_prior(cluster_id, family)):
            priors[item] = priors.get(item, 0.0) + 1.0 / (rank + 1)
    if family == "8-K":
        # A pre-2004 8-K numbers its Items 1-12: its Item "12" gets the prior of "2.02" (a filing uses one numbering).
        for item, weight in list(priors.items()):
            if item in ITEMS_8K_PREDECESSOR:
                priors[ITEMS_8K_PREDECESSOR[item]] = priors.get(ITEMS_8K_PREDECESSOR[item], 0.0) + weight
    return priors


@dataclass
class ItemWeighting:
    """Item weights of one filing and what they rest on.

    ``weights`` covers every known Item in filing order (0.0 for Items not routed to) and sums to 1 unless no Item
    is eligible; ``basis`` is "term_counts", "item_priors" or "uniform"; ``query_counts`` are the (IDF-weighted)
    query-cluster counts per Item; ``idf`` the cluster weights used (empty when IDF is off).
    """

    weights: dict[str, float]
    basis: str
    query_counts: dict[str, float] = field(default_factory=dict)
    idf: dict[str, float] = field(default_factory=dict)


def validate_weighting(mode: str, temperature: float, smoothing: float) -> None:
    """Reject a weighting mode, softmax temperature or smoothing that ``score_items`` cannot use."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}.")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}.")
    if not smoothing >= 0:
        raise ValueError(f"smoothing must be >= 0, got {smoothing}.")


def _item_order(
    item_term_counts: Mapping[str, Mapping[str, int]],
    item_term_totals: Mapping[str, int] | None,
    n_chunks: Mapping[str, int] | None,
) -> list[str]:
    if n_chunks is not None:
        return list(n_chunks)
    order: dict[str, None] = dict.fromkeys(item_term_counts)
    order.update(dict.fromkeys(item_term_totals or {}))
    return list(order)


def eligible_items(items: Sequence[str], n_chunks: Mapping[str, int] | None = None, cover: bool = False) -> list[str]:
    """Items that can receive budget: with chunks (all, when chunk counts are unknown); the cover section when
    ``cover`` (the question's concepts are reported on the cover page) or when nothing else qualifies."""
    with_chunks = [item for item in items if n_chunks is None or n_chunks.get(item, 0) > 0]
    if cover:
        return with_chunks
    without_cover = [item for item in with_chunks if item != COVER_CODE]
    return without_cover or with_chunks


def _normalized(scores: Mapping[str, float], items: Sequence[str]) -> dict[str, float]:
    total = sum(scores.values())
    return {item: (scores.get(item, 0.0) / total if total > 0 else 0.0) for item in items}


def score_items(
    query_clusters: Iterable[str | QueryTerm],
    item_term_counts: Mapping[str, Mapping[str, int]],
    item_term_totals: Mapping[str, int] | None = None,
    mode: str = DEFAULT_MODE,
    temperature: float = 1.0,
    smoothing: float = DEFAULT_SMOOTHING,
    item_priors: Mapping[str, float] | None = None,
    n_chunks: Mapping[str, int] | None = None,
    idf: bool = False,
) -> ItemWeighting:
    """FLAM weights over a filing's Items (summing to 1 over the eligible Items, 0.0 for the others), with the basis
    they rest on.

    :param query_clusters: the question's cluster ids, or its ``QueryTerm`` list.
    :param item_term_counts: ``{item: {cluster_id: count}}`` from the filing node.
    :param item_term_totals: ``{item: all lexicon term occurrences}``; missing Items use the sum of their counts.
    :param mode: "relative": ``c_i / (T_i + smoothing)`` (FinGEAR); "log": ``log(1 + c_i) / log(1 + T_i +
        smoothing)``, which damps the gap between a few and many mentions and so spreads budget over more Items;
        "softmax": softmax of the relative scores (scaled by the best one) with ``temperature``.
    :param temperature: softmax temperature (> 0); other modes ignore it.
    :param smoothing: pseudo-count added to every Item's total (>= 0; 0 = the paper's plain ratio).
    :param item_priors: ``{item: prior weight}`` used when the counts carry no signal, and a prior on "cover" lets the
        cover section in (see the module notes).
    :param n_chunks: ``{item: number of chunks}``; Items with none get 0. Its key order is the Item order.
    :param idf: weight each cluster by ``log(1 + N / df)`` over the eligible Items.
    """
    validate_weighting(mode, temperature, smoothing)
    clusters = cluster_ids(query_clusters)
    items = _item_order(item_term_counts, item_term_totals, n_chunks)
    # The cover is routed to when a concept of the question is reported there (its Item prior names it).
    eligible = eligible_items(items, n_chunks, cover=bool(item_priors and item_priors.get(COVER_CODE, 0.0) > 0))
    if not eligible:
        return ItemWeighting({item: 0.0 for item in items}, BASIS_UNIFORM)
    if mode == "uniform":
        return ItemWeighting(_normalized(dict.fromkeys(eligible, 1.0), items), BASIS_UNIFORM)

    cluster_idf: dict[str, float] = {}
    if idf:
        n_items = len(eligible)
        for cluster_id in clusters:
            df = sum(1 for item in eligible if item_term_counts.get(item, {}).get(cluster_id, 0) > 0)
            if df:
                cluster_idf[cluster_id] = math.log(1.0 + n_items / df)
    counts: dict[str, float] = {}
    raw_counts: dict[str, int] = {}
    for item in eligible:
        item_counts = item_term_counts.get(item, {})
        raw = sum(int(item_counts.get(c, 0)) for c in clusters)
        if raw > 0:
            raw_counts[item] = raw
            counts[item] = sum(item_counts.get(c, 0) * cluster_idf.get(c, 1.0) for c in clusters)

    if not clusters or not counts:
        # No lexical evidence for any Item: the priors of the detected concepts, else no preference at all (priors
        # without a detected concept would be a guess about the question, not about the filing).
        priors = {item: item_priors.get(item, 0.0) for item in eligible} if clusters and item_priors else {}
        if any(p > 0 for p in priors.values()):
            return ItemWeighting(_normalized(priors, items), BASIS_PRIORS, counts, cluster_idf)
        return ItemWeighting(_normalized(dict.fromkeys(eligible, 1.0), items), BASIS_UNIFORM, counts, cluster_idf)

    totals = item_term_totals or {}
    scores: dict[str, float] = {}
    for item, count in counts.items():
        # A total below the query count means the counts and totals disagree (hand-made meta): trust the counts.
        total = max(float(totals.get(item, 0) or sum(item_term_counts.get(item, {}).values())), raw_counts[item])
        if mode == "log":
            scores[item] = math.log1p(count) / math.log1p(total + smoothing)
        else:
            scores[item] = count / (total + smoothing)
    if mode == "softmax":
        # Scores are divided by the best one so that the temperature means the same in every filing: tiny
        # temperatures approach the best Item alone, large ones a uniform split over the Items that mention the
        # query's concepts (Items that never do are not given budget by a softmax tail).
        top = max(scores.values())
        exps = {item: math.exp((score / top - 1.0) / temperature) for item, score in scores.items()}
        scores = exps
    return ItemWeighting(_normalized(scores, items), BASIS_COUNTS, counts, cluster_idf)


def allocate_budget(weights: Mapping[str, float], k: int) -> dict[str, int]:
    """Split ``k`` over the weighted keys by the largest-remainder method: ``k_i`` is ``k * w_i`` rounded so that
    the budgets sum to exactly ``k``. Leftover units go to the largest fractional parts, ties to the larger weight,
    then to the earlier key. Keys with budget 0 are left out; keys keep their input order.

    Weights need not be normalized; non-positive weights get nothing. No positive weight -> ``{}``.
    """
    check_int("k", k)
    positive = [(key, float(w)) for key, w in weights.items() if w > 0 and math.isfinite(w)]
    total = sum(w for _, w in positive)
    if total <= 0:
        return {}
    quotas = [k * w / total for _, w in positive]
    budgets = [math.floor(q) for q in quotas]
    remaining = k - sum(budgets)
    order = sorted(range(len(positive)), key=lambda i: (-(quotas[i] - budgets[i]), -positive[i][1], i))
    # remaining < len(positive) mathematically; the modulo keeps float noise from ever indexing past the end.
    for step in range(remaining):
        budgets[order[step % len(order)]] += 1
    return {key: budget for (key, _), budget in zip(positive, budgets, strict=True) if budget > 0}


def explain(
    terms: Sequence[QueryTerm],
    weights: Mapping[str, float],
    budgets: Mapping[str, int],
    mode: str,
    lexicon: Lexicon | None = None,
    basis: str = BASIS_COUNTS,
) -> dict[str, Any]:
    """A JSON-serializable account of one filing's routing: the question's terms and their clusters (with the
    clusters' names when ``lexicon`` is given), the Item weights, the budgets, the mode and the basis."""
    return {
        "terms": [term.to_dict() for term in terms],
        "clusters": _cluster_names(terms, lexicon),
        "item_weights": {item: round(float(w), 6) for item, w in weights.items()},
        "budgets": {item: int(b) for item, b in budgets.items()},
        "mode": mode,
        "basis": basis,
    }


def _cluster_names(terms: Sequence[QueryTerm], lexicon: Lexicon | None) -> dict[str, str]:
    names: dict[str, str] = {}
    for cluster_id in cluster_ids(terms):
        names[cluster_id] = (
            lexicon.cluster(cluster_id).name if lexicon is not None and cluster_id in lexicon else cluster_id
        )
    return names


# ----------------------------------------------------------------------------------------------------- sections


@dataclass(frozen=True)
class SectionBudget:
    """A section (a heading under an Item title, as written in ``section_path``) that routing reaches: its relative
    frequency ``score``, the query-cluster count and lexicon term total it rests on, and ``k``, its share of the
    Item's budget (how many of its passages join the candidates)."""

    section: str
    score: float
    count: int
    total: int
    k: int

    def to_dict(self) -> schema.SectionBudget:
        return schema.SectionBudget(
            section=self.section, score=round(self.score, 6), count=self.count, total=self.total, k=self.k
        )


def relative_frequency(count: float, total: float, smoothing: float = DEFAULT_SMOOTHING) -> float:
    """FLAM's score of a text (Item or section): ``count / (total + smoothing)``; a total below the count (counts
    and totals that disagree) is read as the count."""
    return count / (max(float(total), float(count)) + smoothing)


def route_sections(
    query_clusters: Iterable[str | QueryTerm],
    section_term_counts: Mapping[str, Mapping[str, int]],
    section_term_totals: Mapping[str, int] | None,
    item_score: float,
    k: int,
    smoothing: float = DEFAULT_SMOOTHING,
) -> list[SectionBudget]:
    """The sections of one Item that get passages: those whose relative frequency for the query clusters is above
    the Item's (``item_score``), sharing the Item's budget ``k`` in proportion to their scores; sections whose
    share rounds to 0 are left out. Best score first.

    :param section_term_counts: ``{heading: {cluster_id: count}}`` of the Item's sections (the filing node's
        ``section_term_counts[item]``).
    :param section_term_totals: ``{heading: all lexicon term occurrences}``; missing headings use their counts' sum.
    """
    clusters = cluster_ids(query_clusters)
    if not clusters or k < 1:
        return []
    totals = section_term_totals or {}
    scored: dict[str, tuple[float, int, int]] = {}
    for heading, counts in section_term_counts.items():
        count = sum(int(counts.get(c, 0)) for c in clusters)
        if count <= 0:
            continue
        total = max(int(totals.get(heading, 0) or sum(counts.values())), count)
        score = relative_frequency(count, total, smoothing)
        if score > item_score:
            scored[heading] = (score, count, total)
    ordered = dict(sorted(scored.items(), key=lambda pair: -pair[1][0]))
    budgets = allocate_budget({heading: value[0] for heading, value in ordered.items()}, k) if ordered else {}
    return [
        SectionBudget(heading, score, count, total, budgets[heading])
        for heading, (score, count, total) in ordered.items()
        if heading in budgets
    ]


# ------------------------------------------------------------------------------------------------- multi-filing


@dataclass
class FilingStats:
    """What routing needs from one filing node: its id, form, Items (``[{item, n_chunks, ...}]`` as in the
    filing node's meta ``items``) and the indexing-time term counts and totals per Item."""

    filing_id: str
    form: str
    items: list[Mapping[str, Any]]
    item_term_counts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    item_term_totals: Mapping[str, int] = field(default_factory=dict)
    section_term_counts: Mapping[str, Mapping[str, Mapping[str, int]]] = field(default_factory=dict)
    section_term_totals: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> "FilingStats":
        """From a filing node's meta (``node_type == "filing"``), read through ``schema.FilingNode``."""
        node = schema.FilingNode.from_meta(meta)
        return cls(
            filing_id=node.filing_id,
            form=node.form,
            items=list(node.items),
            item_term_counts=node.item_term_counts or {},
            item_term_totals=node.item_term_totals or {},
            section_term_counts=node.section_term_counts or {},
            section_term_totals=node.section_term_totals or {},
        )

    @property
    def n_chunks(self) -> dict[str, int]:
        """``{item: chunks}`` in filing order (a repeated Item code adds up)."""
        chunks: dict[str, int] = {}
        for entry in self.items:
            item = str(entry.get("item", ""))
            chunks[item] = chunks.get(item, 0) + int(entry.get("n_chunks") or 0)
        return chunks


@dataclass(frozen=True)
class ItemBudget:
    """``k`` passages to retrieve from Item ``item`` of filing ``filing_id``; ``weight`` is the pair's share of the
    whole budget (filing share x Item weight, so the weights of all pairs sum to 1)."""

    filing_id: str
    item: str
    k: int
    weight: float
    sections: tuple[SectionBudget, ...] = ()

    def to_dict(self) -> schema.Budget:
        budget = schema.Budget(filing_id=self.filing_id, item=self.item, k=self.k, weight=round(self.weight, 6))
        if self.sections:  # only then: budgets of a filing without section statistics stay as they were
            budget["sections"] = [section.to_dict() for section in self.sections]
        return budget


@dataclass
class FilingRouting:
    filing_id: str
    form: str
    k: int
    weighting: ItemWeighting
    budgets: dict[str, int]


@dataclass
class RoutingDecision:
    """The outcome of ``route``: detected terms, per-filing weights and budgets, and the flat budget list."""

    question: str
    k: int
    mode: str
    terms: list[QueryTerm]
    filings: list[FilingRouting]
    budgets: list[ItemBudget]

    def _sections(self) -> dict[str, dict[str, list[schema.SectionBudget]]]:
        sections: dict[str, dict[str, list[schema.SectionBudget]]] = {}
        for budget in self.budgets:
            if budget.sections:
                by_item = sections.setdefault(budget.filing_id, {})
                by_item[budget.item] = [section.to_dict() for section in budget.sections]
        return sections

    def explain(self, lexicon: Lexicon | None = None) -> dict[str, Any]:
        """JSON-serializable explanation: terms, cluster names, mode, and per filing its share of ``k``, Item
        weights (non-zero only), budgets and basis, and the sections routed to (``sections``: per filing and Item
        ``[{section, score, count, total, k}]``, only when there are some)."""
        explanation: dict[str, Any] = {
            "terms": [term.to_dict() for term in self.terms],
            "clusters": _cluster_names(self.terms, lexicon),
            "mode": self.mode,
            "k": self.k,
            "item_weights": {
                f.filing_id: {item: round(w, 6) for item, w in f.weighting.weights.items() if w > 0}
                for f in self.filings
            },
            "budgets": {f.filing_id: dict(f.budgets) for f in self.filings},
            "filings": [
                {"filing_id": f.filing_id, "form": f.form, "k": f.k, "basis": f.weighting.basis} for f in self.filings
            ],
        }
        sections = self._sections()
        if sections:
            explanation["sections"] = sections
        return explanation


def route(
    question: str,
    filings: Sequence[FilingStats],
    k: int,
    mode: str = DEFAULT_MODE,
    temperature: float = 1.0,
    smoothing: float = DEFAULT_SMOOTHING,
    idf: bool = False,
    lexicon: Lexicon | None = None,
    filing_weights: Mapping[str, float] | None = None,
    terms: Sequence[QueryTerm] | None = None,
    sections: bool = True,
) -> RoutingDecision:
    """Route a question over one or more filings: detect its clusters, weight each filing's Items, split ``k``.

    ``k`` is split across filings first (by ``filing_weights``, default uniform; ties to the earlier filing, so
    pass filings best scope rank first), then each filing's share across its Items with ``allocate_budget``. A
    filing without any Item that has chunks gets no share. With ``k`` smaller than the number of filings, only the
    first ``k`` filings get budget.

    :param terms: pre-detected query terms (skips detection; ``lexicon`` is then only used for priors).
    :param sections: route to the sections of each budgeted Item from the filings' section statistics
        (``route_sections``; the module notes); never in mode "uniform", which ignores the question.
    """
    validate_weighting(mode, temperature, smoothing)
    check_int("k", k)
    lexicon = lexicon if lexicon is not None else Lexicon.load_default()
    query_terms = list(terms) if terms is not None else detect_query_clusters(question, lexicon)
    clusters = cluster_ids(query_terms)

    weightings: dict[str, ItemWeighting] = {}
    for stats in filings:
        if stats.filing_id in weightings:
            logger.warning("Filing {filing_id!r} given twice; routing it once.", filing_id=stats.filing_id)
            continue
        weightings[stats.filing_id] = score_items(
            clusters,
            stats.item_term_counts,
            stats.item_term_totals,
            mode=mode,
            temperature=temperature,
            smoothing=smoothing,
            item_priors=cluster_item_priors(clusters, lexicon, stats.form),
            n_chunks=stats.n_chunks,
            idf=idf,
        )
    routable = [fid for fid, w in weightings.items() if any(v > 0 for v in w.weights.values())]
    shares = {fid: (filing_weights.get(fid, 0.0) if filing_weights is not None else 1.0) for fid in routable}
    filing_budgets = allocate_budget(shares, k)
    share_total = sum(shares.values())

    routed: list[FilingRouting] = []
    budgets: list[ItemBudget] = []
    for stats in filings:
        weighting = weightings.get(stats.filing_id)
        if weighting is None or any(r.filing_id == stats.filing_id for r in routed):
            continue
        k_filing = filing_budgets.get(stats.filing_id, 0)
        item_budgets = allocate_budget(weighting.weights, k_filing) if k_filing else {}
        routed.append(FilingRouting(stats.filing_id, stats.form, k_filing, weighting, item_budgets))
        share = shares.get(stats.filing_id, 0.0) / share_total if share_total > 0 else 0.0
        for item, budget in item_budgets.items():
            routed_sections: list[SectionBudget] = []
            if sections and mode != "uniform" and stats.section_term_counts.get(item):
                item_counts = stats.item_term_counts.get(item, {})
                item_count = sum(int(item_counts.get(c, 0)) for c in clusters)
                item_total = stats.item_term_totals.get(item) or sum(item_counts.values())
                routed_sections = route_sections(
                    clusters,
                    stats.section_term_counts[item],
                    stats.section_term_totals.get(item),
                    relative_frequency(item_count, item_total, smoothing),
                    budget,
                    smoothing,
                )
            budgets.append(
                ItemBudget(stats.filing_id, item, budget, share * weighting.weights[item], tuple(routed_sections))
            )
    if not budgets:
        logger.info(
            "FLAM routed no budget: no filing has an Item with chunks ({n_filings} filings).", n_filings=len(filings)
        )
    return RoutingDecision(question, k, mode, query_terms, routed, budgets)
