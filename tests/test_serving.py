"""Serving: request validation, ``FinService``'s bounds (filing ids resolved before the pipeline runs, the deadline
at each generated token), the answer pipeline over Ollama's wire protocol (a local stub), ``haystack-fin serve``
errors, and (integration) ``haystack-fin serve`` on 127.0.0.1 against a store indexed from the Best Buy 10-Q fixture:
``/run``, ``/v1/chat/completions``, ``/status`` and the MCP tool, and attacks on it (removed routes, cross-origin
calls, a slow or stalled generator, clients that leave, fuzzed requests). The HTTP layer alone: test_server.py."""

import asyncio
import contextlib
import json
import os
import random
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from haystack import Document, Pipeline
from helpers.ollama_stub import INVENTED, OllamaStub

from haystack_fin.cli import main
from haystack_fin.pipeline_loader import ALLOWED_MODULES, GENERATION_COMPONENTS, pipeline_dict
from haystack_fin.query_runner import QueryResult
from haystack_fin.serving import (
    MAX_QUESTION_CHARS,
    PIPELINE_NAME,
    Deadline,
    FinService,
    RequestError,
    RequestTimeout,
    ServingConfig,
    ollama_reachable,
    render_chat,
    sources_text,
    validate_question,
)

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "bestbuy-10q-2023-07-29.pdf"
QUESTION = "What was Best Buy's total revenue in the second quarter of fiscal 2024?"

TABLE = Document(
    id="BBY#chunk-00059",
    content=(
        "Reportable segment and product category revenue information was as follows ($ in millions):\n"
        "$ in millions\n\n| | Three Months Ended July 29, 2023 | Three Months Ended July 30, 2022 |\n"
        "| --- | --- | --- |\n| Domestic | 8,890 | 9,569 |\n| Total revenue | 9,583 | 10,329 |"
    ),
    meta={"filing_id": "BBY", "company": "BEST BUY CO., INC.", "form": "10-Q", "period": "Q2 FY2024",
          "item": "I-1", "page_numbers": [13], "modality": "table", "table_id": "BBY#table-0022"},
)  # fmt: skip


@pytest.mark.parametrize(
    ("question", "k", "status", "message"),
    [
        ("", 5, 422, "question is empty"),
        ("   \n ", 5, 422, "question is empty"),
        ("x" * 10_000, 5, 413, "question is 10,000 characters; the limit is 2,000"),
        ("\ud800 revenue?", 5, 422, "question is not valid Unicode text (it holds a lone surrogate)"),
        ("revenue?", 0, 422, "k must be an integer from 1 to 50, got 0"),
        ("revenue?", True, 422, "k must be an integer from 1 to 50, got True"),
        (None, 5, 422, "question must be a string"),
    ],
)
def test_bad_requests_are_refused_with_one_line(question, k, status, message):
    with pytest.raises(RequestError) as info:
        validate_question(question, k)
    assert (info.value.status, str(info.value)) == (status, message)


def test_good_question_is_normalized():
    assert validate_question("  What was\nrevenue? ", 3) == ("What was revenue?", 3)
    assert len(validate_question("y" * MAX_QUESTION_CHARS)[0]) == MAX_QUESTION_CHARS


def _generation_part(url: str, model: str | None = None) -> Pipeline:
    """query.yaml's generation components as shipped (gate, prompt builder, OllamaChatGenerator, answer builder,
    checker) and their connections, the generator pointed at ``url``: the part after the window, without a store."""
    data = pipeline_dict("query")
    names = set(GENERATION_COMPONENTS)
    components = {n: data["components"][n] for n in GENERATION_COMPONENTS}
    components["llm"]["init_parameters"].update({"url": url, **({"model": model} if model else {})})
    connections = [
        c for c in data["connections"] if c["sender"].split(".")[0] in names and c["receiver"].split(".")[0] in names
    ]
    assert {"sender": "answer_builder.answers", "receiver": "checker.answers"} in connections
    return Pipeline.from_dict({"components": components, "connections": connections}, allowed_modules=ALLOWED_MODULES)


def _generation_inputs(docs: list[Document], generate: bool | None = None) -> dict[str, Any]:
    # In query.yaml the window feeds gate, answer_builder and checker; here the test does.
    gate = {"documents": docs, **({} if generate is None else {"generate": generate})}
    return {
        "gate": gate,
        "prompt_builder": {"query": QUESTION},
        "answer_builder": {"query": QUESTION, "documents": docs},
        "checker": {"documents": docs},
    }


def test_query_yaml_generation_over_the_ollama_wire_protocol():
    """The YAML's gate, prompt builder, OllamaChatGenerator (pointed at the stub) and answer builder, then its
    checker: the stub's copied figure is supported by the table cell, its invented one is not."""
    with OllamaStub() as stub:
        out = _generation_part(stub.url, "m:1").run(_generation_inputs([TABLE]))
        (request,) = stub.requests
    assert request["model"] == "m:1" and "[1] BEST BUY CO., INC. 10-Q" in request["messages"][-1]["content"]
    assert "Copy every number exactly" in request["messages"][0]["content"]
    answer = out["checker"]["answers"][0]
    assert answer.data == f"The reported figure is 8,890 [1]. The stub also invents {INVENTED} [1]."
    (citation,) = answer.meta["citations"]
    assert citation["numbers"][0]["label"] == "Domestic" and citation["table_id"] == "BBY#table-0022"
    assert [u["text"] for u in answer.meta["unsupported_numbers"]] == [INVENTED]


@pytest.mark.parametrize(("docs", "generate"), [([TABLE], False), ([], None)], ids=["generate-false", "no-passage"])
def test_closed_gate_calls_no_generator(docs, generate):
    with OllamaStub() as stub:
        out = _generation_part(stub.url).run(_generation_inputs(docs, generate))
        assert stub.requests == []
    assert out == {"gate": {"skipped": True}}  # no answer and no error: the caller reports the passages


def test_question_length_is_checked_before_the_question_is_split():
    """A 3 MB question is refused without being split into a million words (62 MB before the check moved)."""
    import tracemalloc

    question = "revenue " * 400_000
    tracemalloc.start()
    with pytest.raises(RequestError) as info:
        validate_question(question)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert info.value.status == 413 and peak < 1_000_000, peak


def test_serve_without_a_store_is_one_error_line(tmp_path, capsys):
    assert main(["serve", "--store", str(tmp_path / "missing")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "missing" in err[0]


class _Profile:
    def __init__(self, filing_id: str) -> None:
        self.filing_id = filing_id


class _Scope:
    def __init__(self, ids: list[str], max_filings: int = 3) -> None:
        self.profiles = [_Profile(i) for i in ids]
        self.max_filings = max_filings
        self.refreshed = 0

    def refresh(self) -> None:
        self.refreshed += 1


class _Generator:
    """OllamaChatGenerator's surface as FinService uses it: ``timeout``, ``close`` and a ``run`` that streams
    ``tokens`` generated ``token_seconds`` apart to the streaming callback, noting the timeout it runs with."""

    def __init__(self) -> None:
        self.timeout = 120.0
        self.closed = 0
        self.tokens, self.token_seconds = 0, 0.0
        self.ran_with: list[float] = []

    def close(self) -> None:
        self.closed += 1

    def run(self, streaming_callback: Any = None) -> dict[str, Any]:
        self.ran_with.append(self.timeout)
        for _ in range(self.tokens):
            time.sleep(self.token_seconds)
            if streaming_callback is not None:
                streaming_callback(type("Chunk", (), {"content": "w "})())
        return {"replies": []}


class _Runner:
    """QueryRunner's surface as FinService uses it; ``run`` records its calls, takes ``retrieval_seconds``, then
    calls the generator as Pipeline.run does (``instance.run``) when generation is on."""

    def __init__(self, filing_ids: list[str], max_filings: int = 3) -> None:
        self.data = {"components": {"scope": {}, "llm": {}}}
        self.components = {"scope": _Scope(filing_ids, max_filings), "llm": _Generator()}
        self.pipe = self
        self.runs: list[tuple[str, Any]] = []
        self.retrieval_seconds = 0.0
        self.fail: Exception | None = None

    def get_component(self, name: str) -> Any:
        return self.components[name]

    def run(self, question, filing_ids=None, k=None, candidates=None, *, generate=None, streaming_callback=None):
        self.runs.append((question, filing_ids))
        if self.fail is not None:
            raise self.fail
        time.sleep(self.retrieval_seconds)
        if generate:
            self.components["llm"].run(streaming_callback=streaming_callback)
        known = {p.filing_id for p in self.components["scope"].profiles}
        unmatched = [{"kind": "filing_id", "text": f, "reason": "unknown"} for f in filing_ids or [] if f not in known]
        return QueryResult(passages=[], answer=None, trace={"scope": {"unmatched": unmatched}})


def _service(runner: _Runner, ollama: bool = False) -> FinService:
    service = FinService(ServingConfig(store="unused"))
    service.runner = runner
    service._ollama_checked, service._ollama_up = float("inf"), ollama  # no probe: Ollama is as the test says
    return service


def test_unknown_filing_ids_are_refused_before_the_pipeline_runs():
    runner = _Runner(["BBY-2024Q2", "PEP-8K"])
    service = _service(runner)
    with pytest.raises(RequestError) as info:
        service.ask("What was revenue?", ["BBY-2024Q2", "BOGUS"])
    assert (info.value.status, str(info.value)) == (404, "no indexed filing has id 'BOGUS'")
    assert runner.runs == []  # the pipeline never ran for it
    assert runner.components["scope"].refreshed == 1  # a filing indexed since the profiles were read would count
    service.ask("What was revenue?", ["BBY-2024Q2", "BBY-2024Q2"])
    assert runner.runs == [("What was revenue?", ["BBY-2024Q2"])]


@pytest.mark.parametrize(
    ("filing_ids", "message"),
    [
        (["A", "B", "C", "D"], "4 filing ids; this server searches at most 3 (max_filings)"),
        ([f"F{i}" for i in range(11)], "11 filing ids; the limit is 10"),
        (["BBY#chunk-00001"], "filing id 'BBY#chunk-00001' is not valid"),
        (["../etc/passwd"], "filing id '../etc/passwd' is not valid"),
        ([7], "filing id int is not valid"),
    ],
)
def test_explicit_filing_ids_are_bounded_like_the_question_scope(filing_ids, message):
    runner = _Runner(["A", "B", "C", "D", *(f"F{i}" for i in range(11))])
    with pytest.raises(RequestError) as info:
        _service(runner).ask("What was revenue?", filing_ids)
    assert info.value.status == 422 and str(info.value).startswith(message)
    assert runner.runs == []


def test_generation_stops_at_the_first_token_past_the_deadline():
    runner = _Runner(["BBY"])
    llm = runner.components["llm"]
    runner.retrieval_seconds, llm.tokens, llm.token_seconds = 0.3, 100, 0.05  # 5 s of tokens
    service = _service(runner, ollama=True)
    start = time.monotonic()
    with pytest.raises(RequestTimeout) as info:
        service.ask("What was revenue?", deadline=Deadline(1.0))
    assert info.value.status == 504 and time.monotonic() - start < 1.5
    # A generator that sends nothing is cut by its HTTP timeout: what was left of the deadline when it started.
    (timeout,) = llm.ran_with
    assert 0.5 < timeout <= 0.71 and llm.closed == 1
    service.ask("What was revenue?")  # no deadline: the YAML's timeout again
    assert llm.ran_with[-1] == 120.0
    late = Deadline(0.2)  # past its deadline when retrieval ends: the generator is not called
    with pytest.raises(RequestTimeout):
        service.ask("What was revenue?", deadline=late)
    abandoned = Deadline(60)
    abandoned.abandon()  # its client left while it waited: it never runs
    with pytest.raises(RequestTimeout):
        service.ask("What was revenue?", deadline=abandoned)
    assert len(runner.runs) == 3 and len(llm.ran_with) == 2


def test_a_failing_generator_is_502_without_its_address(caplog):
    from haystack.core.errors import PipelineRuntimeError

    runner = _Runner(["BBY"])
    cause = ConnectionError("http://10.1.2.3:11434 refused")
    runner.fail = PipelineRuntimeError.from_exception("llm", _Generator, cause)
    with pytest.raises(RequestError) as info:
        _service(runner, ollama=True).ask("What was revenue?")
    assert info.value.status == 502 and "10.1.2.3" not in str(info.value)
    assert "10.1.2.3" in caplog.text  # the operator's log has it


def test_served_generation_status_does_not_name_the_ollama_address():
    out = _service(_Runner(["BBY"]), ollama=False).ask("What was revenue?")
    assert out["generation"] == "skipped: Ollama not reachable"


def test_query_yaml_caps_the_answer_length():
    with OllamaStub() as stub:
        _generation_part(stub.url).run(_generation_inputs([TABLE]))
        (request,) = stub.requests
    assert request["options"]["num_predict"] == 512


# ---------------------------------------------------------------------------------------------------------------
# A real server
# ---------------------------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _request(url: str, body: Any = None, raw: bytes | None = None, timeout: float = 60) -> tuple[int, bytes]:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.fixture(scope="module")
def bestbuy_store(tmp_path_factory) -> str:
    import pymupdf

    from haystack_fin.pipeline_loader import load_pipeline

    folder = tmp_path_factory.mktemp("serving")
    # The cover, contents and statements (pp. 1-7) and the revenue and segment notes (pp. 12-14) of the fixture:
    # indexing all 30 pages takes about twice as long and this test has a one-minute budget.
    source, subset = pymupdf.open(FIXTURE), pymupdf.open()
    for first, last in ((0, 6), (11, 13)):
        subset.insert_pdf(source, from_page=first, to_page=last)
    subset.save(folder / "bestbuy-10q-subset.pdf")
    store = str(folder / "idx")
    indexing = load_pipeline("indexing", store_path=store)
    try:
        indexing.run({"converter": {"sources": [str(folder / "bestbuy-10q-subset.pdf")], "meta": {"filing_id": "BBY"}}})
    finally:
        indexing.close()
    return store


@contextlib.contextmanager
def _serving(store: str, log: Path, ollama_url: str, ready: Callable[[str], bool], *extra: str) -> Iterator[str]:
    """``haystack-fin serve`` (``extra``: e.g. ``--mcp``) on a free 127.0.0.1 port; yields the base URL once
    ``ready(base)`` holds, and stops the server after the block."""
    port = _free_port()
    command = [sys.executable, "-m", "haystack_fin.cli", "serve", "--store", store, "--port", str(port), *extra]
    command += ["--ollama-url", ollama_url]
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ}, cwd=REPO)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"server exited with {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                if ready(base):
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.5)
        else:
            pytest.fail(f"server not ready after 90 s: {log.read_text()[-2000:]}")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _rest_ready(base: str) -> bool:
    status, body = _request(f"{base}/status", timeout=2)
    return status == 200 and PIPELINE_NAME in json.loads(body)["pipelines"]


# The served options of the module's server: a deadline short enough for a test to pass it, long enough for a
# retrieval on a loaded machine (about 1 s), and a queue of two.
TIMEOUT, QUEUE = 10.0, 2


@pytest.fixture(scope="module")
def server(bestbuy_store, tmp_path_factory):
    """``haystack-fin serve --mcp`` on a free 127.0.0.1 port with the Ollama stub; yields (base URL, stub, log)."""
    log = tmp_path_factory.mktemp("serving-log") / "server.log"
    options = ("--mcp", "--request-timeout", str(TIMEOUT), "--max-queue", str(QUEUE))
    with OllamaStub() as stub, _serving(bestbuy_store, log, stub.url, _rest_ready, *options) as base:
        yield base, stub, log


@pytest.fixture
def fast_stub(server):
    """The module's server with its stub answering at once again after the test (a slow test leaves it fast)."""
    base, stub, log = server
    try:
        yield base, stub, log
    finally:
        stub.stall = stub.token_delay = 0.0


@pytest.mark.integration
def test_run_endpoint_answers_with_checked_citations(server):
    base, stub, _ = server
    status, body = _request(f"{base}/{PIPELINE_NAME}/run", {"question": QUESTION, "k": 3, "explain": True})
    assert status == 200, body
    result = json.loads(body)["result"]
    assert result["generation"] == "ollama" and len(result["passages"]) == 3
    assert all(p["filing_id"] == "BBY" and p["pages"] for p in result["passages"])
    assert result["citations"] and result["citations"][0]["filing_id"] == "BBY"
    found = result["citations"][0]["numbers"][0]
    assert found["source"] in ("table_cell", "table_text") and found["cell"]
    assert [u["text"] for u in result["unsupported_numbers"]] == [INVENTED]
    assert result["trace"]["scope"] is not None
    assert stub.requests, "the answer went through the Ollama wire protocol"


@pytest.mark.integration
def test_chat_completions_cite_sources_streaming_and_not(server):
    base, _, _ = server
    messages = [{"role": "user", "content": QUESTION}]
    status, body = _request(f"{base}/v1/chat/completions", {"model": PIPELINE_NAME, "messages": messages})
    assert status == 200, body
    text = json.loads(body)["choices"][0]["message"]["content"]
    # the stub cites the first passage holding a table row, whichever rank that passage has
    assert re.search(r"Sources:\n\[\d+\] BEST BUY CO\., INC\. 10-Q", text), text
    assert f"Numbers not found in the cited passages (check them): {INVENTED}" in text

    status, body = _request(
        f"{base}/v1/chat/completions", {"model": PIPELINE_NAME, "messages": messages, "stream": True}
    )
    assert status == 200
    frames = [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: {")]
    streamed = "".join(f["choices"][0]["delta"].get("content") or "" for f in frames)
    assert len(frames) > 5  # token by token, not one block
    assert streamed == text


@pytest.mark.integration
def test_status_and_bad_requests_leave_the_server_up(server):
    base, _, _ = server
    status, body = _request(f"{base}/status")
    state = json.loads(body)
    assert state["pipelines"] == [PIPELINE_NAME] and state["mcp"] is True
    assert state["queue"] == {"running": 0, "waiting": 0, "max_queue": QUEUE, "request_timeout_s": TIMEOUT}
    cases = [
        ({"question": ""}, None, 422, "question is empty"),
        ({"question": "x" * 10_000}, None, 413, "question is 10,000 characters; the limit is 2,000"),
        (None, b"not json", 422, "JSON decode error"),
    ]
    for body_json, raw, want_status, message in cases:
        status, body = _request(f"{base}/{PIPELINE_NAME}/run", body_json, raw)
        assert status == want_status and message in body.decode(), body
    status, _ = _request(f"{base}/{PIPELINE_NAME}/run", {"question": QUESTION, "k": 1})
    assert status == 200


def test_evidence_only_chat_answer_states_the_reason():
    passage = {"text": "Total revenue 9,583", "company": "BEST BUY CO., INC.", "form": "10-Q", "period": "Q2 FY2024",
               "filing_id": "BBY", "item": "I-1", "pages": [13], "table_id": None}  # fmt: skip
    out = {"answer": None, "generation": "skipped: Ollama not reachable at http://127.0.0.1:9", "passages": [passage]}
    text = render_chat(out)
    assert text.startswith("No generated answer (skipped: Ollama not reachable at http://127.0.0.1:9)")
    assert "[1] Total revenue 9,583" in text and "[1] BEST BUY CO., INC. 10-Q Q2 FY2024 (BBY), Item I-1, p. 13" in text


def test_a_source_line_cites_the_heading_pages_and_table():
    bby = {"company": "BEST BUY CO., INC.", "form": "10-Q", "period": "FY2024 Q2", "filing_id": "BBY"}
    table = {**bby, "item": "I-1", "section": ["Part I, Item 1. Financial Statements", "Condensed Consolidated Balance "
             "Sheets"], "pages": [3], "modality": "table", "table_id": "BBY#table-0004"}  # fmt: skip
    prose = {**bby, "item": "I-2", "section": [], "pages": [14, 15], "modality": "text", "table_id": None}
    assert (
        sources_text([table, prose], [{"ref": 2}])
        == "[2] BEST BUY CO., INC. 10-Q FY2024 Q2 (BBY), Item I-2, p. 14, 15 [text]"
    )
    assert sources_text([table, prose], None).splitlines()[0] == (
        "[1] BEST BUY CO., INC. 10-Q FY2024 Q2 (BBY), Item I-1 > Condensed Consolidated Balance Sheets, p. 3 "
        "[table table-0004]"
    )


@pytest.mark.integration
def test_live_ollama_answer_is_checked():
    """Against a real Ollama server with the YAML's model, when one is reachable (none is on this machine)."""
    config = ServingConfig.from_env()
    url = config.ollama_url or pipeline_dict("query")["components"]["llm"]["init_parameters"]["url"]
    if not ollama_reachable(url):
        pytest.skip(f"no Ollama server at {url}")
    out = _generation_part(url, config.ollama_model).run(_generation_inputs([TABLE]))
    answer = out["checker"]["answers"][0]
    assert answer.data.strip()
    assert isinstance(answer.meta["citations"], list) and isinstance(answer.meta["unsupported_numbers"], list)


@pytest.mark.integration
def test_what_is_not_there_is_said(server):
    base, _, _ = server
    status, body = _request(f"{base}/{PIPELINE_NAME}/run", {"question": QUESTION, "filing_ids": ["BOGUS"]})
    assert (status, json.loads(body)["detail"]) == (404, "no indexed filing has id 'BOGUS'")
    status, body = _request(f"{base}/{PIPELINE_NAME}/run", {"question": "What was Apple's revenue in fiscal 2019?"})
    result = json.loads(body)["result"]
    unmatched = {(u["kind"], u["text"]) for u in result["unmatched"]}
    assert status == 200 and {("company", "Apple"), ("period", "FY2019")} <= unmatched
    assert result["passages"] == [] and result["generation"] == "skipped: no passage found"
    status, body = _request(f"{base}/{PIPELINE_NAME}/run", {"question": "What was Domestic segment revenue?", "k": 1})
    result = json.loads(body)["result"]
    assert status == 200 and result["unmatched"] == [] and result["passages"][0]["filing_id"] == "BBY"


@pytest.mark.integration
def test_ask_says_what_is_not_there(bestbuy_store, tmp_path, capsys):
    import shutil

    store = str(tmp_path / "idx")
    shutil.copytree(bestbuy_store, store)  # a copy: the served store is held by the server process
    assert main(["ask", QUESTION, "--store", store, "--filing", "BOGUS", "--no-llm"]) == 1
    assert capsys.readouterr().err.strip() == "error: no filing 'BOGUS' in the store"
    from haystack_fin.core.retrieval.company_reference import edgartools_table

    assert main(["ask", "What was Apple's revenue in fiscal 2019?", "--store", store, "--no-llm"]) == 0
    captured = capsys.readouterr()
    notes = captured.err.strip().splitlines()
    if edgartools_table() is not None:  # the company reference table knows Apple: no filing, and it is named
        assert captured.out.startswith("No indexed filing matches: Apple Inc. (AAPL), a listed company, has no")
        assert "\n[1] " not in captured.out  # no other company's passages
        assert (
            notes[0] == "note: not in the indexed filings: Apple Inc. (AAPL), a listed company, has no indexed filing"
        )
    else:  # without it, "Apple" is a name nobody knows: the indexed filing is ranked, with the notice
        assert "note: not in the indexed filings: no indexed company is named 'Apple'" in notes[0]
        assert "\n[1] " in captured.out
    assert notes[1] == "note: not in the indexed filings: no indexed BEST BUY CO., INC. filing is for FY2019"


@pytest.mark.integration
def test_ask_prints_and_carries_the_check(bestbuy_store, tmp_path, capsys, monkeypatch):
    """``ask`` runs the one query pipeline: with the Ollama stub its answer, citations and unsupported numbers come
    out (text and --json); the passages are those of ``--no-llm`` (generation runs after the window)."""
    import shutil

    store = str(tmp_path / "idx")
    shutil.copytree(bestbuy_store, store)
    assert main(["ask", QUESTION, "--store", store, "--no-llm", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["answer"] is None and plain["citations"] is None and plain["generation"] == "skipped: --no-llm"
    with OllamaStub() as stub:
        monkeypatch.setenv("HAYSTACK_FIN_OLLAMA_URL", stub.url)
        assert main(["ask", QUESTION, "--store", store, "--json"]) == 0
        checked = json.loads(capsys.readouterr().out)
        assert main(["ask", QUESTION, "--store", store, "--explain"]) == 0
        text = capsys.readouterr().out
    assert [p["id"] for p in checked["passages"]] == [p["id"] for p in plain["passages"]]
    assert checked["generation"] == "ollama"
    assert checked["citations"][0]["filing_id"] == "BBY" and checked["citations"][0]["numbers"]
    assert [u["text"] for u in checked["unsupported_numbers"]] == [INVENTED]
    assert f"Numbers not found in the cited passages (check them): {INVENTED}" in text
    assert "Scope: scoped to BEST BUY CO., INC." in text and "Items (FLAM" in text and "Retrieved by:" in text
    # The REST route's JSON (and the MCP tool's) is built by the same function: the same keys, the same passages.
    service = FinService(ServingConfig(store=store))
    service.warm_up()
    try:
        served = service.ask(QUESTION, explain=True, generate=False)
    finally:
        service.close()
    assert served.keys() == plain.keys() and served["trace"].keys() == plain["trace"].keys()
    assert served["passages"] == plain["passages"] and all(p["section"] for p in served["passages"])


async def _call_mcp_tool(url: str, tool: str, arguments: dict[str, Any]) -> tuple[list[Any], Any]:
    """List the tools of an MCP server over streamable HTTP and call one (the ``mcp`` package's client)."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        return tools, await session.call_tool(tool, arguments)


@pytest.mark.integration
def test_mcp_tool_answers_with_cited_passages(server):
    """``haystack-fin serve --mcp``: an MCP client lists the query as the one tool and calls it; the result carries
    cited passages and the number check."""
    base, _, _ = server
    tools, result = asyncio.run(_call_mcp_tool(f"{base}/mcp", PIPELINE_NAME, {"question": QUESTION, "k": 3}))
    (tool,) = tools
    assert tool.name == PIPELINE_NAME
    assert {"question", "filing_ids", "k", "explain"} <= set(tool.inputSchema["properties"])
    assert tool.inputSchema["required"] == ["question"] and "SEC filings" in (tool.description or "")
    assert not result.isError, result.content
    out = json.loads(result.content[0].text)
    assert len(out["passages"]) == 3 and all(p["filing_id"] == "BBY" and p["pages"] for p in out["passages"])
    assert out["generation"] == "ollama" and out["citations"][0]["filing_id"] == "BBY"
    assert [u["text"] for u in out["unsupported_numbers"]] == [INVENTED]


# Hayhooks' routes and tools that ran a client's code in the server or removed the served pipeline.
DEPLOY_BODY = {"name": "x", "files": {"pipeline_wrapper.py": "import pathlib; pathlib.Path('pwned').touch()"},
               "overwrite": True}  # fmt: skip
REMOVED_ROUTES = [("POST", "/deploy_files"), ("POST", "/deploy-yaml"), ("POST", f"/undeploy/{PIPELINE_NAME}"),
                  ("GET", f"/draw/{PIPELINE_NAME}"), ("POST", "/v1/responses"), ("POST", "/v1/files")]  # fmt: skip


@pytest.mark.integration
def test_deploy_undeploy_and_draw_are_not_served(server, tmp_path):
    base, _, _ = server
    for method, path in REMOVED_ROUTES:
        data = json.dumps(DEPLOY_BODY).encode() if method == "POST" else None
        req = urllib.request.Request(f"{base}{path}", data, {"Content-Type": "application/json"}, method=method)
        try:
            with urllib.request.urlopen(req, timeout=30) as response:
                status = response.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        assert status == 404, (method, path, status)
    tools, result = asyncio.run(_call_mcp_tool(f"{base}/mcp", "deploy_pipeline_files", DEPLOY_BODY))
    assert [t.name for t in tools] == [PIPELINE_NAME] and result.isError
    assert not (REPO / "pwned").exists() and not (Path.cwd() / "pwned").exists()
    assert _request(f"{base}/{PIPELINE_NAME}/run", {"question": QUESTION, "k": 1})[0] == 200  # still served


@pytest.mark.integration
def test_cross_origin_preflight_is_refused(server):
    base, _, _ = server
    req = urllib.request.Request(f"{base}/{PIPELINE_NAME}/run", method="OPTIONS", headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            status, headers = response.status, response.headers
    except urllib.error.HTTPError as exc:
        status, headers = exc.code, exc.headers
    assert status >= 400 and headers.get("access-control-allow-origin") is None


def _timed(url: str, body: Any, timeout: float) -> tuple[int, bytes, float]:
    start = time.monotonic()
    status, answer = _request(url, body, timeout=timeout)
    return status, answer, time.monotonic() - start


@pytest.mark.integration
@pytest.mark.parametrize("slow", ["tokens", "stall"])
def test_a_slow_generator_is_cut_at_the_deadline(fast_stub, slow):
    """Ollama writing a token every 2 s (24 s for the stub's answer), or nothing for a minute: the request gets 504
    at its deadline, and the next good request is answered within the deadline."""
    base, stub, _ = fast_stub
    run = f"{base}/{PIPELINE_NAME}/run"
    if slow == "tokens":
        stub.token_delay = 2.0
    else:
        stub.stall = 60.0
    status, body, took = _timed(run, {"question": QUESTION, "k": 1}, timeout=TIMEOUT + 5)
    assert status == 504 and f"{TIMEOUT:g} s deadline" in json.loads(body)["detail"], body
    assert took < TIMEOUT + 2
    stub.token_delay = stub.stall = 0.0
    status, body, _ = _timed(run, {"question": QUESTION, "k": 1}, timeout=TIMEOUT)
    assert status == 200 and json.loads(body)["result"]["generation"] == "ollama"


@pytest.mark.integration
def test_a_full_queue_is_503_and_a_client_that_leaves_frees_its_place(fast_stub):
    """With the generator slow (24 s an answer): one request runs, two wait, a fourth gets 503 with Retry-After;
    when all three leave, the next good request is answered within the deadline, not after the slow runs."""
    base, stub, _ = fast_stub
    port = int(base.rsplit(":", 1)[1])
    stub.token_delay = 2.0
    leaving = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    data = json.dumps({"question": QUESTION, "k": 1}).encode()
    head = f"POST /{PIPELINE_NAME}/run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    for sock in leaving:
        sock.sendall(f"{head}Content-Length: {len(data)}\r\n\r\n".encode() + data)
        time.sleep(0.3)
    req = urllib.request.Request(f"{base}/{PIPELINE_NAME}/run", data=data, headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=TIMEOUT)
    assert info.value.code == 503 and int(info.value.headers["Retry-After"]) >= 1
    time.sleep(1.0)  # the first is generating by now
    for sock in leaving:
        sock.close()
    stub.token_delay = 0.0
    time.sleep(0.3)  # the server sees the connections close
    status, _, _ = _timed(f"{base}/{PIPELINE_NAME}/run", {"question": QUESTION, "k": 1}, timeout=TIMEOUT)
    assert status == 200
    status, body = _request(f"{base}/status")
    assert json.loads(body)["queue"]["waiting"] == 0


def _fuzz_cases(rng: random.Random) -> list[tuple[str, str, bytes, dict[str, str]]]:
    """(method, path, body, headers): malformed and random JSON, wrong types, odd Unicode, big and deep bodies."""
    run, chat = f"/{PIPELINE_NAME}/run", "/v1/chat/completions"
    odd = ["\u202e\u0644\u0627 revenue", "\u200b" * 500, "e\u0301" * 900, "\U0001f4b0" * 2000, "\x00\x01\x7f",
           "\ufeffrevenue?", "\udcff", "revenue?\ud800", "\U0001f4b0" * 2001, "A" * 2000, "\u0000" * 10]  # fmt: skip
    values: list[Any] = [None, True, 0, -1, 10**30, 1.5, "", [], {}, ["revenue"], {"question": "x"}, "BBY"]
    cases: list[tuple[str, str, bytes, dict[str, str]]] = []
    json_type = {"Content-Type": "application/json"}
    for text in odd:
        cases.append(("POST", run, json.dumps({"question": text}).encode(), json_type))
        chat_body = {"model": PIPELINE_NAME, "messages": [{"role": "user", "content": text}]}
        cases.append(("POST", chat, json.dumps(chat_body).encode(), json_type))
    for _ in range(60):
        body = {"question": rng.choice([*values, *odd, QUESTION]), "k": rng.choice([*values, 3]),
                "filing_ids": rng.choice([*values, ["BBY"], ["BBY"] * 20, ["x" * 300], ["BBY#filing"]]),
                "explain": rng.choice(values)}  # fmt: skip
        for key in rng.sample(sorted(body), rng.randint(0, 3)):
            del body[key]
        if rng.random() < 0.2:
            body[rng.choice(["top_k", "generate", "__proto__", "stream"])] = rng.choice(values)
        cases.append(("POST", rng.choice([run, chat, "/mcp"]), json.dumps(body).encode(), json_type))
    for _ in range(30):  # random bytes, and valid JSON cut or spliced at a random point
        good = json.dumps({"question": QUESTION, "k": 2}).encode()
        cut = rng.randint(0, len(good))
        raw = rng.choice([rng.randbytes(rng.randint(0, 2000)), good[:cut], good[:cut] + rng.randbytes(5) + good[cut:]])
        cases.append(("POST", rng.choice([run, chat, "/mcp"]), raw, json_type))
    deep = b"[" * 100_000 + b"]" * 100_000
    for raw in (deep, b'{"question": NaN}', b'{"question": "a", "k": 1e999}', b'{"question": "a", "question": 1}',
                b'{"question": "\xff\xfe revenue"}', b'"just a string"', b"null", b"[]"):  # fmt: skip
        cases.append(("POST", run, raw, json_type))
    cases.append(("POST", run, json.dumps({"question": QUESTION}).encode(), {"Content-Type": "text/plain"}))
    cases.append(("POST", run, json.dumps({"question": QUESTION}).encode(), {}))
    big = b'{"question": "' + b"revenue " * (10 * 1024 * 1024 // 8) + b'"}'  # 10 MB
    cases += [("POST", run, big, json_type), ("POST", chat, big, json_type), ("POST", "/mcp", big, json_type)]
    cases += [("GET", run, b"", {}), ("DELETE", run, b"", {}), ("GET", "/status", b"", {"Host": "evil.example"})]
    rng.shuffle(cases)
    return cases


def _send(port: int, method: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int | None, bytes]:
    """One request on its own connection; (None, b"") when the server closed it before answering (it may, for a
    body it refuses before reading)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT + 5)
    try:
        conn.request(method, path, body=body or None, headers={"Accept": "application/json, text/event-stream",
                                                                **headers})  # fmt: skip
        response = conn.getresponse()
        return response.status, response.read()
    except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected):
        return None, b""
    finally:
        conn.close()


@pytest.mark.integration
def test_fuzzed_requests_never_get_a_500_or_delay_the_next_good_one(server):
    """About 130 fuzzed requests from 4 threads, while other clients send good questions and leave at random
    moments: no answer is a 500 or shows a traceback, the server log shows none either, and the next good request
    after all of it is answered within the deadline."""
    from concurrent.futures import ThreadPoolExecutor

    base, _, log = server
    port = int(base.rsplit(":", 1)[1])
    rng = random.Random(25)
    cases = _fuzz_cases(rng)
    delays = [rng.uniform(0.0, 1.5) for _ in range(12)]

    def leave_after(delay: float) -> None:
        data = json.dumps({"question": QUESTION, "k": 2}).encode()
        head = f"POST /{PIPELINE_NAME}/run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(f"{head}Content-Length: {len(data)}\r\n\r\n".encode() + data)
            time.sleep(delay)

    with ThreadPoolExecutor(max_workers=4) as pool:
        leavers = [pool.submit(leave_after, d) for d in delays]
        answers = list(pool.map(lambda case: (case, _send(port, *case)), cases))
        for f in leavers:
            f.result()
    statuses = [status for _, (status, _) in answers]
    for (method, path, body, _), (status, text) in answers:
        assert status is None or status < 500 or status in (503, 504), (method, path, body[:200], status, text[:300])
        assert b"Traceback" not in text and b'File "' not in text, text[:300]
    assert statuses.count(None) <= 3, statuses  # only the 10 MB bodies may be cut off unanswered
    assert sum(1 for s in statuses if s in (400, 413, 422)) > 50, Counter(statuses)  # refused, each in one line
    status, _, _ = _timed(f"{base}/{PIPELINE_NAME}/run", {"question": QUESTION, "k": 1}, timeout=TIMEOUT)
    assert status == 200
    assert "Traceback" not in log.read_text(errors="replace")


def _subset_pdf(folder: Path, ranges: tuple[tuple[int, int], ...], name: str) -> Path:
    import pymupdf

    source, subset = pymupdf.open(FIXTURE), pymupdf.open()
    for first, last in ranges:
        subset.insert_pdf(source, from_page=first, to_page=last)
    path = folder / name
    subset.save(path)
    return path


@pytest.mark.integration
def test_reindex_while_queries_run_never_mixes_runs(bestbuy_store, tmp_path):
    """A filing re-indexed while questions run against the warm query pipeline (one process, the store shared as a
    server's would be): every answer comes from one indexing run of the filing, old or new, never both, with no
    error; after the write, answers come from the new run without a restart."""
    import shutil
    import threading

    from haystack_fin.components.filing_writer import FilingWriter
    from haystack_fin.core import schema
    from haystack_fin.pipeline_loader import drop_components, load_pipeline
    from haystack_fin.query_runner import QueryRunner
    from haystack_fin.store_registry import shared_store

    store_dir = str(tmp_path / "idx")
    shutil.copytree(bestbuy_store, store_dir)
    # The new version of the filing: two more pages of notes before the revenue note, so a new index_run, and the
    # chunk positions after them hold other text than before (a mix of runs would show in the passages' text).
    new_pdf = _subset_pdf(tmp_path, ((0, 6), (9, 13)), "bestbuy-10q-more.pdf")
    indexing = load_pipeline("indexing", store_path=store_dir, transform=lambda d: drop_components(d, ("writer",)))
    built = indexing.run(
        {"converter": {"sources": [str(new_pdf)], "meta": {"filing_id": "BBY"}}},
        include_outputs_from={"tree_builder", "splitter"},
    )
    new_nodes, filing_nodes = built["tree_builder"]["documents"], built["splitter"]["filing_nodes"]
    new_run = filing_nodes[0].meta[schema.INDEX_RUN]

    runner = QueryRunner(store_dir, generate=False)
    try:
        old_run = runner.run(QUESTION, k=3).passages[0].meta[schema.INDEX_RUN]
        assert old_run != new_run
        store = shared_store(runner.pipe.get_component("retriever").document_store)
        old_text = {d.id: d.content for d in store.filter_documents({"field": "meta.filing_id", "operator": "==",
                                                                      "value": "BBY"})}  # fmt: skip
        new_text = {d.id: d.content for d in [*new_nodes, *filing_nodes]}
        write = store.write_documents

        questions = [QUESTION, "What were the restructuring charges?", "What was the gross profit rate?"]
        results: list[tuple[str, list[Any]]] = []

        def slow_write(documents, policy=None):  # a write that takes a while, as a large filing's does
            for start in range(0, len(documents), 8):
                write(documents[start : start + 8], policy=policy)
                time.sleep(0.1)
                if start <= len(documents) // 2 < start + 8:
                    # Half written: hold the write until three questions have been answered from this state, however
                    # slow the machine (a fixed write time let a loaded machine answer fewer during the write).
                    deadline = time.monotonic() + 300
                    while sum(when == "during" for when, _ in results) < 3 and time.monotonic() < deadline:
                        time.sleep(0.05)
            return len(documents)

        store.write_documents = slow_write
        errors: list[BaseException] = []
        done = threading.Event()

        def ask_loop() -> None:
            n = n_after = 0
            while n_after < 3:  # until three questions were asked after the write
                when = "after" if done.is_set() else "during"  # when the question was asked
                n_after += when == "after"
                try:
                    results.append((when, runner.run(questions[n % 3], k=3).passages))
                except BaseException as exc:  # recorded, the loop goes on as a server would
                    errors.append(exc)
                n += 1

        thread = threading.Thread(target=ask_loop)
        thread.start()
        time.sleep(0.3)
        report = FilingWriter(document_store=store).run(documents=new_nodes, filing_nodes=filing_nodes)
        done.set()
        thread.join(timeout=120)
        store.write_documents = write
    finally:
        runner.close()
    assert not errors, errors
    assert report["documents_written"] == len(new_text)
    # Chunk positions whose text changed (the runs' ids differ: the run is part of them).
    old_at, new_at = ({schema.without_run(i): t for i, t in x.items()} for x in (old_text, new_text))
    assert sum(1 for i, t in old_at.items() if i in new_at and new_at[i] != t) > 10
    during = [passages for when, passages in results if when == "during"]
    assert len(during) >= 3, "questions ran while the filing was written"
    for _, passages in results:
        runs = {p.meta[schema.INDEX_RUN] for p in passages}
        assert len(runs) == 1, runs  # one run per answer
        text = old_text if runs == {old_run} else new_text
        for p in passages:  # the window's neighbours too: every chunk of the passage is that run's version
            for chunk_id in p.meta[schema.WINDOW]:
                assert " ".join(text[chunk_id].split())[:80] in " ".join(p.content.split()), chunk_id
    after = [passages for when, passages in results if when == "after"]
    assert after and {p.meta[schema.INDEX_RUN] for ps in after for p in ps} == {new_run}  # no restart needed
    assert {p.meta[schema.INDEX_RUN] for ps in during for p in ps} <= {old_run, new_run}
