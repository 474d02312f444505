"""The model client's configuration: endpoint, model, prices, mode, and the key kept secret.

No HTTP here (httpx is imported only by the policy when it asks): the command
line reads this module to describe and check its flags.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from engine.core.events import Budget
from engine.core.urls import safe_url
from engine.model.wire import Mode

DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_VARIABLES = ("AGENT_TUI_API_KEY", "OPENAI_API_KEY")


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
    wire: str = "chat"
    """The server's API (`engine.wires`: chat, anthropic, responses, gemini)."""

    def __post_init__(self) -> None:
        if isinstance(self.api_key, str):
            object.__setattr__(self, "api_key", Secret(self.api_key) if self.api_key else None)
        if self.mode not in ("tools", "text"):
            raise ValueError(f"model mode must be 'tools' or 'text', not {self.mode!r}")
        if not self.model.strip():
            raise ValueError("the model name is empty")
        from engine.wires import wire_named

        wire_named(self.wire)  # ValueError naming the wires

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
            "wire": self.wire,
        }

    @property
    def prices(self) -> tuple[float, float] | None:
        """(in, out) dollars per 1,000 tokens when either is given, else None."""
        if self.price_in_per_1k is None and self.price_out_per_1k is None:
            return None
        return (self.price_in_per_1k or 0.0, self.price_out_per_1k or 0.0)

    def with_prices(self, budget: Budget) -> Budget:
        """The budget with this model's prices (where given), so the cost gauge counts them."""
        update = {}
        if self.price_in_per_1k is not None:
            update["price_in_per_1k"] = self.price_in_per_1k
        if self.price_out_per_1k is not None:
            update["price_out_per_1k"] = self.price_out_per_1k
        return budget.model_copy(update=update) if update else budget


# -- configuration ----------------------------------------------------------------


def _number(name: str, value: str | float | None) -> float | None:
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, not {value!r}") from None
    if not math.isfinite(number):  # a NaN price makes every cost NaN, and no cost budget trips
        raise ValueError(f"{name} must be a finite number, not {value!r}")
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
    wire: str | None = None,
    stream: bool | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    env: Mapping[str, str] | None = None,
) -> ModelConfig | None:
    """A config from explicit values, then the environment; None when no model is named.

    Environment: AGENT_TUI_MODEL, AGENT_TUI_BASE_URL (or OPENAI_BASE_URL), the key
    from AGENT_TUI_API_KEY (or OPENAI_API_KEY), AGENT_TUI_PRICE_IN and
    AGENT_TUI_PRICE_OUT (dollars per 1,000 tokens), AGENT_TUI_MODEL_MODE,
    AGENT_TUI_MODEL_WIRE (the server's API, `engine.wires`; chat completions by default).
    The key is read only from the environment, never from a flag.
    """
    env = os.environ if env is None else env
    model = model or env.get("AGENT_TUI_MODEL")
    if not model:
        return None
    key = next((env[v] for v in KEY_VARIABLES if env.get(v)), None)
    chosen_mode = mode or env.get("AGENT_TUI_MODEL_MODE") or "tools"
    url = base_url or env.get("AGENT_TUI_BASE_URL") or env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    if not url.startswith(("http://", "https://")):  # as the configuration file's base_url
        raise ValueError(f"the base URL must start with http:// or https://, not {url!r}")
    config = ModelConfig(
        model=model,
        base_url=url,
        api_key=Secret(key) if key else None,
        price_in_per_1k=_number("the input price", price_in if price_in is not None else env.get("AGENT_TUI_PRICE_IN")),
        price_out_per_1k=_number(
            "the output price", price_out if price_out is not None else env.get("AGENT_TUI_PRICE_OUT")
        ),
        mode=chosen_mode,  # type: ignore[arg-type]
        stream=True if stream is None else stream,
        wire=wire or env.get("AGENT_TUI_MODEL_WIRE") or "chat",
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
