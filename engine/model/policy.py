"""A policy backed by a model server: chat completions (any OpenAI-compatible endpoint), or the
API its configuration's `wire` names (`engine.wires`: anthropic, responses, gemini).

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
import queue
import threading
from typing import TYPE_CHECKING, Any, Callable

from engine.core.events import Usage
from engine.core.policy import Decision, PolicyError, RunView
from engine.core.state import estimate_tokens
from engine.core.text import clean
from engine.core.urls import safe_url, url_secrets
from engine.model.config import DEFAULT_BASE_URL, KEY_VARIABLES, ModelConfig, Secret, config_from_env
from engine.model.messages import MessageLog
from engine.model.http import RETRY_STATUSES, read_capped, read_reply, retry_after, ssl_context, status_error, timeout_kind
from engine.model.keymask import KeyMask
from engine.model.wire import STOP_TEXT, action_from_call, cut_at_observation, tool_schemas
from engine.wires import Wire, wire_named
from engine.wires.neutral import Reply, WireError

__all__ = ["DEFAULT_BASE_URL", "INTERRUPTED", "KEY_VARIABLES", "ModelConfig", "ModelPolicy", "Secret", "config_from_env"]

if TYPE_CHECKING:
    import httpx

INTERRUPTED = "interrupted by the operator"


class ModelPolicy:
    """Asks the model server, in its wire, for each decision."""

    def __init__(self, config: ModelConfig, name: str | None = None) -> None:
        self.config = config
        self.name = name or config.policy_name
        self._lock = threading.Lock()
        self._cancelled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._messages = MessageLog(config.mode, config.system)
        self._mask = KeyMask(config.api_key.reveal() if config.api_key else None, url_secrets(config.base_url))
        self._time_left: float | None = None
        self.wire: Wire = wire_named(config.wire)
        """The model API it speaks (`engine.wires`, the configuration's `wire`): the request goes out and the reply is read in it."""

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
        self._time_left = view.time_left
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
        return clean(self._mask(text))

    # -- HTTP --------------------------------------------------------------------

    def _headers(self, body: dict[str, Any]) -> dict[str, str]:
        key = self.config.api_key.reveal() if self.config.api_key else None
        return {**self.wire.headers(key, body), "Accept": "application/json, text/event-stream"}

    async def _request(self, body: dict[str, Any], on_delta: Callable[[str], None]) -> Reply:
        import httpx  # imported on first use: the CLI reads the model flags without it

        cfg = self.config
        url = self.wire.endpoint(cfg.base_url, None, body)
        payload, _ = self.wire.from_neutral(body)  # the run's own messages: nothing another wire kept
        where = safe_url(cfg.base_url)
        timeout = httpx.Timeout(cfg.timeout)
        retries = 0
        # The whole reply must come within the timeout (a server dripping one byte a second
        # never trips httpx's per-read timeout), a little after the per-read one so a silent
        # server is still reported as such; and never after the run's time budget runs out.
        deadline, budget_bound = cfg.timeout + min(1.0, cfg.timeout), False
        if self._time_left is not None and self._time_left < deadline:
            deadline, budget_bound = max(0.0, self._time_left), True
        async with httpx.AsyncClient(timeout=timeout, verify=ssl_context(), follow_redirects=False) as client:
            while True:
                try:
                    async with asyncio.timeout(deadline):
                        async with client.stream("POST", url, json=payload, headers=self._headers(body)) as response:
                            if response.status_code >= 400:
                                error_body = await read_capped(response)
                                wait = self._retry_wait(response, retries)
                                if wait is None:
                                    raise status_error(response, error_body, retries, cfg.max_retries, self._mask)
                                retries += 1
                            else:
                                return await read_reply(response, on_delta, cfg.stream, self._mask, self.wire)
                except TimeoutError:
                    if budget_bound:
                        raise PolicyError("the seconds budget ran out while waiting for the model", retryable=False) from None
                    raise PolicyError(f"the model server at {where} did not finish its reply within {cfg.timeout:g} s") from None
                except httpx.TimeoutException as exc:
                    raise PolicyError(f"the model server at {where} did not answer within {cfg.timeout:g} s ({timeout_kind(exc)})") from None
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
        if response.status_code not in RETRY_STATUSES or retries >= cfg.max_retries:
            return None
        wait = cfg.retry_backoff * (2**retries)
        asked = retry_after(response.headers.get("retry-after"))
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
        """The decision from a reply whose every text has the key masked (parsed arguments too:
        they may hold it JSON-escaped across a line break)."""
        mask = self._mask
        mask.reply(reply)
        decision = self._decide_from(reply, body, view)
        decision.actions = [
            a.model_copy(update={"args": mask.value(a.args), "args_error": mask(a.args_error) if a.args_error else None})
            for a in decision.actions
        ]
        return decision

    def _decide_from(self, reply: Reply, body: dict[str, Any], view: RunView) -> Decision:
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
