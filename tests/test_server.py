"""``haystack-fin serve``'s HTTP layer (haystack_fin/server.py) on 127.0.0.1 in this process, over a stand-in for
``FinService`` that answers in a chosen time and stops at its deadline at each "token" as the real one does (the real
pipeline behind the same app: tests/test_serving.py). What is attacked: routes, CORS, the Host allowlist, the API
key, the body cap, the deadline, the queue, disconnects and error bodies."""

import asyncio
import contextlib
import http.client
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from haystack_fin.cli import main
from haystack_fin.server import MAX_BODY_BYTES, ServeOptions, check_options, create_app
from haystack_fin.serving import PIPELINE_NAME, Deadline, RequestError, validate_filing_ids, validate_question

KEY = "k" * 24
RUN = f"/{PIPELINE_NAME}/run"


class SlowService:
    """``FinService.ask``'s contract: ``tokens`` generated ``token_seconds`` apart, the deadline checked before the
    run and at each token (what FinService's streaming callback does), ``streaming_callback`` fed each token."""

    def __init__(self) -> None:
        self.token_seconds = 0.0
        self.tokens = 3
        self.fail: Exception | None = None
        self.calls: list[str] = []
        self.finished: list[str] = []

    def ask(
        self,
        question: str,
        filing_ids: list[str] | None = None,
        k: int = 5,
        explain: bool = False,
        generate: bool = True,
        streaming_callback: Any = None,
        deadline: Deadline | None = None,
    ) -> dict[str, Any]:
        question, k = validate_question(question, k)
        validate_filing_ids(filing_ids)
        deadline = deadline or Deadline(60)
        deadline.check()
        self.calls.append(question)
        if self.fail is not None:
            raise self.fail
        words = []
        for n in range(self.tokens):
            time.sleep(self.token_seconds)
            deadline.check()
            words.append(f"w{n} ")
            if streaming_callback is not None:
                streaming_callback(type("Chunk", (), {"content": f"w{n} "})())
        self.finished.append(question)
        answer = "".join(words)
        return {"question": question, "answer": answer, "citations": [], "unsupported_numbers": [],
                "unmatched": [], "generation": "ollama", "passages": []}  # fmt: skip


@contextlib.contextmanager
def serving(service: Any, **options: Any) -> Iterator[tuple[int, uvicorn.Server]]:
    """The app on a free 127.0.0.1 port in a thread; yields (port, server)."""
    app = create_app(service, ServeOptions(**options))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield port, server
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()


def call(
    port: int,
    method: str,
    path: str,
    body: Any = None,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30,
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    sent = {"Content-Type": "application/json", **(headers or {})}
    try:
        chunked = sent.get("Transfer-Encoding") == "chunked"
        conn.request(method, path, body=iter([data]) if chunked else data, headers=sent, encode_chunked=chunked)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def test_only_the_query_routes_exist():
    with serving(SlowService(), mcp=True) as (port, _):
        for method, path in [
            ("POST", "/deploy_files"),
            ("POST", "/deploy-yaml"),
            ("POST", f"/undeploy/{PIPELINE_NAME}"),
            ("GET", f"/draw/{PIPELINE_NAME}"),
            ("POST", "/v1/responses"),
            ("POST", "/v1/files"),
            ("GET", "/docs"),
            ("GET", "/openapi.json"),
        ]:
            body = {"name": "x", "files": {"pipeline_wrapper.py": "open('/tmp/pwned', 'w')"}, "overwrite": True}
            status, _, _ = call(port, method, path, body if method == "POST" else None)
            assert status == 404, (method, path, status)
        assert call(port, "GET", "/health")[0] == 200
        status, _, body = call(port, "GET", "/status")
        assert status == 200 and json.loads(body)["pipelines"] == [PIPELINE_NAME]
        assert json.loads(call(port, "GET", "/v1/models")[2])["data"][0]["id"] == PIPELINE_NAME


async def _mcp_tools(url: str, tool: str, arguments: dict[str, Any]) -> tuple[list[str], Any]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        names = [t.name for t in (await session.list_tools()).tools]
        return names, await session.call_tool(tool, arguments)


def test_mcp_offers_the_query_tool_only():
    service = SlowService()
    with serving(service, mcp=True) as (port, _):
        url = f"http://127.0.0.1:{port}/mcp"
        names, result = asyncio.run(_mcp_tools(url, "deploy_pipeline", {"name": "x", "files": {}}))
        assert names == [PIPELINE_NAME]
        assert result.isError and service.calls == []
        _, result = asyncio.run(_mcp_tools(url, PIPELINE_NAME, {"question": "What was revenue?", "k": 2}))
    assert not result.isError and json.loads(result.content[0].text)["answer"] == "w0 w1 w2 "


def test_mcp_bodies_that_are_not_json_are_a_parse_error_not_a_500():
    headers = {"Accept": "application/json, text/event-stream"}
    with serving(SlowService(), mcp=True) as (port, _):
        for raw in (b"\xbb\xe4{}", b"[" * 100_000 + b"]" * 100_000, b'{"jsonrpc": "2.0", '):
            status, _, body = call(port, "POST", "/mcp", raw=raw, headers=headers)
            assert status == 400 and json.loads(body)["error"]["code"] == -32700, (raw[:20], status, body)


def test_cross_origin_calls_are_refused_unless_named():
    preflight = {"Origin": "http://evil.example", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type"}  # fmt: skip
    with serving(SlowService()) as (port, _):
        status, headers, _ = call(port, "OPTIONS", RUN, headers=preflight)
        assert status >= 400 and "access-control-allow-origin" not in headers
        status, headers, _ = call(
            port, "POST", RUN, {"question": "revenue?"}, headers={"Origin": "http://evil.example"}
        )
        assert "access-control-allow-origin" not in headers  # a page cannot read what it made the server do
    with serving(SlowService(), cors_origins=("http://localhost:3000",)) as (port, _):
        status, headers, _ = call(port, "OPTIONS", RUN, headers=preflight)
        assert status == 400 and "access-control-allow-origin" not in headers
        status, headers, _ = call(port, "OPTIONS", RUN, headers={**preflight, "Origin": "http://localhost:3000"})
        assert status == 200 and headers["access-control-allow-origin"] == "http://localhost:3000"


def test_host_header_allowlist_on_loopback():
    """A DNS-rebinding page reaches 127.0.0.1 under its own name: the Host header says so, and is refused."""
    with serving(SlowService()) as (port, _):
        assert call(port, "GET", "/status", headers={"Host": "evil.example"})[0] == 400
        assert call(port, "GET", "/status", headers={"Host": f"evil.example:{port}"})[0] == 400
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
            assert call(port, "GET", "/status", headers={"Host": host})[0] == 200, host
    with serving(SlowService(), allowed_hosts=("fin.internal",)) as (port, _):
        assert call(port, "GET", "/status", headers={"Host": "fin.internal"})[0] == 200


def test_api_key_is_required_on_every_route_but_health():
    with serving(SlowService(), api_key=KEY, mcp=True) as (port, _):
        for method, path in [("GET", "/status"), ("GET", "/v1/models"), ("POST", RUN), ("POST", "/mcp"),
                             ("POST", "/v1/chat/completions")]:  # fmt: skip
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}):
                status, sent, body = call(port, method, path, {"question": "revenue?"}, headers=headers)
                assert status == 401 and sent["www-authenticate"] == "Bearer", (path, headers)
                assert "Authorization: Bearer" in json.loads(body)["detail"]
        assert call(port, "GET", "/health")[0] == 200
        status, _, body = call(port, "POST", RUN, {"question": "revenue?"}, headers={"Authorization": f"Bearer {KEY}"})
        assert status == 200 and json.loads(body)["result"]["answer"] == "w0 w1 w2 "


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"host": "0.0.0.0"}, "--host 0.0.0.0 is reachable from other machines: set an API key with --api-key KEY or "
                              "HAYSTACK_FIN_API_KEY=KEY (clients send 'Authorization: Bearer KEY')"),
        ({"host": "192.168.1.4"}, "--host 192.168.1.4 is reachable"),
        ({"host": "::"}, "--host :: is reachable"),
        ({"api_key": "short"}, "the API key has 5 characters; use at least 16"),
        ({"cors_origins": ("*",)}, "--cors-origin '*' is not an origin"),
        ({"cors_origins": ("http://a.example/",)}, "--cors-origin 'http://a.example/' is not an origin"),
    ],
)  # fmt: skip
def test_options_that_would_leave_the_server_open_are_refused(options, message):
    with pytest.raises(RequestError) as info:
        check_options(ServeOptions(**options))
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_loopback_and_keyed_binds_are_accepted():
    for options in ({"host": "127.0.0.1"}, {"host": "localhost"}, {"host": "::1"}, {"host": "0.0.0.0", "api_key": KEY},
                    {"cors_origins": ("http://localhost:3000", "https://app.example")}):  # fmt: skip
        check_options(ServeOptions(**options))


def test_serve_off_loopback_without_a_key_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("HAYSTACK_FIN_API_KEY", raising=False)
    # Refused before the store is looked at: nothing starts, nothing is loaded.
    assert main(["serve", "--host", "0.0.0.0", "--store", str(tmp_path / "missing")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --host 0.0.0.0 is reachable from other machines")
    assert "HAYSTACK_FIN_API_KEY" in err[0] and "--api-key" in err[0]
    monkeypatch.setenv("HAYSTACK_FIN_API_KEY", KEY)  # with a key it goes on, to the store check
    assert main(["serve", "--host", "0.0.0.0", "--store", str(tmp_path / "missing")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing" in err[0] and "API key" not in err[0]


def test_large_bodies_are_refused_before_they_are_read():
    with serving(SlowService()) as (port, _):
        start = time.monotonic()
        sock = socket.create_connection(("127.0.0.1", port))
        head = f"POST {RUN} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        sock.sendall(f"{head}Content-Length: {10 * 1024 * 1024}\r\n\r\n".encode() + b'{"question": "')
        answer = sock.recv(4096).decode()  # answered with the body still unsent
        sock.close()
        assert answer.startswith("HTTP/1.1 413") and time.monotonic() - start < 5
        # Chunked, with no length announced: cut off once the bytes pass the cap.
        status, _, _ = call(port, "POST", RUN, raw=b'{"question": "' + b"x" * (MAX_BODY_BYTES + 10) + b'"}',
                            headers={"Transfer-Encoding": "chunked"})  # fmt: skip
        assert status == 413
        assert call(port, "POST", RUN, {"question": "x" * 10_000})[0] == 413  # under the cap, over the question limit


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"question": 5}, "question: Input should be a valid string"),
        ({"question": "revenue?", "k": "5"}, "k: Input should be a valid integer"),
        ({"question": "revenue?", "k": True}, "k: Input should be a valid integer"),
        ({"question": "revenue?", "top_k": 5}, "top_k: Extra inputs are not permitted"),
        ({"question": "revenue?", "filing_ids": ["a#chunk-1"]}, "filing id 'a#chunk-1' is not valid"),
        ({"question": "revenue?", "filing_ids": [f"F{i}" for i in range(11)]}, "11 filing ids; the limit is 10"),
        ({"question": "\ud800 revenue?"}, "question is not valid Unicode text"),
        ({"question": "   "}, "question is empty"),
    ],
)
def test_bad_requests_never_reach_the_service(body, message):
    service = SlowService()
    with serving(service) as (port, _):
        status, _, answer = call(port, "POST", RUN, raw=json.dumps(body).encode())
    detail = json.loads(answer)
    assert status == 422 and detail["detail"].startswith(message) and detail["request_id"]
    assert service.calls == []


def test_internal_errors_say_nothing_but_a_request_id(caplog):
    service = SlowService()
    service.fail = RuntimeError("cannot open /srv/secret-store/collection at http://10.0.0.5:11434")
    with caplog.at_level(logging.ERROR, logger="haystack_fin.server"), serving(service) as (port, _):
        status, _, body = call(port, "POST", RUN, {"question": "revenue?"})
        chat = {"model": PIPELINE_NAME, "messages": [{"role": "user", "content": "revenue?"}]}
        chat_status, _, chat_body = call(port, "POST", "/v1/chat/completions", chat)
        stream_status, _, stream_body = call(port, "POST", "/v1/chat/completions", {**chat, "stream": True})
    detail = json.loads(body)
    assert status == 500 and detail["detail"].startswith("internal error") and detail["request_id"] in detail["detail"]
    assert chat_status == 500 and stream_status == 200  # a stream has started: the error is its last line
    for text in (body, chat_body, stream_body):
        assert b"secret" not in text and b"10.0.0.5" not in text and b"Traceback" not in text
    assert b"internal error" in stream_body
    logged = "\n".join(r.getMessage() + str(r.exc_info) for r in caplog.records)
    assert detail["request_id"] in logged and "/srv/secret-store" in logged


def test_a_request_past_its_deadline_gets_504_and_frees_the_worker():
    service = SlowService()
    service.token_seconds, service.tokens = 0.2, 100  # 20 s of generation
    with serving(service, request_timeout=1.5) as (port, _):
        start = time.monotonic()
        status, _, body = call(port, "POST", RUN, {"question": "slow"})
        took = time.monotonic() - start
        assert status == 504 and "1.5 s deadline" in json.loads(body)["detail"] and took < 3
        service.token_seconds, service.tokens = 0.0, 3
        status, _, _ = call(port, "POST", RUN, {"question": "next"}, timeout=1.5)  # within the deadline
        assert status == 200
    assert service.finished == ["next"]  # the slow run stopped at its deadline


def test_a_full_queue_is_503_with_retry_after():
    service = SlowService()
    service.token_seconds, service.tokens = 0.1, 20  # 2 s each
    results: list[tuple[int, dict[str, str]]] = []
    with serving(service, max_queue=1, request_timeout=30) as (port, _):

        def one(n: int) -> None:
            status, headers, _ = call(port, "POST", RUN, {"question": f"q{n}"})
            results.append((status, headers))

        threads = [threading.Thread(target=one, args=(n,)) for n in range(5)]
        for t in threads:
            t.start()
            time.sleep(0.1)
        for t in threads:
            t.join()
    statuses = sorted(s for s, _ in results)
    assert statuses == [200, 200, 503, 503, 503]  # one running, one waiting, the rest turned away at once
    assert all(int(h["retry-after"]) >= 1 for s, h in results if s == 503)


def _send_and_leave(port: int, body: dict[str, Any], after: float) -> None:
    """A client that sends a request, then closes the connection before the answer."""
    sock = socket.create_connection(("127.0.0.1", port))
    data = json.dumps(body).encode()
    head = f"POST {RUN} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    sock.sendall(f"{head}Content-Length: {len(data)}\r\n\r\n".encode() + data)
    time.sleep(after)
    sock.close()


def test_a_client_that_leaves_frees_its_place():
    service = SlowService()
    service.token_seconds, service.tokens = 0.1, 100  # 10 s each, far past what this test waits
    with serving(service, request_timeout=30, max_queue=1) as (port, server):
        running = threading.Thread(target=_send_and_leave, args=(port, {"question": "running"}, 0.5))
        running.start()
        time.sleep(0.2)
        waiting = threading.Thread(target=_send_and_leave, args=(port, {"question": "waiting"}, 0.2))
        waiting.start()
        running.join()
        waiting.join()
        service.token_seconds, service.tokens = 0.0, 3
        # Both left: the running one stops at its next token, the waiting one never runs; the next answers now.
        status, _, _ = call(port, "POST", RUN, {"question": "next"}, timeout=2)
        assert status == 200
        assert server.config.app  # the server is still up
    assert service.calls == ["running", "next"] and service.finished == ["next"]


def test_chat_streams_tokens_and_bounds_them():
    service = SlowService()
    chat = {"model": PIPELINE_NAME, "messages": [{"role": "user", "content": "What was revenue?"}]}
    with serving(service, request_timeout=1.5) as (port, _):
        status, _, body = call(port, "POST", "/v1/chat/completions", chat)
        text = json.loads(body)["choices"][0]["message"]["content"]
        assert status == 200 and text.startswith("w0 w1 w2 \n\nSources:")
        status, _, body = call(port, "POST", "/v1/chat/completions", {**chat, "stream": True})
        frames = [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: {")]
        streamed = "".join(f["choices"][0]["delta"].get("content") or "" for f in frames)
        assert status == 200 and streamed == text and len(frames) > 3
        status, _, body = call(port, "POST", "/v1/chat/completions", {**chat, "model": "gpt-4"})
        assert status == 404 and "'gpt-4' is not served here" in json.loads(body)["detail"]
        service.token_seconds, service.tokens = 0.2, 100
        start = time.monotonic()
        status, _, body = call(port, "POST", "/v1/chat/completions", {**chat, "stream": True})
        assert status == 200 and b"no answer within the 1.5 s deadline" in body and time.monotonic() - start < 3
