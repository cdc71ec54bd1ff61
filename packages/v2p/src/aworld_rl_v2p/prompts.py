"""The pinned grounding prompt: special tokens, system message and the rendered conversation.

The format is GUI-Actor's, which V2P keeps: the assistant answers
``pyautogui.click(<|pointer_start|><|pointer_pad|><|pointer_end|>)`` after ``<|recipient|>os``,
and the turn ends with ``<|diff_marker|>``. The head reads the hidden state at
``<|pointer_pad|>``. At evaluation the whole answer is given as the prompt (one prefill, no
decoding), so the prompt, not the sampler, fixes what the model sees.
"""

from __future__ import annotations

import re

POINTER_START = "<|pointer_start|>"
POINTER_PAD = "<|pointer_pad|>"
POINTER_END = "<|pointer_end|>"
RECIPIENT = "<|recipient|>"
DIFF_MARKER = "<|diff_marker|>"
SPECIAL_TOKENS = (RECIPIENT, DIFF_MARKER, POINTER_START, POINTER_END, POINTER_PAD)
IMAGE = "<|vision_start|><|image_pad|><|vision_end|>"
POINTER = POINTER_START + POINTER_PAD + POINTER_END
CLICK_ACTION = f"pyautogui.click({POINTER})"

SYSTEM_PROMPT = (
    "You are a GUI agent. Given a screenshot of the current GUI and a human instruction, your "
    "task is to locate the screen element that corresponds to the instruction. You should output "
    "a PyAutoGUI action that performs a click on the correct position. To indicate the click "
    "location, we will use some special tokens, which is used to refer to a visual patch later. "
    "For example, you can output: pyautogui.click(<your_special_token_here>)."
)

# GUI-Actor's conversation format as a chat template, so training (core's VisionCollator
# renders records with the tokenizer's template) sees exactly the tokens ``render`` gives at
# evaluation; image parts render as ``IMAGE``; the assistant's action sits inside generation
# markers (assistant-only labels) and ends with ``<|diff_marker|>`` (GUI-Actor's end of turn)
CHAT_TEMPLATE = (
    "{%- macro content(c) -%}{%- if c is string -%}{{- c -}}{%- else -%}"
    "{%- for part in c -%}{%- if part.type == 'text' -%}{{- part.text -}}"
    "{%- elif part.type in ['image', 'image_url'] -%}{{- '" + IMAGE + "' -}}"
    "{%- endif -%}{%- endfor -%}{%- endif -%}{%- endmacro -%}"
    "{%- for message in messages -%}{%- if message.role == 'assistant' -%}"
    "{{- '<|im_start|>assistant" + RECIPIENT + "os\n' -}}"
    "{%- generation -%}{{- content(message.content) -}}{{- '" + DIFF_MARKER + "' -}}"
    "{%- endgeneration -%}{%- else -%}"
    "{{- '<|im_start|>' + message.role + '\n' + content(message.content) + '<|im_end|>\n' -}}"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant" + RECIPIENT + "os\n' -}}"
    "{%- endif -%}"
)

_COORDINATES = re.compile(r"x=([0-9.]+),\s*y=([0-9.]+)")
_EDGE = 1e-3  # coordinates this close to 0 or 1 are pulled inside (the released data rule)


def render(
    instruction: str, *, system: str = SYSTEM_PROMPT, answer: str | None = CLICK_ACTION
) -> str:
    """The full text: system, user (image + instruction), then the assistant's action.

    ``answer=CLICK_ACTION`` ends the prompt right after the action (evaluation: one prefill);
    ``answer=None`` stops at the assistant header.
    """
    text = (
        f"<|im_start|>system\n{system}<|im_end|>\n"
        f"<|im_start|>user\n{IMAGE}{instruction}<|im_end|>\n"
        f"<|im_start|>assistant{RECIPIENT}os\n"
    )
    return text if answer is None else text + answer


def to_pointer_action(action: str) -> tuple[str, list[tuple[float, float]]]:
    """Replace each ``x=..., y=...`` in an action with the pointer tokens; return the points."""
    points = []
    for match in _COORDINATES.finditer(action):
        x, y = (min(max(float(v), _EDGE), 1 - _EDGE) for v in match.groups())
        points.append((x, y))
    return _COORDINATES.sub(POINTER, action), points
