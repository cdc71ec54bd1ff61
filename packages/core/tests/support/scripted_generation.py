"""A scripted stand-in for model generation in rollout tests."""

from __future__ import annotations

from aworld_rl_core.engine import ChatCodec


class ScriptedGenerator:
    """Test double for a model: answers turn k of every episode with ``turns[k]`` (text).

    The turn is read off the prompt: the number of assistant headers in it, minus one.
    """

    def __init__(self, codec: ChatCodec, turns: list[str], *, close: bool = True) -> None:
        tok = codec.tokenizer
        eos = [codec.eos_id] if close else []
        self.ids = [tok.encode(text, add_special_tokens=False) + eos for text in turns]
        self.header = tok.encode("<|im_start|>assistant", add_special_tokens=False)
        self.calls: list[tuple[int, int]] = []  # (batch size, max_new_tokens)

    def __call__(self, prompts, max_new_tokens, **options):
        self.calls.append((len(prompts), max_new_tokens))
        out = []
        for prompt in prompts:
            n = len(self.header)
            turn = sum(list(prompt[i : i + n]) == self.header for i in range(len(prompt))) - 1
            out.append(([*self.ids[turn], 7, 7, 7], None))  # junk after an eos is cut
        return out
