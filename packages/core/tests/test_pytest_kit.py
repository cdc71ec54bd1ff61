"""The pytest plugin's markers and fixtures, exercised through pytester."""

import pytest

pytest_plugins = ["pytester"]


def test_markers_skip_without_flags(pytester: pytest.Pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.slow
        def test_slow(): pass

        @pytest.mark.network
        def test_net(): pass

        @pytest.mark.gpu
        def test_gpu(): pass

        def test_plain(): pass
        """
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1, skipped=3)
    result = pytester.runpytest_subprocess("--runslow", "--runnetwork", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, skipped=1)  # no CUDA here: gpu stays skipped
    monkeypatch.setenv("CI", "true")
    pytester.runpytest_subprocess("--runslow", "--runnetwork").assert_outcomes(passed=2, skipped=2)


def test_tiny_fixtures(tiny_tokenizer, tiny_lm):
    ids = tiny_tokenizer("<think>x</think>")["input_ids"]
    assert ids[0] == 151667 and ids[-1] == 151668  # <think> and </think> are single tokens
    assert tiny_lm.config.vocab_size >= len(tiny_tokenizer)
    assert sum(p.numel() for p in tiny_lm.parameters()) < 20_000_000
