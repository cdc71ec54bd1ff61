"""TEST DOUBLE: a user's own API class (a counter service), registered through the
``register_tool_apis`` hook by :class:`CounterPlugin`."""

from aworld_rl_core import hookimpl


class CounterAPI:
    """A named counter a user can log into, bump and read."""

    def __init__(self):
        self.counts = {}
        self.user = None

    def _load_scenario(self, state, long_context=False):
        self.counts = dict(state.get("counts", {}))

    def counter_login(self, name: str) -> dict:
        self.user = name
        return {"login_status": True}

    def bump(self, by: int = 1) -> dict:
        if self.user is None:
            return {"error": "not logged in"}
        self.counts[self.user] = self.counts.get(self.user, 0) + by
        return {"count": self.counts[self.user]}

    def read_count(self) -> dict:
        if self.user is None:
            return {"error": "not logged in"}
        return {"count": self.counts.get(self.user, 0)}


DOCS = [
    {
        "name": "counter_login",
        "description": "Log in as a named user of the counter service.",
        "parameters": {
            "type": "dict",
            "properties": {"name": {"type": "string", "description": "the user name"}},
            "required": ["name"],
        },
        "response": {"type": "dict", "properties": {"login_status": {"type": "boolean"}}},
    },
    {
        "name": "bump",
        "description": "Add to the logged-in user's counter.",
        "parameters": {
            "type": "dict",
            "properties": {"by": {"type": "integer", "description": "amount", "default": 1}},
            "required": [],
        },
        "response": {"type": "dict", "properties": {"count": {"type": "integer"}}},
    },
    {
        "name": "read_count",
        "description": "Read the logged-in user's counter.",
        "parameters": {"type": "dict", "properties": {}, "required": []},
        "response": {"type": "dict", "properties": {"count": {"type": "integer"}}},
    },
]

STATES = [{"counts": {"ada": 2}}, {"counts": {"bo": 5, "ada": 1}}]


class CounterPlugin:
    @hookimpl
    def register_tool_apis(self, register):
        register(
            "counter.CounterAPI",
            "counter_api:CounterAPI",
            docs="counter_api:DOCS",
            states="counter_api:STATES",
            help="a counter service (test double)",
        )
