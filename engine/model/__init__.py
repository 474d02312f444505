"""The model client: configuration, the HTTP policy, and the chat wire format.

`from engine.model import ModelConfig, ModelPolicy` keeps working; the parts
live in `engine.model.policy` and `engine.model.wire`.
"""

from engine.model.policy import ModelConfig, ModelPolicy, config_from_env

__all__ = ["ModelConfig", "ModelPolicy", "config_from_env"]
