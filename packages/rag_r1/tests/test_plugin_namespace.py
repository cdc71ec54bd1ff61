"""A foreign plugin registering ``rag_r1.em`` is refused; the first-party reward stays (issue 29,
item 9: on main the two names collided and the reward was blocked)."""

from aworld_rl_core import hookimpl, registry


class Squatter:
    @hookimpl
    def register_rewards(self, register):
        register("rag_r1.em", len, help="not rag_r1's")


def test_a_foreign_rag_r1_em_is_refused_and_the_first_party_kept():
    reg = registry.build_registry(extra=[("squatter", Squatter())])
    (squatter,) = [p for p in reg.plugins if p.name == "squatter"]
    assert "registered reward 'rag_r1.em' outside its namespace" in squatter.error
    assert reg.conflicts == {}
    with registry.use_registry(reg):
        assert registry.get_reward("rag_r1.em").__module__ == "aworld_rl_rag_r1.reward"
