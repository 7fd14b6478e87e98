"""The arguments of a call, as written, read from a file's text for the call index: split
at top-level commas, brackets, strings and comments kept whole or left out; a call whose
arguments do not close gives no answer rather than a wrong one."""

from __future__ import annotations

from rltrefactor.context.calls.texts import RevisionTexts

TEXT = b'''def step(self, layer, q, out):
    decode_fwd(q, out, k_scale=layer._k_scale,  # a comment, with ( and ,
               note="a, (b)", escaped="\\"", table={"a": (1, 2)})
    runner.decode_fwd(q, *rest, **extra)
    # decode_fwd(q) in a comment is no call
    return decode_fwd()


def other():
    return decode_fwd(q)
'''


def test_the_arguments_of_each_call_in_the_lines_asked():
    texts = RevisionTexts({"eng/step.py": TEXT})
    assert texts.call_arguments("eng/step.py", "decode_fwd", (1, 6)) == [
        [b"q", b"out", b"k_scale=layer._k_scale", b'note="a, (b)"', b'escaped="\\""', b'table={"a": (1, 2)}'],
        [b"q", b"*rest", b"**extra"],
        [],
    ]
    assert texts.call_arguments("eng/step.py", "decode_fwd", (9, 10)) == [[b"q"]]


def test_a_call_that_does_not_close_gives_no_answer():
    texts = RevisionTexts({"eng/broken.py": b"def f():\n    decode_fwd(q, out,\n"})
    assert texts.call_arguments("eng/broken.py", "decode_fwd", (1, 2)) is None
