"""A state compared with strings is closed when the type engine types it as a ``Literal``
of those strings, wherever the type comes from: a helper's return annotation, a field of
another package. A compared string outside the type's values is still reported (the typo
the rule exists for), and so is a plain ``str``. End to end, no configuration, in two
engines' styles."""

from __future__ import annotations

import pytest


# vLLM style: a transfer's state from a helper that declares its return type.
VLLM_STYLE = '''from typing import Literal

XferState = Literal["DONE", "PROC", "ERR"]


def check_xfer_state(handle) -> RETURNED:
    return handle.state


class NixlConnectorWorker:
    def poll(self, handle):
        xfer_state = check_xfer_state(handle)
        if xfer_state == COMPARED:
            return True
        return False
'''

# SGLang style: a request's status from a method of another class.
SGLANG_STYLE = '''from typing import Literal


class ResponseStore:
    def status_of(self, rid) -> RETURNED:
        return self.statuses[rid]


class ServingResponses:
    def __init__(self, store: ResponseStore):
        self.store = store

    def is_done(self, rid):
        response_status = self.store.status_of(rid)
        return response_status == COMPARED
'''

CASES = {
    "vllm": ("vllm/distributed/kv_transfer/nixl_connector.py", VLLM_STYLE, 13, "XferState", '"DONE"', '"DNOE"'),
    "sglang": ("sglang/srt/entrypoints/openai/serving_responses.py", SGLANG_STYLE, 15,
               'Literal["completed", "failed"]', '"completed"', '"complete"'),
}


@pytest.mark.parametrize("style", sorted(CASES))
@pytest.mark.parametrize(("returned", "compared", "reported"), [
    ("TYPE", "VALUE", False),  # the type engine knows its values
    ("TYPE", "TYPO", True),  # a value outside them: the typo
    ("str", "VALUE", True),  # open text
], ids=["literal", "literal-typo", "plain-str"])
def test_a_state_the_type_engine_types_as_a_literal_is_closed(repo, cli, style, returned, compared, reported):
    path, text, line, literal, value, typo = CASES[style]
    repo.write("README.md", "engine\n")
    repo.commit("base")
    repo.write(path, text.replace("RETURNED", literal if returned == "TYPE" else returned)
               .replace("COMPARED", value if compared == "VALUE" else typo))
    run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    hits = {f["line"] for f in run.json()["findings"] if f["rule"] == "string-state-comparison"}
    assert (line in hits) is reported, run.json()["findings"]
