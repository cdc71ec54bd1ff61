"""Dispatcher: allow-list, signature checks, BFCL rendering (cross-checked with bfcl-eval)."""

import copy
import importlib
import json
import os
import tempfile
import uuid

import pytest

from aworld_rl_core.tooluse import (
    BFCL_DENIED_NAMES,
    Call,
    Dispatcher,
    format_result,
    public_methods,
)
from aworld_rl_core.tooluse.dispatch import signature_error_message


class Files:
    """A small stateful API in the style of BFCL's classes."""

    calls_to_property = 0

    def __init__(self):
        self.cwd = "/"
        self.touched = []

    def cd(self, folder: str):
        if folder == "missing":
            return {"error": f"cd: '{folder}': No such file or directory"}
        self.cwd = folder
        return {"current_working_directory": folder}

    def sort(self, file_name: str, reverse: bool = False):
        return {"sorted": file_name, "reverse": reverse}

    def ls(self):
        return ["a", "b"]

    def echo(self, text: str):
        return text

    def boom(self):
        raise KeyError("nope")

    def nothing(self):
        return None

    def unserialisable(self):
        return {"obj": object.__new__(Files)}

    def _load_scenario(self, scenario):
        self.touched.append("private")

    @property
    def state(self):
        Files.calls_to_property += 1
        return self.cwd

    @staticmethod
    def helper():
        return "static"

    @classmethod
    def kind(cls):
        return cls.__name__


class Math:
    def mean(self, numbers: list):
        return {"result": sum(numbers) / len(numbers)}

    def ls(self):
        return "math ls"


class DictSub(dict):
    pass


def test_format_result_follows_bfcl():
    assert format_result("plain") == "plain"
    assert format_result({"a": "é", "b": [1, None]}) == '{"a": "\\u00e9", "b": [1, null]}'
    assert format_result(["a", 1]) == "['a', 1]"
    assert format_result(None) == "None"
    assert format_result(3.5) == "3.5"
    assert format_result(DictSub(a=1)) == "{'a': 1}"  # type(...) == dict only, like BFCL
    odd = {"x": {1, 2}}
    assert format_result(odd) == str(odd)


def test_public_methods_reads_the_class_without_running_properties():
    before = Files.calls_to_property
    names = sorted(public_methods(Files()))
    assert names == ["boom", "cd", "echo", "kind", "ls", "nothing", "sort", "unserialisable"]
    assert Files.calls_to_property == before


def test_call_results_and_kinds():
    files = Files()
    d = Dispatcher({"Files": files})
    r = d.call(Call("cd", {"folder": "docs"}))
    assert (r.kind, r.ok, r.executed, r.text) == (
        "ok",
        True,
        True,
        '{"current_working_directory": "docs"}',
    )
    assert files.cwd == "docs"
    r = d.call(Call("cd", {"folder": "missing"}))
    assert (r.kind, r.is_error, r.executed) == ("returned_error", True, True)
    assert r.text == '{"error": "cd: \'missing\': No such file or directory"}'
    r = d.call(Call("boom"))
    assert (r.kind, r.text) == ("raised", "Error during execution: 'nope'")
    assert d.call(Call("nothing")).text == "None"
    assert d.call(Call("ls")).text == "['a', 'b']"
    assert d.call(Call("echo", {"text": "hi"})).text == "hi"
    assert d.call(Call("kind")).text == "Files"
    assert d.call(Call("unserialisable")).text.startswith("{'obj': <")


def test_positional_arguments_bind_to_the_signature():
    d = Dispatcher([Files()])
    assert d.param_names("sort") == ["file_name", "reverse"]
    r = d.call(Call("sort", {}, ("final_report.pdf",)))
    assert r.text == '{"sorted": "final_report.pdf", "reverse": false}'
    r = d.call(Call("sort", {"reverse": True}, ("x",)))
    assert r.value == {"sorted": "x", "reverse": True}


def test_unknown_private_static_and_denied_names_are_refused():
    files = Files()
    d = Dispatcher({"Files": files}, deny=BFCL_DENIED_NAMES)
    for name in ("_load_scenario", "__init__", "helper", "state", "print", "os.system"):
        r = d.call(Call(name, {}))
        assert r.kind == "unknown_function", name
        head = name.split(".")[0]
        assert r.text == f"Error during execution: name '{head}' is not defined"
    assert files.touched == []
    assert d.call(Call("exit")).text == "Error during execution: Function call exit is not allowed."
    assert d.call(Call("exit")).kind == "denied"
    assert "_load_scenario" not in d and "cd" in d


class Sig:
    def f(self, a, b=1, *, c): ...

    def g(self, a, b): ...

    def h(self, a, /, b): ...

    def k(self, **kw): ...

    def one(self): ...


@pytest.mark.parametrize(
    ("name", "pos", "kw"),
    [
        ("f", (), {"a": 1}),
        ("f", (1, 2, 3), {"c": 1}),
        ("f", (1,), {"a": 2, "c": 1}),
        ("f", (), {"z": 1}),
        ("f", (), {}),
        ("f", (1, 2, 3), {"z": 1}),
        ("g", (), {}),
        ("g", (1,), {}),
        ("g", (1, 2, 3), {}),
        ("g", (), {"a": 1, "b": 2, "c": 3}),
        ("h", (), {"a": 1, "b": 2}),
        ("one", (1,), {}),
        ("one", (), {"x": 1}),
    ],
)
def test_signature_errors_match_cpython_without_calling(name, pos, kw):
    inst = Sig()
    method = public_methods(inst)[name]
    with pytest.raises(TypeError) as real:
        method(*pos, **kw)
    d = Dispatcher([inst])
    r = d.call(Call(name, kw, pos))
    assert r.kind == "bad_arguments"
    assert r.text == f"Error during execution: {real.value}"
    assert signature_error_message(method, d.signature(name), pos, kw) == str(real.value)


def test_var_keyword_methods_accept_anything():
    d = Dispatcher([Sig()])
    assert d.call(Call("k", {"x": 1})).kind == "ok"


def test_name_conflicts_follow_the_chosen_rule():
    files, math = Files(), Math()
    assert Dispatcher({"F": files, "M": math}).call(Call("ls")).text == "math ls"  # BFCL: last
    assert Dispatcher({"F": files, "M": math}).owner("ls") == "M"
    assert Dispatcher({"F": files, "M": math}, on_conflict="first").owner("ls") == "F"
    with pytest.raises(ValueError, match="'ls' is exposed by both F and M"):
        Dispatcher({"F": files, "M": math}, on_conflict="error")
    with pytest.raises(ValueError, match="on_conflict"):
        Dispatcher([files], on_conflict="random")  # type: ignore[arg-type]


def test_allow_list_restricts_the_table():
    d = Dispatcher([Files(), Math()], allow={"cd", "mean"})
    assert d.names == ["cd", "mean"]
    assert d.call(Call("ls")).kind == "unknown_function"


def test_execute_call_strings():
    d = Dispatcher({"Files": Files(), "Math": Math()})
    results = d.execute(
        ["cd(folder='x')", "mean(numbers=[1, 2])", "sort('a.pdf')", "cd(", "pwd(), ls()"]
    )
    assert [r.kind for r in results] == ["ok", "ok", "ok", "parse_error", "parse_error"]
    assert results[1].text == '{"result": 1.5}'
    assert results[3].text.startswith("Error during execution: not a python call list")
    assert results[4].text == "Error during execution: expected one call per string, got 2"
    assert d.execute_texts([Call("ls")]) == ["math ls"]


# ---------------------------------------------------------------------------------------------
# Byte-for-byte agreement with bfcl-eval's executor on the multi-turn ground truth
# ---------------------------------------------------------------------------------------------

CATEGORIES = [
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
]


def _load_jsonl(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(scope="module")
def bfcl():
    pytest.importorskip("bfcl_eval")
    os.environ.setdefault("BFCL_PROJECT_ROOT", tempfile.mkdtemp(prefix="bfcl_root_"))
    import bfcl_eval
    from bfcl_eval.constants import executable_backend_config as backend
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    data = os.path.join(os.path.dirname(bfcl_eval.__file__), "data")
    return data, backend, multi_turn_utils


def _fresh_instances(entry, backend, long_context):
    instances = {}
    for cls_name in entry["involved_classes"]:
        module = importlib.import_module(backend.CLASS_FILE_PATH_MAPPING[cls_name])
        inst = vars(module)[cls_name]()
        if cls_name not in backend.STATELESS_CLASSES:
            config = copy.deepcopy(entry["initial_config"].get(cls_name, {}))
            inst._load_scenario(config, long_context=long_context)
        instances[cls_name] = inst
    return instances


@pytest.mark.parametrize("category", CATEGORIES)
def test_ground_truth_results_match_bfcl_executor(bfcl, category):
    data, backend, mtu = bfcl
    prefix = next(f for f in os.listdir(data) if f.endswith(f"_{category}.json")).rsplit(
        category, 1
    )[0]
    entries = _load_jsonl(os.path.join(data, f"{prefix}{category}.json"))
    answers = {
        a["id"]: a["ground_truth"]
        for a in _load_jsonl(os.path.join(data, "possible_answer", f"{prefix}{category}.json"))
    }
    compared = 0
    for entry in entries:
        long_context = "long_context" in entry["id"] or "composite" in entry["id"]
        dispatcher = Dispatcher(
            _fresh_instances(entry, backend, long_context), deny=BFCL_DENIED_NAMES
        )
        model_name = f"aworld_test_{uuid.uuid4().hex[:8]}"
        try:
            for turn in answers[entry["id"]]:
                theirs, _ = mtu.execute_multi_turn_func_call(
                    turn,
                    entry["initial_config"],
                    entry["involved_classes"],
                    model_name,
                    entry["id"],
                    long_context,
                )
                ours = dispatcher.execute_texts(turn)
                assert ours == theirs, (entry["id"], turn)
                compared += len(turn)
        finally:
            for key in [k for k in vars(mtu) if k.startswith(model_name)]:
                del vars(mtu)[key]
    assert compared > 900  # every ground-truth call of the category was compared


def test_fast_binding_agrees_with_signature_bind():
    import itertools

    from aworld_rl_core.tooluse.dispatch import _class_methods

    specs = _class_methods(Sig)
    values = [(), (1,), (1, 2), (1, 2, 3)]
    keyword_sets = [{}, {"a": 1}, {"b": 1}, {"c": 1}, {"a": 1, "c": 1}, {"z": 1}, {"b": 1, "c": 2}]
    for name, pos, kw in itertools.product(specs, values, keyword_sets):
        spec = specs[name]
        try:
            spec.signature.bind(*pos, **kw)
            expected = True
        except TypeError:
            expected = False
        assert spec.fits(pos, kw) is expected, (name, pos, kw)
