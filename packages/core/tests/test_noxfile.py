"""CI's sessions can fail: no pytest exit-code escape, extras as declared, a typecheck session."""

import ast
from pathlib import Path

NOXFILE = Path(__file__).parents[3] / "noxfile.py"
TREE = ast.parse(NOXFILE.read_text(encoding="utf-8"))


def calls(name: str) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(TREE)
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(name)
    ]


def test_pytest_runs_accept_no_other_exit_code():
    runs = [c for c in calls("session.run") if c.args and ast.literal_eval(c.args[0]) == "pytest"]
    assert len(runs) >= 3  # tests, tests_verl, tests_llamafactory
    assert all(kw.arg != "success_codes" for run in runs for kw in run.keywords)


def test_typecheck_is_a_default_session():
    defaults = next(
        node.value
        for node in ast.walk(TREE)
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "nox.options.sessions"
    )
    assert "typecheck" in ast.literal_eval(defaults)
    assert any(isinstance(n, ast.FunctionDef) and n.name == "typecheck" for n in TREE.body)


def test_a_package_session_gets_core_without_its_test_extra():
    install = next(
        n for n in TREE.body if isinstance(n, ast.FunctionDef) and n.name == "_install_package"
    )
    source = ast.unparse(install)
    assert "'-e', 'packages/core')" in source  # core alone; the package's extras decide the rest
    assert source.count("packages/core[test]") == 1  # core's own session only


def test_the_vllm_session_installs_torch_first_removes_cuda_add_ons_and_ci_runs_it():
    session = next(
        n for n in TREE.body if isinstance(n, ast.FunctionDef) and n.name == "tests_vllm"
    )
    source = ast.unparse(session)
    assert source.index("session.install(TORCH)") < source.index("session.install(*VLLM)")
    assert "'torchvision', 'torchaudio', 'torchcodec'" in source
    ci = (NOXFILE.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "python3 -m nox -s tests_vllm" in ci
