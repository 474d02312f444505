"""The model's command-line flags (`run --model ...`) and the config they make."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Mapping

from tui.cli.common import positive_float
from tui.cli.secrets import url_argument

if TYPE_CHECKING:
    from engine.model.config import ModelConfig

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""For the help text only (`--help` imports no model code); engine.model.config owns the default."""


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The model flags for a CLI subcommand (`run`); the key only comes from the environment."""
    group = parser.add_argument_group(
        "model", "a model server (chat completions unless --model-wire); the key is read from AGENT_TUI_API_KEY or OPENAI_API_KEY"
    )
    group.add_argument("--model", metavar="NAME", help="the model name (or AGENT_TUI_MODEL); enables --policy model")
    group.add_argument(
        "--base-url", metavar="URL", help=f"the API base URL (default {DEFAULT_BASE_URL})",
        type=url_argument("--base-url", "give the key in $AGENT_TUI_API_KEY instead, or the URL in the configuration file"),
    )
    group.add_argument("--price-in", metavar="USD", help="dollars per 1,000 input tokens, for the cost gauge")
    group.add_argument("--price-out", metavar="USD", help="dollars per 1,000 output tokens, for the cost gauge")
    group.add_argument(
        "--model-mode",
        choices=("tools", "text"),
        help="tools: function calling (default); text: the Thought/Action format, for models without tools",
    )
    group.add_argument(
        "--model-wire", metavar="WIRE",
        help="the server's API: chat (chat completions, the default), anthropic, responses or gemini (or AGENT_TUI_MODEL_WIRE)",
    )
    group.add_argument("--no-stream", action="store_true", help="ask for whole replies instead of a stream")
    group.add_argument("--timeout", type=positive_float, metavar="SECONDS", help="deadline for each whole request (default 60)")


def config_from_args(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> ModelConfig | None:
    """The config from parsed `add_model_arguments` flags plus the environment."""
    from engine.model.config import config_from_env

    return config_from_env(
        getattr(args, "model", None),
        getattr(args, "base_url", None),
        price_in=getattr(args, "price_in", None),
        price_out=getattr(args, "price_out", None),
        mode=getattr(args, "model_mode", None),
        wire=getattr(args, "model_wire", None),
        stream=False if getattr(args, "no_stream", False) else None,
        timeout=getattr(args, "timeout", None),
        env=env,
    )
