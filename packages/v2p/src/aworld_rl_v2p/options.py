"""The pointer loss's options: a light module (no torch), shared by ``loss`` and ``v2p.train``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from aworld_rl_core.config import option

LabelStyle = Literal["all", "center", "gauss"]


@dataclass(frozen=True, kw_only=True)
class PointerLossOptions:
    """``v2p.pointer``'s options (``trainer.loss_options``, typed by ``v2p.train``)."""

    label_style: LabelStyle = option("gauss", help="patch labels: all, center or gauss")
    sigma_factor: float = option(
        1.0, help="sigma = box size / f (1: released scripts; 4.1325: edges near 2 sigma)", gt=0
    )
    suppression: bool = option(True, help="add the out-of-box attention mass (V2P)")
    suppression_region: Literal["box", "label"] = option(
        "box",
        help="suppress outside the patches the box touches, or outside the label's support "
        "(the released code; differs only for center labels)",
    )
    lm_weight: float | None = option(
        None,
        help="LM loss weight; default (null): none in the warm-up (the paper's stage 1 trains "
        "on the pointer loss only), 1.0 in the main stage; <= 0: not computed",
    )
    pointer_weight: float = option(1.0, help="pointer loss weight")
