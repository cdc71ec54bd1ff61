"""Curriculum stages, the plateau rule and the resumable state."""

import pytest

from aworld_rl_core.config import from_dict
from aworld_rl_core.errors import ConfigError
from aworld_rl_envtuning.curriculum import (
    CurriculumState,
    StageConfig,
    TransitionConfig,
    accuracy_plateaued,
    grad_norm_stable,
    paper_stages,
    plateau,
)


def test_paper_stages_match_the_paper():
    s1, s2, s3, s4 = paper_stages()
    assert (s1.data, s1.reward, s1.augmentation, s1.max_response_tokens, s1.batch_size) == (
        "easy",
        "format",
        False,  # the paper adds the augmented feedback in stage 2
        10_000,
        16,
    )
    assert (s2.data, s2.reward, s2.augmentation, s2.max_response_tokens, s2.batch_size) == (
        "base",
        "progress",
        True,
        10_000,
        32,
    )
    assert (s3.data, s3.reward, s3.augmentation, s3.prompt_style, s3.max_response_tokens) == (
        "all",
        "progress",
        True,
        "resourceful",
        24_576,
    )
    assert (s4.data, s4.reward, s4.augmentation, s4.prompt_style) == (
        "all",
        "progress",
        False,
        "resourceful",
    )
    assert all(s.epochs == 20 for s in (s1, s2, s3, s4))
    assert [s.feedback for s in (s1, s2, s3, s4)] == [
        "BFCL's errors",
        "hints",
        "hints",
        "BFCL's errors",
    ]
    # verl's drop_last loader: rows // batch steps per epoch (not ceil(epochs x rows / batch))
    assert s3.total_steps(400) == 240  # 400 // 32 = 12 per epoch x 20
    assert s1.total_steps(75) == 80  # 75 // 16 = 4 per epoch x 20


def test_plateau_needs_no_gain_over_patience():
    assert not accuracy_plateaued([0.1, 0.2, 0.3], patience=3, min_delta=0.01)  # too short
    assert accuracy_plateaued([0.1, 0.3, 0.3, 0.305, 0.29], patience=3, min_delta=0.01)
    assert not accuracy_plateaued([0.1, 0.3, 0.3, 0.32, 0.29], patience=3, min_delta=0.01)


def test_grad_norm_stability():
    assert grad_norm_stable([5.0, 1.0, 1.1, 0.9], window=3, max_cv=0.2)
    assert not grad_norm_stable([1.0, 1.0, 9.0], window=3, max_cv=0.5)  # exploding
    assert not grad_norm_stable([1.0, float("nan"), 1.0], window=3, max_cv=0.5)
    assert not grad_norm_stable([1.0], window=3, max_cv=0.5)


def test_plateau_stop_rule_reads_the_in_run_history():
    flat = [{"val/reward": a, "grad_norm": 1.0} for a in (0.2, 0.4, 0.4, 0.4, 0.4)]
    options = {"patience": 3, "min_delta": 0.01, "grad_window": 3, "max_grad_cv": 0.5}
    assert plateau(flat, **options)
    assert not plateau(flat[:4], **options)  # 0.4 over 0.2 within the last 3
    unstable = [dict(r, grad_norm=g) for r, g in zip(flat, (1, 1, 1, 10, 0.1), strict=True)]
    assert not plateau(unstable, **options)
    assert TransitionConfig(rule="fixed").stop_rule() is None
    ref = TransitionConfig(patience=3, grad_window=3).stop_rule()
    assert ref.target == "aworld_rl_envtuning.curriculum:plateau"
    assert ref.kwargs == {"patience": 3, "min_delta": 0.01, "grad_window": 3, "max_grad_cv": 0.5}


def test_state_keeps_each_stage_start_across_a_resume(tmp_path):
    stage = StageConfig(name="syntax", data="easy", reward="format", augmentation=False)
    state = CurriculumState(model="warm")
    assert CurriculumState.load(tmp_path) is None
    assert state.begin(stage) == {"start": "warm", "feedback": "BFCL's errors"}
    state.save(tmp_path)
    again = CurriculumState.load(tmp_path)
    again.model = "elsewhere"
    assert again.begin(stage)["start"] == "warm"  # begun before: the same KL reference
    again.finish(stage, "ckpt/a", steps=3)
    again.save(tmp_path)
    final = CurriculumState.load(tmp_path)
    assert final.model == "ckpt/a" and final.finished == ["syntax"]
    assert final.stages["syntax"] == {
        "start": "warm",
        "feedback": "BFCL's errors",
        "end": "ckpt/a",
        "steps": 3,
    }


def test_bad_stage_is_a_clear_error():
    with pytest.raises(ValueError, match="reward 'exact'"):
        StageConfig(name="x", reward="exact")
    with pytest.raises(ValueError, match="data must be"):
        StageConfig(name="x", data="hard")
    with pytest.raises(ConfigError, match="manual"):
        from_dict(TransitionConfig, {"rule": "manual"})


def _flat(value, prefix=""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _flat(item, f"{prefix}{key}.")
    else:
        yield prefix[:-1], value


def test_the_readme_table_is_the_paper_settings_the_recipe_defaults_to():
    """The paper's settings live once (paper.yaml); the README's table says the same and the
    recipe's defaults are built from it (no preset repeats them)."""
    from pathlib import Path

    import yaml

    from aworld_rl_core.config import to_dict
    from aworld_rl_envtuning.curriculum import paper_settings
    from aworld_rl_envtuning.recipes.curriculum import CurriculumConfig

    paper = paper_settings()
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Paper settings", 1)[1].split("\n## ", 1)[0]
    table = {}
    stages = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`"):
            table[cells[0].strip("`")] = yaml.safe_load(cells[1])
        elif len(cells) == 9 and cells[0].isdigit():
            stages.append(cells[1:])
    settings = {k: v for k, v in paper.items() if k != "stages"}
    assert table == dict(_flat(settings))
    fields = list(paper["stages"][0])
    rows = [dict(zip(fields, map(yaml.safe_load, row), strict=True)) for row in stages]
    assert rows == paper["stages"]
    defaults = to_dict(CurriculumConfig())
    for key, value in _flat(settings):
        node = defaults
        for part in key.split("."):
            node = node[part]
        assert node == value, key
    assert [dict(s) for s in defaults["stages"]] == paper["stages"]
    presets = Path(__file__).parents[1] / "src" / "aworld_rl_envtuning" / "configs"
    for preset in ("curriculum/paper.yaml", "stage/paper.yaml", "stage/direct-grpo.yaml"):
        text = (presets / preset).read_text(encoding="utf-8")
        assert "kl_coef" not in text and "learning_rate" not in text, preset
