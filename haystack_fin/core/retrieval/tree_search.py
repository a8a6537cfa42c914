"""Dual-tree beam search over one SEC Item: a lexical walk down the summary tree, a dense walk down the question tree.

Per (filing, Item) the index holds two trees of identical topology over the Item's chunks (FinGEAR): summary nodes
(extractive summaries, searched with BM25) and their question twins (template questions, searched by cosine
similarity). ``beam_search`` walks each tree from its roots, keeping the ``beam_width`` best-scoring nodes per
level, and collects the chunks (leaves) under the final beam. The leaves reached by either tree are pooled, every
pooled leaf is scored with both BM25 and dense cosine, and the two leaf rankings are fused with reciprocal-rank
fusion (``fuse_rankings``). ``flat_search`` ranks all leaves of the Item the same way without any tree; it is the
fallback for Items that have no trees and the no-tree ablation.

Everything here is plain Python + numpy; the BM25 (terms and IDF) is ``bm25.py``, the Haystack shell is
``haystack_fin.components.dual_tree_retriever``.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from haystack_fin.core.log import get_logger
from haystack_fin.core.retrieval.bm25 import LuceneBM25, content_terms
from haystack_fin.core.schema import NodeType
from haystack_fin.core.validation import check_int

logger = get_logger(__name__)

TreeKind = Literal["summary", "question"]
SearchMode = Literal["dual_tree", "summary_tree", "question_tree", "flat"]

SUMMARY: TreeKind = "summary"
QUESTION: TreeKind = "question"

# Cormack et al. (2009): k=60 keeps the head of each ranking from dominating and is robust without tuning.
RRF_K = 60

# ---------------------------------------------------------------------------------------------------------------
# In-memory Item trees.


@dataclass(frozen=True)
class IndexNode:
    """A plain view of one stored node (chunk, summary or question), independent of any document store."""

    node_id: str
    node_type: str
    item: str
    text: str = ""
    level: int | None = None
    parent_id: str | None = None
    children_ids: tuple[str, ...] = ()
    embedding: Sequence[float] | np.ndarray | None = None


@dataclass(frozen=True)
class TreeNode:
    """An inner node of a summary or question tree; ``children`` are tree-node ids or leaf (chunk) ids."""

    node_id: str
    level: int
    children: tuple[str, ...]
    text: str = ""


def _unit_rows(vectors: Sequence[Sequence[float] | np.ndarray | None], dim: int) -> np.ndarray:
    """Row-normalized float32 matrix; a missing vector becomes a zero row (cosine 0 with everything)."""
    matrix = np.zeros((len(vectors), dim), dtype=np.float32)
    for row, vector in enumerate(vectors):
        if vector is not None and len(vector) == dim:
            matrix[row] = vector
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix


@dataclass
class ItemTree:
    """The chunks of one (filing, Item) and, when indexed, its summary and question trees.

    Leaves are kept in a fixed order; ``leaf_embeddings`` and ``question_embeddings`` are L2-normalized so a dot
    product is a cosine. The BM25 index (summary nodes + leaves, one corpus so IDF is the Item's) is built lazily on
    the first lexical query, which keeps loading a filing with many Items cheap.
    """

    filing_id: str
    item: str
    leaf_ids: list[str]
    leaf_texts: list[str]
    leaf_embeddings: np.ndarray
    summary_nodes: dict[str, TreeNode] = field(default_factory=dict)
    summary_roots: list[str] = field(default_factory=list)
    question_nodes: dict[str, TreeNode] = field(default_factory=dict)
    question_roots: list[str] = field(default_factory=list)
    question_embeddings: np.ndarray | None = None
    question_rows: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.leaf_index: dict[str, int] = {leaf_id: i for i, leaf_id in enumerate(self.leaf_ids)}
        self._summary_ids = list(self.summary_nodes)
        self._summary_corpus_row = {nid: len(self.leaf_ids) + i for i, nid in enumerate(self._summary_ids)}
        self._bm25: LuceneBM25 | None = None
        self._bm25_empty = False

    @property
    def n_leaves(self) -> int:
        return len(self.leaf_ids)

    @property
    def has_summary_tree(self) -> bool:
        return bool(self.summary_roots)

    @property
    def has_question_tree(self) -> bool:
        # A question tree without vectors cannot guide a dense walk.
        return bool(self.question_roots) and self.question_embeddings is not None and bool(self.question_rows)

    @property
    def embedding_dim(self) -> int:
        return int(self.leaf_embeddings.shape[1])

    # -- lexical --------------------------------------------------------------------------------------------------
    def _bm25_index(self) -> LuceneBM25 | None:
        if self._bm25 is None and not self._bm25_empty:
            corpus = [content_terms(t) for t in self.leaf_texts]
            corpus += [content_terms(self.summary_nodes[nid].text) for nid in self._summary_ids]
            if not any(corpus):  # rank-bm25 divides by the mean document length
                self._bm25_empty = True
                return None
            self._bm25 = LuceneBM25(corpus)
        return self._bm25

    def bm25_scores(self, query_terms: Sequence[str], corpus_rows: Sequence[int]) -> np.ndarray:
        """BM25 of the query against the given corpus rows (leaves first, then summary nodes)."""
        bm25 = self._bm25_index()
        if bm25 is None or not corpus_rows:
            return np.zeros(len(corpus_rows))
        return bm25.scores(query_terms, corpus_rows)

    def leaf_bm25(self, query_tokens: Sequence[str], leaf_rows: Sequence[int]) -> np.ndarray:
        return self.bm25_scores(query_tokens, leaf_rows)

    def summary_bm25(self, query_tokens: Sequence[str], node_ids: Sequence[str]) -> np.ndarray:
        return self.bm25_scores(query_tokens, [self._summary_corpus_row[nid] for nid in node_ids])

    def matches_vocabulary(self, query_tokens: Sequence[str]) -> bool:
        bm25 = self._bm25_index()
        return bm25 is not None and any(bm25.knows(t) for t in query_tokens)

    # -- dense ----------------------------------------------------------------------------------------------------
    def leaf_cosines(self, query_unit: np.ndarray) -> np.ndarray:
        cosines: np.ndarray = self.leaf_embeddings @ query_unit  # numpy types ``@`` of plain ndarrays as Any
        return cosines

    def question_cosines(self, query_unit: np.ndarray, node_ids: Sequence[str]) -> np.ndarray:
        assert self.question_embeddings is not None
        # A question node without a vector ranks below every embedded sibling.
        rows = [self.question_rows.get(nid, -1) for nid in node_ids]
        scores = np.full(len(rows), -2.0)
        have = [i for i, r in enumerate(rows) if r >= 0]
        if have:
            scores[have] = self.question_embeddings[[rows[i] for i in have]] @ query_unit
        return scores


def _tree_from_nodes(nodes: list[IndexNode], leaf_ids: set[str]) -> tuple[dict[str, TreeNode], list[str]]:
    tree = {
        n.node_id: TreeNode(n.node_id, n.level if n.level is not None else 0, tuple(n.children_ids), n.text)
        for n in nodes
    }
    # Roots: no parent, or a parent that is not part of this tree (a partially written tree still searches).
    roots = [n.node_id for n in nodes if n.parent_id is None or n.parent_id not in tree]
    roots.sort(key=lambda nid: (tree[nid].level, nid))
    dangling = sum(1 for n in tree.values() for c in n.children if c not in tree and c not in leaf_ids)
    if dangling:
        logger.debug(
            "{dangling} child references of {n_nodes} tree nodes point nowhere", dangling=dangling, n_nodes=len(tree)
        )
    return tree, roots


def build_item_trees(filing_id: str, nodes: Iterable[IndexNode]) -> dict[str, ItemTree]:
    """Group one filing's nodes by Item and build an ``ItemTree`` per Item that has chunks.

    Nodes of other types (the ``filing`` node) are ignored. An Item whose summary or question nodes are missing
    gets an ``ItemTree`` without that tree and is searched flat (or with the other tree only).
    """
    chunks: dict[str, list[IndexNode]] = {}
    summaries: dict[str, list[IndexNode]] = {}
    questions: dict[str, list[IndexNode]] = {}
    dim = 0
    for node in nodes:
        if node.node_type == NodeType.CHUNK:
            chunks.setdefault(node.item, []).append(node)
            if node.embedding is not None and len(node.embedding) and not dim:
                dim = len(node.embedding)
        elif node.node_type == NodeType.SUMMARY:
            summaries.setdefault(node.item, []).append(node)
        elif node.node_type == NodeType.QUESTION:
            questions.setdefault(node.item, []).append(node)
    trees: dict[str, ItemTree] = {}
    for item, leaves in chunks.items():
        leaf_ids = [n.node_id for n in leaves]
        leaf_set = set(leaf_ids)
        summary_nodes, summary_roots = _tree_from_nodes(summaries.get(item, []), leaf_set)
        question_list = questions.get(item, [])
        question_nodes, question_roots = _tree_from_nodes(question_list, leaf_set)
        embedded = [q for q in question_list if dim and q.embedding is not None and len(q.embedding) == dim]
        if len(embedded) < len(question_list):
            logger.debug(
                "filing {filing_id} item {item}: {n_nodes} question nodes without a usable vector",
                filing_id=filing_id,
                item=item,
                n_nodes=len(question_list) - len(embedded),
            )
        trees[item] = ItemTree(
            filing_id=filing_id,
            item=item,
            leaf_ids=leaf_ids,
            leaf_texts=[n.text for n in leaves],
            leaf_embeddings=_unit_rows([n.embedding for n in leaves], max(dim, 1)),
            summary_nodes=summary_nodes,
            summary_roots=summary_roots,
            question_nodes=question_nodes,
            question_roots=question_roots,
            question_embeddings=_unit_rows([q.embedding for q in embedded], dim) if embedded else None,
            question_rows={q.node_id: row for row, q in enumerate(embedded)},
        )
    orphan_items = (summaries.keys() | questions.keys()) - chunks.keys()
    if orphan_items:
        logger.warning(
            "filing {filing_id}: tree nodes without chunks for items {items}",
            filing_id=filing_id,
            items=sorted(orphan_items),
        )
    return trees


# ---------------------------------------------------------------------------------------------------------------
# Search.


@dataclass(frozen=True)
class LevelVisit:
    """One beam step: how many nodes were scored and which were kept (best first)."""

    depth: int
    scored: int
    kept: tuple[str, ...]
    kept_scores: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "depth": self.depth,
            "scored": self.scored,
            "kept": list(self.kept),
            "kept_scores": [round(s, 4) for s in self.kept_scores],
        }


@dataclass(frozen=True)
class LeafCandidate:
    """A chunk proposed for an Item, with both raw scores, the fused score and how it was reached."""

    leaf_id: str
    score: float
    bm25_score: float
    dense_score: float | None
    trees: tuple[str, ...] = ()
    tree_paths: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class ItemSearchResult:
    filing_id: str
    item: str
    mode: SearchMode
    candidates: list[LeafCandidate]
    visits: dict[str, list[LevelVisit]] = field(default_factory=dict)
    leaves_reached: dict[str, int] = field(default_factory=dict)
    note: str | None = None

    def trace(self) -> dict[str, Any]:
        """JSON-friendly account of the search (for ``--explain``)."""
        out: dict[str, Any] = {
            "filing_id": self.filing_id,
            "item": self.item,
            "mode": self.mode,
            "visited": {kind: [v.to_dict() for v in visits] for kind, visits in self.visits.items()},
            "leaves_reached": dict(self.leaves_reached),
            "candidates": [c.leaf_id for c in self.candidates],
        }
        if self.note:
            out["note"] = self.note
        return out


def unit_query(query_embedding: Sequence[float] | None) -> np.ndarray | None:
    """The query vector normalized to unit length (None when absent or all zeros)."""
    if query_embedding is None or len(query_embedding) == 0:
        return None
    vec = np.asarray(query_embedding, dtype=np.float32)
    norm = float(np.linalg.norm(vec))
    return vec / norm if norm > 0 else None


def n_candidates_for(k: int, candidates_per_item: int) -> int:
    """Candidates to retrieve for an Item with budget ``k``: enough headroom for the ranker to reorder."""
    return max(candidates_per_item, 3 * k)


def _ranks(scores: np.ndarray) -> np.ndarray:
    """1-based ranks, best first; ties keep input order so results are deterministic."""
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


def fuse_rankings(bm25: np.ndarray, dense: np.ndarray | None, k: int = RRF_K) -> np.ndarray:
    """Reciprocal-rank fusion of the BM25 and dense rankings of the same leaves, scaled so 1.0 = first in both.

    Rank fusion rather than a score sum because BM25 is unbounded and its scale depends on the Item's vocabulary,
    while cosine lives in [-1, 1]: ranks need no calibration and stay comparable across Items, which the
    retriever's output (several Items, one list) relies on. A leaf with BM25 0 shares no query term and gets no
    lexical vote.
    """
    fused = np.where(bm25 > 0, 1.0 / (k + _ranks(bm25)), 0.0)
    if dense is not None:
        fused = fused + 1.0 / (k + _ranks(dense))
    return fused * (k + 1) / 2.0


def _walk(
    nodes: dict[str, TreeNode],
    roots: list[str],
    leaf_index: dict[str, int],
    score_nodes: Callable[[list[str]], np.ndarray],
    beam_width: int,
) -> tuple[dict[int, list[str]], list[LevelVisit]]:
    """Beam walk: score a level's candidates, keep the best ``beam_width``, expand their children.

    The beam bounds the inner nodes kept per level; every leaf under a kept node is collected (the leaves are then
    ranked by ``fuse_rankings``), because a beam of 3 leaves would starve a candidate budget of max(3k, 10).
    Returns leaf row -> path of node ids from a root to the leaf (via its best-scoring parent; a chunk may have
    several parents under soft clustering) and the per-level visits.
    """
    reached: dict[int, list[str]] = {}
    visits: list[LevelVisit] = []
    seen = set(roots)
    level = [(nid, [nid]) for nid in roots]
    depth = 0
    while level:
        scores = score_nodes([nid for nid, _ in level])
        order = np.argsort(-scores, kind="stable")[:beam_width]
        kept = [level[i] for i in order]
        visits.append(
            LevelVisit(depth, len(level), tuple(nid for nid, _ in kept), tuple(float(scores[i]) for i in order))
        )
        next_level: list[tuple[str, list[str]]] = []
        for nid, path in kept:  # best first, so the first path recorded to a leaf is through its best parent
            for child in nodes[nid].children:
                row = leaf_index.get(child)
                if row is not None:
                    reached.setdefault(row, [*path, child])
                elif child in nodes and child not in seen:
                    seen.add(child)
                    next_level.append((child, [*path, child]))
        level = next_level
        depth += 1
    return reached, visits


def _rank_leaves(
    tree: ItemTree,
    rows: list[int],
    query_tokens: Sequence[str],
    query_unit: np.ndarray | None,
    n_candidates: int,
    paths: dict[str, dict[int, list[str]]],
) -> list[LeafCandidate]:
    if not rows or n_candidates <= 0:
        return []
    bm25 = tree.leaf_bm25(query_tokens, rows)
    dense = tree.leaf_cosines(query_unit)[rows].astype(np.float64) if query_unit is not None else None
    fused = fuse_rankings(bm25, dense)
    # Ties on the fused score go to the leaf more trees agreed on, then to document order.
    n_trees = np.array([sum(row in reached for reached in paths.values()) for row in rows])
    order = np.lexsort((np.arange(len(rows)), -n_trees, -fused))[:n_candidates]
    out = []
    for i in order:
        row = rows[i]
        tree_paths = {kind: list(reached[row]) for kind, reached in paths.items() if row in reached}
        out.append(
            LeafCandidate(
                leaf_id=tree.leaf_ids[row],
                score=float(fused[i]),
                bm25_score=float(bm25[i]),
                dense_score=float(dense[i]) if dense is not None else None,
                trees=tuple(tree_paths),
                tree_paths=tree_paths,
            )
        )
    return out


def _check_dim(tree: ItemTree, query_unit: np.ndarray | None) -> None:
    if query_unit is not None and len(query_unit) != tree.embedding_dim:
        raise ValueError(
            f"query embedding has dimension {len(query_unit)}, the chunks of {tree.filing_id} item {tree.item!r} "
            f"have {tree.embedding_dim}: embed the query with the indexing model"
        )


def _allowed_rows(tree: ItemTree, allowed_leaf_ids: set[str] | None) -> list[int]:
    if allowed_leaf_ids is None:
        return list(range(tree.n_leaves))
    return [row for row, leaf_id in enumerate(tree.leaf_ids) if leaf_id in allowed_leaf_ids]


def flat_search(
    tree: ItemTree,
    query: str,
    query_embedding: Sequence[float] | None,
    n_candidates: int = 10,
    allowed_leaf_ids: set[str] | None = None,
    note: str | None = None,
    query_terms: Sequence[str] | None = None,
) -> ItemSearchResult:
    """Rank every leaf of the Item by fused BM25 + dense (the no-tree fallback and ablation); ``query_terms`` as in
    ``beam_search``."""
    query_unit = unit_query(query_embedding)
    _check_dim(tree, query_unit)
    rows = _allowed_rows(tree, allowed_leaf_ids)
    terms = content_terms(query) if query_terms is None else query_terms
    candidates = _rank_leaves(tree, rows, terms, query_unit, n_candidates, {})
    return ItemSearchResult(tree.filing_id, tree.item, "flat", candidates, note=note)


def beam_search(
    tree: ItemTree,
    query: str,
    query_embedding: Sequence[float] | None,
    beam_width: int = 3,
    n_candidates: int = 10,
    use_summary_tree: bool = True,
    use_question_tree: bool = True,
    allowed_leaf_ids: set[str] | None = None,
    n_flat: int = 0,
    query_terms: Sequence[str] | None = None,
) -> ItemSearchResult:
    """Search one Item with its summary tree (BM25) and question tree (dense), pool and fuse the leaves reached.

    :param tree: the Item's nodes.
    :param query: question text (its ``content_terms`` are the BM25 query).
    :param query_embedding: question vector from the same embedder as the chunks and question nodes.
    :param beam_width: tree nodes kept per level in each tree.
    :param n_candidates: at most this many leaves returned.
    :param use_summary_tree: let the summary tree guide (ablation switch).
    :param use_question_tree: let the question tree guide (ablation switch).
    :param allowed_leaf_ids: when given, only these leaves may be returned (trees still guide).
    :param n_flat: also return the best ``n_flat`` leaves of a flat fused ranking that the trees did not reach,
        after the tree candidates. A beam can prune the branch holding the answer, and which branch that is moves
        with the clustering whenever the Item's chunks change; this keeps the best flat matches in the pool.
    :param query_terms: the question's ``content_terms`` when a question analysis already holds them; None reads
        them from ``query``.
    :returns: candidates best first with scores and root-to-leaf paths, plus what each tree visited. Falls back to
        ``flat_search`` when no usable tree is left (none indexed, both switched off, or no signal for either).
    """
    check_int("beam_width", beam_width)
    tokens = content_terms(query) if query_terms is None else query_terms
    query_unit = unit_query(query_embedding)
    skipped: list[str] = []
    run_summary = use_summary_tree and tree.has_summary_tree
    if run_summary and not tree.matches_vocabulary(tokens):
        # All-zero BM25 would make the summary beam an arbitrary pick of the first nodes.
        run_summary = False
        skipped.append("summary tree: no query term in the Item's vocabulary")
    run_question = use_question_tree and tree.has_question_tree
    if run_question and query_unit is None:
        run_question = False
        skipped.append("question tree: no query embedding")
    _check_dim(tree, query_unit)

    if not (run_summary or run_question):
        reason = "; ".join(skipped) or (
            "no tree indexed for this item" if not (tree.has_summary_tree or tree.has_question_tree) else "trees off"
        )
        return flat_search(tree, query, query_embedding, n_candidates, allowed_leaf_ids, note=reason)

    paths: dict[str, dict[int, list[str]]] = {}
    visits: dict[str, list[LevelVisit]] = {}
    if run_summary:
        paths[SUMMARY], visits[SUMMARY] = _walk(
            tree.summary_nodes,
            tree.summary_roots,
            tree.leaf_index,
            lambda ids: tree.summary_bm25(tokens, ids),
            beam_width,
        )
    if run_question:
        assert query_unit is not None
        paths[QUESTION], visits[QUESTION] = _walk(
            tree.question_nodes,
            tree.question_roots,
            tree.leaf_index,
            lambda ids: tree.question_cosines(query_unit, ids),
            beam_width,
        )
    pooled = sorted(set().union(*(reached.keys() for reached in paths.values())))
    if allowed_leaf_ids is not None:
        pooled = [row for row in pooled if tree.leaf_ids[row] in allowed_leaf_ids]
    candidates = _rank_leaves(tree, pooled, tokens, query_unit, n_candidates, paths)
    if n_flat > 0:
        taken = {c.leaf_id for c in candidates}
        rows = [r for r in _allowed_rows(tree, allowed_leaf_ids) if tree.leaf_ids[r] not in taken]
        candidates += _rank_leaves(tree, rows, tokens, query_unit, n_flat, {})
    mode: SearchMode = (
        "dual_tree" if run_summary and run_question else "summary_tree" if run_summary else "question_tree"
    )
    return ItemSearchResult(
        tree.filing_id,
        tree.item,
        mode,
        candidates,
        visits=visits,
        leaves_reached={kind: len(reached) for kind, reached in paths.items()},
        note="; ".join(skipped) or None,
    )
