"""A CPU ablation that can test the paper's claims: a small trainable CNN backbone with this
package's own action head, labels, loss and readout, on synthetic screens.

Each screen (``make_screens``) is a ``grid x grid`` patch canvas (``px`` pixels a patch)
holding rows of adjacent rectangles ("elements") in colours from a palette with near
duplicates; the instruction names the target's colour (an id; the target's colour is unique
on its screen). The backbone (``Backbone``: four 3x3 convolutions, coordinates as extra input
channels, stride ``px``) gives one feature vector per patch; ``ActionHead`` (the package's,
self-attention over the patches + the query MLP) scores the patches against the instruction's
embedding. Training uses ``loss.pointer_targets`` (labels all / center / gauss with
``sigma_factor``, in-box masks) and ``loss.pointer_loss`` (KL, + suppression); evaluation uses
``readout.predict_points`` and ScreenSpot's point-in-box hit. Everything is seeded: one run
is a deterministic function of (options, seed) on one machine.

``run`` returns top-1 hit rate, the mean attention mass outside the box on the test screens,
and the held-out (validation) confidences and hits for calibration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aworld_rl_v2p.options import LabelStyle

PALETTE = (
    (220, 40, 40),
    (200, 70, 60),  # near the first
    (40, 160, 60),
    (70, 190, 90),  # near the third
    (40, 80, 220),
    (60, 110, 200),  # near the fifth
    (230, 200, 40),
    (160, 60, 200),
    (40, 190, 200),
    (240, 130, 30),
    (120, 120, 120),
    (30, 30, 30),
)


@dataclass(frozen=True)
class Screens:
    images: Any  # (n, 3, H, W) float tensor in [0, 1]
    targets: Any  # (n,) long: the target's colour id (the instruction)
    boxes: list[tuple[float, float, float, float]]  # normalised xyxy of each target


def make_screens(n: int, seed: int, *, grid: int = 12, px: int = 8) -> Screens:
    """``n`` seeded screens of ``grid x grid`` patches of ``px`` pixels."""
    import random

    import torch

    rng = random.Random(seed)
    size = grid * px
    images = torch.empty(n, 3, size, size)
    targets = torch.empty(n, dtype=torch.long)
    boxes = []
    for i in range(n):
        canvas = torch.full((3, size, size), 0.93) + 0.03 * torch.randn(
            3, size, size, generator=torch.Generator().manual_seed(seed * 100003 + i)
        )
        elements = []
        y = rng.randint(1, 6)
        while True:
            h = rng.randint(4, 20)
            if y + h > size - 1:
                break
            x = rng.randint(1, 8)
            while True:
                w = rng.randint(5, 36)
                if x + w > size - 1:
                    break
                elements.append([x, y, x + w, y + h, rng.randrange(len(PALETTE))])
                x += w + rng.randint(1, 5)
            y += h + rng.randint(1, 6)
        target = rng.randrange(len(elements))
        colour = elements[target][4]
        for e in elements:  # the target's colour is unique on its screen
            while e is not elements[target] and e[4] == colour:
                e[4] = rng.randrange(len(PALETTE))
        for x1, y1, x2, y2, c in elements:
            canvas[:, y1:y2, x1:x2] = (
                torch.tensor(PALETTE[c], dtype=torch.float32)[:, None, None] / 255
            )
        x1, y1, x2, y2, c = elements[target]
        images[i] = canvas.clamp(0, 1)
        targets[i] = c
        boxes.append((x1 / size, y1 / size, x2 / size, y2 / size))
    return Screens(images, targets, boxes)


@dataclass(frozen=True)
class AblationOptions:
    label_style: LabelStyle = "gauss"
    sigma_factor: float = 1.0
    suppression: bool = True
    steps: int = 300
    batch_size: int = 32
    lr: float = 2e-3
    d_model: int = 64
    grid: int = 12
    px: int = 8
    train_screens: int = 2000
    val_screens: int = 200
    test_screens: int = 300
    fallback: bool = False
    data_seed: int = 1234
    extra: dict = field(default_factory=dict)


def _backbone(d: int, px: int):
    from torch import nn

    layers: list[Any] = []
    channels = 5  # RGB + x, y coordinates
    stride_left = px
    for width in (32, 48, d):
        stride = 2 if stride_left > 1 else 1
        stride_left //= stride
        layers += [nn.Conv2d(channels, width, 3, stride=stride, padding=1), nn.GELU()]
        channels = width
    layers += [nn.Conv2d(channels, d, 3, padding=1)]
    return nn.Sequential(*layers)


class GroundingNet:
    """Backbone + instruction embedding + the package's ``ActionHead``."""

    def __init__(self, opts: AblationOptions, seed: int) -> None:
        import torch
        from torch import nn

        from aworld_rl_v2p.modeling import ActionHead

        torch.manual_seed(seed)
        self.backbone = _backbone(opts.d_model, opts.px)
        self.instruction = nn.Embedding(len(PALETTE), opts.d_model)
        self.head = ActionHead(opts.d_model, heads=4, dropout=0.0)
        self.modules = nn.ModuleList([self.backbone, self.instruction, self.head])

    def logits(self, images: Any, targets: Any) -> list[Any]:
        import torch

        n, _, h, w = images.shape
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
        coords = torch.stack([xs, ys]).expand(n, 2, h, w)
        feats = self.backbone(torch.cat([images, coords], dim=1))  # (n, d, g, g)
        patches = feats.flatten(2).transpose(1, 2)  # (n, M, d)
        queries = self.instruction(targets)[:, None]  # (n, 1, d)
        return head_logits(self.head, patches, queries)


def head_logits(head: Any, patches: Any, queries: Any) -> Any:
    """``ActionHead.forward`` over a batch: patches (n, M, d), queries (n, N, d) -> (n, N, M);
    the same modules and arithmetic, one call instead of one per sample."""
    mixed, _ = head.self_attention(patches, patches, patches, need_weights=False)
    keys = head.projection_enc(head.layer_norm(patches + head.dropout(mixed)))
    return head.projection_dec(queries) @ keys.transpose(1, 2) / head.d_model**0.5


def run(opts: AblationOptions, seed: int) -> dict[str, Any]:
    """Train one setting with ``seed``; top-1 and out-of-box mass on the test screens, and
    the validation screens' (confidence, hit) pairs."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # deterministic, and no oversubscription on a shared machine
    try:
        return _run(opts, seed)
    finally:
        torch.set_num_threads(threads)


def _run(opts: AblationOptions, seed: int) -> dict[str, Any]:
    import torch

    from aworld_rl_v2p.boxes import point_in_box
    from aworld_rl_v2p.loss import pointer_loss, pointer_targets
    from aworld_rl_v2p.options import PointerLossOptions
    from aworld_rl_v2p.readout import predict_points

    loss_opts = PointerLossOptions(
        label_style=opts.label_style, sigma_factor=opts.sigma_factor, suppression=opts.suppression
    )
    grid = (opts.grid, opts.grid)
    train = make_screens(opts.train_screens, opts.data_seed, grid=opts.grid, px=opts.px)
    val = make_screens(opts.val_screens, opts.data_seed + 1, grid=opts.grid, px=opts.px)
    # targets once per training screen (labels and in-box masks from the package's loss)
    test = make_screens(opts.test_screens, opts.data_seed + 2, grid=opts.grid, px=opts.px)
    targets = [pointer_targets([b], grid, loss_opts, n=1) for b in train.boxes]
    net = GroundingNet(opts, seed)
    optim = torch.optim.Adam(net.modules.parameters(), lr=opts.lr)
    order = torch.Generator().manual_seed(seed)
    for _step in range(opts.steps):
        idx = torch.randint(0, opts.train_screens, (opts.batch_size,), generator=order).tolist()
        logits = net.logits(train.images[idx], train.targets[idx])
        losses = [
            pointer_loss(lg, targets[i][0], targets[i][1], suppression=opts.suppression)[0]
            for lg, i in zip(logits, idx, strict=True)
        ]
        loss = torch.stack(losses).mean()
        optim.zero_grad()
        loss.backward()
        optim.step()

    def score(screens: Screens) -> tuple[list[bool], list[float], list[float]]:
        hits, conf, outside = [], [], []
        with torch.no_grad():
            for start in range(0, len(screens.boxes), 100):
                sl = slice(start, start + 100)
                logits = net.logits(screens.images[sl], screens.targets[sl])
                for lg, box in zip(logits, screens.boxes[sl], strict=True):
                    attn = lg[0].softmax(-1).reshape(grid)
                    point = predict_points(attn.numpy(), fallback=opts.fallback)[0]
                    hits.append(point_in_box((point.x, point.y), box))
                    conf.append(point.confidence)
                    _, in_box = pointer_targets([box], grid, loss_opts, n=1)
                    outside.append(float(attn.flatten()[~in_box[0]].sum()))
        return hits, conf, outside

    test_hits, test_conf, test_out = score(test)
    val_hits, val_conf, _ = score(val) if opts.val_screens else ([], [], [])
    return {
        "top1": sum(test_hits) / len(test_hits),
        "out_of_box_mass": sum(test_out) / len(test_out),
        "test_confidence": test_conf,
        "test_hits": test_hits,
        "val_confidence": val_conf,
        "val_hits": val_hits,
    }
