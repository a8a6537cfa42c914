"""Dump the ranker's candidates and features for several query-pipeline configurations in one process.

Each configuration is a pipeline fragment (init parameters over pipelines/query.yaml) given inline as JSON; every
question set is run against its store once per configuration (``ranker_training.dump_features``: the query pipeline
in the single setting, the candidates replayed to check the dump is faithful). The filing cache is shared across
configurations, so the store is read once.

    python benchmarks/dump_configs.py --store /work/stores/dev-rank --filings DEV_PDFS \\
        --questions dev=/work/shared/data/financebench-dev/questions.jsonl \\
        --config 'base={}' --config 'no_summary={"retriever": {"use_summary_tree": false}}' --out /tmp/dumps
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import yaml

from haystack_fin.core.retrieval.ranking_replay import write_dump
from haystack_fin.ranker_training import dump_features


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True)
    parser.add_argument("--filings", action="append", required=True)
    parser.add_argument("--questions", action="append", required=True, metavar="SET=JSONL")
    parser.add_argument("--config", action="append", required=True, metavar="NAME=JSON")
    parser.add_argument("--out", required=True, help="folder for NAME-SET.jsonl.gz and a log")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.config:
            name, _, raw = spec.partition("=")
            components = json.loads(raw or "{}")
            fragments = []
            if components:
                path = Path(tmp) / f"{name}.yaml"
                path.write_text(
                    yaml.safe_dump({"components": {c: {"init_parameters": p} for c, p in components.items()}})
                )
                fragments.append(str(path))
            for qspec in args.questions:
                set_name, _, questions = qspec.partition("=")
                target = out / f"{name}-{set_name}.jsonl.gz"
                if target.exists():
                    print(f"{target} exists: skipped", flush=True)
                    continue
                t0 = time.perf_counter()
                records, check = dump_features(
                    questions, args.filings, args.store, quiet=True, fragments=fragments, source_set=set_name
                )
                write_dump(records, target)
                line = {
                    "config": name,
                    "set": set_name,
                    "questions": len(records),
                    "replay_mismatches": check["replay_mismatches"],
                    "seconds": round(time.perf_counter() - t0, 1),
                }
                print(json.dumps(line), flush=True)
                with (out / "dumps.log").open("a") as handle:
                    handle.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
