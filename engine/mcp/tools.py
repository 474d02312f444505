"""MCP tools as engine tools: names, kinds from annotations, results as observation text.

Kinds follow the spec: a server's annotations are untrusted unless the
operator trusts the server (`trusted = true` in its configuration). Every
tool of an untrusted server is irreversible (it asks); a trusted server's
`readOnlyHint: true` or `destructiveHint: false` makes its tool ordinary, and
an unset hint still means "may destroy". `engine.core.describe.kind_source` says which of these
made a tool's kind.

Names are unique and cannot be forged: a tool keeps its server's name unless
another server (or the scenario) offers the same name, or the name starts like
another server's qualified names (`a.` for a server `a`); such a tool is called
`server.tool`. Two tools that would still share a name are refused at start
(`McpStartError`, naming both servers).

What the transcript header records of the tools stays well under the line the
reader takes (`engine.stored.reader.MAX_LINE_BYTES`): descriptions are cut to
`DESCRIPTION_CHARS`, and tools past `RECORD_BYTES` in all are left out, each
said in a warning (`McpHub.warnings`). A schema jsonschema refuses keeps its
tool, checked loosely, with a warning too.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import Counter
from typing import TYPE_CHECKING, Any, Iterable

from engine.core.schema import schema_refusal
from engine.core.text import clean, one_line
from engine.core.tools import Tool, ToolError, ToolFault, cap_text
from engine.stored.reader import MAX_LINE_BYTES

if TYPE_CHECKING:
    from engine.mcp.hub import McpHub

RECORD_BYTES = MAX_LINE_BYTES // 4
"""What the tools of a run's MCP servers may take of the transcript header, all together."""
DESCRIPTION_CHARS = RECORD_BYTES // 512
"""The longest description of a tool or of one of its arguments that is kept (16,384 characters)."""


def tool_kind(annotations: Any, trusted: bool) -> str:
    """"ordinary" or "irreversible" from a tool's MCP annotations, believed only from a trusted server."""
    if not trusted or annotations is None:
        return "irreversible"
    if getattr(annotations, "readOnlyHint", None) is True or getattr(annotations, "destructiveHint", None) is False:
        return "ordinary"
    return "irreversible"


def hub_tools(hub: McpHub, taken: Iterable[str] = ()) -> list[Tool]:
    """The engine tools for every tool of every server of `hub`; `taken` are names already in use.
    McpStartError when two tools would share a name; what was cut or left out is in `hub.warnings`."""
    named = tool_names(hub, taken)
    tools: list[Tool] = []
    used = 0
    for conn in hub.connections:
        cfg = conn.config
        cut = left_out = 0
        for spec, name in zip(conn.tools, named[cfg.name]):
            remote = str(spec.name)
            description = str(spec.description or (spec.annotations.title if spec.annotations and spec.annotations.title else ""))
            description, shortened = cap_text(description, DESCRIPTION_CHARS)
            schema, shortened_args = _cut_descriptions(spec.inputSchema if isinstance(spec.inputSchema, dict) else {"type": "object"})
            cut += shortened or shortened_args
            refusal = schema_refusal(schema)
            if refusal is not None:
                _warn(hub, f"MCP server '{cfg.name}': tool '{remote}' has an input schema that cannot be used "
                           f"({_short(refusal)}); its arguments are checked loosely")
            tool = Tool(
                name=name,
                description=description,
                fn=_caller(hub, cfg.name, remote),
                kind=tool_kind(spec.annotations, cfg.trusted),  # type: ignore[arg-type]
                timeout=None,  # the hub's own: `McpHub.call` waits at most the server's timeout and faults past it
                input_schema=schema,
                server=cfg.name,
            )
            size = len(tool.info().model_dump_json().encode())
            if used + size > RECORD_BYTES:
                left_out += 1
                continue
            used += size
            tools.append(tool)
        if cut:
            _warn(hub, f"MCP server '{cfg.name}': the descriptions of {cut} tools were cut to {DESCRIPTION_CHARS:,} characters")
        if left_out:
            _warn(hub, f"MCP server '{cfg.name}': {left_out} tools were left out: their descriptions and schemas "
                       f"would not fit in the transcript ({RECORD_BYTES >> 20} MiB for all tools)")
    return tools


def tool_names(hub: McpHub, taken: Iterable[str] = ()) -> dict[str, list[str]]:
    """Each server's tools' names, in the order it listed them; McpStartError naming both servers
    when two tools would share one."""
    from engine.mcp.hub import McpStartError

    taken = set(taken)
    servers = [c.config.name for c in hub.connections]
    counts = Counter(str(t.name) for c in hub.connections for t in c.tools)
    counts.update(taken)
    names: dict[str, list[str]] = {}
    owners: dict[str, tuple[str, str]] = {}
    for conn in hub.connections:
        own = conn.config.name
        names[own] = []
        for spec in conn.tools:
            remote = str(spec.name)
            looks_like = next((s for s in servers if s != own and remote.startswith(s + ".")), None)
            name = f"{own}.{remote}" if counts[remote] > 1 or looks_like is not None else remote
            if looks_like is not None:
                _warn(hub, f"MCP server '{_short(own)}' offers a tool named '{_short(remote)}', as server "
                           f"'{_short(looks_like)}' names its tools; it is called '{_short(name)}'")
            if name in taken:
                raise McpStartError(f"MCP server '{_short(own)}': its tool '{_short(remote)}' would be called "
                                    f"'{_short(name)}', the name of one of the scenario's tools")
            if name in owners:
                other, other_remote = owners[name]
                if other == own:
                    raise McpStartError(f"MCP server '{_short(own)}' offers two tools named '{_short(remote)}'")
                raise McpStartError(
                    f"MCP servers '{_short(other)}' and '{_short(own)}' both offer a tool called '{_short(name)}' "
                    f"(tool '{_short(other_remote)}' of '{_short(other)}', tool '{_short(remote)}' of '{_short(own)}'); "
                    "rename one of the servers"
                )
            owners[name] = (own, remote)
            names[own].append(name)
    return names


def _cut_descriptions(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The schema with the descriptions of its top-level properties (the header records them) cut."""
    props = schema.get("properties")
    if not isinstance(props, dict):
        return schema, False
    long = [n for n, p in props.items() if isinstance(p, dict) and isinstance(p.get("description"), str) and len(p["description"]) > DESCRIPTION_CHARS]
    if not long:
        return schema, False
    props = {**props, **{n: {**props[n], "description": cap_text(props[n]["description"], DESCRIPTION_CHARS)[0]} for n in long}}
    return {**schema, "properties": props}, True


def _warn(hub: McpHub, message: str) -> None:
    if message not in hub.warnings:
        hub.warnings.append(message)


def _short(text: str) -> str:
    """Server text in a message: control characters removed, one line of at most 200 characters."""
    return one_line(clean(text), 200)


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
