"""URLs as shown and recorded: without the credentials they sometimes carry.

`safe_url` is the URL to show or record; `url_secrets` the credentials a URL
holds (user info, and query parameters named like a key: `?key=`,
`?api-key=`, `?access_token=`...), for warnings and for the key mask;
`endpoint` appends an API path to a base URL, keeping its query after the path.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit, urlunsplit

_SECRET_PARAMETER = re.compile(r"key|token|secret|password|passwd|signature|^sig$|auth|credential|session", re.IGNORECASE)
"""Query parameter names that carry a credential (`api-version` and the like do not)."""


def safe_url(url: str) -> str:
    """The URL without user info, query or fragment (where keys sometimes hide)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(unreadable URL)"
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:
        port = None
    if port:
        host = f"{host}:{port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def url_secrets(url: str) -> list[str]:
    """The credentials in `url`: the password of its user info (the user name when there is
    no password: `https://TOKEN@host`), and the values of query parameters named like a
    key; each as written and, when it differs, decoded."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found: list[str] = []
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        user, _, password = userinfo.partition(":")
        found.append(password or user)
    found.extend(_query_secrets(parts.query))
    decoded = [unquote(s) for s in found]
    return list(dict.fromkeys(s for s in [*found, *decoded] if s))


def query_credentials(url: str) -> bool:
    """Whether the URL's query holds a parameter named like a key."""
    try:
        return bool(_query_secrets(urlsplit(url).query))
    except ValueError:
        return False


def _query_secrets(query: str) -> list[str]:
    """The values (as written) of the query's parameters named like a key."""
    found = []
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if value and _SECRET_PARAMETER.search(unquote(name)):
            found.append(value)
    return found


def endpoint(base: str, path: str) -> str:
    """`base` with `path` appended to its path (one `/` between), its query kept after it,
    its fragment dropped: `https://h/v1?key=K` + `chat/completions` is
    `https://h/v1/chat/completions?key=K`."""
    parts = urlsplit(base)
    joined = parts.path.rstrip("/") + "/" + path.lstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, joined, parts.query, ""))
