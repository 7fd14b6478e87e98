"""The execution-context stage: where each function runs, and the evidence."""

from __future__ import annotations

import textwrap

from rltrefactor.config import Declared
from rltrefactor.context.execution import execution_map
from rltrefactor.source.syntax import parse_tree

ENGINE = textwrap.dedent(
    """
    import functools
    import torch


    class Attention(torch.nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.scale = self._make_scale(dim)

        def _make_scale(self, dim):
            return dim ** -0.5

        def forward(self, q, k):
            return self._scores(q, k)

        def _scores(self, q, k):
            def softmax(x):
                return x.softmax(-1)
            return softmax(q @ k.T * self.scale)

        def load_weights(self, weights):
            self._copy(weights)

        def _copy(self, weights):
            pass


    class Runner:
        def execute_model(self, batch):
            return prepare_batch(batch)

        def helper(self, x):
            return x

        def test_against_reference(self):
            return self.helper(1)

        @functools.lru_cache
        def rope_table(self, n):
            return torch.arange(n)

        @torch.inference_mode()
        def generate(self, prompts):
            return prompts


    def prepare_batch(batch):
        return batch


    def autotune_block_size():
        return 64


    def main():
        Runner().execute_model(None)
    """
)


def _kinds(text: str = ENGINE, declared: Declared = Declared()) -> dict[str, tuple[str, str]]:
    found = execution_map(parse_tree(text), declared)
    return {f.qualname: (f.kind, f.evidence) for f in found.functions}


def test_roots_and_their_callees_run_per_step():
    kinds = _kinds()
    assert kinds["Attention.forward"] == (
        "per-step", "`forward` of a `torch.nn.Module` runs per step (protocol model `torch.nn.Module`)")
    assert kinds["Attention._scores"] == ("per-step", "called from Attention.forward")
    assert kinds["Attention._scores.<locals>.softmax"][0] == "per-step"
    assert kinds["Runner.execute_model"][0] == "per-step"
    assert kinds["prepare_batch"] == ("per-step", "called from Runner.execute_model")
    # ``inference_mode`` says how a function runs, not how often: loaders carry it too.
    assert kinds["Runner.generate"] == ("unknown", "")


def test_set_up_and_cached_functions_and_their_private_helpers_run_once():
    kinds = _kinds()
    assert kinds["Attention.__init__"][0] == "one-time"
    assert kinds["Attention._make_scale"] == ("one-time", "only called from Attention.__init__")
    assert kinds["Attention.load_weights"][0] == "one-time"
    assert kinds["Attention._copy"][0] == "one-time"
    assert kinds["Runner.rope_table"] == ("one-time", "a cached function runs once per argument set")


def test_tests_tuning_and_scripts_are_offline():
    kinds = _kinds()
    assert kinds["Runner.test_against_reference"][0] == "offline"
    assert kinds["autotune_block_size"][0] == "offline"
    assert kinds["main"] == ("offline", "a script's `main`")


def test_a_public_helper_called_only_from_offline_code_stays_unknown():
    # It may be called per step from another module.
    assert _kinds()["Runner.helper"] == ("unknown", "")


def test_module_level_forward_function_is_not_a_root():
    kinds = _kinds("def forward(x):\n    return x\n")
    assert kinds["forward"] == ("unknown", "")


def test_configured_hot_functions_and_file_overrides():
    text = "class Loop:\n    def run_engine_loop(self):\n        return 1\n\n    def other(self):\n        return 2\n"
    assert _kinds(text)["Loop.run_engine_loop"][0] == "unknown"
    assert _kinds(text, Declared(hot_functions=("run_engine_loop",)))["Loop.run_engine_loop"][0] == "per-step"
    assert _kinds(text, Declared(hot_file=True))["Loop.other"] == ("per-step", "the file is under hot-paths")
    assert _kinds(text, Declared(cold_file=True))["Loop.run_engine_loop"] == ("offline", "the file is under cold-paths")


DUMMY = textwrap.dedent(
    """\
    class Runner:
        def _make_dummy_batch_meta(self, lens):
            return lens

        def forward(self, x):
            return x

        def __init__(self):
            self.x = 1

        @functools.cache
        def table(self):
            return 1
    """
)


def test_configured_hot_functions_beat_a_set_up_name_word():
    assert _kinds(DUMMY)["Runner._make_dummy_batch_meta"][0] == "one-time"
    found = _kinds(DUMMY, Declared(hot_functions=("_make_dummy_batch_meta",)))["Runner._make_dummy_batch_meta"]
    assert found == ("per-step", "`_make_dummy_batch_meta` matches `hot-functions` in the configuration")


def test_hot_paths_beat_name_words_but_not_construction_or_caching():
    kinds = _kinds(DUMMY, Declared(hot_file=True))
    assert kinds["Runner._make_dummy_batch_meta"] == ("per-step", "the file is under hot-paths")
    assert kinds["Runner.__init__"][0] == "one-time"
    assert kinds["Runner.table"][0] == "one-time"


def test_configured_cold_functions_beat_forward_and_per_step_names():
    kinds = _kinds(ENGINE, Declared(cold_functions=("forward", "execute_model")))
    assert kinds["Attention.forward"] == ("one-time", "`forward` matches `cold-functions` in the configuration")
    assert kinds["Runner.execute_model"][0] == "one-time"
    assert kinds["prepare_batch"][0] != "per-step"  # its only per-step caller is declared cold


def test_cold_functions_name_the_exceptions_to_hot_functions_and_hot_paths():
    declared = Declared(hot_functions=(r"\w+_step",), cold_functions=("warm_step",), hot_file=True)
    text = "class A:\n    def warm_step(self):\n        pass\n\n    def run_step(self):\n        pass\n"
    kinds = _kinds(text, declared)
    assert kinds["A.warm_step"][0] == "one-time"
    assert kinds["A.run_step"][0] == "per-step"


def test_lookup_by_line_finds_the_innermost_function():
    found = execution_map(parse_tree(ENGINE))
    line = ENGINE.splitlines().index("        def softmax(x):") + 2
    assert found.at(line).qualname == "Attention._scores.<locals>.softmax"
    assert found.at(1) is None


BUILDERS = textwrap.dedent(
    """
    import torch


    class Serializer:
        def __init__(self, config):
            self.key_bins = self.make_key_bins(config)
            self.refresh_table(config)
            self.offsets = self.make_offsets(config)
            self.scales = self.make_scales(config)

        def make_key_bins(self, config):
            return torch.tensor(config.bins).cuda()

        def refresh_table(self, config):
            self.table = torch.tensor(config.table).cuda()

        def make_offsets(self, config):
            return torch.tensor(config.offsets).cuda()

        def make_scales(self, config):
            return torch.tensor(config.scales).cuda()

        def forward(self, x):
            return x * self.make_scales(x)


    def make_module_table(config):
        return torch.tensor(config.table).cuda()


    class Engine:
        def __init__(self, config, serializer):
            self.table = make_module_table(config)
            self.offsets = serializer.make_offsets(config)
    """
)


def test_a_public_method_whose_result_construction_keeps_stays_unknown():
    # Other modules may call it through an instance whose type their file does not show.
    kinds = _kinds(BUILDERS)
    assert kinds["Serializer.make_key_bins"] == ("unknown", "")


def test_public_functions_construction_calls_may_be_repeated_from_outside_stay_unknown():
    kinds = _kinds(BUILDERS)
    # Its result is dropped: a method run for its effect on the object may be run again.
    assert kinds["Serializer.refresh_table"] == ("unknown", "")
    # Called on another object too: the file shows a caller outside the class.
    assert kinds["Serializer.make_offsets"] == ("unknown", "")
    # Called per step as well: per step wins.
    assert kinds["Serializer.make_scales"] == ("per-step", "called from Serializer.forward")
    # A module-level public function is the module's interface: other modules may import it.
    assert kinds["make_module_table"] == ("unknown", "")


CHECKPOINT = textwrap.dedent(
    """
    import torch


    def to_bf16_state_dict_hook(module, state_dict, *args, offload_to_cpu=True, **kwargs):
        for key, value in state_dict.items():
            state_dict[key] = value.to(torch.bfloat16).cpu()


    class Adapter(torch.nn.Module):
        def merge_into(self, state_dict: dict, prefix=""):
            return {prefix + k: v for k, v in state_dict.items()}

        def forward(self, x, state_dict=None):
            return x

        def apply_state(self, state, scale):
            return state * scale
    """
)


def test_a_function_taking_a_state_dict_converts_a_checkpoint_once():
    kinds = _kinds(CHECKPOINT)
    assert kinds["to_bf16_state_dict_hook"] == (
        "one-time", "takes a checkpoint's `state_dict`: it converts weights when a checkpoint is saved or loaded")
    assert kinds["Adapter.merge_into"][0] == "one-time"


def test_a_state_dict_parameter_never_outranks_a_per_step_root_or_hot_paths():
    kinds = _kinds(CHECKPOINT)
    assert kinds["Adapter.forward"] == (
        "per-step", "`forward` of a `torch.nn.Module` runs per step (protocol model `torch.nn.Module`)")
    assert kinds["Adapter.apply_state"] == ("unknown", "")  # `state` is not a checkpoint
    hot = _kinds(CHECKPOINT, Declared(hot_file=True))
    assert hot["to_bf16_state_dict_hook"] == ("per-step", "the file is under hot-paths")


UNCALLED = textwrap.dedent(
    """
    import torch


    def _renormalize(cdf, precision):
        return cdf * torch.tensor(2.0, device=cdf.device).pow_(precision)


    def _pack(x):
        return x.contiguous()


    @torch.library.custom_op("eng::scale", mutates_args=())
    def _scale_impl(x: torch.Tensor) -> torch.Tensor:
        return x * 2


    def _dispatch_table():
        return {}


    HANDLERS = {"dispatch": _dispatch_table}


    def public_helper(x):
        # y = _renormalize(x, 16)
        return _pack(x)


    class Codec:
        def _unused(self, x):
            return x
    """
)


def test_a_private_module_function_nothing_in_its_file_mentions_does_not_run():
    kinds = _kinds(UNCALLED)
    assert kinds["_renormalize"] == ("offline", "nothing in its module calls the private `_renormalize`")


def test_mentioned_decorated_or_method_private_functions_stay_unknown():
    kinds = _kinds(UNCALLED)
    assert kinds["_pack"] == ("unknown", "")  # called by a public function
    assert kinds["_scale_impl"] == ("unknown", "")  # a decorator may register it
    assert kinds["_dispatch_table"] == ("unknown", "")  # referenced, not called
    assert kinds["Codec._unused"] == ("unknown", "")  # a subclass elsewhere may call it
    assert _kinds(UNCALLED, Declared(hot_file=True))["_renormalize"][0] == "per-step"


HOOKS = textwrap.dedent(
    """
    from functools import partial

    import torch


    def _offload(module, sd, prefix, *args):
        for key in list(sd):
            sd[key] = sd[key].cpu()


    def _log_activations(module, inputs, output):
        return output.float().mean().item()


    class QuantLinear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self._register_state_dict_hook(partial(_offload, keep=True))
            self.register_load_state_dict_pre_hook(self._dequantize_on_load)
            self.register_forward_hook(_log_activations)

        def _dequantize_on_load(self, module, sd, prefix, *args):
            sd[prefix + "weight"] = sd[prefix + "weight"].float()
    """
)


def test_a_function_the_file_registers_as_a_state_dict_hook_runs_once():
    kinds = _kinds(HOOKS)
    evidence = "registered as a state-dict hook: it runs when a checkpoint is saved or loaded"
    assert kinds["_offload"] == ("one-time", evidence)
    assert kinds["QuantLinear._dequantize_on_load"] == ("one-time", evidence)
    assert _kinds(HOOKS, Declared(hot_file=True))["_offload"] == ("one-time", evidence)


def test_a_forward_hook_is_no_checkpoint_hook():
    assert _kinds(HOOKS)["_log_activations"] == ("unknown", "")
