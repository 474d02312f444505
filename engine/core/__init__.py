"""The core state machine: events, the state fold, the engine, policies, tools, approvals, scenarios."""
