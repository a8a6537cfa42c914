"""The per-Item budgets and the two cuts of FinGEAR's two-stage rerank.

Stage 1 keeps the best ``k_i`` passages of each (filing_id, Item) group; stage 2 keeps the best ``top_k`` across
the survivors (scores from ``passage_scoring.py`` or a cross-encoder). ``group_budgets`` documents where ``k_i``
comes from; ``two_stage_select`` applies both cuts with deterministic tie-breaking (higher score first, then lower
original rank).
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from haystack_fin.core import schema

# Meta keys: the Item's passage budget k_i set upstream, and what the ranker did (names live in schema.py).
BUDGET_K = schema.BUDGET_K
RERANK = schema.RERANK

GroupKey = tuple[str | None, str | None]
BudgetSource = Literal["stage1_top_k", "meta", "even_split"]

# ---------------------------------------------------------------------------------------------------------------
# Two-stage budgets
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupBudget:
    """Stage-1 budget of one (filing_id, item) group and where it came from."""

    key: GroupKey
    budget: int
    source: BudgetSource
    n_candidates: int


def even_split(top_k: int, n_groups: int) -> int:
    """``ceil(top_k / n_groups)``, at least 1: together the groups keep at least ``top_k`` for stage 2 to choose
    from, and no group is shut out before its best passage is compared with the others."""
    return max(1, math.ceil(top_k / max(n_groups, 1)))


def group_budgets(
    group_keys: Sequence[GroupKey],
    top_k: int,
    meta_budgets: Sequence[int | None] | None = None,
    stage1_top_k: int | None = None,
) -> dict[GroupKey, GroupBudget]:
    """Stage-1 budget ``k_i`` of every group, in order of first appearance.

    Rule, first that applies: ``stage1_top_k`` when given (the same for every group); else the largest valid
    ``budget_k`` (int >= 1) among the group's candidates (the router sets one value per Item; the max tolerates
    candidates that reached the ranker without it, e.g. pulled in by graph expansion); else
    ``even_split(top_k, number of groups)``.

    :param group_keys: one (filing_id, item) key per candidate.
    :param top_k: the stage-2 cut.
    :param meta_budgets: one ``budget_k`` per candidate (``None`` when absent), aligned with ``group_keys``.
    :param stage1_top_k: overrides every group's budget when set.
    """
    if meta_budgets is not None and len(meta_budgets) != len(group_keys):
        raise ValueError(f"meta_budgets has {len(meta_budgets)} entries for {len(group_keys)} candidates")
    counts: dict[GroupKey, int] = {}
    from_meta: dict[GroupKey, int] = {}
    for i, key in enumerate(group_keys):
        counts[key] = counts.get(key, 0) + 1
        k = meta_budgets[i] if meta_budgets is not None else None
        if isinstance(k, int) and not isinstance(k, bool) and k >= 1:
            from_meta[key] = max(from_meta.get(key, 0), k)
    fallback_k = even_split(top_k, len(counts))
    budgets: dict[GroupKey, GroupBudget] = {}
    for key, n in counts.items():
        if stage1_top_k is not None:
            budgets[key] = GroupBudget(key, stage1_top_k, "stage1_top_k", n)
        elif key in from_meta:
            budgets[key] = GroupBudget(key, from_meta[key], "meta", n)
        else:
            budgets[key] = GroupBudget(key, fallback_k, "even_split", n)
    return budgets


@dataclass(frozen=True)
class RankedCandidate:
    """A candidate that survived both stages. Ranks are 1-based; ``index`` is its original position."""

    index: int
    score: float
    group: GroupKey
    stage1_rank: int
    stage2_rank: int


@dataclass
class TwoStageSelection:
    """Result of ``two_stage_select``: survivors in stage-2 order and per-group counts for a trace."""

    selected: list[RankedCandidate]
    kept_stage1: dict[GroupKey, int] = field(default_factory=dict)
    kept_stage2: dict[GroupKey, int] = field(default_factory=dict)


def two_stage_select(
    scores: Sequence[float],
    group_keys: Sequence[GroupKey],
    budgets: Mapping[GroupKey, GroupBudget | int],
    top_k: int,
) -> TwoStageSelection:
    """Stage 1: the best ``budgets[g]`` candidates of each group; stage 2: the best ``top_k`` of those overall.

    Order everywhere is score descending, then original index ascending, so ties keep the retriever's order and the
    result is deterministic. Scores must be comparable across groups (one scorer over the whole candidate set).
    """
    if len(scores) != len(group_keys):
        raise ValueError(f"{len(scores)} scores for {len(group_keys)} candidates")
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    stage1_rank: dict[int, int] = {}
    kept: dict[GroupKey, int] = {}
    for i in order:
        key = group_keys[i]
        budget = budgets[key]
        k = budget.budget if isinstance(budget, GroupBudget) else budget
        if kept.get(key, 0) < k:
            kept[key] = kept.get(key, 0) + 1
            stage1_rank[i] = kept[key]
    survivors = [i for i in order if i in stage1_rank][:top_k]
    kept_stage2: dict[GroupKey, int] = {}
    selected: list[RankedCandidate] = []
    for rank, i in enumerate(survivors, start=1):
        kept_stage2[group_keys[i]] = kept_stage2.get(group_keys[i], 0) + 1
        selected.append(RankedCandidate(i, float(scores[i]), group_keys[i], stage1_rank[i], rank))
    return TwoStageSelection(selected, kept, kept_stage2)


@dataclass
class RankerCut:
    """Both cuts of one question's candidates: the groups' stage-1 budgets and the survivors."""

    budgets: dict[GroupKey, GroupBudget]
    selection: TwoStageSelection

    def group_traces(self) -> list[schema.RankerGroupTrace]:
        """Per group, in order of first appearance: its candidates, budget and where it came from, and how many
        survived each stage."""
        return [
            schema.RankerGroupTrace(
                filing_id=b.key[0],
                item=b.key[1],
                n_candidates=b.n_candidates,
                budget=b.budget,
                budget_source=b.source,
                kept_stage1=self.selection.kept_stage1.get(b.key, 0),
                kept_stage2=self.selection.kept_stage2.get(b.key, 0),
            )
            for b in self.budgets.values()
        ]


def rank_cut(
    scores: Sequence[float],
    group_keys: Sequence[GroupKey],
    meta_budgets: Sequence[int | None],
    top_k: int,
    stage1_top_k: int | None = None,
    per_item_cut: bool = True,
) -> RankerCut:
    """The budgets (``group_budgets``) and both cuts (``two_stage_select``) of one question's scored candidates;
    ``per_item_cut=False`` lets every group keep all of its candidates, so stage 2 alone decides."""
    stage1 = stage1_top_k if per_item_cut else len(scores)
    budgets = group_budgets(group_keys, top_k, meta_budgets, stage1)
    return RankerCut(budgets, two_stage_select(scores, group_keys, budgets, top_k))


def rerank_record(ranked: RankedCandidate, scorer: str, signals: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What the ranker writes into a kept passage's ``meta["rerank"]``: its score, ranks and scorer, and with the
    fallback scorer its normalized ``signals`` (without the fused score, which is ``stage1_score``)."""
    record: dict[str, Any] = {
        "stage1_score": ranked.score,
        "stage1_rank_in_item": ranked.stage1_rank,
        "stage2_rank": ranked.stage2_rank,
        "scorer": scorer,
    }
    if signals is not None:
        record["signals"] = {name: value for name, value in signals.items() if name != "score"}
    return record
