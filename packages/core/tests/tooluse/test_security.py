"""Hostile model outputs through every parser and the dispatcher: errors, never execution."""

import ast
from pathlib import Path

import pytest

import aworld_rl_core.tooluse as tooluse
from aworld_rl_core.testing.hostile import (
    PROTOCOL_WRAPPERS,
    hostile_call_strings,
    hostile_cases,
    hostile_responses,
)
from aworld_rl_core.tooluse import BFCL_DENIED_NAMES, Dispatcher, parse_response, protocol_names


class Victim:
    """An API whose private methods would leave a trace if anything reached them."""

    def __init__(self, sentinel: Path):
        self._sentinel = sentinel
        self.public_calls: list[str] = []

    def ls(self, a: bool = False):
        self.public_calls.append("ls")
        return {"current_directory_content": []}

    def pwd(self):
        self.public_calls.append("pwd")
        return {"current_working_directory": "/"}

    def cd(self, folder: str):
        self.public_calls.append("cd")
        return {"current_working_directory": folder}

    def _load_scenario(self, scenario, long_context=False):
        self._sentinel.write_text("private method reached")

    def _private_touch(self):
        self._sentinel.write_text("private method reached")


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    sentinel = tmp_path / "sentinel.txt"
    victim = Victim(sentinel)
    yield sentinel, victim, Dispatcher({"Victim": victim}, deny=BFCL_DENIED_NAMES)
    assert not sentinel.exists(), "a hostile payload had an effect"
    assert list(work.iterdir()) == [], "a hostile payload wrote into the working directory"
    assert victim.public_calls == []


def test_corpus_covers_every_protocol():
    assert sorted(PROTOCOL_WRAPPERS) == protocol_names()
    names = [c.name for c in hostile_cases("/tmp/x")]
    assert len(names) == len(set(names)) >= 40


@pytest.mark.parametrize("protocol", ["think_json", "think_python", "think_tool_python", "hermes"])
def test_hostile_responses_yield_errors_through_every_parser(protocol, sandbox):
    sentinel, _, dispatcher = sandbox
    not_refused = []
    for name, text in hostile_responses(protocol, sentinel):
        parsed = parse_response(text, protocol)
        if parsed.ok:
            results = [dispatcher.call(c) for c in parsed.calls]
            if not results or not all(r.is_error for r in results):
                not_refused.append(name)
    assert not_refused == []


def test_hostile_call_strings_yield_errors_through_the_dispatcher(sandbox):
    sentinel, _, dispatcher = sandbox
    cases = hostile_call_strings(sentinel)
    results = dispatcher.execute([text for _, text in cases])
    assert len(results) == len(cases)
    ok = [name for (name, _), r in zip(cases, results, strict=True) if not r.is_error]
    assert ok == []
    assert all(r.text.startswith("Error during execution: ") for r in results)
    kinds = {name: r.kind for (name, _), r in zip(cases, results, strict=True)}
    assert kinds["private_load_scenario"] == "unknown_function"
    assert kinds["builtin_eval"] == "unknown_function"
    assert kinds["import_system"] == "parse_error"
    assert kinds["denied_exit"] == "denied"


def test_hostile_python_payloads_raise_parse_errors_directly(sandbox):
    sentinel, _, _ = sandbox
    parse_ok = set()
    for case in hostile_cases(sentinel):
        try:
            tooluse.parse_python_calls(case.python)
            parse_ok.add(case.name)
        except tooluse.ToolCallParseError:
            pass
    # these parse as literal-only calls; the dispatcher refuses them by name
    assert parse_ok == {
        "os_system_name",
        "builtin_open",
        "builtin_eval",
        "builtin_exec",
        "builtin_getattr",
        "private_load_scenario",
        "private_method",
        "denied_exit",
        "denied_kill",
    }


RUNTIME_FILES = ["calls.py", "parsers.py", "dispatch.py", "__init__.py"]
FORBIDDEN = {"eval", "exec", "compile", "__import__", "globals", "vars", "setattr", "delattr"}


@pytest.mark.parametrize("filename", RUNTIME_FILES)
def test_runtime_source_never_evaluates_or_looks_up_unchecked_names(filename):
    source = (Path(tooluse.__file__).parent / filename).read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            assert name not in FORBIDDEN, f"{filename}:{node.lineno} calls {name}"
            if name == "getattr":  # only with a constant attribute name
                assert isinstance(node.args[1], ast.Constant), f"{filename}:{node.lineno}"
        if isinstance(node, ast.Attribute):
            assert node.attr not in {"literal_eval", "import_module"}, f"{filename}:{node.lineno}"


def test_corpus_is_live_against_an_eval_based_executor(tmp_path, monkeypatch):
    """bfcl-eval's own executor evaluates call strings: the corpus really does reach the system."""
    pytest.importorskip("bfcl_eval")
    monkeypatch.setenv("BFCL_PROJECT_ROOT", str(tmp_path / "bfcl_root"))
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils as mtu

    sentinel = tmp_path / "sentinel.txt"
    payload = dict(hostile_call_strings(sentinel))["bare_import_call"]
    try:
        mtu.execute_multi_turn_func_call([payload], {}, ["MathAPI"], "aworld_sec", "probe_0")
    finally:
        for key in [k for k in vars(mtu) if k.startswith("aworld_sec")]:
            del vars(mtu)[key]
    assert sentinel.read_text() == "pwned"
    sentinel.unlink()
    results = Dispatcher({"Victim": Victim(sentinel)}).execute([payload])
    assert results[0].kind == "parse_error"
    assert not sentinel.exists()


def test_runtime_import_is_pure_python():
    """Importing the runtime pulls in neither bfcl_eval nor torch (nor the BFCL adapter)."""
    import subprocess
    import sys

    code = (
        "import sys, aworld_rl_core.tooluse\n"
        "heavy = {'bfcl_eval', 'torch', 'transformers', 'aworld_rl_core.tooluse.bfcl'}\n"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
