"""The test kit: pytest markers and fixtures, tiny models, contract tests, test doubles."""
