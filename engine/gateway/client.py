"""The gateway's upstream connection: `http.client` with keep-alive.

The upstream call is on the path of every model turn, so the client is the
leanest one that does the job: the standard library's HTTP/1.1 connection,
kept open between requests (one per upstream, used under the gateway's lock),
TLS with the default context, no proxies from the environment. A connection
the server closed while idle is opened again once; anything else is the
caller's to report.
"""

from __future__ import annotations

import http.client
import ssl
import threading
from urllib.parse import urlsplit

TIMEOUT_ERRORS = (TimeoutError,)
TRANSPORT_ERRORS = (OSError, http.client.HTTPException)


class UpstreamClient:
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._connections: dict[tuple[str, str, int], http.client.HTTPConnection] = {}
        self._lock = threading.Lock()

    def post(self, url: str, payload: bytes, headers: dict[str, str]) -> http.client.HTTPResponse:
        """Send a POST; the response is open (read it whole before the next request)."""
        parts = urlsplit(url)
        https = parts.scheme == "https"
        key = (parts.scheme, parts.hostname or "", parts.port or (443 if https else 80))
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        for attempt in (0, 1):
            with self._lock:
                connection = self._connections.get(key)
                reused = connection is not None and connection.sock is not None
                if connection is None:
                    connection = self._open(key, https)
                    self._connections[key] = connection
            try:
                connection.request("POST", target, body=payload, headers=headers)
                return connection.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                connection.close()
                if attempt or not reused:
                    raise
        raise AssertionError("unreachable")

    def _open(self, key: tuple[str, str, int], https: bool) -> http.client.HTTPConnection:
        _, host, port = key
        if https:
            return http.client.HTTPSConnection(host, port, timeout=self.timeout, context=ssl.create_default_context())
        return http.client.HTTPConnection(host, port, timeout=self.timeout)

    def close(self) -> None:
        with self._lock:
            for connection in self._connections.values():
                connection.close()
            self._connections.clear()
