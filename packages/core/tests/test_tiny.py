"""``aworld_rl_core.models``: the offline Qwen3 tokenizer and chat template, tiny random models,
loading what ``model.name_or_path`` names (and the errors when it names nothing)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from aworld_rl_core.models import (  # noqa: E402
    load_model_and_tokenizer,
    load_tokenizer,
    tiny_causal_lm,
    tiny_model_dir,
    tiny_tokenizer,
    tiny_vl_model,
)
from aworld_rl_core.models.config import ModelConfig  # noqa: E402

CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "1+2?"},
    {
        "role": "assistant",
        "reasoning_content": "add them",
        "tool_calls": [{"type": "function", "function": {"name": "add", "arguments": {"a": 1}}}],
    },
    {"role": "tool", "content": "3"},
    {"role": "assistant", "content": "3"},
]
TOOLS = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]


@pytest.fixture(scope="module")
def tok():
    return tiny_tokenizer()


def test_tokenizer_is_qwen3_with_its_special_tokens(tok):
    assert len(tok) == 151669
    assert (tok.eos_token, tok.pad_token) == ("<|im_end|>", "<|endoftext|>")
    ids = tok.convert_tokens_to_ids(["<|im_start|>", "<|im_end|>", "<tool_call>", "<think>"])
    assert ids == [151644, 151645, 151657, 151667]


def test_chat_template_renders_tools_calls_tool_results_and_thinking(tok):
    text = tok.apply_chat_template(CONVERSATION, tools=TOOLS, tokenize=False)
    tools_block = (
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
        '{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}\n'
        "</tools>\n\nFor each function call, return a json object with function name and "
        "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )
    assert text == (
        f"<|im_start|>system\nBe brief.\n\n{tools_block}<|im_end|>\n"
        "<|im_start|>user\n1+2?<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nadd them\n</think>\n\n"
        '<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_response>\n3\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n3<|im_end|>\n"
    )
    prompt = tok.apply_chat_template(CONVERSATION[:2], add_generation_prompt=True, tokenize=False)
    assert prompt.endswith("<|im_start|>user\n1+2?<|im_end|>\n<|im_start|>assistant\n")
    no_think = tok.apply_chat_template(
        CONVERSATION[:2], add_generation_prompt=True, tokenize=False, enable_thinking=False
    )
    assert no_think == prompt + "<think>\n\n</think>\n\n"


def test_assistant_tokens_mask_covers_exactly_the_assistant_turns(tok):
    out = tok.apply_chat_template(
        CONVERSATION,
        tools=TOOLS,
        tokenize=True,
        return_dict=True,
        return_assistant_tokens_mask=True,
    )
    picked = [t for t, m in zip(out["input_ids"], out["assistant_masks"], strict=True) if m]
    assert tok.decode(picked) == (
        "<think>\nadd them\n</think>\n\n"
        '<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool_call><|im_end|>'
        "3<|im_end|>"
    )


def test_tokenizer_copies_are_independent():
    first = tiny_tokenizer()
    first.chat_template = "changed"
    assert tiny_tokenizer().chat_template != "changed"


def test_tiny_causal_lm_is_small_seeded_and_runs(tok):
    model = tiny_causal_lm(tok)
    n_params = sum(p.numel() for p in model.parameters())
    assert 1_000_000 < n_params < 10_000_000
    same = tiny_causal_lm(tok, seed=0).state_dict()
    other = tiny_causal_lm(tok, seed=1).state_dict()
    weights = model.state_dict()
    assert all(torch.equal(weights[k], same[k]) for k in weights)
    assert not all(torch.equal(weights[k], other[k]) for k in weights)
    ids = torch.tensor([tok("hello world")["input_ids"]])
    assert model(input_ids=ids).logits.shape == (1, ids.shape[1], 151669)
    qwen2 = tiny_causal_lm(tok, arch="qwen2")
    assert qwen2.config.model_type == "qwen2"
    with pytest.raises(ValueError, match="unknown tiny architecture 'llama'"):
        tiny_causal_lm(tok, arch="llama")


def test_load_model_and_tokenizer_tiny_and_from_a_path(tmp_path, monkeypatch):
    monkeypatch.setenv("AWORLD_RL_HOME", str(tmp_path / "home"))
    model, tok = load_model_and_tokenizer(ModelConfig(name_or_path="tiny:qwen3"))
    reference = tiny_causal_lm(tok).state_dict()
    assert all(torch.equal(v, reference[k]) for k, v in model.state_dict().items())

    path = tiny_model_dir()
    assert path == tmp_path / "home" / "tiny" / "qwen3-seed0"
    assert model.config._name_or_path == str(path)  # TRL rebuilds reference models from it
    stamp = os.stat(path / "config.json").st_mtime_ns
    assert tiny_model_dir() == path and os.stat(path / "config.json").st_mtime_ns == stamp
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    loaded, loaded_tok = load_model_and_tokenizer(ModelConfig(name_or_path=str(path)))
    assert all(torch.equal(v, reference[k]) for k, v in loaded.state_dict().items())
    assert loaded_tok.chat_template == tok.chat_template

    template = tmp_path / "t.jinja"
    template.write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    custom = load_tokenizer(ModelConfig(name_or_path="tiny:qwen2", chat_template=str(template)))
    assert custom.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False) == "x"
    with pytest.raises(ValueError, match="unknown tiny model 'tiny:gpt'"):
        load_model_and_tokenizer(ModelConfig(name_or_path="tiny:gpt"))
    with pytest.raises(FileNotFoundError, match=r"model\.chat_template"):
        load_tokenizer(ModelConfig(chat_template=str(tmp_path / "missing.jinja")))


def test_tiny_vl_model_takes_an_image_on_cpu():
    from PIL import Image

    vl = tiny_vl_model()
    image = Image.new("RGB", (300, 200), color=(200, 30, 30))
    text = "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Where?<|im_end|>\n"
    inputs = vl.processor(text, [image])
    assert tuple(inputs["image_grid_thw"][0].tolist()) == (1, 12, 18)  # 168x252 px / 14
    assert tuple(inputs["pixel_values"].shape) == (216, 1176)  # 12*18 patches, 3*2*14*14
    n_pad = int((inputs["input_ids"] == 151655).sum())
    assert n_pad == 12 * 18 // 4  # merged 2x2
    assert torch.equal(inputs["mm_token_type_ids"], (inputs["input_ids"] == 151655).long())
    with torch.no_grad():
        out = vl.model(**inputs)
    assert out.logits.shape == (1, inputs["input_ids"].shape[1], 151669)
    with pytest.raises(ValueError, match=re.escape("1 <|image_pad|> placeholders but 2 images")):
        vl.processor(text, [image, image])


def test_tiny_text_models_take_a_size_in_their_name(tmp_path, monkeypatch):
    from aworld_rl_core.models import TinySize, parse_tiny

    monkeypatch.setenv("AWORLD_RL_HOME", str(tmp_path))
    assert parse_tiny("qwen3") == ("qwen3", TinySize(hidden=32, layers=2))
    assert parse_tiny("qwen2:layers=3") == ("qwen2", TinySize(hidden=32, layers=3))
    name = "tiny:qwen3:hidden=64,layers=3"
    model, tok = load_model_and_tokenizer(ModelConfig(name_or_path=name))
    config = model.config
    assert (config.hidden_size, config.num_hidden_layers, config.intermediate_size) == (64, 3, 128)
    assert (config.num_attention_heads, config.head_dim) == (4, 16)
    assert tiny_model_dir("qwen3:hidden=64,layers=3") == tmp_path / "tiny" / (
        "qwen3-hidden64-layers3-seed0"
    )
    assert tiny_model_dir("qwen3:hidden=32,layers=2") == tmp_path / "tiny" / "qwen3-seed0"
    from aworld_rl_core.backends.llamafactory.launch import model_source

    # LLaMA-Factory's worker builds the tiny model from this spec (tiny_model_dir)
    assert model_source(name) == (name, "qwen3:hidden=64,layers=3")
    built = tiny_causal_lm(tok, size=TinySize(hidden=64, layers=3)).state_dict()
    assert all(torch.equal(v, built[k]) for k, v in model.state_dict().items())
    ids = torch.tensor([tok("hello world")["input_ids"]])
    assert model(input_ids=ids).logits.shape == (1, ids.shape[1], 151669)


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("tiny:qwen3:hidden=30", "hidden=30: use a multiple of 8 from 8 to 2048"),
        ("tiny:qwen3:layers=0", "layers=0: use 1 to 32"),
        ("tiny:qwen3:width=64", "bad size option 'width=64'.*keys head_dim, heads, hidden, layers"),
        ("tiny:qwen3:hidden=6.4e1", "bad size option 'hidden=6.4e1'"),
        ("tiny:qwen3:hidden=64,hidden=32", "bad size option 'hidden=32'.*each key once"),
        ("tiny:qwen3:", "bad size option ''"),
        ("tiny:qwen2:layers=1,window=8", "window=8 with layers=1: .*at least 2 layers"),
        ("tiny:qwen2_5_vl:hidden=64", "only tiny:qwen3, tiny:qwen2 take a size"),
        ("tiny:gpt:hidden=64", "unknown tiny model 'tiny:gpt:hidden=64'.*hidden=128,layers=4"),
        ("tiny:qwen3:hidden=64,heads=3", "heads=3: use 1 to 32 heads dividing hidden=64"),
        ("tiny:qwen3:head_dim=33", "head_dim=33: use an even width"),
        ("tiny:qwen3:positions=64", "positions=64: use 128 to 131072"),
    ],
)
def test_a_bad_tiny_size_is_a_clear_error(name, error):
    from aworld_rl_core.models import check_source

    with pytest.raises(ValueError, match=error):
        check_source(name)


def test_tiny_model_dir_rejects_unknown_arch(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("AWORLD_RL_HOME", str(tmp_path))
    with pytest.raises(ValueError, match="unknown tiny architecture"):
        tiny_model_dir("mamba")


def test_tiny_qwen2_5_vl_loads_with_its_processor_by_name_and_from_its_directory(aworld_home):
    from PIL import Image

    from aworld_rl_core.models import ImageTextProcessor, load_processor, load_vision_model

    model, processor = load_vision_model(ModelConfig(name_or_path="tiny:qwen2_5_vl"))
    assert model.config.model_type == "qwen2_5_vl" and isinstance(processor, ImageTextProcessor)
    reference = tiny_vl_model().model.state_dict()
    assert all(torch.equal(v, reference[k]) for k, v in model.state_dict().items())
    saved = load_processor(ModelConfig(name_or_path=str(tiny_model_dir("qwen2_5_vl"))))
    assert saved.image_processor.size.longest_edge == 224 * 224  # max pixels, saved
    parts = [{"type": "image", "image": "x.png"}, {"type": "text", "text": "Where?"}]
    conversation = [{"role": "user", "content": parts}]
    text = processor.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
    assert text == (
        "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Where?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    batch = saved(text, [Image.new("RGB", (300, 200))])
    assert int((batch["input_ids"] == 151655).sum()) == 12 * 18 // 4
    with pytest.raises(ValueError, match="unknown tiny model 'tiny:qwen3'.*tiny:qwen2_5_vl"):
        load_vision_model(ModelConfig(name_or_path="tiny:qwen3"))
    with pytest.raises(ValueError, match="unknown tiny model 'tiny:qwen2_5_vl'"):
        load_model_and_tokenizer(ModelConfig(name_or_path="tiny:qwen2_5_vl"))


def test_a_name_or_path_that_names_nothing_is_a_clear_error(tmp_path, monkeypatch):
    from aworld_rl_core.errors import ConfigError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    missing = str(tmp_path / "no" / "model")
    with pytest.raises(ConfigError) as err:
        load_tokenizer(ModelConfig(name_or_path=missing))
    message = str(err.value)
    assert repr(missing) in message and "existing directory" in message and "hub id" in message
    (tmp_path / "weights.bin").write_text("x")
    with pytest.raises(ConfigError, match="is a file, not a model directory"):
        load_model_and_tokenizer(ModelConfig(name_or_path=str(tmp_path / "weights.bin")))
    with pytest.raises(ConfigError, match=r"model\.tokenizer='a//b'"):
        load_tokenizer(ModelConfig(tokenizer="a//b"))
    # a valid hub id that is not in the local cache: the loader's error, with what to do
    with pytest.raises(OSError, match=r"cannot load model\.name_or_path='someorg/absent'.*cache"):
        load_tokenizer(ModelConfig(name_or_path="someorg/absent"))


def test_backends_recipes_and_clients_never_import_testing():
    """``aworld_rl_core.testing`` holds test doubles and fixtures only: no module of core or of
    a paper package imports it (tests and benchmarks may)."""
    import ast

    roots = Path(__file__).parents[2].glob("*/src")
    offenders = []
    for root in roots:
        for path in root.rglob("*.py"):
            if "testing" in path.relative_to(root).parts[1:2]:
                continue  # the test kit itself
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = []
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                if any(n.startswith("aworld_rl_core.testing") for n in names):
                    offenders.append(f"{path.relative_to(root.parent.parent)}:{node.lineno}")
    assert offenders == []


@pytest.mark.parametrize("arch", ["qwen2", "qwen3"])
def test_a_tiny_window_limits_every_layer_but_the_last_to_recent_tokens(tok, arch):
    from aworld_rl_core.models import TinySize, parse_tiny

    arch_, size = parse_tiny(f"{arch}:layers=3,window=4")
    assert size == TinySize(hidden=32, layers=3, window=4)
    assert size.label == "hidden32-layers3-window4"
    assert TinySize(hidden=64).label == "hidden64-layers2"  # no window: names as before
    model = tiny_causal_lm(tok, arch=arch_, size=size)
    model.config._attn_implementation = "eager"
    out = model(torch.arange(100, 112)[None], output_attentions=True)
    distance = torch.arange(12)[:, None] - torch.arange(12)[None, :]  # query i, key j: i - j
    for layer in (0, 1):
        weights = out.attentions[layer][0]  # heads x queries x keys
        assert torch.all(weights[:, (distance >= 4) | (distance < 0)] == 0)
        assert torch.all(weights[:, (distance >= 0) & (distance < 4)] > 0)
    assert torch.all(out.attentions[2][0][:, distance >= 0] > 0)  # the last layer: everything


def test_the_servable_tiny_qwen3_has_heads_vllm_serves_on_cpu(tmp_path, monkeypatch):
    from aworld_rl_core.models import TinySize, parse_tiny
    from aworld_rl_core.models.tiny import SERVABLE_QWEN3, VLLM_CPU_HEAD_SIZES

    monkeypatch.setenv("AWORLD_RL_HOME", str(tmp_path))
    assert SERVABLE_QWEN3 == "tiny:qwen3:hidden=128,heads=2,positions=16384"
    _, size = parse_tiny(SERVABLE_QWEN3[len("tiny:") :])
    assert size == TinySize(hidden=128, heads=2, positions=16384) and size.head_size == 64
    model, _ = load_model_and_tokenizer(ModelConfig(name_or_path=SERVABLE_QWEN3))
    config = model.config
    assert (config.num_attention_heads, config.num_key_value_heads, config.head_dim) == (2, 2, 64)
    assert config.head_dim in VLLM_CPU_HEAD_SIZES
    assert config.max_position_embeddings == 16384
    assert tiny_model_dir(SERVABLE_QWEN3[len("tiny:") :]).name == (
        "qwen3-hidden128-layers2-heads2-positions16384-seed0"
    )
    # an explicit head width (Qwen3 only) and the default's unchanged head size of 8
    assert parse_tiny("qwen3:hidden=32,head_dim=32")[1].head_size == 32
    assert parse_tiny("qwen3")[1].head_size == 8
    with pytest.raises(ValueError, match="Qwen2's head width is hidden / heads"):
        load_model_and_tokenizer(ModelConfig(name_or_path="tiny:qwen2:hidden=64,head_dim=32"))


@pytest.mark.parametrize("text", ["", "Let me add."])
def test_string_and_list_content_render_the_same_prompt(tok, text):
    """vLLM hands string content to a template that takes lists as ``[{type: text}]``: an
    assistant tool-call turn with empty content must render no extra newline either way."""
    call = {"type": "function", "function": {"name": "add", "arguments": {"a": 1}}}

    def conversation(content):
        return [
            {"role": "user", "content": [{"type": "text", "text": "1+1?"}]},
            {"role": "assistant", "content": content, "tool_calls": [call]},
            {"role": "tool", "content": [{"type": "text", "text": "2"}]},
        ]

    as_string = tok.apply_chat_template(conversation(text), tools=TOOLS, tokenize=False)
    as_list = tok.apply_chat_template(
        conversation([{"type": "text", "text": text}]), tools=TOOLS, tokenize=False
    )
    assert as_string == as_list
    expected_open = "<|im_start|>assistant\n" + (f"{text}\n" if text else "") + "<tool_call>"
    assert expected_open in as_string
