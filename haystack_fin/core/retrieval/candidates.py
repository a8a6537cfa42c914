"""Candidate generation: which chunks of the scoped filings reach the ranker, and why.

The sources, each with its reason in the candidate's ``retrieval`` record:

- **trees**: per (filing, Item) budget, beam search down the Item's summary and question trees plus the best flat
  BM25 + dense matches the beams missed (``tree_search``), ``max(candidates_per_item, 3 * k)`` per Item;
- **statements**: the blocks of the primary statements the question names or implies, whichever Items the budgets
  name (trees and embeddings rank a grid of numbers poorly; the statement's title is a surer guide);
- **sections**: the chunks under the headings the question's concepts are reported under ("Income Taxes",
  "Liquidity and Capital Resources"), closest to the question first, since FLAM's Item routing cannot reach below the
  Item;
- **routed sections**: the chunks under a section FLAM routed to (a budget entry's ``sections``);
- **intent Items**: the best chunks of each Item the question's concepts are typically reported in (the lexicon's
  Item priors for the filing's form: Item 1 for "primary customers", MD&A and the statements for a margin), whether
  or not FLAM's budgets reached them, since FLAM weighs Items by term counts and a concept's home Item may not win;
- **headings**: the chunks under the filing's own headings that share the question's words best (BM25 over the
  headings below the Item titles: an MD&A subsection "Gross Margin", a note "Acquisitions"), closest to the
  question first; the lexicon's heading titles cover the concepts it knows, this covers the others;
- **filing-wide flat**: the best BM25 + dense matches of the whole filing (FLAM's budgets aside);
- **neighbours**: for the first prose candidates of the others (in ``CandidatePool.ranked``'s order), the prose
  nearest them on the page before and the page after under the same heading: a note or an MD&A discussion continued
  over a page break, whose words may repeat little of the question.

Every candidate records its place in the filing (``retrieval["position"]``, 0 = first chunk, 1 = last).

A chunk is a candidate once; the tree search keeps its best score, the other sources add only chunks not yet
there, with score 0 (the ranker scores them). The module knows chunks by id, meta and vector only, so it runs without
Haystack; ``DualTreeRetriever`` wraps the candidates into Documents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from haystack_fin.core import schema
from haystack_fin.core.retrieval.bm25 import LuceneBM25, content_terms
from haystack_fin.core.retrieval.filing_profile import form_family
from haystack_fin.core.retrieval.sections import SectionIndex, normalize_heading, question_sections
from haystack_fin.core.retrieval.tree_search import (
    IndexNode,
    ItemSearchResult,
    ItemTree,
    beam_search,
    build_item_trees,
    flat_search,
    fuse_rankings,
    n_candidates_for,
    unit_query,
)

if TYPE_CHECKING:
    from haystack_fin.core.retrieval.question_analysis import QuestionAnalysis

# (filing_id, Item or None for every Item of the filing) -> the budget k.
Wanted = dict[tuple[str, str | None], int]
# filing_id -> the (Item, section entry) pairs FLAM routed to, in budget order.
Routed = dict[str, list[tuple[str, Mapping[str, Any]]]]


def item_key(value: Any) -> str:
    """An Item code as the trees key it (a chunk without an Item is under "")."""
    return "" if value is None else str(value)


@dataclass
class _FlatIndex:
    """A filing's chunks across Items: ids, BM25 corpus and unit vectors (rows aligned)."""

    chunk_ids: list[str]
    bm25: LuceneBM25 | None
    vectors: np.ndarray | None

    @classmethod
    def build(cls, filing: FilingState) -> _FlatIndex:
        ids: list[str] = []
        texts: list[str] = []
        rows: list[np.ndarray] = []
        for tree in filing.trees.values():
            ids.extend(tree.leaf_ids)
            texts.extend(tree.leaf_texts)
            rows.append(tree.leaf_embeddings)
        corpus = [content_terms(t) for t in texts]
        bm25 = LuceneBM25(corpus) if any(corpus) else None
        dims = {r.shape[1] for r in rows if r.size}
        vectors = np.vstack([r for r in rows if r.size]) if len(dims) == 1 else None
        return cls(ids, bm25, vectors)


@dataclass
class _HeadingIndex:
    """A filing's distinct headings below the Item titles, as BM25 documents, with the chunks under each."""

    headings: list[str]
    chunk_ids: list[list[str]]
    bm25: LuceneBM25 | None

    @classmethod
    def build(cls, filing: FilingState) -> _HeadingIndex:
        under: dict[str, list[str]] = {}
        for chunk_id in sorted(filing.chunk_meta):
            path = filing.chunk_meta[chunk_id].get(schema.SECTION_PATH) or ()
            for heading in list(path)[1:]:  # the Item's own title is FLAM's business
                text = " ".join(str(heading).split())
                if text:
                    under.setdefault(text, []).append(chunk_id)
        headings = list(under)
        corpus = [content_terms(normalize_heading(h)) for h in headings]
        bm25 = LuceneBM25(corpus) if any(corpus) else None
        return cls(headings, [under[h] for h in headings], bm25)


@dataclass
class FilingState:
    """One filing's searchable state: its Item trees (chunk vectors as numpy rows) and each chunk's meta."""

    filing_id: str
    index_run: str | None
    trees: dict[str, ItemTree]
    chunk_meta: dict[str, Mapping[str, Any]]
    statement_ids: dict[str, list[str]]  # statement kind -> ids of its blocks, in filing order
    sections: SectionIndex  # chunk ids by the headings above them
    order: list[str] = field(default_factory=list)  # chunk ids in filing order
    _flat: _FlatIndex | None = None
    _headings: _HeadingIndex | None = None
    _order_index: dict[str, int] | None = None

    @property
    def form(self) -> str:
        """The filing's form family ("10-K", "10-Q", "8-K"; "" for earnings releases and forms without Items)."""
        for meta in self.chunk_meta.values():
            return form_family(str(meta.get(schema.FORM) or ""))
        return ""

    def flat_index(self) -> _FlatIndex:
        """Every chunk of the filing as one BM25 corpus and one vector matrix (built on first use)."""
        if self._flat is None:
            self._flat = _FlatIndex.build(self)
        return self._flat

    def order_index(self) -> dict[str, int]:
        """Each chunk id's place in ``order`` (built on first use)."""
        if self._order_index is None:
            self._order_index = {cid: i for i, cid in enumerate(self.order)}
        return self._order_index

    def position(self, chunk_id: str) -> float | None:
        """The chunk's place in the filing, 0 (first) to 1 (last); None for a chunk not in ``order``."""
        at = self.order_index().get(chunk_id)
        return None if at is None else at / max(len(self.order) - 1, 1)

    def heading_index(self) -> _HeadingIndex:
        """The filing's headings below the Item titles as a BM25 corpus (built on first use)."""
        if self._headings is None:
            self._headings = _HeadingIndex.build(self)
        return self._headings

    @classmethod
    def build(
        cls,
        filing_id: str,
        index_run: str | None,
        nodes: Iterable[IndexNode],
        chunk_meta: Mapping[str, Mapping[str, Any]],
    ) -> FilingState:
        """The state of a filing from its chunk and tree nodes (``nodes``) and its chunks' meta."""
        statement_ids: dict[str, list[str]] = {}
        for chunk_id, meta in chunk_meta.items():
            if meta.get(schema.STATEMENT):
                statement_ids.setdefault(str(meta[schema.STATEMENT]), []).append(chunk_id)
        # Chunk ids sort in filing order (zero-padded chunk numbers), which makes the heading order deterministic.
        ordered = sorted(chunk_meta)
        sections = SectionIndex((cid, chunk_meta[cid].get(schema.SECTION_PATH) or ()) for cid in ordered)
        trees = build_item_trees(filing_id, nodes)
        return cls(filing_id, index_run, trees, dict(chunk_meta), statement_ids, sections, ordered)

    def vector(self, chunk_id: str) -> np.ndarray | None:
        """The chunk's unit vector from its Item tree (None when the chunk is in no tree)."""
        tree = self.trees.get(item_key(self.chunk_meta[chunk_id].get(schema.ITEM)))
        row = tree.leaf_index.get(chunk_id) if tree is not None else None
        return tree.leaf_embeddings[row] if tree is not None and row is not None else None


@dataclass(frozen=True)
class SearchSettings:
    """How each Item is searched (``DualTreeRetriever``'s init parameters of the same names)."""

    beam_width: int = 3
    candidates_per_item: int = 10
    use_summary_tree: bool = True
    use_question_tree: bool = True
    flat_candidates_per_item: int = 5
    section_candidates: int = 8
    intent_item_candidates: int = 0
    heading_candidates: int = 0
    headings_per_question: int = 3
    filing_flat_candidates: int = 0
    neighbour_candidates: int = 0
    statement_candidates: bool = True


# The candidate sources as the ranker knows them, in the order ``CandidatePool.ranked`` takes turns.
SOURCE_ORDER: tuple[str, ...] = (
    "tree", "statement", "section", "routed", "intent_item", "heading", "flat", "neighbour", "graph"
)  # fmt: skip


def candidate_source(retrieval: Any) -> str:
    """The source a retriever or graph recorded in a candidate's ``retrieval``: the tree search reached it ("tree"),
    a flat match the trees missed or a filing-wide one ("flat"), a statement block, a chunk under the question's
    headings ("section") or under a section FLAM routed to ("routed"), an Item the question's concepts name
    ("intent_item"), a filing heading that matches the question ("heading"), the page before or after another
    candidate under its heading ("neighbour"), or the graph."""
    if not isinstance(retrieval, Mapping):
        return "tree"
    mode = str(retrieval.get("mode") or "")
    if mode == "section":
        return "routed" if "flam_score" in retrieval else "section"
    if mode in ("statement", "graph", "heading", "intent_item", "neighbour"):
        return mode
    if mode in ("flat", "filing_flat") or not retrieval.get("trees"):
        return "flat"
    return "tree"


@dataclass
class Candidate:
    """A chunk that reaches the ranker: its score from its source, its vector (None when it has none) and why."""

    chunk_id: str
    filing_id: str
    score: float
    vector: np.ndarray | None
    retrieval: dict[str, Any]
    budget_k: int


@dataclass
class CandidatePool:
    """The candidates of one question, each chunk once (insertion order breaks score ties)."""

    by_id: dict[str, Candidate] = field(default_factory=dict)

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self.by_id

    def offer(self, candidate: Candidate) -> None:
        """Keep ``candidate`` when its chunk is new or it scores higher than the one held."""
        held = self.by_id.get(candidate.chunk_id)
        if held is None or candidate.score > held.score:
            self.by_id[candidate.chunk_id] = candidate

    def ranked(self) -> list[Candidate]:
        """The candidates in turns across their sources (``SOURCE_ORDER``), each source's best first (the tree
        search's and flat matches' by score, the others in the order they were added) and its filings taking turns
        (a filing searched last is not behind every chunk of the others), so that any first N hold the best of
        every evidence place of every filing; the ranker scores them all either way."""
        queues: dict[str, list[Candidate]] = {source: [] for source in SOURCE_ORDER}
        for candidate in self.by_id.values():
            queues.setdefault(candidate_source(candidate.retrieval), []).append(candidate)
        for source in ("tree", "flat"):
            queues[source].sort(key=lambda c: -c.score)  # stable: ties keep the order they were added in
        return _take_turns(_take_turns(_by_filing(queue)) for queue in queues.values())


def _by_filing(queue: Sequence[Candidate]) -> list[list[Candidate]]:
    """``queue`` cut into one list per filing, each in its order in ``queue``."""
    by_filing: dict[str, list[Candidate]] = {}
    for candidate in queue:
        by_filing.setdefault(candidate.filing_id, []).append(candidate)
    return list(by_filing.values())


def _take_turns(queues: Iterable[Sequence[Candidate]]) -> list[Candidate]:
    """Every queue's first item, then every queue's second, and so on."""
    lists = list(queues)
    return [q[depth] for depth in range(max(map(len, lists), default=0)) for q in lists if depth < len(q)]


@dataclass(frozen=True)
class Budgets:
    """A router's budget entries read once: what to search, freshness hints and routed sections."""

    wanted: Wanted
    hints: dict[str, str]  # filing_id -> index_run the router saw
    routed: Routed


def read_budgets(budgets: Sequence[Mapping[str, Any]], k_default: int) -> Budgets:
    """``[{"filing_id", "item", "k", "index_run", "sections"}]`` as a ``Budgets``: an entry without ``item`` covers
    every Item of its filing, one without ``k`` gets ``k_default``; duplicates keep the larger budget."""
    wanted: Wanted = {}
    hints: dict[str, str] = {}
    routed: Routed = {}
    for entry in budgets:
        if "filing_id" not in entry:
            raise ValueError(f"budget entry without filing_id: {entry!r}")
        fid = str(entry["filing_id"])
        item = entry.get("item")
        key = (fid, None if item is None else str(item))
        k = int(entry["k"]) if entry.get("k") is not None else k_default
        if k > 0:
            wanted[key] = max(k, wanted.get(key, 0))
        if entry.get(schema.INDEX_RUN):
            hints[fid] = str(entry[schema.INDEX_RUN])
        if item is not None and entry.get("sections"):
            routed.setdefault(fid, []).extend((str(item), section) for section in entry["sections"])
    return Budgets(wanted, hints, routed)


_FILING_FIELD = f"meta.{schema.FILING_ID}"


def filing_ids_in_filter(filters: Mapping[str, Any]) -> list[str] | None:
    """Filing ids named by a ``meta.filing_id`` ==/in condition, at the top or inside a top-level AND."""
    conditions = [filters]
    if filters.get("operator") == "AND" and "conditions" in filters:
        conditions = list(filters["conditions"])
    for cond in conditions:
        if cond.get("field") == _FILING_FIELD and cond.get("operator") in ("==", "in"):
            value = cond.get("value")
            return [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return None


def is_only_filing_filter(filters: Mapping[str, Any]) -> bool:
    """Whether ``filters`` is a single ``meta.filing_id`` ==/in condition (it then restricts no chunk further)."""
    return filters.get("field") == _FILING_FIELD and filters.get("operator") in ("==", "in")


def plan_search(
    budgets: Sequence[Mapping[str, Any]] | None,
    filters: dict[str, Any] | None,
    k_default: int,
    filings_of: Callable[[dict[str, Any] | None], list[str]],
) -> Budgets:
    """What one query searches: the router's ``budgets`` when non-empty, else every Item of the filings
    ``filings_of(filters)`` names, each with ``k_default``. An empty ``budgets`` list without ``filters`` (the
    router had no filing to route, e.g. the scope found that no indexed filing matches) searches nothing, rather
    than every filing."""
    if budgets:
        return read_budgets(budgets, k_default)
    wanted: Wanted = {}
    if budgets is None or filters:
        wanted = {(fid, None): k_default for fid in filings_of(filters)}
    return Budgets(wanted, {}, {})


def _unit_or_none(vector: np.ndarray | None) -> np.ndarray | None:
    return vector if vector is not None and vector.any() else None


def search_item(
    tree: ItemTree,
    query: str,
    query_embedding: Sequence[float],
    k: int,
    settings: SearchSettings,
    allowed: set[str] | None = None,
    query_terms: Sequence[str] | None = None,
) -> ItemSearchResult:
    """One Item's tree candidates: beam search (with the flat matches the beams missed), or flat search when both
    trees are switched off."""
    n = n_candidates_for(k, settings.candidates_per_item)
    if settings.use_summary_tree or settings.use_question_tree:
        return beam_search(
            tree,
            query,
            query_embedding,
            beam_width=settings.beam_width,
            n_candidates=n,
            use_summary_tree=settings.use_summary_tree,
            use_question_tree=settings.use_question_tree,
            allowed_leaf_ids=allowed,
            n_flat=settings.flat_candidates_per_item,
            query_terms=query_terms,
        )
    return flat_search(tree, query, query_embedding, n, allowed, note="trees off", query_terms=query_terms)


def add_tree_candidates(
    pool: CandidatePool,
    filings: Mapping[str, FilingState],
    wanted: Wanted,
    query: str,
    query_embedding: Sequence[float],
    settings: SearchSettings,
    allowed: Mapping[str, set[str]] | None = None,
    query_terms: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Search every wanted (filing, Item) and offer its candidates to ``pool``; ``allowed``: per filing the chunk
    ids a filter admits (None: all). Returns one trace per Item searched (mode ``missing`` for a filing or Item that
    has no chunks)."""
    traces: list[dict[str, Any]] = []
    for (fid, item), k in wanted.items():
        filing = filings.get(fid)
        if filing is None:
            traces.append({"filing_id": fid, "item": item, "k": k, "mode": "missing", "candidates": []})
            continue
        admitted = allowed.get(fid) if allowed is not None else None
        for it in list(filing.trees) if item is None else [item]:
            tree = filing.trees.get(it)
            if tree is None:
                traces.append({"filing_id": fid, "item": it, "k": k, "mode": "missing", "candidates": []})
                continue
            if admitted is not None and not admitted.intersection(tree.leaf_ids):
                continue
            result = search_item(tree, query, query_embedding, k, settings, admitted, query_terms)
            traces.append({**result.trace(), "k": k})
            for cand in result.candidates:
                retrieval = {
                    "bm25": cand.bm25_score,
                    "dense": cand.dense_score,
                    "trees": list(cand.trees),
                    "tree_paths": cand.tree_paths,
                    "mode": result.mode,
                }
                vector = _unit_or_none(tree.leaf_embeddings[tree.leaf_index[cand.leaf_id]])
                pool.offer(Candidate(cand.leaf_id, fid, cand.score, vector, retrieval, k))
    return traces


def _budget_of(wanted: Wanted, fid: str, meta: Mapping[str, Any], slots: int) -> int:
    """An added chunk keeps its Item's budget when the budgets name the Item (or the whole filing), else ``slots``."""
    return wanted.get((fid, item_key(meta.get(schema.ITEM)))) or wanted.get((fid, None)) or slots


def add_statement_candidates(
    pool: CandidatePool,
    filings: Mapping[str, FilingState],
    wanted: Wanted,
    statements: Mapping[str, float],
    allowed: Mapping[str, set[str]] | None = None,
) -> schema.StatementTrace:
    """Add the blocks of the statements the question asks for (kind -> weight) of every filing, in filing order."""
    if not statements:
        return {}
    added: list[str] = []
    for fid, filing in filings.items():
        admitted = allowed.get(fid) if allowed is not None else None
        for chunk_id in sorted(i for kind in statements for i in filing.statement_ids.get(kind, ())):
            if chunk_id in pool or (admitted is not None and chunk_id not in admitted):
                continue
            meta = filing.chunk_meta[chunk_id]
            kind = str(meta[schema.STATEMENT])
            retrieval = {"mode": "statement", "statement": kind, "weight": statements[kind]}
            budget = _budget_of(wanted, fid, meta, len(statements))
            pool.offer(Candidate(chunk_id, fid, 0.0, _unit_or_none(filing.vector(chunk_id)), retrieval, budget))
            added.append(chunk_id)
    return schema.StatementTrace(asked=dict(statements), added=added)


def _closest(
    pool: CandidatePool,
    filing: FilingState,
    chunk_ids: Iterable[str],
    query_unit: np.ndarray,
    admitted: set[str] | None,
    item: str | None = None,
) -> list[tuple[float, str, np.ndarray | None]]:
    """The chunks not yet candidates (of ``item`` when given), closest to the question first."""
    rows: list[tuple[float, str, np.ndarray | None]] = []
    for chunk_id in chunk_ids:
        if chunk_id in pool or (admitted is not None and chunk_id not in admitted):
            continue
        if item is not None and item_key(filing.chunk_meta[chunk_id].get(schema.ITEM)) != item:
            continue
        vector = filing.vector(chunk_id)
        cosine = float(vector @ query_unit) if vector is not None and vector.shape == query_unit.shape else 0.0
        rows.append((cosine, chunk_id, vector))
    return sorted(rows, key=lambda row: (-row[0], row[1]))


def add_section_candidates(
    pool: CandidatePool,
    filings: Mapping[str, FilingState],
    wanted: Wanted,
    query_embedding: Sequence[float],
    titles: Mapping[str, str],
    per_title: int,
    routed: Routed | None = None,
    allowed: Mapping[str, set[str]] | None = None,
) -> schema.SectionTrace:
    """Add, per filing and heading title of the question's concepts (normalized title -> cluster), the
    ``per_title`` chunks under it closest to the question; then, per section FLAM routed to, the section's ``k``
    closest chunks of that Item under that exact heading."""
    lexicon_titles = titles if per_title else {}
    if not lexicon_titles and not routed:
        return {}
    query = np.asarray(query_embedding, dtype=np.float32)
    norm = float(np.linalg.norm(query))
    query = query / norm if norm > 0 else query

    def add(fid: str, row: tuple[float, str, np.ndarray | None], retrieval: dict[str, Any], slots: int) -> None:
        cosine, chunk_id, vector = row
        budget = _budget_of(wanted, fid, filings[fid].chunk_meta[chunk_id], slots)
        pool.offer(Candidate(chunk_id, fid, 0.0, _unit_or_none(vector), {**retrieval, "dense": cosine}, budget))

    added: list[str] = []
    for fid, filing in filings.items() if lexicon_titles else ():
        admitted = allowed.get(fid) if allowed is not None else None
        by_title: dict[str, list[str]] = {}
        for chunk_id, title in filing.sections.chunks_under(lexicon_titles).items():
            by_title.setdefault(title, []).append(chunk_id)
        for title, chunk_ids in by_title.items():
            retrieval: dict[str, Any] = {"mode": "section", "section": title, "cluster": titles[title]}
            for row in _closest(pool, filing, chunk_ids, query, admitted)[:per_title]:
                add(fid, row, retrieval, len(by_title))
                added.append(row[1])
    trace = schema.SectionTrace(asked=dict(lexicon_titles), added=added)

    routed_trace: list[dict[str, Any]] = []
    for fid, sections in (routed or {}).items():
        routed_filing = filings.get(fid)
        if routed_filing is None:
            continue
        admitted = allowed.get(fid) if allowed is not None else None
        for item, section in sections:
            heading = str(section.get("section") or "")
            title = normalize_heading(heading)
            k = int(section.get("k") or 0)
            if not title or k < 1:
                continue
            under = routed_filing.sections.chunks_under({title: heading}, whole_only=True)
            score = float(section.get("score") or 0.0)
            routed_retrieval: dict[str, Any] = {
                "mode": "section",
                "section": heading,
                "item": item,
                "flam_score": score,
            }
            ids = []
            for row in _closest(pool, routed_filing, under, query, admitted, item)[:k]:
                add(fid, row, routed_retrieval, k)
                ids.append(row[1])
            routed_trace.append(
                {"filing_id": fid, "item": item, "section": heading, "score": score, "k": k, "added": ids}
            )
    if routed_trace:
        trace["routed"] = routed_trace
    return trace


def _fused_top(
    bm25: np.ndarray, dense: np.ndarray | None, ids: Sequence[str], n: int, skip: Iterable[str] = ()
) -> list[tuple[str, float, float, float | None]]:
    """The ``n`` best (id, fused, bm25, cosine) by reciprocal-rank fusion of BM25 and cosine, ``skip`` left out."""
    if n < 1 or not len(ids):
        return []
    fused = fuse_rankings(bm25, dense)
    order = np.lexsort((np.arange(len(ids)), -fused))
    skipped = set(skip)
    out: list[tuple[str, float, float, float | None]] = []
    for i in order:
        if ids[i] in skipped:
            continue
        out.append((ids[i], float(fused[i]), float(bm25[i]), None if dense is None else float(dense[i])))
        if len(out) >= n:
            break
    return out


def add_intent_item_candidates(
    pool: CandidatePool,
    filings: Mapping[str, FilingState],
    wanted: Wanted,
    query_embedding: Sequence[float],
    item_priors: Mapping[str, Sequence[str]],
    per_item: int,
    query_terms: Sequence[str],
    allowed: Mapping[str, set[str]] | None = None,
) -> list[dict[str, Any]]:
    """Add, per filing, the ``per_item`` best flat matches of each Item its form's concepts name
    (``item_priors``: form family -> Items, most typical first; "" for filings without Items is skipped), whether
    or not the budgets searched that Item. Returns one trace entry per (filing, Item) with what it added."""
    if per_item < 1 or not item_priors:
        return []
    query_unit = unit_query(query_embedding)
    traces: list[dict[str, Any]] = []
    for fid, filing in filings.items():
        items = item_priors.get(filing.form) or ()
        admitted = allowed.get(fid) if allowed is not None else None
        for item in items:
            tree = filing.trees.get(item)
            if tree is None:
                continue
            rows = [r for r, cid in enumerate(tree.leaf_ids) if admitted is None or cid in admitted]
            if not rows:
                continue
            bm25 = tree.leaf_bm25(query_terms, rows)
            dense = tree.leaf_cosines(query_unit)[rows].astype(np.float64) if query_unit is not None else None
            ids = [tree.leaf_ids[r] for r in rows]
            added = []
            for chunk_id, fused, lexical, cosine in _fused_top(bm25, dense, ids, per_item, skip=pool.by_id):
                retrieval = {"mode": "intent_item", "item": item, "bm25": lexical, "dense": cosine, "fused": fused}
                budget = _budget_of(wanted, fid, filing.chunk_meta[chunk_id], per_item)
                vector = _unit_or_none(tree.leaf_embeddings[tree.leaf_index[chunk_id]])
                pool.offer(Candidate(chunk_id, fid, 0.0, vector, retrieval, budget))
                added.append(chunk_id)
            traces.append({"filing_id": fid, "item": item, "added": added})
    return traces


def add_heading_candidates(
    pool: CandidatePool,
    filings: Mapping[str, FilingState],
    wanted: Wanted,
    query_embedding: Sequence[float],
    query_terms: Sequence[str],
    n_headings: int,
    per_heading: int,
    allowed: Mapping[str, set[str]] | None = None,
) -> list[dict[str, Any]]:
    """Add, per filing, the ``per_heading`` chunks closest to the question under each of the ``n_headings``
    headings (below the Item titles) whose words match the question's terms best by BM25."""
    if n_headings < 1 or per_heading < 1 or not query_terms:
        return []
    query = unit_query(query_embedding)
    traces: list[dict[str, Any]] = []
    for fid, filing in filings.items():
        index = filing.heading_index()
        if index.bm25 is None:
            continue
        scores = index.bm25.scores(query_terms)
        admitted = allowed.get(fid) if allowed is not None else None
        order = [int(i) for i in np.lexsort((np.arange(len(scores)), -scores)) if scores[i] > 0][:n_headings]
        for i in order:
            rows = (
                _closest(pool, filing, index.chunk_ids[i], query, admitted)
                if query is not None
                else [(0.0, cid, filing.vector(cid)) for cid in index.chunk_ids[i] if cid not in pool]
            )
            added = []
            for cosine, chunk_id, vector in rows[:per_heading]:
                retrieval = {
                    "mode": "heading",
                    "section": index.headings[i],
                    "heading_bm25": float(scores[i]),
                    "dense": cosine,
                }
                budget = _budget_of(wanted, fid, filing.chunk_meta[chunk_id], per_heading)
                pool.offer(Candidate(chunk_id, fid, 0.0, _unit_or_none(vector), retrieval, budget))
                added.append(chunk_id)
            traces.append({"filing_id": fid, "heading": index.headings[i], "score": float(scores[i]), "added": added})
    return traces


def add_filing_flat_candidates(
    pool: CandidatePool,
    filings: Mapping[str, FilingState],
    wanted: Wanted,
    query_embedding: Sequence[float],
    query_terms: Sequence[str],
    n: int,
    allowed: Mapping[str, set[str]] | None = None,
) -> list[str]:
    """Add, per filing, its ``n`` best chunks by fused BM25 + cosine over the whole filing, whatever the budgets."""
    if n < 1:
        return []
    query_unit = unit_query(query_embedding)
    added: list[str] = []
    for fid, filing in filings.items():
        index = filing.flat_index()
        if not index.chunk_ids:
            continue
        admitted = allowed.get(fid) if allowed is not None else None
        bm25 = index.bm25.scores(query_terms) if index.bm25 is not None else np.zeros(len(index.chunk_ids))
        dense = (
            (index.vectors @ query_unit).astype(np.float64)
            if index.vectors is not None and query_unit is not None and index.vectors.shape[1] == len(query_unit)
            else None
        )
        skip = set(pool.by_id)
        if admitted is not None:
            skip |= {cid for cid in index.chunk_ids if cid not in admitted}
        for chunk_id, fused, lexical, cosine in _fused_top(bm25, dense, index.chunk_ids, n, skip=skip):
            retrieval = {"mode": "filing_flat", "bm25": lexical, "dense": cosine, "fused": fused}
            budget = _budget_of(wanted, fid, filing.chunk_meta[chunk_id], n)
            pool.offer(Candidate(chunk_id, fid, 0.0, _unit_or_none(filing.vector(chunk_id)), retrieval, budget))
            added.append(chunk_id)
    return added


def _pages(meta: Mapping[str, Any]) -> set[int]:
    return {p for p in meta.get(schema.PAGE_NUMBERS) or () if isinstance(p, int)}


def _heading_key(meta: Mapping[str, Any]) -> tuple[str, str]:
    """A chunk's Item and the first heading below the Item's title: a note's or an MD&A subsection's continuation
    keeps both over a page break, though a deeper heading may start on the new page."""
    path = list(meta.get(schema.SECTION_PATH) or ())
    return item_key(meta.get(schema.ITEM)), " ".join(str(path[1]).split()) if len(path) > 1 else ""


def _is_text(meta: Mapping[str, Any]) -> bool:
    return schema.modality_of(meta) == schema.Modality.TEXT


def page_neighbours(filing: FilingState, chunk_id: str) -> list[tuple[str, str]]:
    """For a prose chunk, the prose chunks nearest it in filing order on the page before and the page after its own,
    under the same Item and first heading (``_heading_key``), with their direction ("previous", "next"): a discussion
    runs on over a page break, while a table is whole on its page or split into blocks of its own."""
    meta = filing.chunk_meta.get(chunk_id)
    at = filing.order_index().get(chunk_id)
    if meta is None or at is None or not _is_text(meta):
        return []
    pages, key = _pages(meta), _heading_key(meta)
    if not pages:
        return []
    found: list[tuple[str, str]] = []
    for step, direction, edge in ((-1, "previous", min(pages) - 1), (1, "next", max(pages) + 1)):
        i = at + step
        while 0 <= i < len(filing.order):
            other = filing.chunk_meta[filing.order[i]]
            if _heading_key(other) != key:
                break
            other_pages = _pages(other)
            if edge in other_pages and _is_text(other):
                found.append((filing.order[i], direction))
                break
            if not other_pages <= pages | {edge}:  # past the neighbouring page (or a page without chunks)
                break
            i += step
    return found


def add_neighbour_candidates(
    pool: CandidatePool,
    filings: Mapping[str, FilingState],
    wanted: Wanted,
    seeds: int,
    allowed: Mapping[str, set[str]] | None = None,
) -> list[str]:
    """Add the page neighbours (``page_neighbours``) of the first ``seeds`` candidates of the pool's order."""
    if seeds < 1:
        return []
    added: list[str] = []
    for seed in pool.ranked()[:seeds]:
        filing = filings.get(seed.filing_id)
        if filing is None:
            continue
        admitted = allowed.get(seed.filing_id) if allowed is not None else None
        for chunk_id, direction in page_neighbours(filing, seed.chunk_id):
            if chunk_id in pool or (admitted is not None and chunk_id not in admitted):
                continue
            retrieval = {"mode": "neighbour", "of": seed.chunk_id, "direction": direction}
            budget = _budget_of(wanted, seed.filing_id, filing.chunk_meta[chunk_id], 1)
            vector = _unit_or_none(filing.vector(chunk_id))
            pool.offer(Candidate(chunk_id, seed.filing_id, 0.0, vector, retrieval, budget))
            added.append(chunk_id)
    return added


def intent_items(cluster_items: Iterable[Mapping[str, Sequence[str]]]) -> dict[str, list[str]]:
    """Per form family, the Items the question's concepts are reported in (each cluster's ``items`` prior), the
    first cluster's first; the cover page is left to the headings and statements."""
    out: dict[str, list[str]] = {}
    for items in cluster_items:
        for form, codes in items.items():
            listed = out.setdefault(form, [])
            listed.extend(c for c in codes if c not in listed and c != "cover")
    return out


def record_positions(pool: CandidatePool, filings: Mapping[str, FilingState]) -> None:
    """Write each candidate's place in its filing into its ``retrieval`` record."""
    for candidate in pool.by_id.values():
        filing = filings.get(candidate.filing_id)
        position = filing.position(candidate.chunk_id) if filing is not None else None
        if position is not None:
            candidate.retrieval["position"] = round(position, 4)


@dataclass
class Gathered:
    """One question's candidates, ranked (``CandidatePool.ranked``), and what each source did."""

    candidates: list[Candidate]
    items: list[dict[str, Any]]
    statements: schema.StatementTrace
    sections: schema.SectionTrace
    extra: dict[str, Any]  # "intent_items", "headings", "filing_flat", "neighbours" when those sources are on


def gather_candidates(
    filings: Mapping[str, FilingState],
    plan: Budgets,
    analysis: QuestionAnalysis,
    query_embedding: Sequence[float],
    settings: SearchSettings,
    allowed: Mapping[str, set[str]] | None = None,
) -> Gathered:
    """Every source's candidates for the question of ``analysis`` over the searched ``filings``: the tree search of
    each wanted Item, then the statement blocks, the sections, the intent Items, the headings, the filing-wide
    flat matches and the page neighbours that the settings switch on; ``allowed``: per filing the chunk ids a filter
    admits (None: all)."""
    pool = CandidatePool()
    wanted, query, terms = plan.wanted, analysis.question, list(analysis.content_terms)
    items = add_tree_candidates(
        pool, filings, wanted, query, query_embedding, settings, allowed, analysis.content_terms
    )
    statements = dict(analysis.statements) if settings.statement_candidates else {}
    statement_trace = add_statement_candidates(pool, filings, wanted, statements, allowed)
    titles = question_sections(analysis.clusters) if settings.section_candidates else {}
    section_trace = add_section_candidates(
        pool, filings, wanted, query_embedding, titles, settings.section_candidates, plan.routed, allowed
    )
    extra: dict[str, Any] = {}
    if settings.intent_item_candidates:
        priors = intent_items(c.items for c in analysis.clusters)
        extra["intent_items"] = add_intent_item_candidates(
            pool, filings, wanted, query_embedding, priors, settings.intent_item_candidates, terms, allowed
        )
    if settings.heading_candidates:
        extra["headings"] = add_heading_candidates(
            pool, filings, wanted, query_embedding, terms, settings.headings_per_question,
            settings.heading_candidates, allowed,
        )  # fmt: skip
    if settings.filing_flat_candidates:
        extra["filing_flat"] = add_filing_flat_candidates(
            pool, filings, wanted, query_embedding, terms, settings.filing_flat_candidates, allowed
        )
    if settings.neighbour_candidates:
        extra["neighbours"] = add_neighbour_candidates(pool, filings, wanted, settings.neighbour_candidates, allowed)
    record_positions(pool, filings)
    return Gathered(pool.ranked(), items, statement_trace, section_trace, extra)
