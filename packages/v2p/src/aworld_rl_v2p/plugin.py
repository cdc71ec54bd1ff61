"""V2P's registrations (lazy targets; importing this module imports nothing heavy)."""

from aworld_rl_core import hookimpl

_R = "aworld_rl_v2p.recipes"


@hookimpl
def register_recipes(register):
    register(
        "v2p.generate",
        config=f"{_R}.generate:GenerateConfig",
        run=f"{_R}.generate:run",
        presets="aworld_rl_v2p:configs/generate",
        help="Render the synthetic GUI grounding dataset with headless chromium (DOM boxes).",
    )
    register(
        "v2p.eval",
        config=f"{_R}.evaluate:EvalConfig",
        run=f"{_R}.evaluate:run",
        presets="aworld_rl_v2p:configs/eval",
        help="ScreenSpot / -v2 / -Pro accuracy of a V2P model under the pinned protocol.",
    )
    register(
        "v2p.click",
        config=f"{_R}.click:ClickConfig",
        run=f"{_R}.click:run",
        presets="aworld_rl_v2p:configs/click",
        help="Ground an instruction on the screen and click it with pyautogui (or --dry-run).",
    )
    register(
        "v2p.train",
        config=f"{_R}.train:TrainConfig",
        run=f"{_R}.train:run",
        presets="aworld_rl_v2p:configs/train",
        help="V2P's warm-up / main stage through hf-sft (torchrun + ZeRO-3 on several GPUs).",
    )


@hookimpl
def register_losses(register):
    register(
        "v2p.pointer",
        "aworld_rl_v2p.loss:compute_loss",
        kind="model",
        full_logits=False,  # the LM term computes vocabulary logits at supervised positions
        help="V2P's model-level loss: lm_weight x LM + pointer_weight x (KL(gauss labels || "
        "head softmax) + out-of-box mass); options: label_style, sigma_factor, suppression, "
        "suppression_region, lm_weight, pointer_weight.",
    )


@hookimpl
def register_datasets(register):
    register(
        "v2p.grounding",
        "aworld_rl_v2p.data:read",
        help="Grounding samples from local files (kind=aguvis|screenspot|screenspot_v2|"
        "screenspot_pro, path=...).",
    )


@hookimpl
def register_smoke_parts(register):
    register(
        "v2p.warmup",
        "aworld_rl_v2p.smoke:warmup",
        help="V2P's warm-up stage through hf-sft on the packaged sample: row mask on the "
        "parameter's device, only the new rows move, the pointer loss falls, a point is read out",
    )
