"""Cold ``haystack-fin ask --filing X --no-llm`` in a fresh process, Qdrant Edge against qdrant-client local mode
(a cold ask on a 52-filing store, Edge against local mode).

Each run is a new process (imports, model load, store open, the filing's first load), timed from outside with its
peak RSS (wait4). Backends alternate run by run, so load on the machine hits both alike. The stores are the ones
``bench_scale.py --n 52 --backends edge,local --write-only`` writes (the 22 dev filings plus 30 clones).

    nice -n 10 .venv/bin/python benchmarks/bench_cold_ask.py --edge /tmp/bench-scale/edge-52 \
        --local /tmp/bench-scale/local-52 --repeat 3 --out /tmp/cold-ask.json [--local-exe OLD/haystack-fin]
"""

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DEFAULT_FILING = "MGMRESORTS_2022_10K"
DEFAULT_QUESTION = "What was the total revenue in FY2022?"


def cold_ask(exe: str, store: Path, backend: str, filing: str, question: str) -> dict[str, Any]:
    cmd = [exe, "ask", question, "--store", str(store), "--filing", filing, "--no-llm", "--json"]
    if backend == "local":
        cmd += ["--store-backend", "local"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    out, err = proc.communicate()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        tail = (err.strip().splitlines() or ["(no stderr)"])[-1]
        raise RuntimeError(f"{backend}: ask exited {code}: {tail}")
    n_passages = None
    with contextlib.suppress(json.JSONDecodeError, AttributeError):
        n_passages = len(json.loads(out).get("passages") or [])
    return {"wall_s": round(wall, 2), "rss_mb": round(usage.ru_maxrss / 1024, 1), "passages": n_passages}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edge", type=Path, required=True, help="Qdrant Edge store folder")
    parser.add_argument("--local", type=Path, required=True, help="qdrant-client local-mode store folder")
    parser.add_argument("--filing", default=DEFAULT_FILING)
    parser.add_argument("--question", default=DEFAULT_QUESTION)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--exe", default=str(Path(sys.executable).with_name("haystack-fin")))
    parser.add_argument(
        "--local-exe",
        default=None,
        help="the haystack-fin to run on the local-mode store (default --exe), e.g. an older version's, so that "
        "'today' (older code, local mode) and the new code on Edge alternate in one run",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    for label, path in (("--edge", args.edge), ("--local", args.local)):
        if not path.is_dir():
            print(f"error: {path}: no such store folder ({label})", file=sys.stderr)
            return 2
    runs: dict[str, list[dict[str, Any]]] = {"edge": [], "local": []}
    for i in range(args.repeat):
        for backend in ("edge", "local"):
            exe = args.local_exe if backend == "local" and args.local_exe else args.exe
            run = cold_ask(exe, getattr(args, backend), backend, args.filing, args.question)
            run["load_avg"] = round(os.getloadavg()[0], 2)
            runs[backend].append(run)
            print(f"run {i + 1} {backend}: {run['wall_s']} s, {run['rss_mb']} MB, load {run['load_avg']}")
    medians = {b: statistics.median(r["wall_s"] for r in rs) for b, rs in runs.items()}
    summary = {
        "filing": args.filing,
        "question": args.question,
        "exe": {"edge": args.exe, "local": args.local_exe or args.exe},
        "runs": runs,
        "median_wall_s": medians,
        "local_over_edge": round(medians["local"] / medians["edge"], 2) if medians["edge"] else None,
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "runs"}))
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
