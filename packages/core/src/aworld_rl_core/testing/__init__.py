"""The test kit: pytest markers and fixtures, contract tests, test doubles (models live in
``aworld_rl_core.models``; nothing outside tests and benchmarks imports this package)."""
