import json

import pytest

from aworld_rl_v2p.loading import UntrainedHeadError, load_v2p, save_v2p


def _keys(folder):
    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        return set(f.keys())


@pytest.fixture(scope="module")
def hub_layout_dir(tmp_path_factory):
    """core's tiny Qwen2.5-VL saved by transformers as Qwen2.5-VL (the Hub layout)."""
    from aworld_rl_core.models import tiny_vl_model

    vl = tiny_vl_model(seed=1)
    folder = tmp_path_factory.mktemp("hub")
    vl.model.save_pretrained(folder)
    vl.tokenizer.save_pretrained(folder)
    vl.image_processor.save_pretrained(folder)
    return folder, vl.model


def test_hub_layout_checkpoint_loads_every_weight(hub_layout_dir):
    import torch

    folder, base = hub_layout_dir
    keys = _keys(folder)
    assert "model.layers.0.mlp.up_proj.weight" in keys and "visual.merger.mlp.0.weight" in keys
    assert not any("language_model" in k for k in keys)  # really the Hub layout
    model, tokenizer, _ = load_v2p(str(folder), device="cpu", dtype="float32")
    ours = model.state_dict()
    theirs = base.state_dict()
    assert len(theirs) > 50
    # every backbone tensor is the checkpoint's, none re-initialised; the embedding matrices
    # (tied) grew by the three pointer-token rows, their other rows are the checkpoint's
    changed = [k for k, v in theirs.items() if not torch.equal(ours[k][: len(v)], v)]
    assert changed == []
    grown = {k for k, v in theirs.items() if ours[k].shape != v.shape}
    assert grown == {"model.language_model.embed_tokens.weight", "lm_head.weight"}
    assert ours["lm_head.weight"].shape[0] == len(tokenizer)
    assert model.config.pointer_pad_token_id == tokenizer.convert_tokens_to_ids("<|pointer_pad|>")
    assert model.config.pointer_head_trained is False  # the plain checkpoint had no head
    assert not model.training


def test_plain_checkpoint_is_refused_where_a_trained_head_is_required(hub_layout_dir):
    folder, _ = hub_layout_dir
    with pytest.raises(UntrainedHeadError, match="allow_untrained_head=true"):
        load_v2p(str(folder), device="cpu", require_trained_head=True)


def test_a_fresh_head_from_head_seed_is_the_same_in_every_process(hub_layout_dir):
    """Eval and click load a plain checkpoint (fresh head, new pointer-token rows) with
    ``head_seed``: whatever the global RNG (another process, a resumed run), every weight is
    the same, and the caller's RNG is left as it was."""
    import torch

    from aworld_rl_v2p.modeling import HEAD_PREFIX

    folder, _ = hub_layout_dir

    def weights(global_seed, head_seed):
        torch.manual_seed(global_seed)
        model, _, _ = load_v2p(str(folder), device="cpu", dtype="float32", head_seed=head_seed)
        return model.state_dict()

    a, b = weights(1, 0), weights(2, 0)
    assert all(torch.equal(a[k], b[k]) for k in a)
    c = weights(2, None)  # from the global RNG: another head
    head = [k for k in a if k.startswith(HEAD_PREFIX)]
    assert head and not all(torch.equal(a[k], c[k]) for k in head)
    torch.manual_seed(3)
    expected = torch.rand(1)
    torch.manual_seed(3)
    load_v2p(str(folder), device="cpu", dtype="float32", head_seed=0)
    assert torch.equal(torch.rand(1), expected)


def test_missing_backbone_weight_is_an_error(hub_layout_dir, tmp_path):
    from safetensors.torch import load_file, save_file

    folder, _ = hub_layout_dir
    for f in folder.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    weights = load_file(str(folder / "model.safetensors"))
    del weights["model.layers.1.self_attn.q_proj.weight"]
    save_file(weights, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ValueError, match=r"1 weight\(s\) missing.*layers.1.self_attn.q_proj"):
        load_v2p(str(tmp_path), device="cpu")


def test_saves_are_in_the_released_layout_and_load_back_equal(tiny_v2p, tmp_path):
    import torch

    model, tokenizer, image_processor = tiny_v2p
    folder = save_v2p(model, tokenizer, image_processor, tmp_path / "v2p")
    keys = _keys(folder)
    # the released code (transformers 4.51's Qwen2.5-VL + the head) reads exactly these names
    assert (
        "model.layers.0.self_attn.q_proj.weight" in keys
        and "visual.blocks.0.attn.qkv.weight" in keys
    )
    assert "multi_patch_pointer_head.projection_enc.0.weight" in keys
    assert not any(
        k.startswith("model.language_model") or k.startswith("model.visual") for k in keys
    )
    loaded, _, _ = load_v2p(str(folder), device="cpu", dtype="float32")
    ours = loaded.state_dict()
    assert all(torch.equal(ours[k], v) for k, v in model.state_dict().items())
    assert json.loads((folder / "config.json").read_text())["pointer_head_trained"] is False


def test_a_released_checkpoint_with_a_head_counts_as_trained(tiny_v2p, tmp_path):
    model, tokenizer, image_processor = tiny_v2p
    folder = save_v2p(model, tokenizer, image_processor, tmp_path / "released")
    config = json.loads((folder / "config.json").read_text())
    for key in ("pointer_head_trained", "v2p_token_ids"):  # the released configs have neither
        config.pop(key)
    (folder / "config.json").write_text(json.dumps(config))
    loaded, _, _ = load_v2p(str(folder), device="cpu", require_trained_head=True)
    from aworld_rl_v2p.prompts import SPECIAL_TOKENS

    ids = sorted(tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS)
    assert loaded.config.v2p_token_ids == ids  # a warm-up from it finds the token rows


def test_tiny_model_is_core_tiny_qwen25_vl_with_pointer_tokens_in_the_dtype_asked():
    import torch

    from aworld_rl_core.models import tiny_vl_model

    model, tokenizer, _ = load_v2p("tiny:qwen2_5_vl", dtype="bfloat16", device="cpu")
    base = dict(tiny_vl_model().model.named_parameters())
    assert model.dtype == torch.bfloat16
    assert model.config.pointer_pad_token_id == tokenizer.convert_tokens_to_ids("<|pointer_pad|>")
    ours = dict(model.named_parameters())
    name = "model.language_model.layers.0.mlp.up_proj.weight"
    assert torch.equal(ours[name], base[name].to(torch.bfloat16))  # core's fixed tiny weights
    with pytest.raises(UntrainedHeadError):
        load_v2p("tiny:qwen2_5_vl", require_trained_head=True)


def test_auto_device_and_dtype_on_this_machine():
    import torch

    from aworld_rl_core.models import resolve_device

    model, _, _ = load_v2p("tiny:qwen2_5_vl")
    expected = ("cuda", torch.bfloat16) if torch.cuda.is_available() else ("cpu", torch.float32)
    assert (model.device.type, model.dtype) == expected
    assert resolve_device("cpu", "auto") == ("cpu", "float32")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            resolve_device("cuda")
    with pytest.raises(ValueError, match="unknown dtype"):
        resolve_device("cpu", "int8")


def test_not_a_model_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_v2p(str(tmp_path))
    with pytest.raises(ValueError, match="unknown tiny model"):
        load_v2p("tiny:qwen3")
