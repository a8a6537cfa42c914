"""A tiny HTTP server on 127.0.0.1 that speaks Ollama's ``/api/tags`` and ``/api/chat`` (non-streaming JSON and
streaming NDJSON), for tests of the Ollama wire path where no Ollama binary can be installed.

The reply is computed from the prompt: it cites the first passage that holds a Markdown table row, copies that
row's first figure, and adds one figure that no passage holds, so a test can see both a supported and an unsupported
number come back through the server.

A stub can be made slow, as a loaded or stuck Ollama is: ``stub.token_delay`` seconds before each streamed token,
``stub.stall`` seconds before any byte of a ``/api/chat`` answer, ``stub.filler_tokens`` more tokens after the reply
(a model that rambles). All are 0 by default and can be changed while it runs; an answer keeps the values it started
with, so a test can make one request slow and the next one fast."""

import contextlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "stub-model:latest"
INVENTED = "$123,456,789"


def reply_for(prompt: str) -> str:
    ref, figure = None, None
    current = None
    for line in prompt.splitlines():
        head = re.match(r"\[(\d+)\] ", line)
        if head:
            current = int(head.group(1))
            continue
        row = re.match(r"\|\s*([^|]*[A-Za-z][^|]*)\|\s*\$?\s*(\(?\d[\d,]*(?:\.\d+)?\)?)\s*\|", line)
        if current is not None and row and ref is None:
            ref, figure = current, row.group(2)
    if ref is None:
        return "The passages do not contain the answer."
    return f"The reported figure is {figure} [{ref}]. The stub also invents {INVENTED} [{ref}]."


class _Handler(BaseHTTPRequestHandler):
    server_version = "OllamaStub/0.1"

    def handle(self) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up on a slow answer
            super().handle()

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def _json(self, payload: dict[str, Any], status: int = 200) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/api/tags":
            self._json(
                {
                    "models": [
                        {
                            "name": MODEL,
                            "model": MODEL,
                            "modified_at": "2026-01-01T00:00:00Z",
                            "size": 1,
                            "digest": "0" * 64,
                            "details": {"format": "gguf"},
                        }
                    ]
                }
            )
        elif self.path == "/":
            body = b"Ollama is running"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self._json({"error": "not found"}, 404)

    def do_POST(self) -> None:
        if self.path.rstrip("/") != "/api/chat":
            self._json({"error": "not found"}, 404)
            return
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        self.server.requests.append(request)  # type: ignore[attr-defined]
        stall, delay, filler = self.server.stall, self.server.token_delay, self.server.filler_tokens  # type: ignore[attr-defined]
        time.sleep(stall)
        prompt = "\n".join(str(m.get("content") or "") for m in request.get("messages", []))
        text = reply_for(prompt) + " and" * filler
        base = {"model": request.get("model", MODEL), "created_at": "2026-01-01T00:00:00Z"}
        done = {
            "done": True,
            "done_reason": "stop",
            "total_duration": 1,
            "load_duration": 1,
            "prompt_eval_count": len(prompt.split()),
            "eval_count": len(text.split()),
            "eval_duration": 1,
        }
        if request.get("stream", True):
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.end_headers()
            for token in re.findall(r"\S+\s*", text):
                time.sleep(delay)
                line = {**base, "message": {"role": "assistant", "content": token}, "done": False}
                self.wfile.write((json.dumps(line) + "\n").encode())
                self.wfile.flush()
            last = {**base, "message": {"role": "assistant", "content": ""}, **done}
            self.wfile.write((json.dumps(last) + "\n").encode())
            self.close_connection = True
        else:
            self._json({**base, "message": {"role": "assistant", "content": text}, **done})


class OllamaStub:
    """``with OllamaStub() as stub: stub.url``: the server runs in a daemon thread until the block ends."""

    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.requests = []  # type: ignore[attr-defined]
        self.server.stall = 0.0  # type: ignore[attr-defined]
        self.server.token_delay = 0.0  # type: ignore[attr-defined]
        self.server.filler_tokens = 0  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def stall(self) -> float:
        return float(self.server.stall)  # type: ignore[attr-defined]

    @stall.setter
    def stall(self, seconds: float) -> None:
        self.server.stall = seconds  # type: ignore[attr-defined]

    @property
    def token_delay(self) -> float:
        return float(self.server.token_delay)  # type: ignore[attr-defined]

    @token_delay.setter
    def token_delay(self, seconds: float) -> None:
        self.server.token_delay = seconds  # type: ignore[attr-defined]

    @property
    def filler_tokens(self) -> int:
        return int(self.server.filler_tokens)  # type: ignore[attr-defined]

    @filler_tokens.setter
    def filler_tokens(self, count: int) -> None:
        self.server.filler_tokens = count  # type: ignore[attr-defined]

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.server.requests  # type: ignore[attr-defined,no-any-return]

    def __enter__(self) -> "OllamaStub":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
