"""Where a tensor method or a ``torch`` function leaves its result: the names both readers
of residency share (``context.calls.facts`` over tree-sitter,
``matching.matchers.residency.locations`` over LibCST), so that the call index and the
rules agree on what a host value is."""

from __future__ import annotations

# Methods whose result lives where their receiver lives.
SAME_PLACE_METHODS = frozenset(
    "view view_as reshape flatten contiguous detach clone float half bfloat16 int long bool squeeze unsqueeze "
    "permute transpose t expand narrow select split chunk to_dense type_as "
    "sum mean max min amax amin argmax argmin prod any all cumsum cumprod abs neg round diff clamp clamp_min clamp_max "
    "floor ceil quantile nanquantile median nanmedian std var norm logsumexp cummax cummin kthvalue mode sort argsort "
    "topk unique nonzero masked_select repeat repeat_interleave expand_as reshape_as flip roll".split()
)
# Fields of the named tuples those methods return (``x.max(dim=1).values``): where the call is.
RESULT_FIELDS = frozenset({"values", "indices"})
# ``torch`` functions whose result lives where their first tensor argument does.
SAME_PLACE_FUNCTIONS = frozenset(
    "sum mean max min amax amin argmax argmin prod any all cumsum abs neg round diff flatten reshape squeeze "
    "unsqueeze transpose permute clamp clip exp log sqrt floor ceil sign sort argsort topk flip roll multinomial "
    "repeat_interleave gather index_select masked_select nonzero unique bincount minimum maximum fmin fmax add sub "
    "mul div remainder floor_divide eq ne lt le gt ge logical_and logical_or logical_not searchsorted where "
    "quantile nanquantile median nanmedian std var norm logsumexp cummax cummin kthvalue mode isin bucketize "
    "count_nonzero".split()
)
# ``torch`` factories that allocate where their ``device=`` says, else on the default
# device: the CPU, unless a ``with torch.device(...)`` or ``set_default_device`` says
# otherwise. ``torch.tensor`` and ``as_tensor`` are apart: given a tensor, they keep its device.
DEFAULT_DEVICE_FACTORIES = frozenset(
    "zeros ones empty empty_strided full arange linspace logspace eye rand randn randint randperm normal "
    "tril_indices triu_indices".split()
)
# Methods whose result is in host memory wherever the receiver lives.
HOST_METHODS = frozenset({"cpu", "numpy", "tolist", "pin_memory"})
# Methods that always return a view of their receiver: no kernel runs, the result shares
# the receiver's memory (PyTorch's "Tensor Views"; ``reshape``, ``flatten`` and
# ``contiguous`` may copy and are not here).
VIEW_METHODS = frozenset(
    "view view_as narrow select squeeze unsqueeze permute transpose t expand expand_as as_strided unflatten "
    "detach diagonal movedim moveaxis unfold split chunk unbind".split()
)
