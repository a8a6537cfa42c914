"""Serving under load: cold ``ask`` against warm queries through ``haystack-fin serve``, on 127.0.0.1.

1. cold: ``haystack-fin ask Q --store S --no-llm`` as a new process, ``--cold-runs`` times (before the server
   starts: an embedded store admits one process);
2. warm: ``--warm`` sequential ``POST /haystack-fin/run`` requests;
3. load: ``--questions`` requests at ``--concurrency`` (questions cycled from a fixed list);
4. faults: a 10,000-character question, an empty question, a non-JSON body, k=0, an unknown filing id, a company no
   indexed filing has; then one good request to show the server is still up;
5. with ``--ollama-stub``, a slow generator, twice: the stub writes a token every 0.5 s for a long answer
   ("tokens"), then writes nothing at all ("stall"). ``max_queue + 5`` questions at once: the ones past the queue
   get 503, the others 504 at their deadline; then the stub answers at once again and one good request is timed.

The server runs with its defaults (``--request-timeout 60``, ``--max-queue 16``) unless ``--request-timeout`` or
``--max-queue`` are given. Without ``--ollama-stub`` generation is skipped (no Ollama here) and the numbers are
retrieval through the server; with it, answers go through OllamaChatGenerator to the test stub
(tests/helpers/ollama_stub.py) and the checker.

    python benchmarks/bench_serving.py --store ./demo-index [--questions 200 --concurrency 16] [--ollama-stub]
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

REPO = Path(__file__).resolve().parents[1]
NAME = "haystack-fin"
QUESTIONS = [
    "What was Best Buy's revenue in Q2 FY2024?",
    "What was total revenue in the second quarter of fiscal 2024?",
    "What was the gross profit rate?",
    "How much cash and cash equivalents did Best Buy have at the end of the quarter?",
    "What were the restructuring charges?",
    "What was diluted earnings per share?",
    "How many shares were repurchased in the quarter?",
    "What was Domestic segment revenue?",
    "What was operating income?",
    "What was the effective tax rate?",
    "What dividends were paid?",
    "What was the change in comparable sales?",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _lower(headers: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


def _call(
    url: str, body: Any = None, raw: bytes | None = None, timeout: float = 300
) -> tuple[int, bytes, float, dict[str, str]]:
    """(status, body, seconds, headers) of one POST."""
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, response.read(), time.perf_counter() - start, _lower(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), time.perf_counter() - start, _lower(exc.headers)


def _post(url: str, body: Any = None, raw: bytes | None = None, timeout: float = 300) -> tuple[int, bytes, float]:
    status, answer, took, _ = _call(url, body, raw, timeout)
    return status, answer, took


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cold_ask(store: str, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "haystack_fin.cli", "ask", QUESTIONS[0], "--store", store, "--no-llm", "-k", "5"],
            check=True,
            capture_output=True,
        )
        times.append(time.perf_counter() - start)
    return times


def start_server(
    store: str, port: int, ollama_url: str | None, log: Path, options: list[str]
) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "haystack_fin.cli", "serve", "--store", store, "--port", str(port), *options]
    if ollama_url:
        command += ["--ollama-url", ollama_url]
    with open(log, "wb") as out:  # the child keeps its own descriptor
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}; see {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=2) as response:
                if NAME in json.loads(response.read())["pipelines"]:
                    return proc
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    proc.kill()
    raise SystemExit(f"server not ready after 180 s; see {log}")


def slow_generator(run_url: str, stub: Any, mode: str, n: int, timeout: float) -> dict[str, Any]:
    """``n`` questions at once while the generator is slow (``mode``: "tokens" or "stall"), then two good requests
    once the generator answers at once again: the first may wait for the worker to stop the run it was doing, the
    second is the same request's own time (the baseline of the wait)."""
    if mode == "tokens":
        # A token every 0.25 s (a 3B model on a busy CPU), up to the YAML's 512-token cap: past any deadline here.
        stub.token_delay, stub.filler_tokens = 0.25, 500
    else:
        stub.stall = 10 * timeout
    with ThreadPoolExecutor(max_workers=n) as pool:
        body = {"question": QUESTIONS[0], "k": 5}
        results = list(pool.map(lambda _: _call(run_url, body, timeout=3 * timeout), range(n)))
    stub.token_delay, stub.filler_tokens, stub.stall = 0.0, 0, 0.0
    good = [_call(run_url, {"question": QUESTIONS[1], "k": 5}, timeout=3 * timeout) for _ in range(2)]
    by_status: dict[int, list[float]] = {}
    for code, _, took, _ in results:
        by_status.setdefault(code, []).append(took)
    (status, _, next_s, _), (status_after, _, after_s, _) = good
    return {
        "mode": mode,
        "token_delay_s": 0.25 if mode == "tokens" else None,
        "requests": n,
        "statuses": {str(k): v for k, v in sorted(Counter(code for code, *_ in results).items())},
        "seconds_by_status": {str(k): {"min": min(v), "max": max(v)} for k, v in sorted(by_status.items())},
        "retry_after": sorted({int(h["retry-after"]) for code, _, _, h in results if code == 503}),
        "next_good_request": {"status": status, "s": next_s},
        "following_good_request": {"status": status_after, "s": after_s},
        "held": all(code in (503, 504) for code, *_ in results) and status == 200 and next_s < 2.0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True, help="an indexed store folder")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--warm", type=int, default=20, help="sequential warm requests")
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--ollama-stub", action="store_true", help="generate through the test stub of Ollama")
    parser.add_argument("--request-timeout", type=float, default=None, help="the server's (default: its default)")
    parser.add_argument("--max-queue", type=int, default=None, help="the server's (default: its default)")
    parser.add_argument("--out", default=None, help="result JSON")
    args = parser.parse_args(argv)

    load_before = os.getloadavg()  # the machine may be shared: every time below depends on it
    cold = cold_ask(args.store, args.cold_runs)
    stub = None
    if args.ollama_stub:
        sys.path.insert(0, str(REPO / "tests"))
        from helpers.ollama_stub import OllamaStub

        stub = OllamaStub().__enter__()
    port = _free_port()
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-serving-{port}.log"
    started = time.perf_counter()
    options = [] if args.request_timeout is None else ["--request-timeout", str(args.request_timeout)]
    options += [] if args.max_queue is None else ["--max-queue", str(args.max_queue)]
    proc = start_server(args.store, port, stub.url if stub else None, log, options)
    startup = time.perf_counter() - started
    run_url = f"http://127.0.0.1:{port}/{NAME}/run"
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=10) as response:
        served = json.loads(response.read())["queue"]
    slow: list[dict[str, Any]] = []
    try:
        warm = []
        generations = set()
        for i in range(args.warm):
            status, body, took = _post(run_url, {"question": QUESTIONS[i % len(QUESTIONS)], "k": 5})
            if status != 200:
                raise SystemExit(f"warm request failed: {status} {body[:300]!r}")
            generations.add(json.loads(body)["result"]["generation"])
            warm.append(took)

        def one(i: int) -> tuple[int, float]:
            status, _, took = _post(run_url, {"question": QUESTIONS[i % len(QUESTIONS)], "k": 5})
            return status, took

        load_start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
            results = list(pool.map(one, range(args.questions)))
        wall = time.perf_counter() - load_start
        latencies = [t for s, t in results if s == 200]
        errors = [s for s, _ in results if s != 200]

        faults = []
        for label, body_json, raw in [
            ("10,000-character question", {"question": "x" * 10_000}, None),
            ("empty question", {"question": ""}, None),
            ("non-JSON body", None, b"not json"),
            ("k = 0", {"question": QUESTIONS[0], "k": 0}, None),
            ("unknown filing id", {"question": QUESTIONS[0], "filing_ids": ["BOGUS"]}, None),
            ("a company no indexed filing has", {"question": "What was Apple's revenue in fiscal 2019?"}, None),
        ]:
            status, body, _ = _post(run_url, body_json, raw)
            data = json.loads(body)
            if status == 200:  # answered: what it says is not there, and how many passages came back
                notes = "; ".join(u["reason"] for u in data["result"]["unmatched"])
                message = f"{len(data['result']['passages'])} passages; {notes}"
            else:
                detail = data.get("detail")
                message = detail if isinstance(detail, str) else detail[0]["msg"]
            faults.append({"input": label, "status": status, "message": message})
        alive, _, _ = _post(run_url, {"question": QUESTIONS[0], "k": 1})
        if stub is not None:
            for mode in ("tokens", "stall"):
                slow.append(slow_generator(run_url, stub, mode, served["max_queue"] + 5, served["request_timeout_s"]))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if stub is not None:
            stub.__exit__(None, None, None)

    result = {
        "load_average_1_5_15_min": {"start": load_before, "end": os.getloadavg(), "cpus": os.cpu_count()},
        "server": {"request_timeout_s": served["request_timeout_s"], "max_queue": served["max_queue"]},
        "cold_ask_s": cold,
        "cold_ask_median_s": statistics.median(cold),
        "server_startup_s": startup,
        "generation": sorted(generations),
        "warm_sequential": {"n": len(warm), "p50_s": _pct(warm, 0.5), "p95_s": _pct(warm, 0.95)},
        "load": {
            "n": args.questions,
            "concurrency": args.concurrency,
            "errors": len(errors),
            "error_statuses": sorted(set(errors)),
            "p50_s": _pct(latencies, 0.5) if latencies else None,
            "p95_s": _pct(latencies, 0.95) if latencies else None,
            "throughput_qps": args.questions / wall,
        },
        "faults": faults,
        "server_up_after_faults": alive == 200,
        "slow_generator": slow,
    }
    result["cold_over_warm_p50"] = result["cold_ask_median_s"] / result["warm_sequential"]["p50_s"]
    print(json.dumps(result, indent=2))
    print(f"\ncold ask (median of {len(cold)}): {result['cold_ask_median_s']:.2f} s; server start {startup:.1f} s")
    w, ld = result["warm_sequential"], result["load"]
    print(f"warm sequential p50 {w['p50_s'] * 1000:.0f} ms, p95 {w['p95_s'] * 1000:.0f} ms "
          f"({result['cold_over_warm_p50']:.0f}x faster than cold ask)")  # fmt: skip
    print(f"load {ld['n']} @ {ld['concurrency']}: {ld['errors']} errors, p50 {ld['p50_s']:.2f} s, "
          f"p95 {ld['p95_s']:.2f} s, {ld['throughput_qps']:.1f} q/s")  # fmt: skip
    print("\n| input | status | message |\n| --- | --- | --- |")
    for f in faults:
        print(f"| {f['input']} | {f['status']} | {f['message']} |")
    print(f"server up after the faults: {result['server_up_after_faults']}")
    for phase in slow:
        good, after = phase["next_good_request"], phase["following_good_request"]
        times = ", ".join(f"{k}: {v['min']:.2f}-{v['max']:.2f} s" for k, v in phase["seconds_by_status"].items())
        print(
            f"slow generator ({phase['mode']}): {phase['requests']} at once -> {phase['statuses']} ({times}); "
            f"next good request {good['status']} in {good['s']:.2f} s (the one after: {after['s']:.2f} s)"
        )
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))
    held = all(phase["held"] for phase in slow)
    return 0 if not errors and result["server_up_after_faults"] and held else 1


if __name__ == "__main__":
    sys.exit(main())
