"""The model client: configuration, the HTTP policy, and the chat wire format.

`config` (endpoint, model, prices, the key kept secret; no HTTP), `http`
(replies, retries, errors in words), `wire` (messages built from the run,
replies read back) and `policy` (ModelPolicy, which asks for each decision).
"""

from engine.model.config import ModelConfig, config_from_env
from engine.model.policy import ModelPolicy

__all__ = ["ModelConfig", "ModelPolicy", "config_from_env"]
