"""The graph as an image: one column per API class, edges coloured by how they were found."""

from __future__ import annotations

from pathlib import Path

from aworld_rl_funreason_mt.graph import METHODS, ToolGraph

COLORS = {"name_type": "tab:blue", "probe": "tab:red", "llm": "tab:green"}


def draw_graph(graph: ToolGraph, path: str | Path, *, title: str = "") -> Path | None:
    """Write a PNG (None when matplotlib is missing). Hard edges are solid, soft ones dashed."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    classes = sorted(set(graph.tools.values()))
    columns = {c: sorted(t for t, k in graph.tools.items() if k == c) for c in classes}
    height = max(len(v) for v in columns.values())
    pos = {
        t: (x * 4.0, height - y) for x, c in enumerate(classes) for y, t in enumerate(columns[c])
    }
    fig, ax = plt.subplots(figsize=(4 + 3.2 * len(classes), 2 + 0.32 * height))
    for edge in graph.edges:
        (x0, y0), (x1, y1) = pos[edge.source], pos[edge.target]
        ax.annotate(
            "",
            xy=(x1, y1),
            xytext=(x0, y0),
            arrowprops={
                "arrowstyle": "->",
                "color": COLORS[edge.method],
                "linestyle": "-" if edge.hard else "--",
                "alpha": 0.7 if edge.hard else 0.35,
                "connectionstyle": "arc3,rad=0.35",
                "lw": 0.8,
            },
        )
    for tool, (x, y) in pos.items():
        ax.text(
            x,
            y,
            tool,
            ha="center",
            va="center",
            fontsize=6.5,
            bbox={"boxstyle": "round", "fc": "white", "ec": "0.6", "lw": 0.5},
        )
    for x, cls in enumerate(classes):
        ax.text(x * 4.0, height + 1.2, cls, ha="center", fontsize=9, weight="bold")
    for method in METHODS:
        ax.plot([], [], color=COLORS[method], label=method.replace("_", "/"))
    ax.legend(loc="lower right", fontsize=7, title="solid: prerequisite, dashed: soft")
    ax.set_xlim(-2.5, 4.0 * (len(classes) - 1) + 2.5)
    ax.set_ylim(-0.5, height + 2)
    ax.axis("off")
    if title:
        ax.set_title(title)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
