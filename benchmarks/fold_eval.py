"""Company-grouped folds through the real query pipeline: per fold, the ranking model is fitted on the other
companies' dumps and ``eval financebench`` runs the held-out companies' questions with it (single setting).

The replay (``ranking_cv.py``) scores rankings without re-running retrieval; this checks that replay against the
pipeline, and measures what replay cannot (evidence recall, which needs the passages' text). Each question is
answered by a model that never saw its company.

    python benchmarks/fold_eval.py --dumps 'base-*.jsonl.gz' \\
        --set dev=/work/shared/data/financebench-dev/questions.jsonl@/work/stores/dev-rank@DEV_PDFS \\
        --set more=benchmarks/data/more_filings_questions.jsonl@/work/stores/more-rank@PDFS,HTML \\
        --fragment config.yaml --out fold-eval.json
"""

from __future__ import annotations

import argparse
import glob
import json
import tempfile
from pathlib import Path
from typing import Any

from haystack_fin.core.evaluation import aggregate, load_questions
from haystack_fin.core.retrieval.ranking_replay import grouped_folds, read_dump
from haystack_fin.evaluation_runner import run_financebench
from haystack_fin.ranker_training import fit_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dumps", action="append", required=True, help="dump files (glob) to fit on")
    parser.add_argument("--set", action="append", required=True, metavar="NAME=QUESTIONS@STORE@DIR[,DIR]")
    parser.add_argument("--fragment", action="append", default=[], help="query pipeline fragment(s) of the config")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--c", type=float, default=1.0)
    parser.add_argument("--fit", default="pairwise")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    records = [r for pattern in args.dumps for path in sorted(glob.glob(pattern)) for r in read_dump(path)]
    folds = grouped_folds([r.company for r in records], args.folds)
    sets = {}
    for spec in args.set:
        name, _, rest = spec.partition("=")
        questions, store, dirs = rest.split("@")
        sets[name] = (questions, store, dirs.split(","))
    company_of = {r.question.financebench_id: r.company for r in records}
    per_question: dict[str, dict[str, Any]] = {}
    fold_rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (train, test) in enumerate(folds, start=1):
            model = fit_model([records[j] for j in train], c=args.c, fit=args.fit)
            model_path = Path(tmp) / f"fold{i}.json"
            model.save(model_path)
            fragment = Path(tmp) / f"fold{i}.yaml"
            fragment.write_text(f"components:\n  ranker:\n    init_parameters:\n      scoring_model: {model_path}\n")
            held = {records[j].question.financebench_id for j in test}
            fold_ids: list[str] = []
            for name, (questions_path, store, dirs) in sets.items():
                lines = [
                    line
                    for line in Path(questions_path).read_text().splitlines()
                    if line.strip() and json.loads(line)["financebench_id"] in held
                ]
                if not lines:
                    continue
                subset = Path(tmp) / f"fold{i}-{name}.jsonl"
                subset.write_text("\n".join(lines) + "\n")
                result = run_financebench(
                    str(subset), dirs, "single", store, quiet=True, fragments=[*args.fragment, str(fragment)]
                )
                for qid, row in result["per_question"].items():
                    per_question[qid] = {**row, "set": name, "fold": i, "company": company_of.get(qid)}
                    fold_ids.append(qid)
                print(f"fold {i} {name}: page_hit@5 {result['overall']['page_hit@5']:.3f} ({len(lines)})", flush=True)
            hits = [per_question[q]["page_hit@5"] for q in fold_ids]
            fold_rows.append(
                {
                    "companies": sorted({records[j].company for j in test}),
                    "n": len(hits),
                    "page_hit@5": sum(hits) / len(hits) if hits else 0.0,
                }
            )
    questions = [q for questions_path, _, _ in sets.values() for q in load_questions(questions_path)]
    scored = {qid: {k: v for k, v in row.items() if isinstance(v, float)} for qid, row in per_question.items()}
    by_id = {q.financebench_id: q for q in questions}
    overall = aggregate(scored, [by_id[q] for q in scored])
    by_set = {
        name: aggregate({q: s for q, s in scored.items() if per_question[q]["set"] == name}, questions)["overall"]
        for name in sets
    }
    out = {"folds": fold_rows, "overall": overall["overall"], "by_set": by_set,
           "by_question_type": overall["by_question_type"], "by_evidence_pages": overall["by_evidence_pages"],
           "per_question": per_question, "fragments": args.fragment}  # fmt: skip
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(json.dumps({"folds": fold_rows, "overall page_hit@5": overall["overall"]["page_hit@5"]}))


if __name__ == "__main__":
    main()
