"""`agent-tui gateway`: an endpoint between an agent and its model, in the four APIs agents speak (chat completions, Anthropic Messages, OpenAI Responses, Gemini).

The parts: `conversation` (following an agent's history from request to
request), `schema` (the agent's tools and their arguments), `upstream` (the
model as a policy), `wire` (responses), `controller` (the `Gateway` driving an
engine run per conversation turn), `client` (the upstream over httpx),
`server` (the ASGI application on uvicorn).
"""

from engine.gateway.controller import Gateway, GatewayRun
from engine.gateway.server import DEFAULT_MAX_BODY, GatewayServer
from engine.gateway.upstream import Upstream

__all__ = ["DEFAULT_MAX_BODY", "Gateway", "GatewayRun", "GatewayServer", "Upstream"]
