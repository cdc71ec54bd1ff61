import sys
from pathlib import Path

import pytest

# only the support folder: tests/verl and tests/llamafactory must not shadow the real packages
sys.path.insert(0, str(Path(__file__).parent / "support"))

from demo_plugin import DemoPlugin

from aworld_rl_core import registry


@pytest.fixture
def demo_registry():
    """The installed plugins plus the tests' own demo plugin, as the current registry."""
    reg = registry.build_registry(extra=[("demo", DemoPlugin())])
    with registry.use_registry(reg):
        yield reg
