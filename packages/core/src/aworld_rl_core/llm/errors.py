"""Errors raised by the LLM clients; each message names the endpoint and what to do."""

from __future__ import annotations


class LLMError(RuntimeError):
    """Base class of every client error."""


class LLMConnectionError(LLMError):
    """The endpoint could not be reached (refused, DNS, dropped) after the retries."""


class LLMTimeoutError(LLMError):
    """The endpoint did not answer within the timeout after the retries."""


class LLMHTTPError(LLMError):
    """The endpoint answered with an HTTP error status."""

    def __init__(self, message: str, *, status: int, endpoint: str, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.endpoint = endpoint
        self.body = body


class LLMResponseError(LLMError):
    """The endpoint answered 200 with a body that is not an OpenAI chat completion."""
