"""Summary-tree topology for FinGEAR's dual (summary + question) trees, from the chunk embeddings alone.

FinGEAR builds, per SEC Item, a RAPTOR-style tree bottom-up over the Item's chunks and gives every internal node two
faces: a summary (searched lexically) and the questions its subtree answers (searched densely). Both trees share one
topology: ``build_tree_topology`` reduces the embeddings (PCA, or UMAP as in RAPTOR), soft-clusters them with a
Gaussian mixture whose number of components is chosen by BIC, re-clusters any cluster larger than
``max_cluster_size``, then repeats on the cluster centroids until at most ``max_cluster_size`` nodes remain under one
root. Deterministic: fixed seeds, no thread-dependent reductions, clusters numbered in document order. The nodes'
texts are ``node_texts``'.

No Haystack import. scikit-learn is imported when clustering runs; umap-learn only when ``reducer="umap"`` is asked
for and the layer is large enough to use it (``import umap`` alone costs ~22 s, its first fit another ~14 s).
"""

import itertools
import math
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from haystack_fin.core.log import get_logger
from haystack_fin.core.validation import check_int

logger = get_logger(__name__)

Reducer = Literal["umap", "pca", "none"]
REDUCERS: tuple[str, ...] = ("umap", "pca", "none")

# Speed trade-off of the reducers (netflix-10k-2015 fixture, 359 chunks in 21 Items, 2 shared cores; end-to-end
# numbers in haystack_fin/components/tree_builder.py): all 21 topologies take ~0.85 s with "pca" and ~1.2 s with a
# warm "umap"; a process's first UMAP fit adds ~10 s (numba cache on disk) to ~25 s (cold: `import umap` + JIT).
# UMAP's non-linear neighbourhoods are what RAPTOR uses; on 30-150 chunks per Item they buy little over PCA.
DEFAULT_REDUCER: Reducer = "pca"
DEFAULT_MAX_CLUSTER_SIZE = 8
DEFAULT_N_COMPONENTS = 10
DEFAULT_SOFT_THRESHOLD = 0.1
DEFAULT_MAX_MEMBERSHIPS = 2
# At most this many points, a layer is reduced with PCA even when UMAP is asked for: a k-NN graph over a few dozen
# points says little, and UMAP's spectral initialisation breaks down when n nears n_components.
DEFAULT_MIN_POINTS_FOR_UMAP = 30
DEFAULT_MAX_CLUSTERS = 50
DEFAULT_BIC_PATIENCE = 5
DEFAULT_RANDOM_STATE = 0
REG_COVAR_FRACTION = 0.05


@dataclass(frozen=True)
class TreeNode:
    """One internal node of a tree.

    ``level`` counts from the root (0) downwards, like Haystack's HierarchicalDocumentSplitter; ``index`` is the
    node's position within its level (document order of its first leaf). ``children`` are indices of nodes on the
    next level, or leaf indices for the bottom level. ``leaves`` are all leaf indices below, sorted. ``parent`` is
    the parent's index on the level above (None for the root).
    """

    level: int
    index: int
    children: tuple[int, ...]
    leaves: tuple[int, ...]
    parent: int | None


@dataclass(frozen=True)
class TreeTopology:
    """The shape of a tree over ``n_leaves`` leaves (the chunks, by position in the input embeddings).

    ``levels[0]`` holds the root alone; ``levels[-1]`` is the bottom level, whose children are leaves. Upper levels
    form a strict tree (one parent per node); only leaves may have several parents (soft clustering):
    ``leaf_parents[i]`` lists the bottom-level nodes above leaf ``i``, its primary (most probable) parent first.
    """

    n_leaves: int
    levels: tuple[tuple[TreeNode, ...], ...]
    leaf_parents: tuple[tuple[int, ...], ...]

    @property
    def root(self) -> TreeNode:
        return self.levels[0][0]

    @property
    def depth(self) -> int:
        """Number of internal levels; leaves sit on level ``depth``."""
        return len(self.levels)

    @property
    def bottom_level(self) -> int:
        return len(self.levels) - 1

    @property
    def n_nodes(self) -> int:
        return sum(len(level) for level in self.levels)

    def nodes(self) -> Iterator[TreeNode]:
        """All internal nodes, root first, level by level."""
        for level in self.levels:
            yield from level


# ------------------------------------------------------------------------------------------------------ clustering


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to unit length (a zero row stays zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


def _pca(points: np.ndarray, n_components: int) -> np.ndarray:
    """PCA scores via a plain SVD (no sklearn import; the same input gives the same output), with a sign convention
    (largest |loading| positive) so tiny numerical differences cannot flip an axis."""
    centered = points - points.mean(axis=0, keepdims=True)
    u, s, vt = np.linalg.svd(centered, full_matrices=False)
    k = max(1, min(n_components, len(s)))
    signs = np.sign(vt[np.arange(k), np.abs(vt[:k]).argmax(axis=1)])
    signs[signs == 0] = 1.0
    scores: np.ndarray = u[:, :k] * s[:k] * signs  # numpy types arithmetic on plain ndarrays as Any
    return scores


def _umap(points: np.ndarray, n_components: int, random_state: int) -> np.ndarray:
    try:
        import umap  # ~22 s on first import (numba): only when asked for
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "reducer='umap' needs umap-learn: pip install 'haystack-fin[trees]' (or use reducer='pca')."
        ) from error
    n = len(points)
    # RAPTOR's global step uses sqrt(n) neighbours; capped so large Items keep local structure.
    n_neighbors = max(2, min(int(math.sqrt(n - 1)), 15))
    reducer = umap.UMAP(
        n_neighbors=n_neighbors,
        n_components=n_components,
        metric="cosine",
        random_state=random_state,  # also forces a single thread: what makes the result reproducible
        transform_seed=random_state,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "n_jobs overridden by random_state", spectral-init notices
        return np.asarray(reducer.fit_transform(points), dtype=float)


def _reduce(points: np.ndarray, reducer: str, n_components: int, min_points_for_umap: int, seed: int) -> np.ndarray:
    n, dim = points.shape
    # A diagonal GMM needs many fewer dimensions than points for BIC to mean anything.
    k = max(1, min(n_components, n - 2, dim))
    if reducer == "none":
        return points
    if reducer == "umap" and n > min_points_for_umap:
        return _umap(points, k, seed)
    return _pca(points, k)


def _gmm_probabilities(points: np.ndarray, k_min: int, k_max: int, seed: int, patience: int) -> np.ndarray:
    """Membership probabilities (n, k) of the Gaussian mixture with the lowest BIC for k in [k_min, k_max]; the
    search stops once ``patience`` consecutive k fail to improve on the best BIC (BIC grows roughly linearly past
    its minimum, and the fits of large k are the expensive ones)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.mixture import GaussianMixture

    # Variance floor relative to the data's spread: with an absolute floor, components collapsing onto two nearly
    # identical chunks get huge likelihoods and BIC picks n / 2 clusters on 10-30 points.
    reg_covar = max(1e-6, REG_COVAR_FRACTION * float(points.var(axis=0).mean()))
    best: tuple[float, int, GaussianMixture] | None = None
    with warnings.catch_warnings():
        # Duplicate points (boilerplate chunks) make the init find fewer clusters than asked: harmless here.
        warnings.simplefilter("ignore", ConvergenceWarning)
        for k in range(k_min, k_max + 1):
            model = GaussianMixture(
                n_components=k, covariance_type="diag", reg_covar=reg_covar, init_params="k-means++", random_state=seed
            )
            model.fit(points)
            bic = float(model.bic(points))
            if best is None or bic < best[0]:
                best = (bic, k, model)
            elif k - best[1] >= patience:
                break
        assert best is not None
        memberships: np.ndarray = best[2].predict_proba(points)
        return memberships


def _contiguous_groups(members: Sequence[int], size: int) -> list[list[int]]:
    """Document-order runs of at most ``size``: the fallback when clustering cannot separate the points (identical
    embeddings); neighbouring chunks of a filing are the next best grouping."""
    ordered = sorted(members)
    n_groups = math.ceil(len(ordered) / size)
    bounds = np.linspace(0, len(ordered), n_groups + 1).round().astype(int)
    return [ordered[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@dataclass
class _Clusterer:
    max_cluster_size: int
    reducer: str
    n_components: int
    soft_threshold: float
    max_memberships: int
    min_points_for_umap: int
    max_clusters: int
    bic_patience: int
    seed: int

    def split(self, vectors: np.ndarray, members: list[int], soft: bool) -> list[tuple[list[int], list[int]]]:
        """Cluster ``members`` (rows of ``vectors``) into groups of at most ``max_cluster_size``.

        Returns ``(group, primary)`` pairs: ``primary`` lists the group's members that have it as their most
        probable cluster; the others are soft members (only when ``soft``). Oversized groups are re-clustered on
        their own points (RAPTOR's local step), always hard, so a point is in at most ``max_memberships`` groups.
        """
        n = len(members)
        if n <= self.max_cluster_size:
            return [(list(members), list(members))]
        points = _reduce(vectors[members], self.reducer, self.n_components, self.min_points_for_umap, self.seed)
        # From 2 components up, as RAPTOR: BIC finds the natural groups and oversized ones are split below, so the
        # middle levels follow topics rather than a size quota. At most n // 2 components: clusters of one are noise.
        k_max = max(2, min(self.max_clusters, n // 2))
        probabilities = _gmm_probabilities(points, 2, k_max, self.seed, self.bic_patience)
        primary_of = probabilities.argmax(axis=1)
        groups: dict[int, list[int]] = {}
        primaries: dict[int, list[int]] = {}
        for row, member in enumerate(members):
            primaries.setdefault(int(primary_of[row]), []).append(member)
            clusters = [int(primary_of[row])]
            if soft and self.max_memberships > 1:
                ranked = np.argsort(-probabilities[row], kind="stable")
                extra = [int(c) for c in ranked[1:] if probabilities[row, c] >= self.soft_threshold]
                clusters += extra[: self.max_memberships - 1]
            for cluster in clusters:
                groups.setdefault(cluster, []).append(member)
        if len(primaries) <= 1:  # no separation at all: identical or collinear points
            return [(g, g) for g in _contiguous_groups(members, self.max_cluster_size)]
        result: list[tuple[list[int], list[int]]] = []
        for cluster in sorted(groups):
            group, primary = groups[cluster], set(primaries.get(cluster, []))
            if len(group) <= self.max_cluster_size:
                result.append((group, [m for m in group if m in primary]))
                continue
            for sub_group, _ in self.split(vectors, group, soft=False):
                # A sub-group's primary members are those whose primary cluster was this one.
                result.append((sub_group, [m for m in sub_group if m in primary]))
        return [(g, p) for g, p in result if g]


def _merge_duplicates(groups: list[tuple[list[int], list[int]]]) -> list[tuple[list[int], list[int]]]:
    """One group per member set: two leaves that are each other's soft members can yield the same group twice."""
    merged: dict[tuple[int, ...], set[int]] = {}
    for group, primary in groups:
        merged.setdefault(tuple(sorted(group)), set()).update(primary)
    return [(list(group), sorted(primary)) for group, primary in merged.items()]


def _absorb_singletons(
    groups: list[tuple[list[int], list[int]]], vectors: np.ndarray, max_size: int
) -> list[tuple[list[int], list[int]]]:
    """Merge a one-member group into the most similar group with room: a node over a single child would repeat its
    child's content and cost a summary and a question node for nothing."""
    membership = Counter(m for group, _ in groups for m in group)
    centroids = [unit_rows(vectors[group].mean(axis=0, keepdims=True))[0] for group, _ in groups]
    merged = [(list(g), list(p)) for g, p in groups]
    alive = [True] * len(groups)
    for i in range(len(merged)):
        group = merged[i][0]  # current contents: a singleton that already took in another is no longer one
        if len(group) != 1 or membership[group[0]] != 1:
            continue
        candidates = [j for j in range(len(merged)) if j != i and alive[j] and len(merged[j][0]) < max_size]
        if not candidates:
            continue
        similarities = [float(centroids[j] @ vectors[group[0]]) for j in candidates]
        target = candidates[int(np.argmax(similarities))]
        merged[target][0].append(group[0])
        merged[target][1].append(group[0])
        alive[i] = False
    # A lone soft member with no primary member is already under its primary parent: drop the group.
    return [(sorted(g), sorted(p)) for (g, p), keep in zip(merged, alive, strict=True) if keep and (p or len(g) > 1)]


def validate_tree_params(reducer: str, max_cluster_size: int, soft_threshold: float) -> None:
    """Raise ValueError naming the bad value; shared by ``build_tree_topology`` and TreeBuilder's ``__init__``."""
    if reducer not in REDUCERS:
        raise ValueError(f"reducer must be one of {REDUCERS}, got {reducer!r}.")
    if max_cluster_size < 2:
        raise ValueError(f"max_cluster_size must be at least 2, got {max_cluster_size}.")
    if not 0.0 < soft_threshold <= 1.0:
        raise ValueError(f"soft_threshold must be in (0, 1], got {soft_threshold}.")


def build_tree_topology(
    embeddings: np.ndarray | Sequence[Sequence[float]],
    max_cluster_size: int = DEFAULT_MAX_CLUSTER_SIZE,
    reducer: Reducer = DEFAULT_REDUCER,
    n_components: int = DEFAULT_N_COMPONENTS,
    soft_threshold: float = DEFAULT_SOFT_THRESHOLD,
    max_memberships: int = DEFAULT_MAX_MEMBERSHIPS,
    min_points_for_umap: int = DEFAULT_MIN_POINTS_FOR_UMAP,
    max_clusters: int = DEFAULT_MAX_CLUSTERS,
    bic_patience: int = DEFAULT_BIC_PATIENCE,
    random_state: int = DEFAULT_RANDOM_STATE,
) -> TreeTopology:
    """Build a summary-tree topology bottom-up over leaf embeddings (RAPTOR recipe, FinGEAR per-Item trees).

    Each layer is reduced (``reducer``) and clustered with a diagonal Gaussian mixture, the number of components
    chosen by BIC between 2 and ``min(max_clusters, n // 2)``; clusters larger than
    ``max_cluster_size`` are re-clustered on their own points. The next layer clusters the new nodes, represented by
    the mean (unit-normalised) embedding of the leaves below them, until at most ``max_cluster_size`` nodes are left;
    one root goes on top. A layer of ``max_cluster_size`` nodes or fewer is not clustered, so a small Item (up to
    ``max_cluster_size`` chunks) gets a single root over its chunks and no clustering at all.

    On the bottom layer a leaf also joins every further cluster whose membership probability is at least
    ``soft_threshold`` (at most ``max_memberships`` clusters in all); upper layers are hard, so nodes above the
    leaves form a strict tree. One-member clusters are merged into the most similar cluster that has room.

    :param embeddings: (n, dim) leaf embeddings, n >= 1; compared by cosine (rows are unit-normalised).
    :param max_cluster_size: most children per node, and the root's fan-out; at least 2.
    :param reducer: "pca" (default: fast, deterministic), "umap" (RAPTOR's choice; its import and JIT cost 10-35 s
        once per process, then ~0.1-0.5 s per fit; used only on layers of more than ``min_points_for_umap`` points,
        PCA below), or "none" (cluster the raw vectors; only sensible for low-dimensional embeddings).
    :param n_components: target dimensions of the reduction (at most n - 2).
    :param soft_threshold: membership probability from which a leaf also joins a second cluster.
    :param max_memberships: most clusters a leaf can belong to.
    :param min_points_for_umap: layers with at most this many points use PCA even with ``reducer="umap"``.
    :param max_clusters: largest number of mixture components tried per clustering.
    :param bic_patience: the BIC search over k stops after this many k without a better BIC.
    :param random_state: seed of the mixtures and of UMAP.
    :returns: the topology; node indices follow document order (the leaves' input order).
    """
    vectors = np.asarray(embeddings, dtype=float)
    if vectors.ndim != 2 or vectors.shape[0] == 0:
        raise ValueError(f"embeddings must be a non-empty (n, dim) array, got shape {vectors.shape}.")
    if not np.all(np.isfinite(vectors)):
        raise ValueError("embeddings contain NaN or infinite values.")
    validate_tree_params(reducer, max_cluster_size, soft_threshold)
    check_int("max_memberships", max_memberships)
    # One BLAS/OpenMP thread: on these small matrices threads only contend (on 2 shared cores an SVD of 154 x 384 took
    # 0.11 s with 2 OpenBLAS threads and 0.02 s with one; 28 mixture fits 1.3 s vs 0.2 s), and single-threaded
    # reductions make the result reproducible.
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return _build(
            vectors,
            max_cluster_size,
            _Clusterer(
                max_cluster_size=max_cluster_size,
                reducer=reducer,
                n_components=n_components,
                soft_threshold=soft_threshold,
                max_memberships=max_memberships,
                min_points_for_umap=min_points_for_umap,
                max_clusters=max(2, max_clusters),
                bic_patience=max(1, bic_patience),
                seed=random_state,
            ),
        )


def _build(vectors: np.ndarray, max_cluster_size: int, clusterer: _Clusterer) -> TreeTopology:
    leaves_unit = unit_rows(vectors)
    n = len(leaves_unit)

    # Layers bottom-up: each is a list of (children, leaves) with children indexing the layer below.
    layers: list[list[tuple[list[int], list[int]]]] = []
    leaf_parents: list[list[int]] = [[] for _ in range(n)]
    current_vectors = leaves_unit
    current_leaves: list[list[int]] = [[i] for i in range(n)]
    while len(current_leaves) > max_cluster_size:
        members = list(range(len(current_leaves)))
        bottom = not layers
        groups = _absorb_singletons(
            _merge_duplicates(clusterer.split(current_vectors, members, soft=bottom)), current_vectors, max_cluster_size
        )
        if len(groups) >= len(members):  # guarantees progress whatever the mixture did
            groups = [(g, g) for g in _contiguous_groups(members, max_cluster_size)]
        groups.sort(key=lambda pair: (pair[0][0], pair[0]))
        if bottom:
            for j, (group, primary) in enumerate(groups):
                for leaf in group:
                    leaf_parents[leaf].append(j)
                for leaf in primary:  # primary parent first
                    leaf_parents[leaf].remove(j)
                    leaf_parents[leaf].insert(0, j)
        layer = [(group, sorted({leaf for child in group for leaf in current_leaves[child]})) for group, _ in groups]
        layers.append(layer)
        current_leaves = [leaves for _, leaves in layer]
        current_vectors = unit_rows(np.stack([leaves_unit[leaves].mean(axis=0) for leaves in current_leaves]))
        logger.debug("Tree layer {layer}: {n_nodes} nodes", layer=len(layers), n_nodes=len(layer))

    if not layers:
        leaf_parents = [[0] for _ in range(n)]
    root = TreeNode(level=0, index=0, children=tuple(range(len(current_leaves))), leaves=tuple(range(n)), parent=None)
    levels: list[tuple[TreeNode, ...]] = [(root,)]
    top_down = layers[::-1]
    parents = [0] * len(current_leaves)  # parent index of each node of the level being built
    for depth, layer in enumerate(top_down, start=1):
        nodes = tuple(
            TreeNode(level=depth, index=j, children=tuple(children), leaves=tuple(leaves), parent=parents[j])
            for j, (children, leaves) in enumerate(layer)
        )
        levels.append(nodes)
        if depth < len(top_down):  # upper layers are hard partitions: each child has exactly one parent
            parents = [0] * len(top_down[depth])
            for node in nodes:
                for child in node.children:
                    parents[child] = node.index
    return TreeTopology(
        n_leaves=n,
        levels=tuple(levels),
        leaf_parents=tuple(tuple(parents) for parents in leaf_parents),
    )


# ------------------------------------------------------------------------------------------------- node texts
