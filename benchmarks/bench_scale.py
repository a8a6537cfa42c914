"""Scale benchmark: the dev questions against stores of N filings, most of them look-alikes.

A store of N filings holds the 22 indexed dev filings under their own ids (so the questions' gold pages stay valid)
plus N-22 distractors cloned from them round-robin: each clone gets a new filing id, a real company name (with
look-alikes of the dev companies: "Best Buy Holdings", "Micro Strategy", "Pepsi Bottling Group", ...), a ticker and
shifted fiscal years, rewritten in every meta field of every node that names the filing, company, ticker or period;
node ids are rebuilt on the new filing id; vectors are copied as they are (no re-embedding). Chunk text is the
source filing's, so a clone is a hard distractor: same passages, another company and year.

Per N and backend the store is written (timed, disk size from du), then a FRESH subprocess (honest start-up and RSS)
builds ``QueryRunner`` + warm_up + one trivial query (start-up), and runs each dev question twice in the shared
setting (filing_ids=None, k=5): first cold (its filings may not be cached yet), then warm. Reported: p50/p95 of both,
peak RSS (ru_maxrss), page_hit@5 and doc_hit@5. A backend stops at the first N where it fails or takes longer than
``--max-seconds``.

    nice -n 10 .venv/bin/python benchmarks/bench_scale.py --n 22,200 --backends edge,local --out /tmp/scale.json
"""

import argparse
import json
import logging
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from haystack import Document

from haystack_fin.core import schema

logger = logging.getLogger("bench_scale")

INDEX = "haystack_fin"
DIM = 384
DEFAULT_SOURCE = "/tmp/dev-index"
DEFAULT_QUESTIONS = "/work/shared/data/financebench-dev/questions.jsonl"
TRIVIAL_QUERY = "What was total revenue?"
# The start-up query's filing: a short 8-K (every dev filing has a question; this one has a single one).
STARTUP_FILING = "PEPSICO_2023_8K_dated-2023-05-05"

# Real company names with tickers; look-alikes of the dev companies first (same words, other companies), then other
# large filers so that the scope sees many names.
COMPANIES: tuple[tuple[str, str], ...] = (
    ("Best Buy Holdings Inc.", "BBYH"),
    ("Buy.com Inc.", "BUYX"),
    ("BuyBuy Baby Inc.", "BBBY"),
    ("Micro Strategy Incorporated", "MSTR"),
    ("Microchip Technology Inc.", "MCHP"),
    ("Micron Technology, Inc.", "MU"),
    ("Pepsi Bottling Group, Inc.", "PBG"),
    ("PepsiAmericas, Inc.", "PAS"),
    ("Coca-Cola Consolidated, Inc.", "COKE"),
    ("Coca-Cola Europacific Partners plc", "CCEP"),
    ("Coca-Cola FEMSA, S.A.B. de C.V.", "KOF"),
    ("MGM Holdings Inc.", "MGMH"),
    ("MGM Growth Properties LLC", "MGP"),
    ("Netflix Media Holdings", "NFLM"),
    ("Verizon Wireless Partners", "VZWP"),
    ("Activision Holdings", "ATVH"),
    ("Blizzard Entertainment Holdings", "BLZH"),
    ("Bank of America Corporation", "BAC"),
    ("America Movil, S.A.B. de C.V.", "AMX"),
    ("U.S. Bancorp", "USB"),
    ("Wynn Resorts, Limited", "WYNN"),
    ("Caesars Entertainment, Inc.", "CZR"),
    ("Las Vegas Sands Corp.", "LVS"),
    ("Keurig Dr Pepper Inc.", "KDP"),
    ("Monster Beverage Corporation", "MNST"),
    ("AT&T Inc.", "T"),
    ("T-Mobile US, Inc.", "TMUS"),
    ("Electronic Arts Inc.", "EA"),
    ("Take-Two Interactive Software, Inc.", "TTWO"),
    ("The Walt Disney Company", "DIS"),
    ("Target Corporation", "TGT"),
    ("Walmart Inc.", "WMT"),
    ("Costco Wholesale Corporation", "COST"),
    ("The Home Depot, Inc.", "HD"),
    ("Apple Inc.", "AAPL"),
    ("Alphabet Inc.", "GOOGL"),
    ("Amazon.com, Inc.", "AMZN"),
    ("Oracle Corporation", "ORCL"),
    ("Intel Corporation", "INTC"),
    ("Cisco Systems, Inc.", "CSCO"),
    ("International Business Machines Corporation", "IBM"),
    ("The Procter & Gamble Company", "PG"),
    ("Johnson & Johnson", "JNJ"),
    ("3M Company", "MMM"),
    ("General Mills, Inc.", "GIS"),
    ("The Kraft Heinz Company", "KHC"),
    ("Mondelez International, Inc.", "MDLZ"),
    ("Comcast Corporation", "CMCSA"),
    ("Charter Communications, Inc.", "CHTR"),
    ("JPMorgan Chase & Co.", "JPM"),
    ("Wells Fargo & Company", "WFC"),
    ("Citigroup Inc.", "C"),
    ("American Express Company", "AXP"),
    ("Boeing Company", "BA"),
    ("Lockheed Martin Corporation", "LMT"),
    ("Nike, Inc.", "NKE"),
    ("Starbucks Corporation", "SBUX"),
    ("McDonald's Corporation", "MCD"),
    ("Adobe Inc.", "ADBE"),
    ("Salesforce, Inc.", "CRM"),
)
MAX_YEAR_SHIFT = 12  # clones are dated 1..12 years before their source filing
_YEAR = re.compile(r"(?<!\d)(19|20)(\d{2})(?!\d)")


@dataclass(frozen=True)
class CloneSpec:
    """Who a clone is: its filing id, company, ticker and how many years before the source filing it is dated."""

    filing_id: str
    company: str
    ticker: str
    year_shift: int


def clone_spec(source_filing_id: str, form: str, fiscal_year: int | None, number: int) -> CloneSpec:
    """The ``number``-th clone (1-based): company and ticker cycle through ``COMPANIES``, the year shift changes once
    per cycle, and the filing id ends with the clone number, so ids are unique whatever the names."""
    company, ticker = COMPANIES[(number - 1) % len(COMPANIES)]
    shift = -(1 + ((number - 1) // len(COMPANIES)) % MAX_YEAR_SHIFT)
    year = (fiscal_year or 2020) + shift
    form_tag = re.sub(r"[^A-Z0-9]", "", form.upper()) or "DOC"
    return CloneSpec(f"{ticker}_{year}_{form_tag}_C{number:05d}", company, ticker, shift)


def shift_years(text: str, shift: int) -> str:
    """Every 19xx/20xx year in ``text`` moved by ``shift``; Feb 29 becomes Feb 28 (the new year may not be leap)."""
    out = _YEAR.sub(lambda m: str(int(m.group(0)) + shift), text)
    return out.replace("-02-29", "-02-28")


def _rewrite_ids(value: Any, old_prefix: str, new_prefix: str) -> Any:
    # Every node id (and table id) starts with "<filing_id>#" (core/schema.py id builders), so swapping that prefix
    # is what the builders would produce for the new filing id. Nested too (lists, dicts).
    if isinstance(value, str):
        return new_prefix + value[len(old_prefix) :] if value.startswith(old_prefix) else value
    if isinstance(value, list):
        return [_rewrite_ids(v, old_prefix, new_prefix) for v in value]
    if isinstance(value, dict):
        return {k: _rewrite_ids(v, old_prefix, new_prefix) for k, v in value.items()}
    return value


def clone_filing(nodes: Sequence[Document], spec: CloneSpec) -> list[Document]:
    """All nodes of one filing as a distractor filing ``spec``: ids and id-valued meta rebuilt (the stored graph
    edges' chunk ids too), company, ticker, period, fiscal year, period end, source path and context rewritten, the
    filing node's heading line too; vectors and all other content copied as they are (stored graph entities too:
    they were read from the copied text)."""
    if not nodes:
        return []
    old_fid = str(nodes[0].meta[schema.FILING_ID])
    old_prefix, new_prefix = f"{old_fid}#", f"{spec.filing_id}#"
    out: list[Document] = []
    for node in nodes:
        meta = dict(node.meta)
        if meta.get(schema.FILING_ID) != old_fid or schema.filing_id_of(node.id) != old_fid:
            raise ValueError(f"node {node.id} is not of filing {old_fid}")
        old_head = " ".join(str(meta.get(k) or "") for k in (schema.COMPANY, schema.FORM, schema.PERIOD)).strip()
        meta = {key: _rewrite_ids(value, old_prefix, new_prefix) for key, value in meta.items()}
        if isinstance(meta.get(schema.GRAPH_EDGES), str):  # stored graph edges (JSON) name chunks by id
            edges = _rewrite_ids(json.loads(meta[schema.GRAPH_EDGES]), old_prefix, new_prefix)
            meta[schema.GRAPH_EDGES] = json.dumps(edges, ensure_ascii=False)
        meta[schema.FILING_ID] = spec.filing_id
        meta[schema.COMPANY] = spec.company
        meta[schema.TICKER] = spec.ticker
        if meta.get(schema.NODE_TYPE) in (schema.NodeType.FILING.value, schema.NodeType.PROFILE.value):
            # The clone is another registrant: the source's identity (CIK, file numbers, IRS number) is not its.
            for key in schema.IDENTITY_FIELDS:
                meta.pop(key, None)
            meta[schema.TICKERS] = [spec.ticker]
            meta[schema.LEGAL_NAME] = spec.company
        for key in (schema.PERIOD, schema.PERIOD_END):
            if meta.get(key):
                meta[key] = shift_years(str(meta[key]), spec.year_shift)
        if isinstance(meta.get(schema.FISCAL_YEAR), int):
            meta[schema.FISCAL_YEAR] += spec.year_shift
        if meta.get(schema.SOURCE_PATH):
            meta[schema.SOURCE_PATH] = str(Path(str(meta[schema.SOURCE_PATH])).with_name(f"{spec.filing_id}.pdf"))
        new_head = " ".join(str(meta.get(k) or "") for k in (schema.COMPANY, schema.FORM, schema.PERIOD)).strip()
        context = meta.get(schema.CONTEXT)
        if isinstance(context, str) and context.startswith(old_head):
            meta[schema.CONTEXT] = new_head + context[len(old_head) :]
        content = node.content
        if meta.get(schema.NODE_TYPE) == schema.NodeType.FILING.value and content and content.startswith(old_head):
            content = new_head + content[len(old_head) :]
        out.append(
            Document(
                id=_rewrite_ids(node.id, old_prefix, new_prefix),
                content=content,
                meta=meta,
                embedding=list(node.embedding) if node.embedding else None,
            )
        )
    return out


def distractors(
    by_filing: dict[str, list[Document]], n_clones: int, filing_nodes_only: bool = False
) -> Iterator[list[Document]]:
    """``n_clones`` cloned filings, round-robin over the source filings (sorted by id), one list of nodes each
    (only the filing node with ``filing_nodes_only``: a cheap store for start-up, which reads filing nodes)."""
    sources = sorted(by_filing)
    for number in range(1, n_clones + 1):
        nodes = by_filing[sources[(number - 1) % len(sources)]]
        filing = next(n for n in nodes if n.meta.get(schema.NODE_TYPE) == schema.NodeType.FILING.value)
        if filing_nodes_only:
            kinds = (schema.NodeType.FILING.value, schema.NodeType.PROFILE.value)
            nodes = [n for n in nodes if n.meta.get(schema.NODE_TYPE) in kinds]
        spec = clone_spec(
            str(filing.meta[schema.FILING_ID]),
            str(filing.meta.get(schema.FORM) or ""),
            filing.meta.get(schema.FISCAL_YEAR),
            number,
        )
        yield clone_filing(nodes, spec)


# --- store writing -----------------------------------------------------------------------------------------------


def _open_store(backend: str, path: Path, recreate: bool) -> Any:
    if backend == "edge":
        from haystack_fin.document_stores.qdrant_edge.document_store import QdrantEdgeDocumentStore
        from haystack_fin.pipeline_loader import pipeline_dict

        # The store settings `haystack-fin index` writes with (the shipped indexing YAML's, e.g. hnsw_m).
        shipped = pipeline_dict("indexing")["components"]["writer"]["init_parameters"]["document_store"]
        return QdrantEdgeDocumentStore(
            path=str(path),
            index=INDEX,
            embedding_dim=DIM,
            return_embedding=True,
            recreate_index=recreate,
            hnsw_m=shipped["init_parameters"].get("hnsw_m"),
        )
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    return QdrantDocumentStore(
        path=str(path),
        index=INDEX,
        embedding_dim=DIM,
        similarity="cosine",
        return_embedding=True,
        recreate_index=recreate,
        progress_bar=False,
    )


def _close_store(store: Any) -> None:
    if hasattr(store, "close"):
        store.close()
    client = getattr(store, "_client", None)
    if client is not None:
        client.close()


def source_backend(path: Path) -> str:
    """ "edge" for a Qdrant Edge store folder (haystack-fin's default), "local" for a qdrant-client local-mode one."""
    return "edge" if (path / INDEX / "edge_config.json").is_file() else "local"


def load_source(path: Path, work: Path) -> dict[str, list[Document]]:
    """Every node of the source index (a Qdrant Edge or qdrant-client local-mode folder), by filing id; read from a
    copy so the source is never locked or touched."""
    copy = work / "source-copy"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(path, copy)
    (copy / ".lock").unlink(missing_ok=True)
    store = _open_store(source_backend(copy), copy, recreate=False)
    try:
        docs = store.filter_documents()
    finally:
        _close_store(store)
    shutil.rmtree(copy)
    by_filing: dict[str, list[Document]] = {}
    for doc in docs:
        if not doc.embedding:  # local mode hands a point stored without a vector (summary, filing nodes) back as []
            doc = replace(doc, embedding=None)
        by_filing.setdefault(str(doc.meta[schema.FILING_ID]), []).append(doc)
    return by_filing


def write_store(
    backend: str,
    path: Path,
    by_filing: dict[str, list[Document]],
    n: int,
    deadline: float,
    filing_nodes_only: bool = False,
) -> tuple[int, float]:
    """Write the originals and ``n - len(by_filing)`` clones; returns (nodes written, seconds). (Optimizing an
    Edge store afterwards, as ``haystack-fin index`` does, is ``optimize_store``.)

    :raises TimeoutError: past ``deadline`` (time.monotonic()).
    """
    from haystack.document_stores.types import DuplicatePolicy

    if path.exists():
        shutil.rmtree(path)
    t0 = time.perf_counter()
    store = _open_store(backend, path, recreate=True)
    written = 0
    try:
        for nodes in by_filing.values():  # the originals keep their ids, so gold pages stay valid
            written += store.write_documents(nodes, policy=DuplicatePolicy.OVERWRITE)
        for i, nodes in enumerate(distractors(by_filing, max(0, n - len(by_filing)), filing_nodes_only), 1):
            written += store.write_documents(nodes, policy=DuplicatePolicy.OVERWRITE)
            if time.monotonic() > deadline:
                raise TimeoutError(f"writing stopped after {i} clones")
            if i % 50 == 0:
                logger.info("%s N=%d: %d clones, %d nodes, %.0f s", backend, n, i, written, time.perf_counter() - t0)
    finally:
        _close_store(store)
    return written, time.perf_counter() - t0


def optimize_store(path: Path) -> float:
    """What ``haystack-fin index`` does after a batch on an Edge store (merged segments, HNSW); returns seconds."""
    t0 = time.perf_counter()
    store = _open_store("edge", path, recreate=False)
    try:
        store.optimize()
    finally:
        _close_store(store)
    return time.perf_counter() - t0


def disk_mb(path: Path) -> float:
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True).stdout
    return int(out.split()[0]) / 1024


# --- the query subprocess ----------------------------------------------------------------------------------------


def query_child(
    store: Path, backend: str, questions_path: Path, filing_ids: set[str], warm_repeat: int = 0
) -> dict[str, Any]:
    """Runs in a fresh process: start-up, then each dev question cold and warm (shared setting, k=5); then
    ``warm_repeat`` more warm passes over all questions, not recorded (so that a profiler of the process sees the
    warm path)."""
    from haystack_fin.core.evaluation import Passage, load_questions, percentile, score_question
    from haystack_fin.pipeline_loader import BACKEND_ENV

    os.environ[BACKEND_ENV] = backend
    t0 = time.perf_counter()
    from haystack_fin.query_runner import QueryRunner

    runner = QueryRunner(str(store))
    runner.pipe.warm_up()
    # Scoped to one filing: a question naming no company scopes to every filing and would fill the cache, so that
    # no dev question's first run would be a first touch of its filing.
    runner.run(TRIVIAL_QUERY, filing_ids=[STARTUP_FILING], k=5)
    startup = time.perf_counter() - t0
    startup_memory = memory_mb()
    scroll = filtered_scroll_ms(runner)
    stage_ms = time_stages(runner)
    questions = [q for q in load_questions(questions_path) if q.doc_name in filing_ids]
    cold: list[float] = []
    warm: list[float] = []
    first_touch: list[float] = []
    warm_stages: dict[str, list[float]] = {}
    for calls in stage_ms.values():
        calls.clear()
    per_question: dict[str, dict[str, Any]] = {}
    try:
        for q in questions:
            times = []
            results = []
            for _ in range(2):
                t = time.perf_counter()
                results.append(runner.run(q.question, filing_ids=None, k=5))
                times.append(1000 * (time.perf_counter() - t))
            first, result = results
            for stage in stage_ms:  # what the warm run spent per component (the first of the two was cold)
                warm_stages.setdefault(stage, []).append(stage_ms[stage][-1] if stage_ms[stage] else 0.0)
            for calls in stage_ms.values():
                calls.clear()
            cold.append(times[0])
            cache = (first.trace.get("retrieval") or {}).get("cache") or {}
            if cache.get("loaded"):  # the cold run fetched a filing from the store: a first touch
                first_touch.append(times[0])
            warm.append(times[1])
            passages = [
                Passage(
                    doc_name=str(d.meta.get(schema.FILING_ID) or ""),
                    pages=[int(p) for p in d.meta.get(schema.PAGE_NUMBERS) or []],
                    text=d.content or "",
                )
                for d in result.passages
            ]
            scores = score_question(q, passages, ks=(5,))
            per_question[q.financebench_id] = {
                "page_hit@5": scores["page_hit@5"],
                "doc_hit@5": scores["doc_hit@5"],
                "cold_ms": round(times[0], 1),
                "warm_ms": round(times[1], 1),
                "cold_loaded": list(cache.get("loaded") or []),
                "scope": (result.trace.get("scope") or {}).get("filing_ids")
                if isinstance(result.trace.get("scope"), dict)
                else None,
            }
        for _ in range(warm_repeat):
            for q in questions:
                runner.run(q.question, filing_ids=None, k=5)
    finally:
        runner.close()
    n_q = max(1, len(per_question))
    return {
        "startup_s": round(startup, 2),
        "n_questions": len(per_question),
        "cold_p50_ms": round(percentile(cold, 50), 1),
        "cold_p95_ms": round(percentile(cold, 95), 1),
        "first_touch_n": len(first_touch),
        "first_touch_p50_ms": round(percentile(first_touch, 50), 1) if first_touch else None,
        "warm_p50_ms": round(percentile(warm, 50), 1),
        "warm_p95_ms": round(percentile(warm, 95), 1),
        "page_hit@5": round(sum(r["page_hit@5"] for r in per_question.values()) / n_q, 4),
        "doc_hit@5": round(sum(r["doc_hit@5"] for r in per_question.values()) / n_q, 4),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "startup_memory_mb": startup_memory,
        "end_memory_mb": memory_mb(),
        **scroll,
        "warm_stage_p50_ms": {k: round(percentile(v, 50), 1) for k, v in warm_stages.items()},
        "load_avg": round(os.getloadavg()[0], 2),
        "per_question": per_question,
    }


def memory_mb() -> dict[str, float]:
    """The process's resident memory now, split as the kernel counts it (Linux ``/proc/self/status``): anonymous
    (heap: Python objects, the store's in-RAM structures) and file-backed (memory-mapped shard files and libraries,
    pages the kernel can drop and re-read); empty where there is no /proc."""
    fields = {"VmRSS": "rss_mb", "RssAnon": "rss_anon_mb", "RssFile": "rss_file_mb", "VmHWM": "rss_peak_mb"}
    out: dict[str, float] = {}
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        name, _, value = line.partition(":")
        if name in fields:
            out[fields[name]] = round(int(value.split()[0]) / 1024, 1)
    return out


def time_stages(runner: Any) -> dict[str, list[float]]:
    """Wrap every component's ``run`` of the runner's pipeline to record its milliseconds per call (what the
    pipeline spends between components, e.g. copying inputs, is the rest of the query's time)."""
    calls: dict[str, list[float]] = {}
    for name, instance in runner.pipe.walk():
        calls[name] = []

        def timed(*args: Any, __run: Any = instance.run, __out: list[float] = calls[name], **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return __run(*args, **kwargs)
            finally:
                __out.append(1000 * (time.perf_counter() - t))

        instance.run = timed
    return calls


def filtered_scroll_ms(runner: Any, repeat: int = 5) -> dict[str, Any]:
    """Time one filing's read by filter (``meta.filing_id ==``, what a cold filing costs the store) on the
    pipeline's open store: if the payload index answers it, the time follows the filing's size, not N."""
    from haystack_fin.store_registry import shared_store

    store = shared_store(runner.pipe.get_component("retriever").document_store)
    flt = schema.filing_filter(STARTUP_FILING)
    times = []
    n_docs = 0
    for _ in range(repeat):
        t = time.perf_counter()
        n_docs = len(store.filter_documents(filters=flt))
        times.append(1000 * (time.perf_counter() - t))
    return {"scroll_p50_ms": round(sorted(times)[len(times) // 2], 1), "scroll_nodes": n_docs}


def run_child(store: Path, backend: str, args: argparse.Namespace, filing_ids: set[str], timeout: float) -> Any:
    cmd = [
        sys.executable,
        __file__,
        "--child-store",
        str(store),
        "--child-backend",
        backend,
        "--questions",
        str(args.questions),
        "--child-filings",
        ",".join(sorted(filing_ids)),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=max(1.0, timeout))
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        raise RuntimeError(f"query process exited {proc.returncode}: {tail}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- driver ------------------------------------------------------------------------------------------------------

MARKER_KEYS = ("nodes", "write_s", "optimize_s", "disk_mb")
COLUMNS = (
    ("write_s", "write s"),
    ("optimize_s", "optim. s"),
    ("disk_mb", "disk MB"),
    ("startup_s", "start s"),
    ("cold_p50_ms", "cold p50"),
    ("cold_p95_ms", "cold p95"),
    ("first_touch_p50_ms", "1st-touch"),
    ("warm_p50_ms", "warm p50"),
    ("warm_p95_ms", "warm p95"),
    ("peak_rss_mb", "RSS MB"),
    ("scroll_p50_ms", "scroll ms"),
    ("page_hit@5", "page@5"),
    ("doc_hit@5", "doc@5"),
)


def print_table(results: list[dict[str, Any]]) -> None:
    head = f"{'N':>6} {'backend':<7} " + " ".join(f"{label:>9}" for _, label in COLUMNS)
    print(head)
    print("-" * len(head))
    for row in sorted(results, key=lambda r: (r["n"], r["backend"])):
        if row.get("error"):
            print(f"{row['n']:>6} {row['backend']:<7} stopped: {row['error']}")
            continue
        print(f"{row['n']:>6} {row['backend']:<7} " + " ".join(f"{row.get(key, ''):>9}" for key, _ in COLUMNS))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", default="22,200,1000,5000", help="comma-separated store sizes (filings)")
    parser.add_argument("--backends", default="edge,local")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--questions", type=Path, default=Path(DEFAULT_QUESTIONS))
    parser.add_argument("--source-index", type=Path, default=Path(DEFAULT_SOURCE))
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-scale"))
    parser.add_argument("--max-seconds", type=float, default=1800, help="per N and backend: write + queries")
    parser.add_argument("--keep", action="store_true", help="keep the stores (default: delete after measuring)")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="measure a store kept by an earlier --keep run of the same N and backend instead of writing it again",
    )
    parser.add_argument("--write-only", action="store_true", help="write (and keep) the stores, measure nothing")
    parser.add_argument(
        "--filing-nodes-only",
        action="store_true",
        help="clones are filing nodes only (start-up reads those; questions scoped to a clone find no passages)",
    )
    parser.add_argument(
        "--no-optimize",
        action="store_true",
        help="measure Edge stores as written, without the optimize() that `haystack-fin index` runs after a batch",
    )
    parser.add_argument(
        "--warm-repeat", type=int, default=0, help="child only: extra unrecorded warm passes (for a profiler)"
    )
    parser.add_argument("--child-store", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-backend", help=argparse.SUPPRESS)
    parser.add_argument("--child-filings", help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    logging.getLogger("haystack").setLevel(logging.WARNING)

    if args.child_store:
        print(
            json.dumps(
                query_child(
                    args.child_store,
                    args.child_backend,
                    args.questions,
                    set(args.child_filings.split(",")),
                    args.warm_repeat,
                )
            )
        )
        return 0

    for label, path in (("--questions", args.questions), ("--source-index", args.source_index)):
        if not path.exists():
            print(f"error: {path}: no such file or folder ({label})", file=sys.stderr)
            return 2
    try:
        sizes = sorted(int(x) for x in args.n.split(","))
    except ValueError:
        print(f"error: --n {args.n!r}: expected comma-separated integers", file=sys.stderr)
        return 2
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if unknown := [b for b in backends if b not in ("edge", "local")]:
        print(f"error: --backends: unknown backend(s) {unknown} (expected edge, local)", file=sys.stderr)
        return 2
    args.work.mkdir(parents=True, exist_ok=True)
    by_filing = load_source(args.source_index, args.work)
    originals = set(by_filing)
    logger.info("source: %d filings, %d nodes", len(by_filing), sum(map(len, by_filing.values())))

    results: list[dict[str, Any]] = []
    stopped: dict[str, str] = {}
    for n in sizes:
        if n < len(by_filing):
            print(f"error: --n {n}: smaller than the {len(by_filing)} source filings", file=sys.stderr)
            return 2
        for backend in backends:
            if backend in stopped:
                continue
            store = args.work / f"{backend}-{n}"
            row: dict[str, Any] = {"n": n, "backend": backend}
            start = time.monotonic()
            deadline = start + args.max_seconds
            marker = store.parent / f"{store.name}.written.json"  # beside the store: never inside its folder
            try:
                if args.reuse and marker.exists() and store.exists():
                    row.update(json.loads(marker.read_text()), reused=True)
                    logger.info("%s N=%d: reusing %s (written in %s s)", backend, n, store, row.get("write_s"))
                else:
                    marker.unlink(missing_ok=True)
                    nodes, seconds = write_store(backend, store, by_filing, n, deadline, args.filing_nodes_only)
                    row.update(nodes=nodes, write_s=round(seconds, 1), disk_mb=round(disk_mb(store), 1))
                    logger.info("%s N=%d: wrote %d nodes in %.1f s", backend, n, nodes, seconds)
                # The marker is written before optimizing, so that a run stopped there resumes with --reuse.
                marker.write_text(json.dumps({k: row[k] for k in MARKER_KEYS if k in row}))
                if backend == "edge" and not args.no_optimize and "optimize_s" not in row:
                    row["optimize_s"] = round(optimize_store(store), 1)
                    row["disk_mb"] = round(disk_mb(store), 1)
                    logger.info("%s N=%d: optimized in %.1f s", backend, n, row["optimize_s"])
                    marker.write_text(json.dumps({k: row[k] for k in MARKER_KEYS if k in row}))
                if not args.write_only:
                    row.update(run_child(store, backend, args, originals, deadline - time.monotonic()))
            except (TimeoutError, subprocess.TimeoutExpired) as exc:
                row["error"] = f"over --max-seconds {args.max_seconds:.0f} ({exc})"
            except Exception as exc:  # a failing backend is a result of this benchmark, not a crash of it
                row["error"] = f"{type(exc).__name__}: {exc}"
            row["total_s"] = round(time.monotonic() - start, 1)
            if row.get("error"):
                stopped[backend] = f"N={n}: {row['error']}"
                logger.info("%s stopped at N=%d: %s", backend, n, row["error"])
            results.append(row)
            if not (args.keep or args.write_only) and store.exists():
                shutil.rmtree(store)
                marker.unlink(missing_ok=True)
            if args.out:  # after every row, so a long run that is stopped keeps what it measured
                args.out.write_text(json.dumps({"results": results, "stopped": stopped}, indent=1))
    print_table(results)
    for backend, why in stopped.items():
        print(f"{backend}: stopped at {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
