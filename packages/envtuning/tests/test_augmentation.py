"""The hint layer: default pack coverage on real BFCL errors, lookup rules, pack files."""

import json

import pytest

from aworld_rl_core.tooluse import Call, Dispatcher
from aworld_rl_core.tooluse.bfcl.apis import build_instances
from aworld_rl_envtuning.augmentation import (
    Augmenter,
    Hint,
    HintPack,
    HintPackError,
    load_hint_pack,
    load_hint_packs,
    method_owners,
)

CLASSES = ["GorillaFileSystem", "TravelAPI", "VehicleControlAPI"]


@pytest.fixture
def apis():
    instances = build_instances(CLASSES, {}, long_context=False)
    return Dispatcher(instances), method_owners(instances)


@pytest.mark.parametrize(
    ("name", "arguments", "hint_id"),
    [
        ("cd", {"folder": "a/b"}, "fs-nested-path"),
        ("cd", {"folder": "nowhere"}, "fs-missing-directory"),
        ("cat", {"file_name": "docs/x.txt"}, "fs-path-in-name"),
        ("wc", {"file_name": "ghost.txt"}, "fs-missing-file"),
        (
            "get_flight_cost",
            {
                "travel_from": "San Francisco",
                "travel_to": "LAX",
                "travel_date": "2024-11-15",
                "travel_class": "economy",
            },
            "travel-airport-code",
        ),
        (
            "compute_exchange_rate",
            {"base_currency": "USD", "target_currency": "CHF", "value": 1.0},
            "travel-currency",
        ),
        ("get_outside_temperature_from_weather_com", {}, "vehicle-weather-service"),
        (
            "estimate_distance",
            {"cityA": "San Francisco", "cityB": "Rivermist"},
            "vehicle-zipcode-pair",
        ),
        ("no_such_tool", {}, "any-unknown-function"),
        ("mkdir", {"name": "x"}, "any-bad-arguments"),
    ],
)
def test_default_pack_recognises_real_bfcl_errors(apis, name, arguments, hint_id):
    dispatcher, owners = apis
    (result,) = dispatcher.execute([Call(name, arguments)])
    assert result.is_error, result.text
    hint = load_hint_pack().lookup(owners.get(name), name, result.text)
    assert hint is not None and hint.id == hint_id, (result.text, hint)


def test_hints_never_fire_on_clean_results(apis):
    dispatcher, owners = apis
    augmenter = Augmenter()
    (result,) = dispatcher.execute([Call("list_all_airports", {})])
    assert result.ok
    assert (
        augmenter.render(
            owners["list_all_airports"], "list_all_airports", result.text, failed=False
        )
        == result.text
    )
    assert augmenter.used == []


def test_hints_say_where_to_look_not_the_answer():
    pack = load_hint_pack()
    by_id = {h.id: h for h in pack.hints}
    assert "list_all_airports" in by_id["travel-airport-code"].hint
    assert "get_nearest_airport_by_city" in by_id["travel-airport-code"].hint
    assert "get_outside_temperature_from_google" in by_id["vehicle-weather-service"].hint
    assert "get_zipcode_based_on_city" in by_id["vehicle-zipcode-pair"].hint
    assert "RMB" in by_id["travel-currency"].hint
    assert len(pack.hints) == len(by_id)


def test_lookup_respects_class_and_method():
    hint = Hint(id="h", hint="x", match="boom", api_class="TravelAPI", methods=("book_flight",))
    pack = HintPack("p", (hint,))
    assert pack.lookup("TravelAPI", "book_flight", "it went boom") is hint
    assert pack.lookup("MessageAPI", "book_flight", "boom") is None
    assert pack.lookup("TravelAPI", "cancel_booking", "boom") is None
    assert pack.lookup("TravelAPI", "book_flight", "fine") is None


def test_disabled_augmenter_passes_text_through():
    augmenter = Augmenter(enabled=False)
    text = '{"error": 404}'
    assert (
        augmenter.render(
            "VehicleControlAPI", "get_outside_temperature_from_weather_com", text, failed=True
        )
        == text
    )


def test_pack_files_round_trip_and_layer(tmp_path):
    mined = HintPack(
        "mined",
        (
            Hint(id="fs-missing-file", hint="Use ls().", match="No such"),
            Hint(id="new", hint="y", match="z"),
        ),
    )
    for suffix in (".yaml", ".json"):
        path = mined.write(tmp_path / f"mined{suffix}")
        assert load_hint_pack(path) == mined
    layered = load_hint_packs(["default", tmp_path / "mined.yaml"])
    assert layered.hints[0].hint == "Use ls()."  # the mined pack wins on the same id
    ids = [h.id for h in layered.hints]
    assert ids.count("fs-missing-file") == 1 and "new" in ids and "fs-nested-path" in ids


def test_bad_packs_are_clear_errors(tmp_path):
    with pytest.raises(HintPackError, match="no shipped hint pack 'nope'"):
        load_hint_pack("nope")
    with pytest.raises(HintPackError, match="category"):
        Hint(id="a", hint="b", match="c", category="other")
    with pytest.raises(HintPackError, match="regular expression"):
        Hint(id="a", hint="b", match="(")
    with pytest.raises(HintPackError, match="duplicate"):
        HintPack("p", (Hint(id="a", hint="b", match="c"), Hint(id="a", hint="b", match="c")))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"hints": [{"id": "a", "hint": "b", "match": "c", "klass": "X"}]}))
    with pytest.raises(HintPackError, match="unknown keys"):
        load_hint_pack(bad)


def test_default_pack_on_directory_operations(apis):
    dispatcher, owners = apis
    made, cat_dir = dispatcher.execute(
        [Call("mkdir", {"dir_name": "d"}), Call("cat", {"file_name": "d"})]
    )
    assert made.ok and cat_dir.is_error
    hint = load_hint_pack().lookup(owners["cat"], "cat", cat_dir.text)
    assert hint.id == "fs-is-directory", cat_dir.text


def test_no_default_hint_gives_away_a_ground_truth_call_it_could_be_shown_for():
    """Every hint of the default pack against every ground-truth call of every BFCL multi-turn
    entry whose API classes it applies to: none names a call's function with one of its
    argument values."""
    from aworld_rl_core.tooluse.bfcl import MULTI_TURN_CATEGORIES, load_category
    from aworld_rl_envtuning.augmentation import revealed_calls

    pack = load_hint_pack("default")
    leaks, checked = [], 0
    for category in MULTI_TURN_CATEGORIES:
        for entry in load_category(category):
            calls = [c for turn in entry.ground_truth or [] for c in turn]
            for hint in pack.hints:
                if hint.api_class == "*" or hint.api_class in entry.involved_classes:
                    checked += 1
                    leaks += [(hint.id, entry.id, c) for c in revealed_calls(hint.hint, calls)]
    assert checked > 5000 and not leaks, leaks[:5]
