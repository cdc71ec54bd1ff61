"""Fixtures for the FunReason tests."""

from __future__ import annotations

import pytest

from aworld_rl_funreason.testing import WEATHER_TOOL


@pytest.fixture
def weather_tool():
    return dict(WEATHER_TOOL)
