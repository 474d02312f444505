"""What the gateway sends back to the agent (`Response`); built by the wire modules, `engine.wires`."""

from __future__ import annotations

from engine.wires.neutral import Response

__all__ = ["Response"]
