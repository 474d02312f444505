"""The gateway's upstream connection: one `httpx.Client` with a keep-alive pool, and deadlines.

Every upstream call is on the path of a model turn, so one client is kept
(its pool reused between requests), with TLS from the shared verified
context, no proxies from the environment, no redirects and no cookies (the
client serves every agent: a cookie one reply sets is never sent with
another's request, and no response's cookies are read). The reply is read
streamed, with three bounds: `timeout` for the whole of a reply that is not
a stream (a server dripping a byte at a time never holds a request longer),
for a stream `timeout` between its lines (a server that keeps the stream
alive with a byte at a time is stopped too) and `stream_limit` for the whole
stream; and `MAX_REPLY_BYTES` for the size of either. `interrupt()` cuts the
replies being read, from any thread, so a gateway that stops does not wait
for an upstream to finish. httpx's errors come out as the standard library's:
`TimeoutError` for a deadline, `Unreachable` (an `OSError`) for the rest; and
httpx is imported on first use (importing it loads rich, which the engine
must not).
"""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager
from http.cookiejar import Cookie, CookieJar
from typing import TYPE_CHECKING, Iterator

from engine.model.http import MAX_REPLY_BYTES, ssl_context
from engine.wires.neutral import WireError, split_lines

if TYPE_CHECKING:
    import httpx

_BOM = b"\xef\xbb\xbf"
"""UTF-8's byte-order mark: an event stream's client leaves it out where the stream starts."""
STREAM_LIMIT = 1800.0
"""Seconds a streamed reply may take in all (each gap between its lines: the timeout)."""
TOO_LARGE = f"the reply is larger than {MAX_REPLY_BYTES // 1_000_000} MB; stopped reading"


class Unreachable(OSError):
    """The upstream could not be reached, or its connection broke; `kind` is httpx's name for it."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class Interrupted(Unreachable):
    """The gateway is stopping: no upstream request is sent or read any more."""


@contextmanager
def _as_standard_errors() -> Iterator[None]:
    import httpx

    try:
        yield
    except httpx.TimeoutException as exc:
        raise TimeoutError(f"the upstream did not answer in time ({type(exc).__name__})") from exc
    except httpx.TransportError as exc:
        raise Unreachable(type(exc).__name__) from exc


class _NoCookies(CookieJar):
    """A cookie jar that keeps nothing: a `Set-Cookie` is neither read nor sent back."""

    def extract_cookies(self, response: object, request: object) -> None:
        pass

    def set_cookie(self, cookie: Cookie) -> None:
        pass


class UpstreamClient:
    def __init__(self, timeout: float, stream_limit: float = STREAM_LIMIT) -> None:
        self.timeout = timeout
        self.stream_limit = stream_limit
        self.interrupted = False
        self._client: httpx.Client | None = None
        self._reading: set[httpx.Response] = set()
        self._urls: dict[str, httpx.URL] = {}
        self._lock = threading.Lock()

    def _http(self) -> httpx.Client:
        import httpx

        with self._lock:
            if self._client is None:
                self._client = httpx.Client(
                    timeout=httpx.Timeout(self.timeout),
                    limits=httpx.Limits(max_connections=32, max_keepalive_connections=32, keepalive_expiry=60),
                    verify=ssl_context(),
                    trust_env=False,
                    follow_redirects=False,
                    cookies=_NoCookies(),
                )
            return self._client

    @contextmanager
    def post(self, url: str, payload: bytes, headers: dict[str, str]) -> Iterator[httpx.Response]:
        """POST and yield the response with its body not yet read (read it with `whole` or `lines`)."""
        import httpx

        if self.interrupted:
            raise Interrupted("the gateway is stopping")
        client = self._http()
        with _as_standard_errors():
            url_sent = self._urls.get(url)
            if url_sent is None:  # a few upstream URLs, each parsed once
                url_sent = httpx.URL(url).copy_with(username=None, password=None)  # user info is never sent as a login
                if len(self._urls) < 64:
                    self._urls[url] = url_sent
            request = client.build_request("POST", url_sent, content=payload, headers={"Accept-Encoding": "identity", **headers})
            response = client.send(request, stream=True)
        with self._lock:
            self._reading.add(response)
        try:
            if self.interrupted:
                raise Interrupted("the gateway is stopping")
            yield response
        finally:
            with self._lock:
                self._reading.discard(response)
            response.close()

    def whole(self, response: httpx.Response) -> bytes:
        """The whole body, within `timeout` of now and `MAX_REPLY_BYTES`."""
        deadline = time.monotonic() + self.timeout
        chunks: list[bytes] = []
        size = 0
        with _as_standard_errors():
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    raise WireError(TOO_LARGE)
                if time.monotonic() > deadline:
                    raise TimeoutError("the reply took longer than the timeout")
                chunks.append(chunk)
        return b"".join(chunks)

    def lines(self, response: httpx.Response) -> Iterator[bytes]:
        """The body's lines (each with its line end) as they come, read as an event stream's
        client reads them (`split_lines`; a byte-order mark the stream starts with left out): at
        most `timeout` between two lines that are not empty, `stream_limit` in all,
        `MAX_REPLY_BYTES` in size."""
        started = time.monotonic()
        last = started
        size = 0
        pending = b""
        begun = False
        with _as_standard_errors():
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    raise WireError(TOO_LARGE)
                now = time.monotonic()
                pending += chunk
                if not begun and (len(pending) >= 3 or not _BOM.startswith(pending)):  # a mark split over chunks waits for its last byte
                    begun, pending = True, pending.removeprefix(_BOM)
                if begun and (b"\n" in chunk or b"\r" in chunk or pending.endswith(b"\r")):  # else no line ends here: a long line is read once
                    complete, pending = split_lines(pending)
                    for line in complete:
                        if line.strip():
                            last = now
                        yield line
                if now - last > self.timeout:
                    raise TimeoutError("no line of the stream within the timeout")
                if now - started > self.stream_limit:
                    raise TimeoutError("the stream took longer than its limit")
        yield from split_lines(pending, final=True)[0]

    def interrupt(self) -> None:
        """Cut every reply being read (from any thread) and refuse new requests: the gateway stops."""
        self.interrupted = True
        with self._lock:
            reading = list(self._reading)
        for response in reading:
            stream = response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if isinstance(sock, socket.socket):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
