"""An ASGI app served by uvicorn on 127.0.0.1 in a background thread, for tests' fake servers."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn


class Loopback:
    """`with Loopback(app) as server:` serves `app` on `server.url` (a free port) until the block ends.

    `log_config=None`: uvicorn's default configures the process's logging, which would take
    the handlers off the loggers the gateway under test listens to."""

    def __init__(self, app: Any) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        self._server = uvicorn.Server(uvicorn.Config(app, log_config=None, log_level="warning", access_log=False, lifespan="off"))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Loopback:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the loopback server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()
