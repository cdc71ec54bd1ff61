"""TEST DOUBLE: a user's own API class (a notes service) and the plugin that registers it through
core's ``register_tool_apis`` hook, for the tool space beyond BFCL's eight classes."""

from aworld_rl_core import hookimpl


class NotesAPI:
    """Notes a logged-in author writes and reads back by id."""

    def __init__(self):
        self.notes = {}
        self.author = None
        self.next_id = 1

    def _load_scenario(self, state, long_context=False):
        self.notes = {int(k): dict(v) for k, v in state.get("notes", {}).items()}
        self.next_id = max(self.notes, default=0) + 1

    def notes_login(self, author: str) -> dict:
        self.author = author
        return {"login_status": True}

    def write_note(self, text: str) -> dict:
        if self.author is None:
            return {"error": "log in first with notes_login"}
        note_id, self.next_id = self.next_id, self.next_id + 1
        self.notes[note_id] = {"author": self.author, "text": text}
        return {"note_id": note_id}

    def read_note(self, note_id: int) -> dict:
        if note_id not in self.notes:
            return {"error": f"note {note_id} not found"}
        return {"text": self.notes[note_id]["text"]}


def _doc(name, description, properties, required, response):
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "dict", "properties": properties, "required": required},
        "response": {"type": "dict", "properties": response},
    }


DOCS = [
    _doc(
        "notes_login",
        "Log in to the notes service as an author.",
        {"author": {"type": "string", "description": "the author's name"}},
        ["author"],
        {"login_status": {"type": "boolean"}},
    ),
    _doc(
        "write_note",
        "Write a note as the logged-in author.",
        {"text": {"type": "string", "description": "the note's text"}},
        ["text"],
        {"note_id": {"type": "integer", "description": "the id of the new note"}},
    ),
    _doc(
        "read_note",
        "Read a note by its id.",
        {"note_id": {"type": "integer", "description": "the note's id"}},
        ["note_id"],
        {"text": {"type": "string"}},
    ),
]
STATES = [{"notes": {}}, {"notes": {"7": {"author": "kim", "text": "hello"}}}]


class NotesPlugin:
    @hookimpl
    def register_tool_apis(self, register):
        register(
            "notes.NotesAPI", "user_api:NotesAPI", docs="user_api:DOCS", states="user_api:STATES"
        )
