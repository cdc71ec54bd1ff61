import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # lf_samples


@pytest.fixture(scope="session")
def lf_home(tmp_path_factory: pytest.TempPathFactory):
    """One AWORLD_RL_HOME for the session, so the tiny model is written to disk once."""
    home = tmp_path_factory.mktemp("aworld-home")
    old = os.environ.get("AWORLD_RL_HOME")
    os.environ["AWORLD_RL_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("AWORLD_RL_HOME", None)
    else:
        os.environ["AWORLD_RL_HOME"] = old
