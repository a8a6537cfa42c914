"""`haystack-fin calibrate`: ModalityThresholdFallback thresholds for the configured embedder.

The seed paper's procedure: sweep the text threshold, then the table threshold at the chosen text threshold, then
the image threshold; at each stage keep the value that holds page_hit@5 and evidence_recall_bigram@5 at the level
of the fallback switched off while cutting context_words@5 most (``modality_fallback.staged_sweep``).

Retrieval runs once per question: the shipped query pipeline with the fallback bypassed (``--ablate fallback``)
returns the ranked passages, and every threshold setting is applied to that same ranked list by the fallback's
own ``decision`` and then grown by the pipeline's own ``PassageWindow``, so what is scored is what the pipeline
would return with those thresholds. The baseline is the same ranked list through the window without the fallback;
it is checked against what the pipeline itself returned (``baseline_mismatches`` must be 0).
"""

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from haystack import Document
from tqdm import tqdm

from haystack_fin.components.modality_fallback import ModalityThresholdFallback
from haystack_fin.core.evaluation import DEFAULT_KS, Question, aggregate, load_questions, score_question
from haystack_fin.core.retrieval.modality_fallback import (
    HIT_METRIC,
    RECALL_METRIC,
    WORDS_METRIC,
    FallbackConfig,
    staged_sweep,
)
from haystack_fin.evaluation_runner import (
    RETRIEVE_K,
    SETTINGS,
    HaystackFinRetrieval,
    doc_passages,
    index_question_filings,
)
from haystack_fin.pipeline_loader import pipeline_dict

REPORTED = (HIT_METRIC, RECALL_METRIC, WORDS_METRIC, "mrr", "page_hit@1", "context_words@10")


@dataclass
class RankedQuestion:
    """One question's retrieval, kept for the sweep: the ranker's output, the query embedding and analysis, and
    the passages the pipeline returned (the baseline check)."""

    question: Question
    ranked: list[Document]
    embedding: list[float]
    analysis: dict[str, Any]
    returned_ids: list[str]


def collect(fin: HaystackFinRetrieval, questions: list[Question], setting: str, quiet: bool) -> list[RankedQuestion]:
    """Run the pipeline (fallback bypassed) once per question and keep what the sweep needs."""
    runner = fin.runner
    out: list[RankedQuestion] = []
    for q in tqdm(questions, desc="Retrieving", disable=quiet):
        filing_ids = [q.doc_name] if setting == "single" else None
        result = runner.pipe.run(
            runner.inputs(q.question, filing_ids, k=RETRIEVE_K),
            include_outputs_from={"analyzer", "embedder", "ranker", "window"},
        )
        out.append(
            RankedQuestion(
                question=q,
                ranked=result["ranker"]["documents"],
                embedding=result["embedder"]["embedding"],
                analysis=result["analyzer"]["analysis"],
                returned_ids=[d.id for d in result["window"]["documents"]],
            )
        )
    return out


class Sweep:
    """Applies fallback configurations to the collected ranked lists and scores them."""

    def __init__(self, fin: HaystackFinRetrieval, fallback: ModalityThresholdFallback, ranked: list[RankedQuestion]):
        self.window = fin.runner.pipe.get_component("window")
        self.fallback = fallback
        self.ranked = ranked
        self.questions = [r.question for r in ranked]

    def _score(self, docs_per_question: list[list[Document]]) -> dict[str, Any]:
        per_question = {
            r.question.financebench_id: score_question(r.question, doc_passages(docs), DEFAULT_KS)
            for r, docs in zip(self.ranked, docs_per_question, strict=True)
        }
        overall = aggregate(per_question, self.questions)["overall"]
        return {m: round(overall[m], 4) for m in REPORTED if m in overall}

    def baseline(self) -> tuple[dict[str, Any], int]:
        """Metrics without the fallback, and how many questions' passages differ from the pipeline's own run."""
        docs = [self.window.run(documents=r.ranked, top_k=RETRIEVE_K)["documents"] for r in self.ranked]
        mismatches = sum([d.id for d in got] != r.returned_ids for got, r in zip(docs, self.ranked, strict=True))
        return self._score(docs), mismatches

    def row(self, stage: str, config: FallbackConfig) -> dict[str, Any]:
        tiers: Counter[str] = Counter()
        docs: list[list[Document]] = []
        kept: list[int] = []
        for r in self.ranked:
            decision = self.fallback.decision(r.question.question, r.ranked, r.embedding, r.analysis, config)
            tiers[decision.tier] += 1
            kept.append(len(decision.keep))
            chosen = [r.ranked[i] for i in decision.keep]
            docs.append(self.window.run(documents=chosen, top_k=RETRIEVE_K)["documents"])
        return {
            "stage": stage,
            "thresholds": dict(config.thresholds),
            "overall": self._score(docs),
            "tiers": dict(sorted(tiers.items())),
            "mean_kept": round(sum(kept) / len(kept), 2) if kept else 0.0,
        }


def _config(base: ModalityThresholdFallback, thresholds: Mapping[str, float]) -> FallbackConfig:
    return FallbackConfig.from_params(
        thresholds, base.min_counts, base.coverage, base.on_insufficient, base.direct_table_weight
    )


def run_calibration(
    questions_path: str,
    pdfs_dir: str,
    store_path: str | None,
    qdrant_url: str | None = None,
    setting: str = "single",
    text_grid: list[float] | None = None,
    table_grid: list[float] | None = None,
    image_grid: list[float] | None = None,
    tolerance: float = 0.0,
    quiet: bool = False,
    timeout_s: float | None = 600,
) -> dict[str, Any]:
    """Sweep the thresholds (see the module docstring); returns the sweep, the baseline and the chosen values."""
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {SETTINGS}, got {setting!r}")
    questions = load_questions(questions_path)
    if not questions:
        raise ValueError(f"{questions_path}: no questions")
    index_question_filings(questions, pdfs_dir, store_path, qdrant_url, quiet, timeout_s)

    text_grid = text_grid or [0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85]
    fin = HaystackFinRetrieval(store_path, qdrant_url, {"fallback"})
    try:
        # The ablated pipeline has no fallback: its settings (min counts, coverage) come from the YAML.
        node = pipeline_dict("query", store_path, qdrant_url)["components"].get("fallback")
        base = ModalityThresholdFallback.from_dict(node) if node else ModalityThresholdFallback()
        ranked = collect(fin, questions, setting, quiet)
        sweep = Sweep(fin, base, ranked)
        baseline, mismatches = sweep.baseline()
        grids = {"text": text_grid, "table": table_grid or text_grid, "image": image_grid or text_grid}
        rows, chosen = staged_sweep(
            lambda stage, thresholds: sweep.row(stage, _config(base, thresholds)), grids, baseline, tolerance
        )
    finally:
        fin.close()
    return {
        "config": {
            "questions": str(questions_path),
            "n_questions": len(questions),
            "setting": setting,
            "tolerance": tolerance,
            "min_counts": dict(base.config.min_counts),
            "coverage": base.coverage,
            "on_insufficient": base.on_insufficient,
        },
        "baseline": baseline,
        "baseline_mismatches": mismatches,
        "rows": rows,
        "chosen": chosen,
    }


def fragment(result: dict[str, Any], embedder: str = "all-MiniLM-L6-v2") -> str:
    """The YAML fragment for query.yaml: the chosen thresholds, or the fallback off when no setting kept the
    baseline's hits and recall while cutting context."""
    chosen = result["chosen"]
    params: dict[str, Any]
    if chosen is None:
        params = {"enabled": False}
        why = "no threshold kept page_hit@5 and evidence_recall_bigram@5 while cutting context_words@5: off"
    else:
        params = {"enabled": True, "thresholds": chosen["thresholds"], "min_counts": result["config"]["min_counts"]}
        o, b = chosen["overall"], result["baseline"]
        why = (
            f"{WORDS_METRIC} {o[WORDS_METRIC]:.0f} (off: {b[WORDS_METRIC]:.0f}), {HIT_METRIC} {o[HIT_METRIC]:.3f} "
            f"({b[HIT_METRIC]:.3f}), {RECALL_METRIC} {o[RECALL_METRIC]:.3f} ({b[RECALL_METRIC]:.3f})"
        )
    cfg = result["config"]
    header = (
        f"# haystack-fin calibrate: ModalityThresholdFallback thresholds for {embedder}\n"
        f"# {cfg['n_questions']} questions of {cfg['questions']}, setting {cfg['setting']}\n# {why}\n"
        "# Use: QueryRunner(fragments=[this file]), `haystack-fin eval ... --fragment this file`, or copy the values\n"
        "# into pipelines/query.yaml.\n"
    )
    return header + yaml.safe_dump({"components": {"fallback": {"init_parameters": params}}}, sort_keys=False)


def sweep_table(result: dict[str, Any]) -> str:
    """The sweep as a plain-text table (one line per setting, the baseline first, the chosen one marked)."""
    lines = [f"{'stage':<9}{'text':>6}{'table':>7}{'image':>7}  {'hit@5':>6} {'bigram@5':>8} {'words@5':>8}  tiers"]
    b = result["baseline"]
    lines.append(
        f"{'off':<9}{'':>6}{'':>7}{'':>7}  {b[HIT_METRIC]:>6.3f} {b[RECALL_METRIC]:>8.3f} {b[WORDS_METRIC]:>8.0f}"
    )
    for row in result["rows"]:
        t, o = row["thresholds"], row["overall"]
        mark = " *" if row is result["chosen"] else ""
        tiers = " ".join(f"{k}:{v}" for k, v in row["tiers"].items())
        lines.append(
            f"{row['stage']:<9}{t['text']:>6.2f}{t['table']:>7.2f}{t['image']:>7.2f}  {o[HIT_METRIC]:>6.3f} "
            f"{o[RECALL_METRIC]:>8.3f} {o[WORDS_METRIC]:>8.0f}  {tiers}{mark}"
        )
    return "\n".join(lines)
