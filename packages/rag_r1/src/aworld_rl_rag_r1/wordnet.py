"""A real offline corpus: WordNet 3.0's people and places (Debian's ``wordnet-base``).

The recipe (``python -m aworld_rl_rag_r1.wordnet OUT_DIR [--limit N]``):

1. read ``data.noun`` of the WordNet database (``/usr/share/wordnet`` after
   ``apt-get install wordnet-base``; ``--wordnet-dir`` for another place);
2. keep the noun synsets of the lexicographer files ``noun.person`` (18) and ``noun.location``
   (15): 14,296 synsets;
3. one document per synset: ``id`` = ``wn:n<offset>``, ``title`` = its first lemma (``_`` as
   spaces), ``text`` = ``"<lemmas>: <gloss>. <examples>. A kind of <hypernyms>."`` (``an
   instance of`` for instance hypernyms such as the writer above Mark Twain);
4. order the documents by the SHA-1 of their id (a fixed shuffle, so the first N are a sample
   of both files) and keep the first ``--limit`` (default: all);
5. every ``--every``-th document (default 10) gives a question: ``"Who or what is described as:
   <gloss>?"``, answered by the synset's lemmas, with that document as its gold passage.

Writes ``corpus.jsonl`` (``{id, title, text}``: index it with ``rag_r1.build-index``) and
``questions.jsonl`` (``{id, question, golden_answers, gold_docs}``: the ``synthetic`` format of
``rag_r1.eval``). The gloss is in the gold passage, so a good encoder finds it; the other
glosses of the slice (7,000 people and places with similar wording) make it hard for a weak one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

WORDNET_DIR = "/usr/share/wordnet"
LEXFILES = {"15": "noun.location", "18": "noun.person"}
_QUOTED = re.compile(r'"([^"]*)"')


@dataclass(frozen=True)
class Synset:
    offset: str
    lexfile: str
    lemmas: tuple[str, ...]
    hypernyms: tuple[str, ...]  # offsets of '@' pointers
    instance_of: tuple[str, ...]  # offsets of '@i' pointers
    gloss: str
    examples: tuple[str, ...]


def parse_line(line: str) -> Synset | None:
    """One ``data.noun`` line (see ``wndb(5WN)``); None for the licence header."""
    if line.startswith("  ") or "|" not in line:
        return None
    head, _, gloss = line.partition(" | ")
    fields = head.split()
    offset, lexfile, count = fields[0], fields[1], int(fields[3], 16)
    lemmas = tuple(fields[4 + 2 * i].replace("_", " ") for i in range(count))
    at = 4 + 2 * count
    pointers = int(fields[at])
    hypernyms, instances = [], []
    for i in range(pointers):
        symbol, target, pos = fields[at + 1 + 4 * i : at + 4 + 4 * i]
        if pos == "n" and symbol == "@":
            hypernyms.append(target)
        elif pos == "n" and symbol == "@i":
            instances.append(target)
    gloss = gloss.strip()
    examples = tuple(_QUOTED.findall(gloss))
    definition = _QUOTED.sub("", gloss).strip().strip(";").strip()
    return Synset(offset, lexfile, lemmas, tuple(hypernyms), tuple(instances), definition, examples)


def read_synsets(wordnet_dir: str | Path = WORDNET_DIR) -> dict[str, Synset]:
    """Every noun synset of the database, by offset."""
    path = Path(wordnet_dir) / "data.noun"
    if not path.is_file():
        raise FileNotFoundError(
            f"'{path}' does not exist: install WordNet 3.0 (`apt-get install wordnet-base`) or "
            "pass --wordnet-dir"
        )
    out: dict[str, Synset] = {}
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            synset = parse_line(line)
            if synset is not None:
                out[synset.offset] = synset
    return out


def document(synset: Synset, synsets: dict[str, Synset]) -> dict[str, str]:
    """The ``{id, title, text}`` document of one synset."""

    def names(offsets: tuple[str, ...]) -> str:
        return ", ".join(synsets[o].lemmas[0] for o in offsets if o in synsets)

    parts = [f"{', '.join(synset.lemmas)}: {synset.gloss}."]
    if synset.examples:
        parts.append(" ".join(f"{e.strip()}." for e in synset.examples))
    if synset.instance_of:
        parts.append(f"An instance of {names(synset.instance_of)}.")
    if synset.hypernyms:
        parts.append(f"A kind of {names(synset.hypernyms)}.")
    return {"id": f"wn:n{synset.offset}", "title": synset.lemmas[0], "text": " ".join(parts)}


def question(synset: Synset) -> dict[str, object]:
    """The question whose gold passage is the synset's document."""
    return {
        "id": f"wnq:n{synset.offset}",
        "question": f"Who or what is described as: {synset.gloss}?",
        "golden_answers": list(synset.lemmas),
        "gold_docs": [f"wn:n{synset.offset}"],
    }


def selected(synsets: dict[str, Synset], limit: int | None = None) -> list[Synset]:
    """People and places in the fixed shuffled order, the first ``limit`` (None: all)."""
    kept = [s for s in synsets.values() if s.lexfile in LEXFILES and s.gloss]
    kept.sort(key=lambda s: hashlib.sha1(s.offset.encode()).hexdigest())
    from aworld_rl_rag_r1.qa import first

    return first(kept, limit)


def build(
    out_dir: str | Path,
    *,
    limit: int | None = None,
    every: int = 10,
    wordnet_dir: str | Path = WORDNET_DIR,
) -> tuple[Path, Path]:
    """Write ``corpus.jsonl`` and ``questions.jsonl`` (see the module docstring)."""
    if every < 1:
        raise ValueError(f"--every must be >= 1, got {every}")
    synsets = read_synsets(wordnet_dir)
    chosen = selected(synsets, limit)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    corpus, questions = out / "corpus.jsonl", out / "questions.jsonl"
    with corpus.open("w", encoding="utf-8") as docs, questions.open("w", encoding="utf-8") as qs:
        for i, synset in enumerate(chosen):
            docs.write(json.dumps(document(synset, synsets), ensure_ascii=False) + "\n")
            if i % every == 0:
                qs.write(json.dumps(question(synset), ensure_ascii=False) + "\n")
    return corpus, questions


def iter_questions(path: str | Path) -> Iterator[dict[str, object]]:
    with Path(path).open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", help="where corpus.jsonl and questions.jsonl go")
    parser.add_argument("--limit", type=int, default=None, help="first N documents (default: all)")
    parser.add_argument("--every", type=int, default=10, help="a question every N documents")
    parser.add_argument("--wordnet-dir", default=WORDNET_DIR, help="WordNet's dict directory")
    args = parser.parse_args(argv)
    corpus, questions = build(
        args.out_dir, limit=args.limit, every=args.every, wordnet_dir=args.wordnet_dir
    )
    n_docs = sum(1 for _ in corpus.open(encoding="utf-8"))
    n_questions = sum(1 for _ in questions.open(encoding="utf-8"))
    print(f"{corpus}: {n_docs} documents\n{questions}: {n_questions} questions")


if __name__ == "__main__":
    main()
