"""A policy backed by any OpenAI-compatible chat completions endpoint.

The scenario's tools are offered as functions; the model's tool calls become
actions (several in one reply run in order, each with its own approval), its
text becomes the thought, and a reply without a tool call is the final answer.
`mode="text"` asks instead for the seeds' `Thought:` / `Action:` format and
lets the engine parse it, for models without tool calling.

Every transport fault (refused connection, timeout, HTTP errors after bounded
retries, malformed JSON, a cut stream) becomes a `PolicyError` whose message
never contains the API key. `cancel()` interrupts a request in flight from any
thread. The key lives in a `Secret` that neither repr, str nor JSON reveals.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import os
import queue
import re
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping
from urllib.parse import urlsplit, urlunsplit

from engine.core.events import Budget, Usage
from engine.model.messages import MessageLog
from engine.model.wire import (
    STOP_TEXT,
    Mode,
    Reply,
    StreamReader,
    WireError,
    action_from_call,
    cut_at_observation,
    reply_from_json,
    tool_schemas,
)
from engine.core.policy import Decision, PolicyError, RunView
from engine.core.state import estimate_tokens
from engine.core.text import clean

if TYPE_CHECKING:
    import httpx

DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_VARIABLES = ("AGENT_TUI_API_KEY", "OPENAI_API_KEY")
INTERRUPTED = "interrupted by the operator"
_RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})


class Secret:
    """A string that is never shown: repr and str hide it, JSON cannot encode it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)

    def __reduce__(self) -> Any:
        raise TypeError("a Secret cannot be pickled")


@dataclass(frozen=True)
class ModelConfig:
    """Where the model is and how to talk to it. The key is kept out of repr and of `public()`."""

    model: str
    base_url: str = DEFAULT_BASE_URL
    api_key: Secret | None = field(default=None, repr=False, compare=False)
    timeout: float = 60.0
    max_retries: int = 3
    retry_backoff: float = 1.0
    max_retry_wait: float = 60.0
    price_in_per_1k: float | None = None
    price_out_per_1k: float | None = None
    mode: Mode = "tools"
    stream: bool = True
    temperature: float | None = None
    system: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.api_key, str):
            object.__setattr__(self, "api_key", Secret(self.api_key) if self.api_key else None)
        if self.mode not in ("tools", "text"):
            raise ValueError(f"model mode must be 'tools' or 'text', not {self.mode!r}")
        if not self.model.strip():
            raise ValueError("the model name is empty")

    @property
    def policy_name(self) -> str:
        return f"model:{self.model}"

    def public(self) -> dict[str, Any]:
        """Everything but the key, for display and for saving."""
        return {
            "model": self.model,
            "base_url": safe_url(self.base_url),
            "has_key": bool(self.api_key),
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "price_in_per_1k": self.price_in_per_1k,
            "price_out_per_1k": self.price_out_per_1k,
            "mode": self.mode,
            "stream": self.stream,
        }

    def with_prices(self, budget: Budget) -> Budget:
        """The budget with this model's prices (where given), so the cost gauge counts them."""
        update = {}
        if self.price_in_per_1k is not None:
            update["price_in_per_1k"] = self.price_in_per_1k
        if self.price_out_per_1k is not None:
            update["price_out_per_1k"] = self.price_out_per_1k
        return budget.model_copy(update=update) if update else budget


def safe_url(url: str) -> str:
    """The URL without user info, query or fragment (where keys sometimes hide)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(unreadable URL)"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


# -- configuration ----------------------------------------------------------------


def _number(name: str, value: str | float | None) -> float | None:
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, not {value!r}") from None
    if number < 0:
        raise ValueError(f"{name} must not be negative")
    return number


def config_from_env(
    model: str | None = None,
    base_url: str | None = None,
    *,
    price_in: float | str | None = None,
    price_out: float | str | None = None,
    mode: Mode | None = None,
    stream: bool | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    env: Mapping[str, str] | None = None,
) -> ModelConfig | None:
    """A config from explicit values, then the environment; None when no model is named.

    Environment: AGENT_TUI_MODEL, AGENT_TUI_BASE_URL (or OPENAI_BASE_URL), the key
    from AGENT_TUI_API_KEY (or OPENAI_API_KEY), AGENT_TUI_PRICE_IN and
    AGENT_TUI_PRICE_OUT (dollars per 1,000 tokens), AGENT_TUI_MODEL_MODE.
    The key is read only from the environment, never from a flag.
    """
    env = os.environ if env is None else env
    model = model or env.get("AGENT_TUI_MODEL")
    if not model:
        return None
    key = next((env[v] for v in KEY_VARIABLES if env.get(v)), None)
    chosen_mode = mode or env.get("AGENT_TUI_MODEL_MODE") or "tools"
    config = ModelConfig(
        model=model,
        base_url=(base_url or env.get("AGENT_TUI_BASE_URL") or env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL),
        api_key=Secret(key) if key else None,
        price_in_per_1k=_number("the input price", price_in if price_in is not None else env.get("AGENT_TUI_PRICE_IN")),
        price_out_per_1k=_number(
            "the output price", price_out if price_out is not None else env.get("AGENT_TUI_PRICE_OUT")
        ),
        mode=chosen_mode,  # type: ignore[arg-type]
        stream=True if stream is None else stream,
    )
    changes: dict[str, Any] = {}
    if timeout is not None:
        changes["timeout"] = float(timeout)
    if max_retries is not None:
        changes["max_retries"] = int(max_retries)
    if changes:
        from dataclasses import replace

        config = replace(config, **changes)
    return config


# -- the policy -------------------------------------------------------------------


class ModelPolicy:
    """Asks a chat completions endpoint for each decision."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.name = config.policy_name
        self._lock = threading.Lock()
        self._cancelled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._messages = MessageLog(config.mode, config.system)

    def __repr__(self) -> str:
        return f"ModelPolicy({self.config!r})"

    # -- interruption ------------------------------------------------------------

    def cancel(self) -> None:
        """Abort the request in flight (any thread); `decide` then raises 'interrupted by the operator'.

        With no request in flight it does nothing.
        """
        with self._lock:
            self._cancelled = True
            if self._loop is not None and self._task is not None:
                self._loop.call_soon_threadsafe(self._task.cancel)

    # -- deciding ----------------------------------------------------------------

    def request_body(self, view: RunView) -> dict[str, Any]:
        """The JSON body for the next decision."""
        cfg = self.config
        body: dict[str, Any] = {"model": cfg.model, "messages": self._messages.messages(view)}
        if cfg.mode == "tools" and view.tools:
            body["tools"] = tool_schemas(view.tools)
        if cfg.mode == "text":
            body["stop"] = [STOP_TEXT]
        if cfg.temperature is not None:
            body["temperature"] = cfg.temperature
        if cfg.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def decide(self, view: RunView) -> Decision:
        body = self.request_body(view)
        with self._lock:
            self._cancelled = False
        inbox: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        worker = threading.Thread(target=self._worker, args=(body, inbox), name="model-request", daemon=True)
        worker.start()
        reply: Reply | None = None
        try:
            while reply is None:
                kind, value = inbox.get()
                if kind == "delta":
                    try:
                        view.stream(value)
                    except Exception:  # a broken display must not lose the reply
                        pass
                elif kind == "error":
                    raise value
                else:
                    reply = value
        except BaseException:
            self.cancel()  # Ctrl+C or an error: leave no request running behind
            raise
        finally:
            worker.join()
        return self._decision(reply, body, view)

    def _worker(self, body: dict[str, Any], inbox: queue.SimpleQueue[tuple[str, Any]]) -> None:
        """Run one request on a private event loop, so `cancel()` can stop it at once."""

        async def main() -> Reply:
            with self._lock:
                if self._cancelled:
                    raise asyncio.CancelledError
                self._loop = asyncio.get_running_loop()
                self._task = asyncio.current_task()
            try:
                return await self._request(body, lambda delta: inbox.put(("delta", delta)))
            finally:
                with self._lock:
                    self._loop = None
                    self._task = None

        try:
            inbox.put(("reply", asyncio.run(main())))
        except asyncio.CancelledError:
            inbox.put(("error", PolicyError(INTERRUPTED)))
        except PolicyError as exc:
            inbox.put(("error", PolicyError(self._redact(str(exc)), retryable=exc.retryable)))
        except BaseException as exc:  # nothing from the transport may escape unexplained
            inbox.put(("error", PolicyError(self._redact(f"model request failed: {type(exc).__name__}: {exc}"))))

    def _redact(self, text: str) -> str:
        key = self.config.api_key
        if key and key.reveal():
            text = text.replace(key.reveal(), "***")
        return clean(text)

    # -- HTTP --------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key.reveal()}"
        return headers

    async def _request(self, body: dict[str, Any], on_delta: Callable[[str], None]) -> Reply:
        import httpx  # imported on first use: the CLI reads the model flags without it

        cfg = self.config
        url = cfg.base_url.rstrip("/") + "/chat/completions"
        where = safe_url(cfg.base_url)
        timeout = httpx.Timeout(cfg.timeout)
        retries = 0
        async with httpx.AsyncClient(timeout=timeout, verify=_ssl_context(), follow_redirects=False) as client:
            while True:
                try:
                    async with client.stream("POST", url, json=body, headers=self._headers()) as response:
                        if response.status_code >= 400:
                            await response.aread()
                            wait = self._retry_wait(response, retries)
                            if wait is None:
                                raise _status_error(response, retries, cfg.max_retries)
                            retries += 1
                        else:
                            return await _read_reply(response, on_delta, cfg.stream)
                except httpx.TimeoutException as exc:
                    raise PolicyError(f"the model server at {where} did not answer within {cfg.timeout:g} s ({_timeout_kind(exc)})") from None
                except httpx.ConnectError as exc:
                    raise PolicyError(f"cannot connect to the model server at {where}: {exc or 'connection failed'}") from None
                except httpx.RemoteProtocolError:
                    raise PolicyError(f"the connection to {where} was cut before the reply was complete") from None
                except httpx.HTTPError as exc:
                    raise PolicyError(f"the request to {where} failed: {type(exc).__name__}: {exc}") from None
                except WireError as exc:
                    raise PolicyError(f"unreadable reply from {where}: {exc}") from None
                await asyncio.sleep(wait)

    def _retry_wait(self, response: httpx.Response, retries: int) -> float | None:
        """Seconds to wait before retrying this status, or None to give up."""
        cfg = self.config
        if response.status_code not in _RETRY_STATUSES or retries >= cfg.max_retries:
            return None
        wait = cfg.retry_backoff * (2**retries)
        asked = _retry_after(response.headers.get("retry-after"))
        if asked is not None:
            if asked > cfg.max_retry_wait:
                return None
            wait = max(asked, 0.0)
        return min(wait, cfg.max_retry_wait)

    # -- the decision ------------------------------------------------------------

    def _usage(self, reply: Reply, body: dict[str, Any]) -> Usage:
        if reply.input_tokens is not None and reply.output_tokens is not None:
            return Usage(input_tokens=reply.input_tokens, output_tokens=reply.output_tokens, estimated=False)
        sent = self._messages.sent_words
        written = " ".join([reply.content, *(f"{c.name} {c.arguments}" for c in reply.tool_calls)])
        return Usage(input_tokens=estimate_tokens(sent), output_tokens=estimate_tokens(written), estimated=True)

    def _decision(self, reply: Reply, body: dict[str, Any], view: RunView) -> Decision:
        usage = self._usage(reply, body)
        if self.config.mode == "text":
            return Decision(text=cut_at_observation(reply.content), usage=usage)
        text = reply.content.strip()
        if reply.tool_calls:
            actions = [action_from_call(c, view.step, i) for i, c in enumerate(reply.tool_calls)]
            return Decision(thought=text, actions=actions, usage=usage)
        if text:
            return Decision(answer=text, usage=usage)
        return Decision(thought=f"(the model replied with nothing; finish reason: {reply.finish_reason or 'none'})", usage=usage)


async def _read_reply(response: httpx.Response, on_delta: Callable[[str], None], stream: bool) -> Reply:
    content_type = response.headers.get("content-type", "")
    if stream and "text/event-stream" in content_type:
        reader = StreamReader(on_delta)
        async for line in response.aiter_lines():
            reader.feed(line)
            if reader.done:
                break
        if not reader.complete:
            raise WireError("the stream was cut before the reply was complete")
        return reader.reply
    raw = await response.aread()
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        shown = raw[:120].decode("utf-8", "replace")
        raise WireError(f"the reply is not valid JSON: {shown!r}") from None
    reply = reply_from_json(data)
    if reply.content:
        on_delta(reply.content)
    return reply


@functools.lru_cache(maxsize=1)
def _ssl_context() -> Any:
    """One verified TLS context for every request (building one costs tens of milliseconds)."""
    import httpx

    return httpx.create_ssl_context()


def _retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: a number, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _timeout_kind(exc: httpx.TimeoutException) -> str:
    import httpx

    if isinstance(exc, httpx.ConnectTimeout):
        return "connecting"
    if isinstance(exc, httpx.ReadTimeout):
        return "waiting for the reply"
    if isinstance(exc, httpx.WriteTimeout):
        return "sending the request"
    return "waiting for a connection"


def _detail(response: httpx.Response) -> str:
    """The server's own words about an error, short."""
    try:
        data = response.json()
    except (ValueError, UnicodeDecodeError):
        data = None
    if isinstance(data, dict) and data.get("error"):
        error = data["error"]
        text = str(error.get("message") or error) if isinstance(error, dict) else str(error)
    else:
        text = response.text
    text = re.sub(r"\s+", " ", text).strip()
    return text[:200] + ("..." if len(text) > 200 else "")


def _status_error(response: httpx.Response, retries: int, max_retries: int) -> PolicyError:
    status = response.status_code
    if status in (401, 403):
        return PolicyError(
            f"the model server refused the API key (HTTP {status}); set AGENT_TUI_API_KEY or OPENAI_API_KEY",
            retryable=False,
        )
    detail = _detail(response)
    suffix = f": {detail}" if detail else ""
    tried = f" after {retries} {'retry' if retries == 1 else 'retries'}" if retries else ""
    if status == 429:
        asked = response.headers.get("retry-after")
        wait = f"; the server asks to wait {asked} s" if asked and retries < max_retries else ""
        return PolicyError(f"rate limited by the model server (HTTP 429){tried}{wait}{suffix}")
    if status >= 500:
        return PolicyError(f"the model server failed (HTTP {status}){tried}{suffix}")
    if status == 404:
        return PolicyError(f"HTTP 404 from the model server (check --base-url and --model){suffix}", retryable=False)
    return PolicyError(f"the model server rejected the request (HTTP {status}){suffix}", retryable=status in _RETRY_STATUSES)
