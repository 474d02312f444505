"""What the tests share: fake models, harnesses, worlds and helpers (none of it is a test)."""
