from __future__ import annotations

from rltrefactor.source.directives import parse_suppressions


def test_directive_with_ids_and_reason():
    text = "x = t.item()  # rltrefactor: ignore[host-sync-in-hot-path] runs once at start-up\n"
    found = parse_suppressions(text)[1]
    assert found.rule_ids == ("host-sync-in-hot-path",)
    assert found.reason == "runs once at start-up"
    assert found.problem == ""


def test_several_ids_and_a_leading_dash_in_the_reason():
    found = parse_suppressions("y()  # rltrefactor: ignore[a-rule, b-rule] - measured, negligible\n")[1]
    assert found.rule_ids == ("a-rule", "b-rule") and found.reason == "measured, negligible"


def test_directive_after_another_comment():
    found = parse_suppressions("y()  # noqa: E501 # rltrefactor: ignore[a-rule] reason\n")
    assert found[1].rule_ids == ("a-rule",)


def test_missing_reason_and_missing_ids_are_problems():
    assert "no reason" in parse_suppressions("y()  # rltrefactor: ignore[a-rule]\n")[1].problem
    assert "names no rule" in parse_suppressions("y()  # rltrefactor: ignore\n")[1].problem
    assert "names no rule" in parse_suppressions("y()  # rltrefactor: ignore[] because\n")[1].problem


def test_prose_and_strings_that_mention_the_directive_do_not_count():
    text = (
        "# To silence it, write rltrefactor: ignore[a-rule] with a reason.\n"
        "s = '# rltrefactor: ignore[a-rule] inside a string'\n"
        'doc = """\n# rltrefactor: ignore[a-rule] in a docstring\n"""\n'
    )
    assert parse_suppressions(text) == {}


def test_untokenizable_text_yields_nothing():
    assert parse_suppressions("def f(:\n  '''unterminated\n") == {}
