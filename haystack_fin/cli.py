"""haystack-fin command line: index, inspect, graph, ask, eval, calibrate."""

import argparse
import json
import logging
import math
import os
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from haystack_fin.core.validation import is_int

# Not imported from pipeline_loader: that module imports Haystack, which this module loads lazily per command.
BACKEND_ENV = "HAYSTACK_FIN_STORE_BACKEND"

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


REST_PORT, MCP_PORT = 1416, 1417  # the ports Hayhooks used, so existing clients keep theirs
# indexing_runner.DEFAULT_WORKER_MEMORY_MB, repeated: this module imports no Haystack before a command runs.
DEFAULT_WORKER_MEMORY_MB = 4096
_MIN_WORKER_MEMORY_MB = 1024  # a worker holds ~0.4 GB once its parse stage is loaded
_FILING_SUFFIXES = (".pdf", ".htm", ".html", ".xhtml", ".gz")
_SUBMISSION_SUFFIX = ".txt"  # an EDGAR full submission, taken from a folder only when it starts like one
_INT_FIELDS = {"fiscal_year", "fiscal_quarter"}
# ranker_training.WEIGHTINGS, repeated for the same reason: how train-ranker's fits may weigh the candidates.
_WEIGHTINGS = ("question", "candidate", "role")
_N = TypeVar("_N", int, float)


# argparse ``type=`` validators: a bad value is an argparse error (usage, one line, exit 2), not a traceback from
# deep inside a pipeline run ("-k 0" used to surface as a PipelineRuntimeError saying "got -2").
def _number(text: str, parse: Callable[[str], _N], expected: str, valid: Callable[[_N], bool], problem: str) -> _N:
    """``parse(text)``, or an argparse error saying what was ``expected`` (unparsable) or the ``problem`` (not
    ``valid``)."""
    try:
        value = parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not valid(value):
        raise argparse.ArgumentTypeError(f"{problem}, got {text}")
    return value


def _positive_int(text: str) -> int:
    return _number(text, int, "a positive integer", is_int, "must be at least 1")


def _non_negative_int(text: str) -> int:
    return _number(text, int, "an integer", lambda v: is_int(v, 0), "must be 0 or more")


def _unit_weight(text: str) -> float:
    return _number(text, float, "a weight", lambda v: 0 <= v <= 1, "must be between 0 and 1")


def _non_negative_float(text: str) -> float:
    return _number(text, float, "a number", lambda v: v >= 0 and math.isfinite(v), "must be 0 or more")


def _positive_float(text: str) -> float:
    return _number(text, float, "a number", lambda v: v > 0 and math.isfinite(v), "must be more than 0")


def _timeout(text: str) -> float:
    return _number(
        text,
        float,
        "seconds",
        lambda v: v >= 0 and math.isfinite(v),
        "must be 0 (no limit) or a positive number of seconds",
    )


def _seconds(text: str) -> float:
    return _number(text, float, "seconds", lambda v: v > 0 and math.isfinite(v), "must be a positive number of seconds")


def _memory_mb(text: str) -> int:
    value = _number(text, int, "megabytes", lambda v: is_int(v, 0), "must be 0 (no bound) or a positive number of MB")
    if 0 < value < _MIN_WORKER_MEMORY_MB:
        raise argparse.ArgumentTypeError(
            f"a parse worker needs more than {value} MB to start (at least {_MIN_WORKER_MEMORY_MB}; 0 = no bound)"
        )
    return value


def _cutoffs(text: str) -> tuple[int, ...]:
    try:
        return tuple(_positive_int(part.strip()) for part in text.split(","))
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {text!r} ({exc})") from None


def _meta_pair(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    key = key.strip()
    return key, int(value) if key in _INT_FIELDS and value.strip().isdigit() else value.strip()


def _is_submission_file(path: Path) -> bool:
    from haystack_fin.core.ingest.filing_identity import is_submission

    try:
        with path.open("rb") as f:
            return is_submission(f.read(1024))
    except OSError:
        return False


def _expand(paths: Iterable[str]) -> tuple[list[Path], list[str]]:
    """The filing files of the given paths (folders searched recursively), and a note per file a folder held but
    that is left out: an EDGAR full submission next to its own primary document (sec-edgar-downloader saves both:
    they are one filing)."""
    files: list[Path] = []
    notes: list[str] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            files.append(path)
            continue
        found = sorted(
            p
            for p in path.rglob("*")
            if p.is_file()
            and (
                p.suffix.lower() in _FILING_SUFFIXES
                or (p.suffix.lower() == _SUBMISSION_SUFFIX and _is_submission_file(p))
            )
        )
        documents = {p.parent for p in found if p.suffix.lower() != _SUBMISSION_SUFFIX}
        for p in found:
            if p.suffix.lower() == _SUBMISSION_SUFFIX and p.parent in documents:
                notes.append(
                    f"{p}: left out, its folder holds the filing's primary document (give it by name to index it)"
                )
                continue
            files.append(p)
    return files, notes


def _store_from_args(args: argparse.Namespace) -> Any:
    from haystack_fin.pipeline_loader import indexing_store

    return indexing_store(args.store, args.qdrant_url, args.index)


def _check_store(args: argparse.Namespace, data: dict[str, Any], *, create: bool, store: str | None = None) -> None:
    """Fail before any parsing or model loading when the store cannot be used (raises StoreError naming the store
    as given: ``store``, default ``--store``). A Qdrant server is checked by its first request."""
    from haystack_fin.store_check import check_pipeline_stores

    if not args.qdrant_url:
        check_pipeline_stores(data, store if store is not None else args.store, create=create)


def cmd_index(args: argparse.Namespace) -> int:
    from haystack_fin.indexing_runner import index_filings
    from haystack_fin.pipeline_loader import pipeline_dict

    files, notes = _expand(args.paths)
    if not files:
        print("error: no filings found in the given paths", file=sys.stderr)
        return 2
    for note in notes:
        if not args.quiet:
            print(f"note: {note}", file=sys.stderr)
    meta = dict(args.meta or [])
    if meta.get("filing_id") and len(files) > 1:
        print("error: --meta filing_id=... names one filing; give one path", file=sys.stderr)
        return 2
    data = pipeline_dict(args.pipeline or "indexing", args.store, args.qdrant_url, args.index)
    _check_store(args, data, create=True)
    report = index_filings(
        [str(f) for f in files],
        data,
        meta,
        timeout_s=args.timeout or None,
        workers=args.workers,
        quiet=args.quiet,
        optimize=not args.no_optimize,
        replace=args.replace,
        worker_memory_mb=args.worker_memory or None,
    )
    if not args.quiet:
        for fid, n in report.recovered.items():
            print(f"note: {fid}: removed {n} node(s) left by an interrupted indexing run", file=sys.stderr)
    for line in report.warnings:
        print(f"warning: {line}", file=sys.stderr)
    for line in report.failures:
        print(f"error: {line}", file=sys.stderr)
    if not args.quiet:
        print(
            f"indexed {report.n_ok} of {len(files)} filing(s), {report.nodes_written} node(s) written",
            file=sys.stderr,
        )
    return 1 if report.n_failed else 0


def cmd_upgrade(args: argparse.Namespace) -> int:
    from haystack_fin.indexing_runner import add_filing_vectors
    from haystack_fin.pipeline_loader import pipeline_dict

    _check_store(args, pipeline_dict("indexing", args.store, args.qdrant_url, args.index), create=False)
    store = _store_from_args(args)
    store.return_embedding = True  # the filing vectors are computed from the chunks' vectors
    try:
        updated = add_filing_vectors(store, quiet=args.quiet)
        profiled = add_profile_nodes(store)
        if callable(getattr(store, "optimize", None)) and not args.no_optimize:
            store.optimize()
    finally:
        store.close()
    if not args.quiet:
        print(f"added filing vectors to {updated} filing(s), profile nodes to {profiled}", file=sys.stderr)
    return 0


def add_profile_nodes(store: Any) -> int:
    """Write the profile node (``FilingSplitter.profile_node``) of every filing that has none; returns how many."""
    from haystack.document_stores.types import DuplicatePolicy

    from haystack_fin.components.filing_splitter import FilingSplitter
    from haystack_fin.core import schema

    have = {
        str(d.meta.get(schema.FILING_ID))
        for d in store.filter_documents(filters=schema.node_type_filter(schema.NodeType.PROFILE))
    }
    missing = [
        FilingSplitter.profile_node(d)
        for d in store.filter_documents(filters=schema.node_type_filter(schema.NodeType.FILING))
        if str(d.meta.get(schema.FILING_ID)) not in have
    ]
    if missing:
        store.write_documents(missing, policy=DuplicatePolicy.OVERWRITE)
    return len(missing)


def filing_profiles(store: Any, filing_id: str | None = None) -> list[dict[str, Any]]:
    """The ``inspect`` contract: one dict per filing, read from the filing nodes, with the pages left out for want
    of OCR (``skipped_pages``) and the leftovers of an unfinished indexing run (``unfinished_run``: None, or the
    run, whether the filing node was already switched to it, and the nodes the next ``index`` removes)."""
    from haystack_fin.components.filing_writer import pending_writes
    from haystack_fin.core import schema

    conditions = [schema.node_type_filter(schema.NodeType.FILING)]
    if filing_id:
        conditions.append(schema.filing_filter(filing_id))
    found = store.filter_documents(filters={"operator": "AND", "conditions": conditions})
    nodes = sorted((schema.FilingNode.from_meta(d.meta) for d in found), key=lambda n: n.filing_id)
    pending = {w.filing_id: w for w in pending_writes(store)}
    return [
        {
            "filing_id": node.filing_id,
            "company": node.company,
            "form": node.form,
            "period": node.period,
            "source_path": node.source_path,
            "n_pages": node.n_pages,
            # Every modality, 0 when absent (a node written before a modality existed lacks its key).
            "n_chunks_by_modality": {**{m.value: 0 for m in schema.Modality}, **node.n_chunks_by_modality},
            "items": [
                {
                    "item": it["item"],
                    "title": it["title"],
                    "start_page": it["start_page"],
                    "end_page": it["end_page"],
                    "n_chunks": it["n_chunks"],
                }
                for it in node.items
            ],
            "skipped_pages": list(node.skipped_pages),
            "unfinished_run": _unfinished(pending.get(node.filing_id)),
        }
        for node in nodes
    ]


def _unfinished(write: Any) -> dict[str, Any] | None:
    if write is None:
        return None
    return {"run": write.run, "switched": write.switched, "leftover_nodes": write.leftover_nodes}


def orphaned_writes(store: Any, filing_id: str | None = None) -> list[Any]:
    """Interrupted first writes: filings with leftovers of an indexing run but no filing node (invisible to
    queries; the next ``index`` removes them)."""
    from haystack_fin.components.filing_writer import pending_writes

    return [
        w for w in pending_writes(store) if w.current_run is None and (filing_id is None or w.filing_id == filing_id)
    ]


def cmd_inspect(args: argparse.Namespace) -> int:
    from haystack_fin.core.ingest.pdf import page_ranges
    from haystack_fin.pipeline_loader import pipeline_dict

    _check_store(args, pipeline_dict("indexing", args.store, args.qdrant_url, args.index), create=args.create)
    store = _store_from_args(args)
    try:
        profiles = filing_profiles(store, args.filing)
        orphans = orphaned_writes(store, args.filing)
    finally:
        store.close()
    for w in orphans:
        print(
            f"warning: {w.filing_id}: {w.leftover_nodes} node(s) of an interrupted first index (not searchable); "
            "the next `haystack-fin index` removes them",
            file=sys.stderr,
        )
    if args.filing and not profiles:
        print(f"error: no filing {args.filing!r} in the store", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(profiles, indent=2))
        return 0
    for p in profiles:
        counts = ", ".join(f"{k} {v}" for k, v in p["n_chunks_by_modality"].items())
        print(f"{p['filing_id']}: {p['company']} {p['form']} {p['period']} - {p['n_pages']} pages, chunks: {counts}")
        if p["skipped_pages"]:
            print(f"  skipped pages (no text layer, OCR not installed): {page_ranges(p['skipped_pages'])}")
        unfinished = p["unfinished_run"]
        if unfinished:
            state = "switched to it, the old run not yet removed" if unfinished["switched"] else "not switched to it"
            print(
                f"  unfinished indexing run {unfinished['run']} ({state}): {unfinished['leftover_nodes']} leftover "
                "node(s), not searchable; the next `haystack-fin index` removes them"
            )
        for it in p["items"]:
            pages = f"pp. {it['start_page']:>3}-{it['end_page']:<3}"
            print(f"  {it['item']:>6}  {pages}  {it['n_chunks']:>4} chunks  {it['title']}")
    return 0


def filing_graph(store: Any, filing_id: str) -> Any:
    """The ``FilingGraph`` of one filing, built from its chunks in the store as the GraphExpander builds it (None:
    the filing has no chunks)."""
    from haystack_fin.core import schema
    from haystack_fin.core.graph.build import build_filing_graph
    from haystack_fin.core.lexicon import Lexicon
    from haystack_fin.store_registry import one_run

    found = store.filter_documents(filters=schema.filing_filter(filing_id))
    found = one_run(filing_id, found)  # the run the filing node names (a re-index may be under way)
    chunks = [d for d in found if str(d.meta.get(schema.NODE_TYPE) or "chunk") == schema.NodeType.CHUNK.value]
    if not chunks:
        return None
    run = str(chunks[0].meta.get(schema.INDEX_RUN) or "")
    docs = ({"id": d.id, "content": d.content, "meta": d.meta} for d in chunks)
    return build_filing_graph(docs, Lexicon.load(None), filing_id, run)


def cmd_graph(args: argparse.Namespace) -> int:
    from haystack_fin.core.graph.explain import chunk_edge_lines, export_graph
    from haystack_fin.pipeline_loader import pipeline_dict

    _check_store(args, pipeline_dict("indexing", args.store, args.qdrant_url, args.index), create=False)
    store = _store_from_args(args)
    try:
        fg = filing_graph(store, args.filing)
    finally:
        store.close()
    if fg is None:
        print(f"error: no filing {args.filing!r} in the store", file=sys.stderr)
        return 1
    if args.item is not None and not any(c.item == args.item for c in fg.chunks.values()):
        items = sorted({c.item for c in fg.chunks.values()})
        print(f"error: filing {args.filing!r} has no Item {args.item!r} (Items: {', '.join(items)})", file=sys.stderr)
        return 1
    exported = export_graph(fg, args.item)
    if args.json:
        print(json.dumps(exported, indent=2, default=str))
        return 0
    counts = exported["counts"]
    scope = f" Item {args.item}" if args.item else ""
    print(f"{fg.filing_id}{scope}: {sum(counts['nodes'].values())} nodes {counts['nodes']}, {counts['facts']} facts")
    print(f"  entities: {counts['entities']}")
    print(f"  edges: {counts['edges']}")
    print(f"  edge kinds: {counts['edge_kinds']}")
    for line in chunk_edge_lines(fg, args.item):
        print(f"  {line}")
    return 0


def ask(question: str, args: argparse.Namespace) -> dict[str, Any]:
    """Run pipelines/query.yaml through ``QueryRunner`` (one pipeline: retrieval, then generation and the number
    check; its gate is closed with --no-llm or when Ollama is not reachable, which leaves the passages as they are)
    and collect the trace. ``-k`` is the window's run-time ``top_k``: the candidates stay the YAML's, so the first
    passages do not depend on ``-k``. The generator's URL and model: the YAML's, or ``HAYSTACK_FIN_OLLAMA_URL`` /
    ``HAYSTACK_FIN_OLLAMA_MODEL``."""
    from haystack_fin.query_runner import QueryRunner
    from haystack_fin.responses import generation_status, query_response
    from haystack_fin.serving import ServingConfig, ollama_reachable

    env = ServingConfig.from_env()
    runner = QueryRunner(
        args.store,
        args.qdrant_url,
        args.index,
        generate=not args.no_llm,
        ollama_url=env.ollama_url,
        ollama_model=env.ollama_model,
        aliases_path=getattr(args, "aliases", None),
    )
    try:
        llm_url = "" if args.no_llm else runner.llm_url or ""
        up = not args.no_llm and ollama_reachable(llm_url)
        result = runner.run(question, [args.filing] if args.filing else None, k=args.k, generate=up)
    finally:
        runner.close()
    if args.no_llm:
        generation = "skipped: --no-llm"
    else:
        generation = generation_status(True, up, result.answer is not None, bool(result.passages), llm_url)
    return query_response(question, result, generation, explain=True)


def citation_lines(citations: list[dict[str, Any]], unsupported: list[dict[str, Any]]) -> list[str]:
    """The answer's citations (where each of its numbers was found) and the numbers found in no cited passage."""
    lines = []
    for c in citations:
        pages = ", ".join(str(x) for x in c.get("pages") or [])
        table = f", {c['table_id']}" if c.get("table_id") else ""
        lines.append(f"[{c['ref']}] {c.get('filing_id')} Item {c.get('item')}, p. {pages}{table}")
        for num in c.get("numbers") or []:
            where = " / ".join(str(num[k]) for k in ("label", "column") if num.get(k)) or num.get("source", "")
            cell = f" = {num['cell']}" if num.get("cell") and num.get("cell") != num.get("text") else ""
            lines.append(f"    {num['text']}: {where}{cell}")
    from haystack_fin.responses import numbers_check_text

    lines.append(numbers_check_text(unsupported))
    return lines


def cmd_ask(args: argparse.Namespace) -> int:
    from haystack_fin.core.trace_text import explain_lines
    from haystack_fin.pipeline_loader import pipeline_dict
    from haystack_fin.responses import passage_label, unknown_filing_ids

    if not args.question.strip():  # an empty question would rank the store's chunks for nothing
        print("error: the question is empty", file=sys.stderr)
        return 2
    if args.aliases:
        from haystack_fin.core.retrieval.companies import load_alias_file

        try:
            load_alias_file(args.aliases)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    _check_store(args, pipeline_dict("query", args.store, args.qdrant_url, args.index), create=args.create)
    out = ask(args.question, args)
    unmatched = out["unmatched"]
    unknown = unknown_filing_ids(unmatched)
    if unknown:  # as in `inspect --filing`: an unknown id is an error, not another filing's passages
        print(f"error: no filing {unknown[0]!r} in the store", file=sys.stderr)
        return 1
    for u in unmatched:  # what the question asks for that no indexed filing has, one line each
        print(f"note: not in the indexed filings: {u['reason']}", file=sys.stderr)
    if args.json:
        print(json.dumps(out, indent=2, default=str))
        return 0
    scope = out["trace"].get("scope") or {}
    if not out["passages"] and scope.get("filing_ids") == []:
        reason = str(scope.get("reason") or "no indexed filing matches the question")
        print(f"{reason[:1].upper()}{reason[1:]}.")  # "No indexed filing matches: no indexed company is named ..."
    elif out["answer"] is None:
        print(f"Answer generation {out['generation']}; showing the cited passages.")
    else:
        print(out["answer"])
        print()
        for line in citation_lines(out["citations"] or [], out["unsupported_numbers"] or []):
            print(line)
    if args.explain:
        print()
        for line in explain_lines(out["trace"]):
            print(line)
    for n, p in enumerate(out["passages"], 1):
        print(f"\n[{n}] {passage_label(p)}")
        text = " ".join((p["text"] or "").split())
        print(f"    {text[:400]}{'...' if len(text) > 400 else ''}")
    return 0


def _benchmark_store(args: argparse.Namespace, command: str) -> str | None:
    """The store ``eval`` / ``calibrate`` index into: ``--store``, else a new temporary folder (none with
    ``--qdrant-url``); checked (and created) like ``index`` checks it."""
    from haystack_fin.pipeline_loader import pipeline_dict

    store: str | None = args.store
    if store is None and args.qdrant_url is None:
        import tempfile

        store = tempfile.mkdtemp(prefix=f"haystack-fin-{command}-")
    _check_store(args, pipeline_dict("indexing", store), create=True, store=store)
    return store


def _filing_dirs(args: argparse.Namespace) -> list[str]:
    """The folders of ``--pdfs`` and ``--filings``, in the order given; at least one is required."""
    folders = [*(args.pdfs or []), *(args.filings or [])]
    if not folders:
        raise ValueError("name the folder(s) holding DOC_NAME.pdf / DOC_NAME.html with --filings DIR (or --pdfs DIR)")
    return folders


def _add_filing_dirs_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--filings",
        action="append",
        default=[],
        metavar="DIR",
        help="folder with DOC_NAME.pdf or DOC_NAME.html for the questions' doc_names (repeatable; first match wins)",
    )
    p.add_argument("--pdfs", action="append", default=[], metavar="DIR", help="same as --filings (repeatable)")


def cmd_eval(args: argparse.Namespace) -> int:
    from haystack_fin.evaluation_runner import run_financebench

    ks = args.k
    folders = _filing_dirs(args)
    store = _benchmark_store(args, "eval")
    result = run_financebench(
        args.questions,
        folders,
        args.setting,
        store,
        args.qdrant_url,
        ks=ks,
        ablate=args.ablate,
        baseline=args.baseline,
        quiet=args.quiet,
        timeout_s=args.timeout or None,
        workers=args.workers,
        fragments=args.fragment,
    )
    Path(args.out).write_text(json.dumps(result, indent=2))
    overall = result["overall"]
    line = ", ".join(f"{m} {overall[m]:.3f}" for m in ("page_hit@5", "evidence_recall_bigram@5", "mrr") if m in overall)
    print(f"haystack-fin ({args.setting}): {line}, context_words@5 {overall.get('context_words@5', 0):.0f}")
    if "baseline" in result:
        b = result["baseline"]["overall"]
        line = ", ".join(f"{m} {b[m]:.3f}" for m in ("page_hit@5", "evidence_recall_bigram@5", "mrr") if m in b)
        print(f"plain Haystack: {line}, context_words@5 {b.get('context_words@5', 0):.0f}")
    if "candidates" in result:
        c = result["candidates"]["overall"]
        line = ", ".join(f"{m} {c[m]:.3f}" for m in c if m.startswith("candidate_recall@"))
        print(f"candidates (the ranker's input): {line}, {c.get('n_candidates', 0):.0f} per question")
    print(f"wrote {args.out}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from haystack_fin.calibration import fragment, run_calibration, sweep_table
    from haystack_fin.core.retrieval.modality_fallback import threshold_grid

    grids: dict[str, list[float] | None] = {}
    for name in ("text_range", "table_range", "image_range"):
        raw = getattr(args, name)
        if raw is None:
            grids[name] = None
            continue
        try:
            start, stop, step = (float(x) for x in raw.split(":"))
            grids[name] = threshold_grid(start, stop, step)
        except ValueError as exc:
            print(f"error: --{name.replace('_', '-')} {raw!r}: expected START:STOP:STEP ({exc})", file=sys.stderr)
            return 2
    store = _benchmark_store(args, "calibrate")
    result = run_calibration(
        args.questions,
        args.pdfs,
        store,
        args.qdrant_url,
        setting=args.setting,
        text_grid=grids["text_range"],
        table_grid=grids["table_range"],
        image_grid=grids["image_range"],
        tolerance=args.tolerance,
        quiet=args.quiet,
        timeout_s=args.timeout or None,
    )
    Path(args.out).write_text(fragment(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    print(sweep_table(result))
    if result["baseline_mismatches"]:
        print(
            f"warning: {result['baseline_mismatches']} question(s) differ from the pipeline's own run", file=sys.stderr
        )
    print(f"wrote {args.out}" + (f" and {args.json}" if args.json else ""))
    return 0


def cmd_train_ranker(args: argparse.Namespace) -> int:
    from haystack_fin import ranker_training as training
    from haystack_fin.core.retrieval.ranking_replay import read_dump, write_dump

    records = [record for path in args.from_dump for record in read_dump(path)]
    if args.questions:
        folders = _filing_dirs(args)
        store = _benchmark_store(args, "train-ranker")
        for questions in args.questions:
            dumped, check = training.dump_features(
                questions,
                folders,
                store,
                args.qdrant_url,
                quiet=args.quiet,
                fragments=args.fragment,
                timeout_s=args.timeout or None,
            )
            if check["replay_mismatches"]:
                print(
                    f"warning: {len(check['replay_mismatches'])} question(s) of {questions} replay differently from "
                    "the pipeline: the model is fitted on what the replay sees",
                    file=sys.stderr,
                )
            records += dumped
        if args.dump:
            write_dump(records, args.dump)
            print(f"wrote {args.dump} ({len(records)} questions)")
    if not records:
        raise ValueError("nothing to fit on: give --questions with --filings DIR, or --from-dump FILE")
    info: dict[str, object] = {"sets": sorted({r.source_set for r in records})}
    # the folds judge exactly the fit that is written
    fit_args: dict[str, Any] = {
        "c": args.c,
        "fit": args.fit,
        "weighting": args.weighting,
        "hand_set": training.hand_set_signals(args.hand_set),
        "trees": args.trees,
        "tree_weighting": args.tree_weighting,
        "term_pairs": args.term_pairs,
        "term_pair_c": args.term_pair_c,
    }
    if args.folds > 1:
        cv = training.cross_validate_dump(records, n_splits=args.folds, **fit_args)
        for line in training.cv_table(cv):
            print(line)
        info["cv_page_hit@5"] = {name: round(m["page_hit@5"], 4) for name, m in cv["overall"].items()}
    model = training.fit_model(records, info=info, **fit_args)
    model.save(args.out)
    print(f"wrote {args.out}: set the ranker's scoring_model to it (query.yaml, or `eval --fragment`)")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from haystack_fin.server import API_KEY_ENV, ServeOptions, serve
    from haystack_fin.serving import RequestError, ServingConfig

    config = ServingConfig(args.store, args.qdrant_url, args.index, args.ollama_url, args.ollama_model)
    options = ServeOptions(
        host=args.host,
        port=args.port or (MCP_PORT if args.mcp else REST_PORT),
        api_key=args.api_key or os.environ.get(API_KEY_ENV) or None,
        cors_origins=tuple(args.cors_origin or ()),
        allowed_hosts=tuple(args.allowed_host or ()),
        request_timeout=args.request_timeout,
        max_queue=args.max_queue,
        mcp=args.mcp,
    )
    try:
        serve(config, options)
    except RequestError as exc:  # a refused option or store: its own words, one line
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


_BACKEND_CHOICES = ("edge", "local")


def _add_backend_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store-backend",
        choices=_BACKEND_CHOICES,
        default=None,
        help="kind of --store folder: edge (Qdrant Edge, the default) or local (qdrant-client local mode, the "
        "format of haystack-fin before Edge)",
    )


def _add_benchmark_store_args(parser: argparse.ArgumentParser) -> None:
    """The store of eval, train-ranker and calibrate: by default a temporary folder they index into."""
    parser.add_argument("--store", default=None, help="reuse/create this index folder (default: a temporary one)")
    parser.add_argument("--qdrant-url", default=None)
    _add_backend_arg(parser)


def _add_store_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", default="./fin-index", help="embedded Qdrant Edge folder (default ./fin-index)")
    parser.add_argument("--qdrant-url", default=None, help="Qdrant server URL; overrides --store")
    parser.add_argument("--index", default=None, help="collection name (default haystack_fin)")
    _add_backend_arg(parser)


def _add_indexing_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=_timeout,
        default=600,
        metavar="SECONDS",
        help="stop parsing a filing after this long and go on with the next (default 600; 0 = no limit)",
    )
    parser.add_argument(
        "--workers", type=_positive_int, default=1, metavar="N", help="parse worker processes (default 1)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="haystack-fin", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("index", help="index filings (PDF or EDGAR HTML) into the store")
    p.add_argument("paths", nargs="+", help="filing files or folders")
    _add_store_args(p)
    p.add_argument(
        "--meta", action="append", type=_meta_pair, metavar="KEY=VALUE", help="metadata override, repeatable"
    )
    p.add_argument("--pipeline", default=None, help="indexing YAML to use instead of the shipped one")
    p.add_argument(
        "--replace",
        action="store_true",
        help="let a file replace a stored filing of the same id that came from another document (another path and "
        "other bytes); without it such a file is refused with one line",
    )
    _add_indexing_args(p)
    p.add_argument(
        "--worker-memory",
        type=_memory_mb,
        default=DEFAULT_WORKER_MEMORY_MB,
        metavar="MB",
        help=f"memory bound of each parse worker in MB (default {DEFAULT_WORKER_MEMORY_MB}; 0 = no bound): a filing "
        "past it fails with one line and the batch goes on",
    )
    p.add_argument(
        "--no-optimize",
        action="store_true",
        help="skip optimizing the embedded store after this batch (for all but the last of several batches: the "
        "next run without this flag optimizes everything written so far)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser(
        "upgrade",
        help="bring a store written by an older haystack-fin up to date (filing vectors), then optimize it",
    )
    _add_store_args(p)
    p.add_argument("--no-optimize", action="store_true", help="skip optimizing the embedded store afterwards")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")
    p.set_defaults(func=cmd_upgrade)

    p = sub.add_parser("inspect", help="list indexed filings with their Items")
    _add_store_args(p)
    p.add_argument("--filing", default=None, help="only this filing id")
    p.add_argument("--json", action="store_true", help="print the JSON contract")
    p.add_argument("--create", action="store_true", help="create the store if it does not exist (it lists nothing)")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("graph", help="a filing's entity/relation graph: counts, chunk links, adjacency (--json)")
    _add_store_args(p)
    p.add_argument("--filing", required=True, help="filing id (see inspect)")
    p.add_argument("--item", default=None, help="only this Item's nodes and the edges touching them, e.g. 7")
    p.add_argument("--json", action="store_true", help="counts, nodes and the adjacency list as JSON")
    p.set_defaults(func=cmd_graph)

    p = sub.add_parser("ask", help="ask a question: cited answer (Ollama) or cited passages")
    p.add_argument("question")
    _add_store_args(p)
    p.add_argument("--filing", default=None, help="restrict to this filing id (skips automatic scoping)")
    p.add_argument("-k", type=_positive_int, default=5, help="passages to return")
    p.add_argument("--explain", action="store_true", help="show scope, Item routing and tree paths")
    p.add_argument(
        "--aliases",
        default=None,
        metavar="FILE",
        help="company alias YAML ({company: [alias, ...]}) added to the shipped one (docs/scope.md)",
    )
    p.add_argument("--no-llm", action="store_true", help="do not call the generator even if Ollama is up")
    p.add_argument("--json", action="store_true")
    p.add_argument("--create", action="store_true", help="create the store if it does not exist (it finds nothing)")
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("serve", help="serve the query pipeline over HTTP (REST, OpenAI chat, MCP); docs/serving.md")
    _add_store_args(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=_positive_int, default=None, help=f"port (default {REST_PORT}, --mcp {MCP_PORT})")
    p.add_argument(
        "--api-key",
        default=None,
        help="require 'Authorization: Bearer KEY' on every route but /health (required off loopback; "
        "HAYSTACK_FIN_API_KEY also sets it, and keeps it out of the process list)",
    )
    p.add_argument(
        "--cors-origin",
        action="append",
        metavar="ORIGIN",
        help="let web pages from this origin call the server, e.g. http://localhost:3000 (repeatable; default: none)",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        metavar="HOST",
        help="also answer requests whose Host header is HOST, e.g. behind a reverse proxy (repeatable; on loopback "
        "the default is 127.0.0.1, localhost and [::1] only)",
    )
    p.add_argument(
        "--request-timeout",
        type=_seconds,
        default=60.0,
        metavar="SECONDS",
        help="answer 504 when a request (queue wait, retrieval and generation) takes longer (default 60)",
    )
    p.add_argument(
        "--max-queue",
        type=_non_negative_int,
        default=16,
        metavar="N",
        help="requests that may wait while one runs; more get 503 with Retry-After (default 16)",
    )
    p.add_argument(
        "--mcp",
        action="store_true",
        help="also serve the query as an MCP tool (streamable HTTP at /mcp)",
    )
    p.add_argument("--ollama-url", default=None, help="Ollama server (default: the query YAML's)")
    p.add_argument("--ollama-model", default=None, help="Ollama model (default: the query YAML's)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("eval", help="benchmarks")
    bench = p.add_subparsers(dest="benchmark", required=True)
    p = bench.add_parser("financebench", help="FinanceBench-format retrieval benchmark (docs/evaluation.md)")
    p.add_argument("--questions", required=True, help="FinanceBench-format JSONL")
    _add_filing_dirs_args(p)
    p.add_argument("--setting", choices=["single", "shared"], default="single")
    p.add_argument("--k", type=_cutoffs, default=(1, 3, 5, 10), help="comma-separated cut-offs (default 1,3,5,10)")
    p.add_argument(
        "--ablate",
        action="append",
        default=[],
        help="summary_tree|question_tree|flat_candidates|flam|reranker|scope|statements|sections|graph|"
        "fallback|ranking_model|evidence_places|neighbours|distinct_pages (repeatable)",
    )
    p.add_argument(
        "--fragment",
        action="append",
        default=[],
        metavar="YAML",
        help="pipeline fragment applied to the query pipeline, e.g. `calibrate`'s thresholds (repeatable)",
    )
    p.add_argument("--baseline", action="store_true", help="also run plain Haystack dense retrieval")
    _add_benchmark_store_args(p)
    p.add_argument("--out", required=True, help="result JSON")
    _add_indexing_args(p)
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser(
        "train-ranker",
        help="fit the ranker's scoring model on FinanceBench-format labelled questions (company-grouped folds)",
    )
    p.add_argument("--questions", action="append", default=[], help="FinanceBench-format JSONL (repeatable)")
    _add_filing_dirs_args(p)
    _add_benchmark_store_args(p)
    p.add_argument("--out", default="ranker_model.json", help="model JSON (default ranker_model.json)")
    p.add_argument("--dump", default=None, metavar="FILE", help="also write the candidates' features (.jsonl.gz)")
    p.add_argument("--from-dump", action="append", default=[], metavar="FILE", help="fit on a --dump file (repeatable)")
    p.add_argument(
        "--folds", type=_non_negative_int, default=5, help="company-grouped folds for the report (default 5; 0: none)"
    )
    p.add_argument(
        "--c", type=float, default=0.1, help="inverse L2 strength of the logistic model (default 0.1, as shipped)"
    )
    p.add_argument(
        "--fit",
        choices=["pairwise", "pointwise"],
        default="pointwise",
        help="learn each candidate's label (pointwise, default, as shipped) or the order within each question",
    )
    p.add_argument(
        "--weighting",
        choices=_WEIGHTINGS,
        default="role",
        help="how the pointwise fit weighs the candidates: every evidence role of every question the same (default, "
        "as shipped: a question needing two pieces of evidence weighs what two single-page ones do), every question, "
        "or every candidate",
    )
    p.add_argument(
        "--hand-set",
        default="lexical",
        metavar="SIGNALS",
        help="comma-separated fallback signals (lexical, table, statement, section, consolidated) whose weight keeps "
        "its hand-set ratio to dense (default lexical, as shipped; '' for none)",
    )
    p.add_argument(
        "--trees",
        type=_unit_weight,
        default=0.25,
        metavar="WEIGHT",
        help="weight in [0, 1] of boosted trees blended into the score's log-odds (default 0.25, as shipped; 0: the "
        "logistic model alone)",
    )
    p.add_argument(
        "--tree-weighting",
        choices=_WEIGHTINGS,
        default="question",
        help="how the trees weigh the candidates, as --weighting (default question, as shipped)",
    )
    p.add_argument(
        "--term-pairs",
        type=_non_negative_float,
        default=0.5,
        metavar="WEIGHT",
        help="weight of the term-pair model (question word x passage word, fitted on the candidates' words) in the "
        "score's log-odds (default 0.5, as shipped; 0: none, which also fits dumps made without the words)",
    )
    p.add_argument(
        "--term-pair-c",
        type=_positive_float,
        default=3.0,
        metavar="C",
        help="inverse regularization of the term-pair model (default 3.0, as shipped)",
    )
    p.add_argument(
        "--fragment",
        action="append",
        default=[],
        metavar="YAML",
        help="pipeline fragment applied to the query pipeline while dumping (repeatable)",
    )
    _add_indexing_args(p)
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=cmd_train_ranker)

    p = sub.add_parser(
        "calibrate",
        help="ModalityThresholdFallback thresholds for the embedder: sweep on FinanceBench-format questions",
    )
    p.add_argument("--questions", required=True, help="FinanceBench-format JSONL")
    p.add_argument("--pdfs", required=True, help="folder with DOC_NAME.pdf for every question's doc_name")
    p.add_argument("--setting", choices=["single", "shared"], default="single")
    _add_benchmark_store_args(p)
    p.add_argument("--text-range", default=None, metavar="START:STOP:STEP", help="text thresholds (0.55:0.85:0.05)")
    p.add_argument("--table-range", default=None, metavar="START:STOP:STEP", help="table thresholds (as text)")
    p.add_argument("--image-range", default=None, metavar="START:STOP:STEP", help="image thresholds (as text)")
    p.add_argument(
        "--tolerance", type=float, default=0.0, help="page_hit@5 / bigram recall a setting may lose (default 0)"
    )
    p.add_argument("--out", default="fallback.yaml", help="YAML fragment for query.yaml (default fallback.yaml)")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the whole sweep as JSON")
    _add_indexing_args(p)
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=cmd_calibrate)
    return parser


def _stdout_to_devnull() -> None:
    """After a closed pipe (``inspect | head``): point stdout at /dev/null so that the interpreter's final flush
    does not raise again (the recipe of the Python docs, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (captured in tests)
        pass


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.ERROR, format="%(levelname)s %(name)s: %(message)s"
    )
    backend = getattr(args, "store_backend", None)
    saved = os.environ.get(BACKEND_ENV)
    if backend:
        # pipeline_loader reads the backend from the environment, so that indexing workers and the evaluation
        # runner see it too; restored below for callers that run main() in-process (tests, notebooks).
        os.environ[BACKEND_ENV] = backend
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a reader that went away shows up here at the latest
        return code
    except BrokenPipeError:
        _stdout_to_devnull()
        return 141  # 128 + SIGPIPE: what a POSIX tool killed by the closed pipe reports
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        from haystack_fin.store_check import error_line

        if args.verbose:
            traceback.print_exc()
        print(f"error: {error_line(exc)}", file=sys.stderr)
        return 1
    finally:
        if backend:
            if saved is None:
                os.environ.pop(BACKEND_ENV, None)
            else:
                os.environ[BACKEND_ENV] = saved


# Commands that run no model: their process never needs torch (see torch_free).
_MODEL_FREE_COMMANDS = ("inspect", "graph", "upgrade")


def run() -> int:
    """The console script: ``main`` in a process of its own, kept free of torch when the command's pipeline runs
    no torch model (``torch_free``: Haystack would import it anyway, ~1.8 s of a cold ``ask``)."""
    import yaml

    from haystack_fin import pipelines_dir
    from haystack_fin.torch_free import keep_torch_out

    argv = sys.argv[1:]
    args = build_parser().parse_args(argv)  # bad arguments exit here as they would in main
    if args.command in _MODEL_FREE_COMMANDS:
        keep_torch_out()
    elif args.command == "ask":
        try:
            query = yaml.safe_load((pipelines_dir() / "query.yaml").read_text())
        except (OSError, yaml.YAMLError):
            query = {}  # main reports it; torch stays importable
        keep_torch_out(query if isinstance(query, dict) else {})
    return main(argv)


if __name__ == "__main__":
    sys.exit(run())
