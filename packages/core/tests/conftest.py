import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the tests' helper modules (demo_plugin)

from demo_plugin import DemoPlugin

from aworld_rl_core import plugins


@pytest.fixture
def demo_registry():
    """The installed plugins plus the tests' own demo plugin, as the current registry."""
    reg = plugins.build_registry(extra=[("demo", DemoPlugin())])
    with plugins.use_registry(reg):
        yield reg
