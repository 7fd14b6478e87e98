"""``string-state-comparison`` reads where a compared local came from, however far above the
comparison it was bound: a block's ``state`` read from a snapshot's payload is the
payload's protocol, a request's ``status`` read off the request is the code's own state.
End to end through a full scan and a diff review, no configuration, in two engines' styles."""

from __future__ import annotations

import pytest

# SGLang style: memory-snapshot blocks, the state read many lines above its comparison.
SGLANG_STYLE = '''def register_weight_blocks(memory_snapshot, weight_addrs):
    found = []
    for segment in memory_snapshot:
        current = None
        for block in segment.get("blocks", []):
            address = block.get("address", -1)
            size = block.get("size", -1)
            state = SOURCE
            if address < 0 or size < 0:
                continue
            if address in weight_addrs:
                current = (address, size)
            else:
                current = None
            if state == "active_allocated":
                found.append(current)
    return found
'''

# vLLM style: a transfer's status from the connector's reply, or off the request.
VLLM_STYLE = '''class KVConnectorScheduler:
    def update_state_after_alloc(self, request, reply):
        status = SOURCE
        blocks = request.block_ids
        if not blocks:
            return None
        self.pending[request.request_id] = blocks
        if status == "finished_sending":
            return blocks
        return None
'''

CASES = {
    "sglang": ("sglang/srt/model_loader/weight_blocks.py", SGLANG_STYLE, 15, 'block.get("state", "")', "block.owner.state"),
    "vllm": ("vllm/distributed/kv_transfer/kv_connector/v1/scheduler.py", VLLM_STYLE, 8, 'reply["status"]', "request.status"),
}


@pytest.mark.parametrize("scan", ["full", "diff"])
@pytest.mark.parametrize("style", sorted(CASES))
@pytest.mark.parametrize(("source", "reported"), [(3, False), (4, True)], ids=["payload", "own-object"])
def test_a_local_compared_with_strings_is_judged_by_where_it_came_from(repo, cli, scan, style, source, reported):
    path, text, line = CASES[style][:3]
    written = text.replace("SOURCE", CASES[style][source])
    if scan == "full":
        repo.write(path, written)
        repo.commit("engine")
        # A full scan holds the rule's findings back (it reports on new code): shown on request.
        run = cli("review", path, "--format", "json", "--no-cache", "--show-held-back", cwd=repo.path)
    else:
        repo.write(path, "")
        repo.commit("base")
        repo.write(path, written)
        run = cli("review", "--diff", "main", "--format", "json", "--no-cache", cwd=repo.path)
    assert run.code in (0, 1), run.err
    hits = {f["line"] for f in run.json()["findings"] if f["rule"] == "string-state-comparison"}
    assert (line in hits) is reported, run.json()["findings"]
