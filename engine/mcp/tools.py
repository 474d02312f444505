"""MCP tools as engine tools: names, kinds from annotations, results as observation text.

Kinds follow the spec's reading of the hints (they are untrusted, and an
unset hint means "may destroy"): `readOnlyHint: true` is ordinary, anything
else irreversible; a server the configuration marks trusted also makes
`destructiveHint: false` tools ordinary. Where two servers (or a scenario)
offer the same name, each such tool is called `server.tool`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import Counter
from typing import TYPE_CHECKING, Any, Iterable

from engine.core.tools import Tool, ToolError, ToolFault

if TYPE_CHECKING:
    from engine.mcp.hub import McpHub

TIMEOUT_MARGIN = 10.0


def tool_kind(annotations: Any, trusted: bool) -> str:
    """"ordinary" or "irreversible" from a tool's MCP annotations."""
    read_only = getattr(annotations, "readOnlyHint", None) if annotations is not None else None
    destructive = getattr(annotations, "destructiveHint", None) if annotations is not None else None
    if read_only is True:
        return "ordinary"
    if trusted and destructive is False:
        return "ordinary"
    return "irreversible"


def hub_tools(hub: McpHub, taken: Iterable[str] = ()) -> list[Tool]:
    """The engine tools for every tool of every server of `hub`; `taken` are names already in use."""
    counts = Counter(str(t.name) for c in hub.connections for t in c.tools)
    counts.update(taken)
    tools: list[Tool] = []
    for conn in hub.connections:
        cfg = conn.config
        for spec in conn.tools:
            remote = str(spec.name)
            name = f"{cfg.name}.{remote}" if counts[remote] > 1 else remote
            schema = spec.inputSchema if isinstance(spec.inputSchema, dict) else {"type": "object"}
            tools.append(
                Tool(
                    name=name,
                    description=str(spec.description or (spec.annotations.title if spec.annotations and spec.annotations.title else "")),
                    fn=_caller(hub, cfg.name, remote),
                    kind=tool_kind(spec.annotations, cfg.trusted),  # type: ignore[arg-type]
                    timeout=cfg.timeout + TIMEOUT_MARGIN,
                    input_schema=schema,
                    server=cfg.name,
                )
            )
    return tools


def _caller(hub: McpHub, server: str, tool: str) -> Any:
    from engine.mcp.hub import McpCallError, McpFault

    def call(**args: Any) -> str:
        try:
            result = hub.call(server, tool, args)
        except McpFault as exc:
            raise ToolFault(str(exc)) from None
        except McpCallError as exc:
            raise ToolError(str(exc)) from None
        text = result_text(result)
        if result.isError:
            raise ToolError(text or f"{tool} failed (the server gave no detail)")
        return text

    call.__name__ = tool
    return call


def result_text(result: Any) -> str:
    """A CallToolResult as observation text: text parts joined, other parts one placeholder line each."""
    parts: list[str] = []
    has_text = False
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
            has_text = True
        elif kind in ("image", "audio"):
            parts.append(f"[{kind}: {block.mimeType}, {_size(_decoded_size(block.data))}]")
        elif kind == "resource":
            res = block.resource
            mime = getattr(res, "mimeType", None) or "unknown type"
            if getattr(res, "text", None) is not None:
                parts.append(f"[resource: {res.uri}, {mime}, {len(res.text):,} characters]")
            else:
                parts.append(f"[resource: {res.uri}, {mime}, {_size(_decoded_size(getattr(res, 'blob', '')))}]")
        elif kind == "resource_link":
            mime = getattr(block, "mimeType", None) or "unknown type"
            parts.append(f"[resource link: {block.uri}, {mime}]")
        else:
            parts.append(f"[{kind or 'unknown'} content]")
    structured = getattr(result, "structuredContent", None)
    if structured is not None and not has_text:
        # The spec asks servers to mirror structured content as text; only without such text is it shown.
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    return "\n".join(parts)


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError, TypeError):
        return len(data or "")


def _size(n: int) -> str:
    return f"{n:,} bytes"
