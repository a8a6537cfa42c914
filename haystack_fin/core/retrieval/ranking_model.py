"""The ranker's learned score: a logistic model over the features the ranker already computes for a candidate.

``TwoStageRanker``'s fallback scorer fuses its signals with hand-set weights (``passage_scoring.FallbackWeights``).
Those weights were chosen on eight companies; they did not carry to companies outside them. This module replaces
the hand-set fusion by a linear model fitted across companies (scikit-learn's ``LogisticRegression``), over the
same signals plus what else the pipeline knows of a candidate and cannot fuse by hand: which source proposed it
(tree search, flat match, statement, heading, graph), its Item's FLAM budget and role (cover, business, MD&A,
statements), its modality, its place in the filing, the graph's entity match, its length.

A candidate's features are computed from plain values (``CandidateFacts``, the fallback's ``PassageScore`` and the
question's flags), so the same function serves the ranker at query time and ``train-ranker`` when it dumps
features; the model is a JSON (``RankingModel.to_dict``): feature names, standardization, coefficients and, when
blended, the trees below. The score is ``sigmoid(intercept + coef . (x - mean) / scale)``, or the sigmoid of that
log-odds blended with the trees': a probability that the candidate's page is evidence, comparable across the Items
and filings of one question, so the two-stage cut works as before.

Training labels are per candidate: 1 when one of its pages is a gold page of the question. Fitting is pointwise
(class-balanced logistic regression); a ranking only needs the order within a question, which a pointwise fit
gives when the features are relative to the candidate set (most are: divided by the best candidate's value).

A linear model cannot weigh interactions (a heading match on the cover page is worth less than one in a note; a
cause question's best MD&A paragraph ranks behind the statement table it explains). ``fit_trees`` fits boosted
regression trees (scikit-learn's ``HistGradientBoostingClassifier``) on the same rows and weights; ``TreeEnsemble``
holds them as plain arrays in the model JSON and scores a question's candidates with numpy, and the model's
log-odds is a weighted mean of the logistic model's and the trees'.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from haystack_fin.core.retrieval.passage_scoring import PassageScore
from haystack_fin.core.retrieval.term_pairs import TermPairModel

MODEL_VERSION = 1
# A model with a boosted-trees part: a haystack-fin that cannot evaluate trees refuses it instead of ignoring them.
TREES_MODEL_VERSION = 2
# A model with term pairs (``term_pairs``; trees optional): older versions refuse it for the same reason.
PAIRS_MODEL_VERSION = 3

# Candidate sources (``candidates.candidate_source``).
SOURCES: tuple[str, ...] = (
    "tree", "flat", "statement", "section", "routed", "heading", "intent_item", "graph", "neighbour"
)  # fmt: skip

# Item roles: where in a filing a chunk sits, read from the Item code (10-K, 10-Q "I-2", 8-K "2.02", "EX-99.1").
ITEM_ROLES: tuple[str, ...] = ("cover", "business", "risk", "mdna", "statements", "exhibit", "other")
_ROLE_BY_ITEM = {
    "cover": "cover",
    "1": "business",
    "1A": "risk",
    "7": "mdna",
    "7A": "mdna",
    "I-2": "mdna",
    "I-3": "mdna",
    "8": "statements",
    "I-1": "statements",
}

FEATURES: tuple[str, ...] = (
    # the hand-set fusion of the signals below, and the signals (0 where a signal is not used for the question)
    "fallback_score",
    "dense",
    "lexical",
    "table_prior",
    "statement_prior",
    "section_prior",
    "consolidated",
    # the same cosine and BM25 as ranks within the candidates (1 / rank): robust to how peaked a question is
    "cosine",
    "dense_rank",
    "lexical_rank",
    "retriever_score",
    *(f"source_{s}" for s in SOURCES),
    "table",
    "image",
    "number_table",
    "cause_text",
    "cause_mdna",
    "business_item1",
    "item_budget",
    *(f"item_{r}" for r in ITEM_ROLES),
    "position",
    "entity_hit",
    "graph_score",
    "log_words",
)


# What kind of answer a question wants, from analysts' wording (not from any company's filings): a cause or driver
# of a change is explained in MD&A's prose; a description of the business is in Item 1. The model learns how much
# that is worth; the cues only say which questions the interaction features apply to.
_CAUSE_CUE = re.compile(
    r"\b(?:why|drove|drivers?|driven|due to|reasons?|caus(?:e|ed|es|ing)|attribut\w*|explain\w*|factors?|"
    r"contribut\w*|impact\w*|led to)\b",
    re.IGNORECASE,
)
_BUSINESS_CUE = re.compile(
    r"\b(?:business(?:es)?|customers?|clients?|competit\w*|seasonal\w*|cyclical\w*|industry|strategy|employees|"
    r"what does|describe|sells?)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class QuestionFlags:
    """What the interaction features need to know of the question."""

    asks_for_number: bool = False
    asks_cause: bool = False
    asks_business: bool = False

    @classmethod
    def of(cls, question: str, asks_for_number: bool) -> QuestionFlags:
        return cls(asks_for_number, bool(_CAUSE_CUE.search(question)), bool(_BUSINESS_CUE.search(question)))


def item_role(item: str | None) -> str:
    """The role of an Item code in a filing (``ITEM_ROLES``)."""
    code = str(item or "")
    if code.upper().startswith("EX-"):
        return "exhibit"
    return _ROLE_BY_ITEM.get(code, "other")


@dataclass(frozen=True)
class CandidateFacts:
    """What the pipeline knows of one candidate besides the fallback's signals.

    ``source``: one of ``SOURCES``; ``retriever_score``: the tree search's fused score (0 for added candidates);
    ``budget_k``: its Item's FLAM budget; ``position``: its chunk's place in the filing in [0, 1] (None: unknown);
    ``entity_hit`` / ``graph_score``: the graph's match of the question's metric and period / expansion score;
    ``statement``: the primary statement the chunk's table is (``core/statements.py``), not a feature.
    """

    source: str
    retriever_score: float = 0.0
    budget_k: int | None = None
    item: str | None = None
    is_table: bool = False
    is_image: bool = False
    position: float | None = None
    entity_hit: float = 0.0
    graph_score: float = 0.0
    n_words: int = 0
    statement: str | None = None


def _recip_ranks(values: Sequence[float]) -> list[float]:
    """1 / rank of each value, best (highest) first, ties by position."""
    order = sorted(range(len(values)), key=lambda i: (-values[i], i))
    out = [0.0] * len(values)
    for rank, i in enumerate(order, start=1):
        out[i] = 1.0 / rank
    return out


def feature_matrix(
    scores: Sequence[PassageScore],
    facts: Sequence[CandidateFacts],
    cosines: Sequence[float | None],
    flags: QuestionFlags,
) -> np.ndarray:
    """One row of ``FEATURES`` per candidate (aligned with ``scores``, ``facts`` and ``cosines``)."""
    if not (len(scores) == len(facts) == len(cosines)):
        raise ValueError(f"{len(scores)} scores, {len(facts)} facts and {len(cosines)} cosines for one question")
    n = len(scores)
    matrix = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if n == 0:
        return matrix
    col = {name: i for i, name in enumerate(FEATURES)}
    raw_cos = [c if c is not None else 0.0 for c in cosines]
    lexical = [s.lexical or 0.0 for s in scores]
    dense_rank = _recip_ranks(raw_cos)
    lexical_rank = _recip_ranks(lexical)
    budgets = [f.budget_k for f in facts if f.budget_k]
    top_budget = max(budgets) if budgets else 0
    for i, (score, fact) in enumerate(zip(scores, facts, strict=True)):
        row = matrix[i]
        row[col["fallback_score"]] = score.score
        row[col["dense"]] = score.dense or 0.0
        row[col["lexical"]] = lexical[i]
        row[col["table_prior"]] = score.table or 0.0
        row[col["statement_prior"]] = score.statement or 0.0
        row[col["section_prior"]] = score.section or 0.0
        # +1 consolidated, -1 about one segment, 0 when the question makes no such distinction
        row[col["consolidated"]] = 0.0 if score.consolidated is None else 2.0 * score.consolidated - 1.0
        row[col["cosine"]] = raw_cos[i]
        row[col["dense_rank"]] = dense_rank[i] if cosines[i] is not None else 0.0
        row[col["lexical_rank"]] = lexical_rank[i] if lexical[i] > 0 else 0.0
        row[col["retriever_score"]] = fact.retriever_score
        if fact.source in SOURCES:
            row[col[f"source_{fact.source}"]] = 1.0
        row[col["table"]] = float(fact.is_table)
        row[col["image"]] = float(fact.is_image)
        role = item_role(fact.item)
        prose = not (fact.is_table or fact.is_image)
        row[col["number_table"]] = float(fact.is_table and flags.asks_for_number)
        row[col["cause_text"]] = float(flags.asks_cause and prose)
        row[col["cause_mdna"]] = float(flags.asks_cause and role == "mdna")
        row[col["business_item1"]] = float(flags.asks_business and role == "business")
        row[col["item_budget"]] = (fact.budget_k or 0) / top_budget if top_budget else 0.0
        row[col[f"item_{role}"]] = 1.0
        row[col["position"]] = fact.position if fact.position is not None else 0.5
        row[col["entity_hit"]] = fact.entity_hit
        row[col["graph_score"]] = fact.graph_score
        row[col["log_words"]] = math.log1p(max(fact.n_words, 0))
    return matrix


def _known_columns(features: Sequence[str]) -> np.ndarray:
    unknown = [f for f in features if f not in FEATURES]
    if unknown:
        raise ValueError(f"ranking model names unknown feature(s) {unknown}; known: {list(FEATURES)}")
    return np.array([FEATURES.index(f) for f in features], dtype=np.int64)


_TREE_FIELDS = ("feature", "threshold", "left", "right", "value", "missing_left")
_TREE_FLOAT_FIELDS = ("threshold", "value")  # the others are node or feature indices and flags


def _flatten(trees: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Every tree's node arrays end to end, children as indices into them, and each tree's root."""
    if not trees:
        return {k: np.zeros(0) for k in (*_TREE_FIELDS, "root")}
    offsets = np.concatenate([[0], np.cumsum([len(t["feature"]) for t in trees])[:-1]]).astype(np.int64)
    flat = {k: np.concatenate([t[k] for t in trees]) for k in _TREE_FIELDS}
    for side in ("left", "right"):
        flat[side] = np.concatenate([t[side] + o for t, o in zip(trees, offsets, strict=True)])
    flat["root"] = offsets
    return flat


@dataclass
class TreeEnsemble:
    """Gradient-boosted regression trees whose leaf values sum to a log-odds (scikit-learn's
    ``HistGradientBoostingClassifier``, exported by ``from_sklearn``), evaluated with numpy; JSON in and out.

    Each tree is arrays over its nodes: ``feature`` (an index into ``features``, -1 at a leaf), ``threshold`` (a row
    goes left when its value is at most the threshold; a missing value goes where ``missing_left`` says), ``left``
    and ``right`` (child nodes), ``value`` (the leaf's contribution). Node 0 is the root.
    """

    features: tuple[str, ...]
    baseline: float
    trees: list[dict[str, np.ndarray]]

    def __post_init__(self) -> None:
        self._columns = _known_columns(self.features)
        checked: list[dict[str, np.ndarray]] = []
        for t, tree in enumerate(self.trees):
            missing = [k for k in _TREE_FIELDS if k not in tree]
            if missing:
                raise ValueError(f"tree {t} lacks {missing}")
            arrays = {
                k: np.asarray(tree[k], dtype=np.float64 if k in _TREE_FLOAT_FIELDS else np.int64) for k in _TREE_FIELDS
            }
            n = len(arrays["feature"])
            if n == 0 or any(len(a) != n for a in arrays.values()):
                raise ValueError(f"tree {t}: node arrays of different lengths or empty")
            inner = arrays["feature"] >= 0
            if np.any(arrays["feature"] >= len(self.features)):
                raise ValueError(f"tree {t}: a node splits on a feature the model does not name")
            for side in ("left", "right"):
                child = arrays[side][inner]
                if np.any(child <= np.flatnonzero(inner)) or np.any(child >= n):
                    raise ValueError(f"tree {t}: a {side} child out of range (children follow their parent)")
            checked.append(arrays)
        self.trees = checked
        self._flat = _flatten(checked)

    def logits(self, matrix: np.ndarray) -> np.ndarray:
        """``baseline`` plus every tree's leaf value, for each row of a ``FEATURES`` matrix (all trees step together,
        one level at a time: a question's candidates are scored in a few array operations)."""
        x = np.asarray(matrix, dtype=np.float64)[:, self._columns]
        if not self.trees:
            return np.full(len(x), self.baseline, dtype=np.float64)
        flat = self._flat
        node = np.broadcast_to(flat["root"], (len(x), len(flat["root"]))).copy()
        rows = np.arange(len(x))[:, None]
        while True:
            feature = flat["feature"][node]
            inner = feature >= 0
            if not inner.any():
                break
            values = x[rows, np.maximum(feature, 0)]
            go_left = np.where(np.isnan(values), flat["missing_left"][node] == 1, values <= flat["threshold"][node])
            node = np.where(inner, np.where(go_left, flat["left"][node], flat["right"][node]), node)
        return np.asarray(self.baseline + flat["value"][node].sum(axis=1), dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "baseline": float(self.baseline),
            "trees": [
                {k: [float(v) if k in _TREE_FLOAT_FIELDS else int(v) for v in tree[k]] for k in _TREE_FIELDS}
                for tree in self.trees
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TreeEnsemble:
        try:
            return cls(
                features=tuple(str(f) for f in data["features"]),
                baseline=float(data["baseline"]),
                trees=[dict(tree) for tree in data["trees"]],
            )
        except (KeyError, TypeError) as err:
            raise ValueError(f"malformed trees: {type(err).__name__}: {err}") from None

    @classmethod
    def from_sklearn(cls, model: Any, features: Sequence[str]) -> TreeEnsemble:
        """The trees of a fitted binary ``HistGradientBoostingClassifier`` whose columns are ``features``."""
        try:
            predictors = model._predictors
            baseline = float(np.ravel(model._baseline_prediction)[0])
        except AttributeError as err:
            raise ValueError(f"not a fitted HistGradientBoostingClassifier: {err}") from None
        trees = []
        for (predictor,) in predictors:
            nodes = predictor.nodes
            leaf = nodes["is_leaf"].astype(bool)
            trees.append(
                {
                    "feature": np.where(leaf, -1, nodes["feature_idx"]),
                    "threshold": np.where(leaf, 0.0, nodes["num_threshold"]),
                    "left": np.where(leaf, 0, nodes["left"]),
                    "right": np.where(leaf, 0, nodes["right"]),
                    "value": np.where(leaf, nodes["value"], 0.0),
                    "missing_left": nodes["missing_go_to_left"].astype(np.int64),
                }
            )
        return cls(features=tuple(features), baseline=baseline, trees=trees)


@dataclass
class RankingModel:
    """A fitted scorer over named features (``FEATURES`` or a subset): a logistic model, optionally blended with
    boosted trees (``trees``: the score's log-odds is ``(1 - tree_weight) * linear + tree_weight * trees``, so the
    trees add the interactions a linear model cannot weigh), optionally plus ``term_pair_weight`` times the term
    pairs' log-odds (``term_pairs``: which words of a passage mark evidence for which words of the question); JSON
    in and out.

    Usage example:
    ```python
    model = RankingModel.load("ranker_weights.json")   # a path, or a file shipped in haystack_fin/data
    features = feature_matrix(scores, facts, cosines, QuestionFlags.of(question, True))
    pairs = model.term_pairs.text_logits(question, texts, modalities) if model.term_pairs else None
    probabilities = model.score(features, pairs)
    ```
    """

    features: tuple[str, ...]
    coefficients: np.ndarray
    intercept: float = 0.0
    mean: np.ndarray | None = None
    scale: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)
    trees: TreeEnsemble | None = None
    tree_weight: float = 0.0
    term_pairs: TermPairModel | None = None
    term_pair_weight: float = 0.0

    def __post_init__(self) -> None:
        columns = _known_columns(self.features)
        if (self.term_pairs is None) != (self.term_pair_weight == 0.0) or self.term_pair_weight < 0:
            raise ValueError(f"term_pair_weight {self.term_pair_weight}: positive exactly when there are term pairs")
        if self.trees is None and self.tree_weight != 0.0:
            raise ValueError(f"tree_weight {self.tree_weight} without trees")
        if self.trees is not None and not 0.0 < self.tree_weight <= 1.0:
            raise ValueError(f"tree_weight must be in (0, 1] with trees, got {self.tree_weight}")
        n = len(self.features)
        self.coefficients = np.asarray(self.coefficients, dtype=np.float64)
        if self.coefficients.shape != (n,):
            raise ValueError(f"ranking model has {self.coefficients.shape[0]} coefficients for {n} features")
        for name in ("mean", "scale"):
            value = getattr(self, name)
            if value is not None:
                array = np.asarray(value, dtype=np.float64)
                if array.shape != (n,):
                    raise ValueError(f"ranking model {name} has {array.shape[0]} values for {n} features")
                setattr(self, name, array)
        if self.scale is not None and np.any(self.scale <= 0):
            raise ValueError("ranking model scale values must be positive")
        self._columns = columns

    def logits(self, matrix: np.ndarray, pair_logits: np.ndarray | None = None) -> np.ndarray:
        """``intercept + coef . standardized(x)`` for each row of a ``FEATURES`` matrix, blended with the trees',
        plus ``term_pair_weight`` times the term pairs' logits (``term_pairs.logits`` of the same candidates; required
        exactly when the model has term pairs)."""
        if (pair_logits is None) != (self.term_pairs is None):
            raise ValueError(
                "this ranking model has term pairs: give the candidates' pair logits"
                if self.term_pairs is not None
                else "this ranking model has no term pairs to weigh pair logits with"
            )
        blended = self._feature_logits(matrix)
        if pair_logits is None:
            return blended
        pairs = np.asarray(pair_logits, dtype=np.float64)
        if pairs.shape != blended.shape:
            raise ValueError(f"{pairs.shape[0]} pair logits for {blended.shape[0]} candidates")
        return blended + self.term_pair_weight * pairs

    def _feature_logits(self, matrix: np.ndarray) -> np.ndarray:
        x = np.asarray(matrix, dtype=np.float64)[:, self._columns]
        if self.mean is not None:
            x = x - self.mean
        if self.scale is not None:
            x = x / self.scale
        linear = np.asarray(x @ self.coefficients + self.intercept, dtype=np.float64)
        if self.trees is None:
            return linear
        return (1.0 - self.tree_weight) * linear + self.tree_weight * self.trees.logits(matrix)

    def score(self, matrix: np.ndarray, pair_logits: np.ndarray | None = None) -> np.ndarray:
        """Probability-like scores in (0, 1), one per row (``pair_logits`` as for ``logits``)."""
        logits = self.logits(matrix, pair_logits)
        return np.asarray(1.0 / (1.0 + np.exp(-np.clip(logits, -50, 50))), dtype=np.float64)

    def version(self) -> int:
        """The JSON version this model needs a reader to know: with term pairs 3, else with trees 2, else 1."""
        if self.term_pairs is not None:
            return PAIRS_MODEL_VERSION
        return MODEL_VERSION if self.trees is None else TREES_MODEL_VERSION

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": self.version(),
            "kind": "logistic",
            "features": list(self.features),
            "coefficients": [round(float(c), 6) for c in self.coefficients],
            "intercept": round(float(self.intercept), 6),
        }
        if self.mean is not None:
            out["mean"] = [round(float(v), 6) for v in self.mean]
        if self.scale is not None:
            out["scale"] = [round(float(v), 6) for v in self.scale]
        if self.info:
            out["info"] = self.info
        if self.trees is not None:
            out["tree_weight"] = self.tree_weight
            out["trees"] = self.trees.to_dict()
        if self.term_pairs is not None:
            out["term_pair_weight"] = self.term_pair_weight
            out["term_pairs"] = self.term_pairs.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RankingModel:
        versions = (MODEL_VERSION, TREES_MODEL_VERSION, PAIRS_MODEL_VERSION)
        if not isinstance(data, Mapping) or data.get("version") not in versions or data.get("kind") != "logistic":
            raise ValueError(
                f"not a haystack-fin ranking model of version {' or '.join(map(str, versions))} (kind 'logistic'): "
                f"version {data.get('version') if isinstance(data, Mapping) else None!r}"
            )
        version = data.get("version")
        if version != PAIRS_MODEL_VERSION and (data.get("trees") is not None) != (version == TREES_MODEL_VERSION):
            raise ValueError(f"a ranking model has trees exactly when its version is {TREES_MODEL_VERSION}")
        if (data.get("term_pairs") is not None) != (version == PAIRS_MODEL_VERSION):
            raise ValueError(f"a ranking model has term pairs exactly when its version is {PAIRS_MODEL_VERSION}")
        try:
            return cls(
                features=tuple(str(f) for f in data["features"]),
                coefficients=np.asarray(data["coefficients"], dtype=np.float64),
                intercept=float(data.get("intercept", 0.0)),
                mean=np.asarray(data["mean"], dtype=np.float64) if data.get("mean") is not None else None,
                scale=np.asarray(data["scale"], dtype=np.float64) if data.get("scale") is not None else None,
                info=dict(data.get("info") or {}),
                trees=TreeEnsemble.from_dict(data["trees"]) if data.get("trees") is not None else None,
                tree_weight=float(data.get("tree_weight", 0.0)),
                term_pairs=TermPairModel.from_dict(data["term_pairs"]) if data.get("term_pairs") is not None else None,
                term_pair_weight=float(data.get("term_pair_weight", 0.0)),
            )
        except (KeyError, TypeError) as err:
            raise ValueError(f"malformed ranking model: {type(err).__name__}: {err}") from None

    @classmethod
    def load(cls, path: str | Path) -> RankingModel:
        """A model from a JSON file: ``path`` as given, else the file of that name shipped in haystack_fin/data."""
        resolved = resolve_model_path(path)
        try:
            data = json.loads(resolved.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"ranking model {resolved}: not JSON ({err})") from None
        try:
            return cls.from_dict(data)
        except ValueError as err:
            raise ValueError(f"ranking model {resolved}: {err}") from None

    def save(self, path: str | Path) -> None:
        # compact: a model with term pairs holds tens of thousands of them
        Path(path).write_text(json.dumps(self.to_dict(), separators=(",", ":")) + "\n", encoding="utf-8")


def resolve_model_path(path: str | Path) -> Path:
    """A bare file name shipped in the package's data folder (``ranker_weights.json``) is that file; anything else
    is a path (``./my_model.json``, an absolute path)."""
    text = str(path)
    shipped = Path(__file__).resolve().parents[2] / "data" / text
    if "/" not in text and "\\" not in text and shipped.is_file():
        return shipped
    given = Path(path)
    if given.is_file():
        return given
    raise FileNotFoundError(f"ranking model {path}: no such file (nor a model shipped in haystack_fin/data)")


# The hand-set fusion's signals (``passage_scoring.FallbackWeights`` fields, besides dense) and the feature of each.
HAND_SET_FEATURES: Mapping[str, str] = {
    "lexical": "lexical",
    "table": "table_prior",
    "statement": "statement_prior",
    "section": "section_prior",
    "consolidated": "consolidated",
}


def tie_to_dense(matrix: np.ndarray, ratios: Mapping[str, float]) -> np.ndarray:
    """A copy of a ``FEATURES`` matrix whose dense column holds ``dense + ratio * feature`` for each tied feature:
    fitted without those features, the model keeps their weight at that ratio to dense."""
    out = np.array(matrix, dtype=np.float64, copy=True)
    dense = FEATURES.index("dense")
    for feature, ratio in ratios.items():
        out[:, dense] += ratio * out[:, FEATURES.index(feature)]
    return out


def untie(model: RankingModel, ratios: Mapping[str, float]) -> RankingModel:
    """The same scores as ``model`` (fitted on ``tie_to_dense`` rows, without the tied features) over the untouched
    ``FEATURES`` matrix: each tied feature gets dense's coefficient times its ratio, dense's scale and no centering."""
    if "dense" not in model.features or any(f in model.features for f in ratios):
        raise ValueError("untie needs a model with dense and without the tied features")
    d = model.features.index("dense")
    n = len(ratios)
    mean = model.mean if model.mean is not None else np.zeros(len(model.features))
    scale = model.scale if model.scale is not None else np.ones(len(model.features))
    return RankingModel(
        features=(*model.features, *ratios),
        coefficients=np.concatenate([model.coefficients, [model.coefficients[d] * r for r in ratios.values()]]),
        intercept=model.intercept,
        mean=np.concatenate([mean, np.zeros(n)]),
        scale=np.concatenate([scale, np.full(n, scale[d])]),
        info={**model.info, "hand_set_ratios_to_dense": {f: round(r, 6) for f, r in ratios.items()}},
    )


def question_weights(
    labels: np.ndarray,
    question_ids: Sequence[int] | np.ndarray,
    roles: Sequence[int] | np.ndarray | None = None,
) -> np.ndarray:
    """Sample weights under which every question weighs the same: a question's relevant candidates share one unit
    and its other candidates another, then relevant and other candidates are balanced overall; mean weight 1. A
    question with many candidates (a statement cut into many blocks) otherwise outweighs one with few. With ``roles``
    (one per row: the evidence role a relevant candidate holds), each role of a question has its own unit instead,
    so a question needing three pieces of evidence weighs three times one needing a single page."""
    y = np.asarray(labels, dtype=np.int64)
    groups = np.asarray(question_ids)
    role_of = np.zeros(len(y), dtype=np.int64) if roles is None else np.asarray(roles, dtype=np.int64)
    if len(role_of) != len(y):
        raise ValueError(f"{len(role_of)} evidence roles for {len(y)} candidates")
    weights = np.zeros(len(y), dtype=np.float64)
    for question in np.unique(groups):
        rows = np.flatnonzero(groups == question)
        others = rows[y[rows] == 0]
        if len(others):
            weights[others] = 1.0 / len(others)
        relevant = rows[y[rows] == 1]
        for role in np.unique(role_of[relevant]):
            chosen = relevant[role_of[relevant] == role]
            weights[chosen] = 1.0 / len(chosen)
    for label in (0, 1):
        chosen = y == label
        total = weights[chosen].sum()
        if total > 0:
            weights[chosen] *= 0.5 * len(y) / total
    return weights


def _fit_labels(
    labels: np.ndarray,
    question_ids: Sequence[int] | np.ndarray | None,
    roles: Sequence[int] | np.ndarray | None = None,
) -> np.ndarray:
    """The labels as integers, refused when a pointwise fit cannot use them (one class only, question ids that do
    not align with them, or evidence roles without question ids)."""
    y = np.asarray(labels, dtype=np.int64)
    if len(set(y.tolist())) < 2:
        raise ValueError("the labelled candidates need both relevant and irrelevant ones to fit a ranking model")
    if question_ids is not None and len(question_ids) != len(y):
        raise ValueError(f"{len(question_ids)} question ids for {len(y)} candidates")
    if roles is not None and question_ids is None:
        raise ValueError("evidence roles weigh the candidates within each question: give the question ids too")
    return y


def fit_logistic(
    matrix: np.ndarray,
    labels: np.ndarray,
    features: Sequence[str] = FEATURES,
    c: float = 1.0,
    info: Mapping[str, Any] | None = None,
    question_ids: Sequence[int] | np.ndarray | None = None,
    roles: Sequence[int] | np.ndarray | None = None,
) -> RankingModel:
    """Fit an L2-regularized logistic model on the rows of a ``FEATURES`` matrix (columns of ``features`` used;
    constant columns get coefficient 0), relevant and other candidates balanced; with ``question_ids`` (one per
    row) every question weighs the same (``question_weights``; with ``roles`` too, every evidence role does), else
    every candidate does."""
    from sklearn.linear_model import LogisticRegression

    columns = _known_columns(features)
    x = np.asarray(matrix, dtype=np.float64)[:, columns]
    y = _fit_labels(labels, question_ids, roles)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    if question_ids is None:
        model = LogisticRegression(C=c, class_weight="balanced", max_iter=2000)
        model.fit((x - mean) / scale, y)
    else:
        model = LogisticRegression(C=c, max_iter=3000)
        model.fit((x - mean) / scale, y, sample_weight=question_weights(y, question_ids, roles))
    weighting = "candidate" if question_ids is None else "question" if roles is None else "role"
    return RankingModel(
        features=tuple(features),
        coefficients=np.asarray(model.coef_[0], dtype=np.float64),
        intercept=float(model.intercept_[0]),
        mean=mean,
        scale=scale,
        info={"fit": "pointwise", "weighting": weighting, **(info or {})},
    )


# The trees' settings, chosen with the blend weight by company-grouped folds (docs/ranking.md): shallow trees, many
# candidates a leaf, so that a leaf holds many questions.
TREE_PARAMS: Mapping[str, Any] = {
    "max_depth": 4,
    "max_iter": 150,
    "learning_rate": 0.05,
    "l2_regularization": 1.0,
    "min_samples_leaf": 50,
}


def fit_trees(
    matrix: np.ndarray,
    labels: np.ndarray,
    question_ids: Sequence[int] | np.ndarray | None = None,
    params: Mapping[str, Any] = TREE_PARAMS,
    roles: Sequence[int] | np.ndarray | None = None,
) -> TreeEnsemble:
    """Boosted trees on the rows of a ``FEATURES`` matrix (every column), each question (with ``roles``: each
    evidence role) weighing the same (``question_weights``) with ``question_ids``, else relevant and other candidates
    balanced."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    x = np.asarray(matrix, dtype=np.float64)
    y = _fit_labels(labels, question_ids, roles)
    if question_ids is None:
        model = HistGradientBoostingClassifier(**params, class_weight="balanced", random_state=0)
        model.fit(x, y)
    else:
        model = HistGradientBoostingClassifier(**params, random_state=0)
        model.fit(x, y, sample_weight=question_weights(y, question_ids, roles))
    return TreeEnsemble.from_sklearn(model, FEATURES)


def fit_pairwise(
    matrix: np.ndarray,
    labels: np.ndarray,
    question_ids: Sequence[int] | np.ndarray,
    features: Sequence[str] = FEATURES,
    c: float = 1.0,
    max_pairs: int = 400,
    info: Mapping[str, Any] | None = None,
) -> RankingModel:
    """Fit the coefficients on within-question pairs (RankSVM's reduction with a logistic loss): for each question,
    each (evidence, other) candidate pair's feature difference, both ways round, at most ``max_pairs`` pairs a
    question (a fixed-seed sample), each question weighing the same. Only the order inside a question is learned,
    which is all a ranker needs; the intercept is 0."""
    from sklearn.linear_model import LogisticRegression

    columns = _known_columns(features)
    x = np.asarray(matrix, dtype=np.float64)[:, columns]
    y = np.asarray(labels, dtype=np.int64)
    groups = np.asarray(question_ids)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    rng = np.random.default_rng(0)
    diffs: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    for question in np.unique(groups):
        rows = np.flatnonzero(groups == question)
        pos, neg = rows[y[rows] == 1], rows[y[rows] == 0]
        if not len(pos) or not len(neg):
            continue
        pairs = np.array([(p, n) for p in pos for n in neg])
        if len(pairs) > max_pairs:
            pairs = pairs[rng.choice(len(pairs), max_pairs, replace=False)]
        d = z[pairs[:, 0]] - z[pairs[:, 1]]
        diffs += [d, -d]
        weights += [np.full(len(d), 1.0 / len(d))] * 2
    if not diffs:
        raise ValueError("the labelled candidates need a question with both relevant and irrelevant ones")
    features_diff = np.vstack(diffs)
    targets = np.concatenate([np.full(len(d), float(i % 2 == 0)) for i, d in enumerate(diffs)])
    model = LogisticRegression(C=c, fit_intercept=False, max_iter=2000)
    model.fit(features_diff, targets, sample_weight=np.concatenate(weights))
    return RankingModel(
        features=tuple(features),
        coefficients=np.asarray(model.coef_[0], dtype=np.float64),
        intercept=0.0,
        mean=mean,
        scale=scale,
        info={"fit": "pairwise", **(info or {})},
    )
