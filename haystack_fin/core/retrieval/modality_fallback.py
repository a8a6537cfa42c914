"""Per-modality similarity thresholds and a tiered fallback text -> +table -> +image (MultiFinRAG's scheme).

After ranking, a question's passages are cut to the ones similar enough to the question, modality by modality, and
the least context that suffices is kept:

1. **text**: the text passages whose cosine to the query is at least ``thresholds["text"]``. Sufficient when there
   are at least ``min_counts["text"]`` of them and they cover the question's lexicon concepts (``coverage``).
2. **table**: tier 1 plus the table passages over ``thresholds["table"]``; sufficient when there are at least
   ``min_counts["table"]`` tables among them and ``min_counts["text"]`` passages in all, covering the concepts.
3. **image**: tier 2 plus the image passages over ``thresholds["image"]``, likewise with ``min_counts["image"]``.
4. **all**: no tier sufficed: the ranked passages unchanged (``on_insufficient="all"``, the default, so the
   fallback never returns less than the ranker when it cannot tell), or the image tier's passages anyway
   (``"last_tier"``).

A question that names a primary statement outright ("capex in the cash flow statement": the question analysis's
statement weight 1.0, ``core/statements.py``) starts at the table tier: its answer is a statement row.

Why cosine to the query and not the ranker's score: the fallback scorer's score is relative to the candidate set
(the best candidate gets 1.0 on every signal, ``passage_scoring``), so a threshold on it would keep the same share
of passages whatever their quality. The cosine between the query embedding and a passage's embedding is absolute,
but its scale belongs to the embedder (MiniLM's cosines sit lower than bge's), so thresholds are calibrated per
embedder (``haystack-fin calibrate``). Passages keep the ranker's order; the fallback only removes.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from haystack_fin.core.lexicon import normalize_term
from haystack_fin.core.retrieval.passage_scoring import query_cosines

MODALITIES: tuple[str, ...] = ("text", "table", "image")
TIERS: tuple[str, ...] = ("text", "table", "image")
Coverage = Literal["any", "all", "none"]
OnInsufficient = Literal["all", "last_tier"]

# The seed paper's values are for bge-base (text 0.70, table 0.65, image 0.55); these defaults are placeholders of
# the same shape, overwritten by calibration for the configured embedder (pipelines/query.yaml holds the calibrated
# values for MiniLM).
DEFAULT_THRESHOLDS: Mapping[str, float] = {"text": 0.70, "table": 0.65, "image": 0.55}
DEFAULT_MIN_COUNTS: Mapping[str, int] = {"text": 3, "table": 1, "image": 1}
# A statement named outright (statements_in_query gives it 1.0) sends the question to the table tier.
DIRECT_TABLE_WEIGHT = 1.0


@dataclass(frozen=True)
class FallbackCandidate:
    """One ranked passage as the fallback sees it: its modality, its embedding and the cosine its retriever recorded
    (neither: not judged) and its text (for the lexicon coverage check), or ``covers``: the question's concepts
    (cluster ids) its text is already known to mention, when the text is not at hand (a replayed ranking)."""

    modality: str
    embedding: Sequence[float] | None
    text: str
    cosine: float | None = None
    covers: frozenset[str] | None = None


@dataclass(frozen=True)
class FallbackConfig:
    """Thresholds (cosine, per modality), minimum counts, the coverage rule and what to do when no tier suffices."""

    thresholds: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))
    min_counts: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_MIN_COUNTS))
    coverage: Coverage = "any"
    on_insufficient: OnInsufficient = "all"
    direct_table_weight: float = DIRECT_TABLE_WEIGHT

    def __post_init__(self) -> None:
        for name, mapping, kind in (("thresholds", self.thresholds, float), ("min_counts", self.min_counts, int)):
            unknown = set(mapping) - set(MODALITIES)
            if unknown:
                raise ValueError(f"unknown modality(ies) {sorted(unknown)} in {name}; allowed: {list(MODALITIES)}")
            for modality, value in mapping.items():
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ValueError(f"{name}[{modality!r}] must be a number, got {value!r}")
                if kind is int and (value != int(value) or value < 0):
                    raise ValueError(f"{name}[{modality!r}] must be an integer >= 0, got {value!r}")
                if kind is float and not -1.0 <= float(value) <= 1.0:
                    raise ValueError(f"{name}[{modality!r}] must be a cosine in [-1, 1], got {value!r}")
        if self.coverage not in ("any", "all", "none"):
            raise ValueError(f"coverage must be 'any', 'all' or 'none', got {self.coverage!r}")
        if self.on_insufficient not in ("all", "last_tier"):
            raise ValueError(f"on_insufficient must be 'all' or 'last_tier', got {self.on_insufficient!r}")

    @classmethod
    def from_params(
        cls,
        thresholds: Mapping[str, float] | None = None,
        min_counts: Mapping[str, int] | None = None,
        coverage: Coverage = "any",
        on_insufficient: OnInsufficient = "all",
        direct_table_weight: float = DIRECT_TABLE_WEIGHT,
    ) -> "FallbackConfig":
        """A config from partial mappings (a missing modality keeps its default)."""
        return cls(
            thresholds={**DEFAULT_THRESHOLDS, **(thresholds or {})},
            min_counts={**DEFAULT_MIN_COUNTS, **(min_counts or {})},
            coverage=coverage,
            on_insufficient=on_insufficient,
            direct_table_weight=direct_table_weight,
        )

    def threshold(self, modality: str) -> float:
        return float(self.thresholds.get(modality, DEFAULT_THRESHOLDS["text"]))

    def min_count(self, modality: str) -> int:
        return int(self.min_counts.get(modality, 0))


@dataclass(frozen=True)
class FallbackDecision:
    """Which passages to keep (indexes into the input, in input order), the tier that fired and why, each tier's
    check, and every passage's cosine (None: no embedding)."""

    keep: list[int]
    tier: str
    reason: str
    start_tier: str
    checks: list[dict[str, Any]]
    cosines: list[float | None]

    def trace(self) -> dict[str, Any]:
        return {
            "tier": self.tier,
            "reason": self.reason,
            "start_tier": self.start_tier,
            "checks": self.checks,
            "n_kept": len(self.keep),
        }


def concept_phrases(clusters: Sequence[tuple[str, Sequence[str]]]) -> list[tuple[str, list[str]]]:
    """``(cluster id, normalized phrases)`` per lexicon concept of the question, from (cluster id, surfaces)."""
    out: list[tuple[str, list[str]]] = []
    for cluster_id, surfaces in clusters:
        phrases = [p for p in dict.fromkeys(normalize_term(s) for s in surfaces) if p]
        if phrases:
            out.append((cluster_id, phrases))
    return out


def concepts_mentioned(text: str, concepts: Sequence[tuple[str, list[str]]]) -> list[str]:
    """The concepts (cluster ids) a passage's text mentions (a phrase as whole words), as the coverage check reads
    it (a candidate's ``covers``)."""
    padded = f" {normalize_term(text)} "
    return [cid for cid, phrases in concepts if any(f" {p} " in padded for p in phrases)]


def decide(
    candidates: Sequence[FallbackCandidate],
    query_embedding: Sequence[float] | None,
    config: FallbackConfig,
    concepts: Sequence[tuple[str, list[str]]] = (),
    statements: Mapping[str, float] | None = None,
    precomputed_cosines: Sequence[float | None] | None = None,
) -> FallbackDecision:
    """The fallback's decision for one question's ranked passages (see the module docstring).

    :param candidates: the ranked passages, best first.
    :param query_embedding: the question's embedding (same embedder as the passages); without it and without
        recorded cosines every passage passes.
    :param config: thresholds, minimum counts, coverage rule.
    :param concepts: the question's lexicon concepts as ``concept_phrases`` gives them; empty: coverage always holds.
    :param statements: the question's statement weights (``statements_in_query``); one at ``direct_table_weight``
        or above starts at the table tier.
    :param precomputed_cosines: the candidates' cosines when already known (calibration applies many configs to one
        ranked list); None computes them.
    """
    n = len(candidates)
    if precomputed_cosines is not None:
        if len(precomputed_cosines) != n:
            raise ValueError(f"{len(precomputed_cosines)} cosines for {n} candidates")
        sims = list(precomputed_cosines)
    else:
        sims = query_cosines(query_embedding, [c.embedding for c in candidates], [c.cosine for c in candidates])
    direct = any(w >= config.direct_table_weight for w in (statements or {}).values())
    start = "table" if direct else "text"
    if n == 0:
        return FallbackDecision([], "all", "no passages", start, [], sims)
    if all(s is None for s in sims):
        return FallbackDecision(list(range(n)), "all", "no embeddings to compare: passages unchanged", start, [], sims)

    mentioned: dict[int, frozenset[str]] = {}

    def covers(i: int) -> frozenset[str]:  # lazily: only the texts of passages over a threshold are read
        if i not in mentioned:
            known = candidates[i].covers
            mentioned[i] = known if known is not None else frozenset(concepts_mentioned(candidates[i].text, concepts))
        return mentioned[i]

    over = {
        m: [
            i
            for i, c in enumerate(candidates)
            if _modality(c) == m and (s := sims[i]) is not None and s >= config.threshold(m)
        ]
        for m in MODALITIES
    }
    checks: list[dict[str, Any]] = []
    admitted: list[str] = []
    last_keep: list[int] = []
    for tier in TIERS:
        admitted.append(tier)
        if TIERS.index(tier) < TIERS.index(start):
            continue
        keep = sorted(i for m in admitted for i in over[m])
        count_ok = len(keep) >= config.min_count("text") and len(over[tier]) >= (
            config.min_count(tier) if tier != "text" else 0
        )
        found = {cid for i in keep for cid in covers(i)} if config.coverage != "none" and concepts else set()
        covered = [cid for cid, _ in concepts if cid in found]
        if config.coverage == "none" or not concepts:
            coverage_ok = True
        elif config.coverage == "any":
            coverage_ok = bool(covered)
        else:
            coverage_ok = len(covered) == len(concepts)
        check = {
            "tier": tier,
            "n_over": {m: len(over[m]) for m in admitted},
            "n_kept": len(keep),
            "count_ok": count_ok,
            "coverage_ok": coverage_ok,
        }
        if concepts and config.coverage != "none":
            check["covered"] = covered
        checks.append(check)
        last_keep = keep
        if count_ok and coverage_ok:
            why = f"{len(keep)} passage(s) over the {'/'.join(admitted)} threshold(s)"
            if direct and tier == "table":
                why = f"the question names a financial statement; {why}"
            return FallbackDecision(keep, tier, why, start, checks, sims)
    failed = "; ".join(_failure(c, config) for c in checks)
    if config.on_insufficient == "last_tier":
        return FallbackDecision(
            last_keep, "image", f"no tier sufficed ({failed}): image tier kept", start, checks, sims
        )
    return FallbackDecision(
        list(range(n)), "all", f"no tier sufficed ({failed}): passages unchanged", start, checks, sims
    )


def _modality(candidate: FallbackCandidate) -> str:
    # A passage without a known modality (a plain retriever's Document) is text.
    return candidate.modality if candidate.modality in MODALITIES else "text"


def _failure(check: Mapping[str, Any], config: FallbackConfig) -> str:
    parts = []
    if not check["count_ok"]:
        parts.append(f"{check['n_kept']} passage(s) over threshold, {config.min_count('text')} needed")
    if not check["coverage_ok"]:
        parts.append("the question's lexicon terms not covered")
    return f"{check['tier']}: {', '.join(parts)}"


# --- calibration: choosing thresholds from a sweep --------------------------------------------------------------

HIT_METRIC = "page_hit@5"
RECALL_METRIC = "evidence_recall_bigram@5"
WORDS_METRIC = "context_words@5"


def threshold_grid(start: float, stop: float, step: float) -> list[float]:
    """``start, start + step, ... <= stop``, rounded to 4 decimals (no float drift in the YAML)."""
    if step <= 0 or stop < start:
        raise ValueError(f"a threshold grid needs start <= stop and step > 0, got {start}:{stop}:{step}")
    n = round((stop - start) / step)
    return [round(start + i * step, 4) for i in range(n + 1) if start + i * step <= stop + 1e-9]


def choose_row(
    rows: Sequence[Mapping[str, Any]],
    baseline: Mapping[str, float],
    tolerance: float = 0.0,
    kept: Sequence[str] = (HIT_METRIC, RECALL_METRIC),
) -> Mapping[str, Any] | None:
    """The seed paper's rule: among the sweep ``rows`` (each with ``overall`` metrics) that keep every ``kept``
    metric (page_hit@5 and evidence_recall_bigram@5) within ``tolerance`` of ``baseline`` (the fallback off, same
    run), the one that cuts ``context_words@5`` most; ties go to the earlier row. None when no row keeps them all or
    none cuts words."""
    best: Mapping[str, Any] | None = None
    for row in rows:
        overall = row["overall"]
        keeps = all(overall[m] >= baseline[m] - tolerance - 1e-9 for m in kept)
        if not keeps or overall[WORDS_METRIC] >= baseline[WORDS_METRIC]:
            continue
        if best is None or overall[WORDS_METRIC] < best["overall"][WORDS_METRIC]:
            best = row
    return best


def staged_sweep(
    row: Callable[[str, Mapping[str, float]], dict[str, Any]],
    grids: Mapping[str, Sequence[float]],
    baseline: Mapping[str, float],
    tolerance: float = 0.0,
    kept: Sequence[str] = (HIT_METRIC, RECALL_METRIC),
) -> tuple[list[dict[str, Any]], Mapping[str, Any] | None]:
    """The calibration's sweep: the text threshold first (every modality at the swept value), then the table and
    the image thresholds, each at the values chosen before (``choose_row`` at each stage, the stage's rows against
    the row chosen so far). ``row(stage, thresholds)`` scores one setting (a dict with ``overall`` metrics and the
    ``thresholds``). Returns every row and the chosen one (None: no text threshold keeps the baseline)."""
    rows: list[dict[str, Any]] = []
    chosen: Mapping[str, Any] | None = None
    fixed: dict[str, float] = {}
    for modality in TIERS:
        stage = [row(modality, {m: fixed.get(m, t) for m in MODALITIES}) for t in grids[modality]]
        rows += stage
        chosen = choose_row(stage if chosen is None else [chosen, *stage], baseline, tolerance, kept) or chosen
        if chosen is None:
            break  # no text threshold keeps the hits: nothing to build on
        fixed[modality] = chosen["thresholds"][modality]
    return rows, chosen
