"""``haystack-fin serve``: the query pipeline over HTTP, and nothing else.

One FastAPI app with the query routes only: ``POST /haystack-fin/run``, the OpenAI-compatible
``POST /v1/chat/completions`` and ``GET /v1/models``, ``GET /status`` and ``GET /health``; with ``mcp`` also the MCP
endpoint ``/mcp`` (streamable HTTP) whose one tool is the query. There is no route that deploys, removes or draws a
pipeline, no API docs page, and no other MCP tool.

Security defaults, all Starlette middleware: a Host-header allowlist on a loopback bind (a DNS-rebinding page cannot
reach it under its own name), CORS only for the origins named with ``cors_origins``, ``Authorization: Bearer KEY``
on every route but ``/health`` when an API key is set (required off loopback), and a request body cap checked
before any parsing. Requests run one at a time through ``RequestSlots`` (``serving.py``): a deadline per request,
a bounded queue (503 with Retry-After when full), a client that leaves gives its place back. Errors carry a generic
message and a request id; the detail goes to the server log.
"""

import asyncio
import contextlib
import functools
import hmac
import ipaddress
import json
import logging as std_logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from haystack import logging
from pydantic import BaseModel, ConfigDict
from starlette.authentication import AuthCredentials, AuthenticationBackend, AuthenticationError, SimpleUser
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.middleware.body_limit import RequestBodyLimitMiddleware
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import HTTPConnection

from haystack_fin.serving import (
    MAX_FILING_IDS,
    PIPELINE_NAME,
    FinService,
    RequestError,
    RequestSlots,
    RequestTimeout,
    ServerBusy,
    ServingConfig,
    render_chat,
    validate_filing_ids,
    validate_question,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

API_KEY_ENV = "HAYSTACK_FIN_API_KEY"
MIN_API_KEY_CHARS = 16
# A request is a JSON object with a question of at most 2,000 characters; a chat request carries the conversation
# so far. 1 MiB holds both with room, and a larger body is refused before a byte of it is parsed.
MAX_BODY_BYTES = 1024 * 1024
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
HEALTH_PATH = "/health"
KEY_HINT = f"set an API key with --api-key KEY or {API_KEY_ENV}=KEY (clients send 'Authorization: Bearer KEY')"


@dataclass(frozen=True)
class ServeOptions:
    """How ``haystack-fin serve`` listens: address, security and request bounds (see ``check_options``)."""

    host: str = "127.0.0.1"
    port: int = 1416
    api_key: str | None = None
    cors_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    request_timeout: float = 60.0
    max_queue: int = 16
    mcp: bool = False


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (a name other than ``localhost`` counts as not: it may resolve
    anywhere)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_options(options: ServeOptions) -> None:
    """Refuse, in one line each, what would leave the server open: a non-loopback bind without an API key, a short
    key, a CORS origin that is not one ``scheme://host[:port]``."""
    if options.api_key is not None and len(options.api_key) < MIN_API_KEY_CHARS:
        raise RequestError(
            f"the API key has {len(options.api_key)} characters; use at least {MIN_API_KEY_CHARS}, e.g. "
            "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    if not is_loopback(options.host) and not options.api_key:
        raise RequestError(f"--host {options.host} is reachable from other machines: {KEY_HINT}")
    for origin in options.cors_origins:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path or parts.query or parts.fragment:
            raise RequestError(f"--cors-origin {origin!r} is not an origin like http://localhost:3000 (no '*')")
    if options.request_timeout <= 0:
        raise RequestError(f"--request-timeout must be a positive number of seconds, got {options.request_timeout}")
    if options.max_queue < 0:
        raise RequestError(f"--max-queue must be 0 or more, got {options.max_queue}")


def trusted_hosts(options: ServeOptions) -> list[str]:
    """The Host headers the server answers: on a loopback bind the loopback names (a page on another name that
    resolves to 127.0.0.1 is refused), plus ``allowed_hosts``; off loopback ``allowed_hosts``, or any (the API key
    is what guards it)."""
    extra = list(options.allowed_hosts)
    if is_loopback(options.host):
        host = f"[{options.host}]" if ":" in options.host else options.host
        return list(dict.fromkeys([*LOOPBACK_HOSTS, host.lower(), *extra]))
    return extra or ["*"]


class BearerKey(AuthenticationBackend):
    """``Authorization: Bearer KEY`` on every path but ``/health`` (compared in constant time)."""

    def __init__(self, key: str) -> None:
        self.key = key.encode()

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, SimpleUser] | None:
        if conn.url.path == HEALTH_PATH:
            return None
        scheme, _, token = conn.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), self.key):
            raise AuthenticationError("missing or wrong API key: send 'Authorization: Bearer KEY'")
        return AuthCredentials(["query"]), SimpleUser("client")


def _unauthorized(conn: HTTPConnection, exc: Exception) -> Response:
    return JSONResponse({"detail": str(exc)}, status_code=401, headers={"WWW-Authenticate": "Bearer"})


class RunRequest(BaseModel):
    """The body of ``POST /haystack-fin/run`` (strict: a string is not a number, unknown fields are refused)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    question: str
    filing_ids: list[str] | None = None
    k: int = 5
    explain: bool = False


class ClientGone(Exception):
    """The client closed the connection before its answer was ready."""


async def _disconnected(request: Request) -> None:
    """Return when the client closes the connection (the body is read by then, so ``receive`` waits for that)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def unless_client_leaves(request: Request, work: Awaitable[T]) -> T:
    """``work``'s result, or ``ClientGone`` when the client disconnects first; ``work`` is then cancelled, which
    takes a waiting request out of the queue and stops a running one at its next check."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if task.cancelled():
        raise ClientGone
    return task.result()


def last_user_message(messages: list[Any]) -> str | None:
    """The text of the last user message of an OpenAI chat request (text parts of a multi-part content joined)."""
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
            return "\n".join(p for p in parts if isinstance(p, str))
        return None
    return None


def _request_id() -> str:
    return uuid.uuid4().hex[:16]


def _error(status: int, detail: str, request_id: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail, "request_id": request_id}, status_code=status, headers=headers)


def create_app(service: FinService, options: ServeOptions) -> FastAPI:
    """The FastAPI app serving ``service`` under ``options`` (``check_options`` first). ``service`` needs only an
    ``ask`` like ``FinService.ask``."""
    from fastapi_openai_compat.chat_completions.models import ChatRequest, ModelObject, ModelsResponse
    from fastapi_openai_compat.chat_completions.streaming import (
        chat_completion_response,
        create_async_streaming_response,
    )
    from haystack.dataclasses import StreamingChunk

    slots = RequestSlots(options.max_queue, options.request_timeout)
    mcp = _mcp_server(service, slots) if options.mcp else None
    started = int(time.time())

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if mcp is not None:
                await stack.enter_async_context(mcp.session_manager.run())
            try:
                yield
            finally:
                await asyncio.to_thread(slots.close)

    # Outermost first: a bad Host or a refused preflight is answered before the key is looked at, and the key
    # before the body is read.
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=trusted_hosts(options))]
    if options.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(options.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["Authorization", "Content-Type", "Mcp-Protocol-Version", "Mcp-Session-Id"],
                max_age=600,
            )
        )
    if options.api_key:
        middleware.append(
            Middleware(AuthenticationMiddleware, backend=BearerKey(options.api_key), on_error=_unauthorized)
        )
    middleware.append(Middleware(RequestBodyLimitMiddleware, max_body_size=MAX_BODY_BYTES))
    app = FastAPI(
        title="haystack-fin",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        middleware=middleware,
        lifespan=lifespan,
    )
    app.state.slots = slots

    @app.exception_handler(RequestError)
    async def refused(request: Request, exc: RequestError) -> JSONResponse:
        rid = _request_id()
        if exc.status >= 500:
            logger.warning(
                "request {rid} {path}: {status} {error}", rid=rid, path=request.url.path, status=exc.status, error=exc
            )
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, ServerBusy) else None
        return _error(exc.status, str(exc), rid, headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        # One line per problem, without the offending input (a 1 MB string is not echoed back).
        problems = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error.get("loc", ()) if p != "body" and not isinstance(p, int))
            problems.append(f"{where}: {error.get('msg')}" if where else str(error.get("msg")))
        return _error(422, "; ".join(problems) or "invalid request", _request_id())

    @app.exception_handler(ClientGone)
    async def gone(request: Request, exc: ClientGone) -> Response:
        return Response(status_code=499)  # nobody reads it: the client closed the connection

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> JSONResponse:
        rid = _request_id()
        logger.error("request {rid} {path} failed", rid=rid, path=request.url.path, exc_info=exc)
        return _error(500, f"internal error; the server log has the details of request {rid}", rid)

    @app.get(HEALTH_PATH)
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/status")
    async def status() -> dict[str, Any]:
        return {"status": "Up!", "pipelines": [PIPELINE_NAME], "queue": slots.status(), "mcp": mcp is not None}

    @app.post(f"/{PIPELINE_NAME}/run")
    async def run(request: Request, body: RunRequest) -> dict[str, Any]:
        # Checked before the request takes a place in the queue.
        question, k = validate_question(body.question, body.k)
        ids = validate_filing_ids(body.filing_ids)
        deadline = slots.deadline()
        work = functools.partial(service.ask, question, ids, k, body.explain, deadline=deadline)
        return {"result": await unless_client_leaves(request, slots.run(work, deadline))}

    @app.get("/v1/models")
    async def models() -> ModelsResponse:
        model = ModelObject(
            id=PIPELINE_NAME, name=PIPELINE_NAME, object="model", created=started, owned_by="haystack-fin"
        )
        return ModelsResponse(data=[model], object="list")

    @app.post("/v1/chat/completions")
    async def chat(request: Request, body: ChatRequest) -> Any:
        if body.model != PIPELINE_NAME:
            raise RequestError(f"model {body.model[:40]!r} is not served here; the model is {PIPELINE_NAME!r}", 404)
        question = last_user_message(body.messages)
        if question is None:
            raise RequestError("the request has no user message with text")
        question, k = validate_question(question, 5)
        resp_id = f"{PIPELINE_NAME}-{uuid.uuid4()}"
        deadline = slots.deadline()
        if not body.stream:
            work = functools.partial(service.ask, question, k=k, deadline=deadline)
            out = await unless_client_leaves(request, slots.run(work, deadline))
            return chat_completion_response(render_chat(out), resp_id, PIPELINE_NAME)
        # Streamed: the place in the queue is taken first, so a full queue or a deadline passed while waiting is a
        # status code; after that the answer's tokens go out as the generator writes them.
        await unless_client_leaves(request, slots.acquire(deadline))
        loop = asyncio.get_running_loop()
        tokens: asyncio.Queue[str] = asyncio.Queue()
        called: list[bool] = []

        def on_token(chunk: Any) -> None:  # in the worker thread
            called.append(True)
            if chunk.content:
                loop.call_soon_threadsafe(tokens.put_nowait, chunk.content)

        future: asyncio.Future[dict[str, Any]] = slots.submit(
            functools.partial(service.ask, question, k=k, streaming_callback=on_token, deadline=deadline)
        )

        async def stream() -> AsyncIterator[Any]:
            get: asyncio.Future[str] | None = None
            try:
                while True:
                    get = asyncio.ensure_future(tokens.get())
                    waiting: set[asyncio.Future[Any]] = {get, future}
                    done, _ = await asyncio.wait(
                        waiting, timeout=deadline.remaining(), return_when=asyncio.FIRST_COMPLETED
                    )
                    if get in done:
                        yield StreamingChunk(content=get.result())
                        continue
                    if not done:
                        yield StreamingChunk(content=f"\n\nerror: {RequestTimeout(deadline.seconds)}")
                        return
                    while not tokens.empty():
                        yield StreamingChunk(content=tokens.get_nowait())
                    yield StreamingChunk(content=_stream_end(future, called))
                    return
            finally:
                if get is not None:
                    get.cancel()
                deadline.abandon()  # done, or the client left: a run still going stops at its next token

        return create_async_streaming_response(stream(), resp_id, PIPELINE_NAME)

    if mcp is not None:
        from mcp.server.fastmcp.server import StreamableHTTPASGIApp
        from starlette.routing import Route

        mcp.streamable_http_app()  # creates the session manager the lifespan runs
        app.router.routes.append(Route("/mcp", endpoint=JsonBodyOnly(StreamableHTTPASGIApp(mcp.session_manager))))
    return app


class JsonBodyOnly:
    """An ASGI app's POST bodies parsed as JSON first: one that is not (bytes that are not UTF-8, nesting past
    Python's recursion limit) is answered with JSON-RPC's parse error, where the MCP SDK would answer 500. The body
    is at most ``MAX_BODY_BYTES`` (the middleware's cap), read once and handed on as it came."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        parts, more = [], True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            parts.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(parts)
        try:
            json.loads(body)
        except (ValueError, RecursionError):
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
            await JSONResponse(error, status_code=400)(scope, receive, send)
            return
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def _stream_end(future: "asyncio.Future[dict[str, Any]]", called: list[bool]) -> str:
    """What follows the streamed tokens: the rest of the chat text (all of it when nothing streamed), or the error
    in one line."""
    try:
        out = future.result()
    except RequestError as exc:
        return f"\n\nerror: {exc}"
    except Exception as exc:
        rid = _request_id()
        logger.error("request {rid} /v1/chat/completions failed", rid=rid, exc_info=exc)
        return f"\n\nerror: internal error; the server log has the details of request {rid}"
    text = render_chat(out)
    return text[len(out["answer"] or "") :] if called else text


def _mcp_server(service: FinService, slots: RequestSlots) -> Any:
    """An MCP server (streamable HTTP, stateless, JSON answers) whose one tool is the query."""
    from mcp.server.fastmcp import FastMCP
    from mcp.server.fastmcp.exceptions import ToolError
    from mcp.server.transport_security import TransportSecuritySettings

    # The app's own middleware checks Host, CORS and the key for /mcp as for every route.
    mcp = FastMCP(
        PIPELINE_NAME,
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    async def query(
        question: str, filing_ids: list[str] | None = None, k: int = 5, explain: bool = False
    ) -> dict[str, Any]:
        try:
            question, k = validate_question(question, k)
            ids = validate_filing_ids(filing_ids)
            deadline = slots.deadline()
            work = functools.partial(service.ask, question, ids, k, explain, deadline=deadline)
            return await slots.run(work, deadline)
        except RequestError as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:
            rid = _request_id()
            logger.error("request {rid} MCP {pipeline} failed", rid=rid, pipeline=PIPELINE_NAME, exc_info=exc)
            raise ToolError(f"internal error; the server log has the details of request {rid}") from None

    mcp.add_tool(
        query,
        name=PIPELINE_NAME,
        description=(
            "Answer a question about the indexed SEC filings (10-K, 10-Q, 8-K) with cited passages. Returns the "
            "passages (filing, Item, pages, table id), and when Ollama is reachable a generated answer whose numbers "
            "are checked against the passages it cites (citations, unsupported_numbers).\n\n"
            "Args:\n"
            '    question: the question, e.g. "What was Best Buy\'s revenue in Q2 FY2024?"\n'
            f"    filing_ids: restrict to these indexed filing ids (at most {MAX_FILING_IDS}; default: chosen from "
            "the question)\n"
            "    k: number of passages (1-50)\n"
            "    explain: include the retrieval trace (scope, Item routing, tree paths)"
        ),
    )
    return mcp


def serve(config: ServingConfig, options: ServeOptions) -> None:
    """Check the options and the store, warm the pipeline, then serve until interrupted."""
    import uvicorn

    from haystack_fin.pipeline_loader import pipeline_dict
    from haystack_fin.store_check import check_pipeline_stores

    check_options(options)
    if not config.qdrant_url:
        if not config.store:
            raise RequestError("give --store DIR or --qdrant-url URL")
        check_pipeline_stores(pipeline_dict("query", config.store), config.store, create=False)
    if options.mcp:
        try:
            import mcp as _mcp  # noqa: F401
        except ImportError:
            raise RequestError("the MCP endpoint needs the mcp package: pip install 'haystack-fin[serve]'") from None
    std_logging.getLogger("haystack_fin").setLevel(std_logging.INFO)
    service = FinService(config)
    try:
        service.warm_up()
        app = create_app(service, options)
        logger.info(
            "serving {pipeline} on http://{host}:{port} (request timeout {timeout:g} s, queue {queue}{key}{mcp})",
            pipeline=PIPELINE_NAME,
            host=options.host,
            port=options.port,
            timeout=options.request_timeout,
            queue=options.max_queue,
            key=", API key required" if options.api_key else "",
            mcp=", MCP at /mcp" if options.mcp else "",
        )
        uvicorn.run(
            app,
            host=options.host,
            port=options.port,
            log_level="info",
            proxy_headers=False,
            # Connections beyond what the queue can use are refused with 503 before a body is read.
            limit_concurrency=64 + 2 * options.max_queue,
            timeout_graceful_shutdown=int(options.request_timeout) + 5,
        )
    finally:
        service.close()
