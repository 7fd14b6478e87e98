"""Declarations of input fields kept on the host, read from source text."""

from __future__ import annotations

from rltrefactor.source.field_declarations import field_declarations, host_fields

MARKERS = ("keep_on_cpu=True",)

CONFIG = '''
def _get_mm_fields_config(self, hf_inputs, kwargs):
    return dict(
        pixel_values=MultiModalFieldConfig.flat_from_sizes("image", sizes(hf_inputs["grid"]), keep_on_cpu=False),
        image_grid_thw=MultiModalFieldConfig.batched(
            "image",
            keep_on_cpu=True,
        ),
        video_grid_thw=MultiModalFieldConfig.batched("video"),
    )

FIELDS = {"tgt_sizes": MultiModalFieldConfig.batched("image", keep_on_cpu=True)}
limit = max(len(FIELDS), keep_on_cpu_default(True))
'''


def test_fields_declared_with_the_marker_are_host_fields_and_the_others_are_not():
    declarations = field_declarations(CONFIG, MARKERS)
    assert {(d.field, d.on_host) for d in declarations} == {
        ("image_grid_thw", True), ("video_grid_thw", False), ("tgt_sizes", True),
    }  # flat_from_sizes is never marked here, and `limit = max(...)` is no declaration of a marked callee
    assert host_fields(declarations) == {"image_grid_thw", "tgt_sizes"}


def test_a_field_declared_both_ways_is_no_host_field():
    elsewhere = field_declarations('x = dict(image_grid_thw=MultiModalFieldConfig.batched("image"))',
                                   MARKERS, frozenset({"MultiModalFieldConfig.batched"}))
    assert host_fields([*field_declarations(CONFIG, MARKERS), *elsewhere]) == {"tgt_sizes"}


def test_a_text_without_the_marker_declares_nothing_of_its_own():
    assert field_declarations(CONFIG.replace("keep_on_cpu=True", "keep_on_cpu=flag"), MARKERS) == []
