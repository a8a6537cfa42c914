"""ModalityThresholdFallback trade-off: page_hit@5 / evidence_recall_bigram@5 / context_words@5 over text
thresholds x minimum text counts x coverage rules, from one retrieval per question (``haystack_fin.calibration``:
the pipeline with the fallback bypassed ranks once, every setting is applied to the same ranked lists and grown by
the pipeline's own window; the baseline row is the fallback off in the same run).

    python benchmarks/fallback_tradeoff.py --questions Q.jsonl --pdfs DIR --store /tmp/my-idx [--setting single]
        [--text 0.30:0.70:0.05] [--min-text 1,2,3] [--coverage any,none] [--table-offset 0.0] [--json OUT.json]

Table and image thresholds are the text threshold plus ``--table-offset`` (the calibration's stage 1 uses 0).
Open a copy of an index, never a folder another process is using (an embedded store admits one process).
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from haystack_fin.calibration import Sweep, collect
from haystack_fin.components.modality_fallback import ModalityThresholdFallback
from haystack_fin.core.evaluation import load_questions
from haystack_fin.core.retrieval.modality_fallback import FallbackConfig, threshold_grid
from haystack_fin.core.retrieval.passage_scoring import cosines
from haystack_fin.evaluation_runner import HaystackFinRetrieval
from haystack_fin.pipeline_loader import pipeline_dict


def print_cosines(ranked: list[Any]) -> None:
    """Median cosine to the query of the ranked top-5 chunks on a gold page vs the others, per modality: whether a
    cosine threshold can tell the evidence from the rest."""
    by: dict[tuple[str, bool], list[float]] = {}
    for r in ranked:
        sims = cosines(r.embedding, [d.embedding for d in r.ranked[:5]])
        for doc, sim in zip(r.ranked[:5], sims, strict=True):
            if sim is None:
                continue
            gold = doc.meta.get("filing_id") == r.question.doc_name and not r.question.gold_pages.isdisjoint(
                doc.meta.get("page_numbers") or []
            )
            by.setdefault((str(doc.meta.get("modality") or "text"), gold), []).append(sim)
    for (modality, gold), values in sorted(by.items()):
        values.sort()
        q = [values[int(f * (len(values) - 1))] for f in (0.1, 0.5, 0.9)]
        print(
            f"top-5 {modality:<6} {'gold' if gold else 'other':<6} n={len(values):>3}  p10/p50/p90 cosine "
            f"{q[0]:.2f}/{q[1]:.2f}/{q[2]:.2f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", required=True)
    parser.add_argument("--pdfs", required=True, help="unused beyond a check: the store must hold the filings")
    parser.add_argument("--store", required=True)
    parser.add_argument("--setting", choices=["single", "shared"], default="single")
    parser.add_argument("--text", default="0.30:0.70:0.05")
    parser.add_argument("--min-text", default="1,2,3")
    parser.add_argument("--coverage", default="any,none")
    parser.add_argument("--table-offset", type=float, default=0.0)
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--cosines", action="store_true", help="also: cosines of the ranked passages on gold pages vs the others"
    )
    args = parser.parse_args()
    if not Path(args.pdfs).is_dir():
        print(f"error: {args.pdfs}: not a folder", file=sys.stderr)
        return 2
    start, stop, step = (float(x) for x in args.text.split(":"))
    grid = threshold_grid(start, stop, step)
    questions = load_questions(args.questions)
    node = pipeline_dict("query", args.store)["components"].get("fallback")
    base = ModalityThresholdFallback.from_dict(node) if node else ModalityThresholdFallback()
    fin = HaystackFinRetrieval(args.store, None, {"fallback"})
    try:
        ranked = collect(fin, questions, args.setting, quiet=True)
        sweep = Sweep(fin, base, ranked)
        if args.cosines:
            print_cosines(ranked)
        baseline, mismatches = sweep.baseline()
        rows = []
        for coverage in args.coverage.split(","):
            for min_text in (int(x) for x in args.min_text.split(",")):
                for t in grid:
                    tt = round(min(1.0, t + args.table_offset), 4)
                    config = FallbackConfig.from_params(
                        {"text": t, "table": tt, "image": tt},
                        {**base.config.min_counts, "text": min_text},
                        coverage,  # type: ignore[arg-type]
                        base.on_insufficient,
                        base.direct_table_weight,
                    )
                    row = sweep.row("text", config)
                    row.update(min_text=min_text, coverage=coverage)
                    rows.append(row)
    finally:
        fin.close()
    print(f"{len(questions)} questions, setting {args.setting}, baseline mismatches {mismatches}")
    print(f"{'coverage':<9}{'min':>4}{'text':>6}  {'hit@5':>6} {'bigram@5':>8} {'words@5':>8}  tiers")
    b = baseline
    print(
        f"{'off':<9}{'':>4}{'':>6}  {b['page_hit@5']:>6.3f} {b['evidence_recall_bigram@5']:>8.3f} "
        f"{b['context_words@5']:>8.0f}"
    )
    for row in rows:
        o = row["overall"]
        tiers = " ".join(f"{k}:{v}" for k, v in row["tiers"].items())
        print(
            f"{row['coverage']:<9}{row['min_text']:>4}{row['thresholds']['text']:>6.2f}  {o['page_hit@5']:>6.3f} "
            f"{o['evidence_recall_bigram@5']:>8.3f} {o['context_words@5']:>8.0f}  {tiers}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"baseline": baseline, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
