"""Arrays that ``jax.numpy`` builds on the default device and a placement call then puts on the devices again.

``jnp.zeros(...)``, ``jnp.array(host_list)`` and the other ``jax.numpy`` constructors
given no ``device=``/``out_sharding=`` dispatch an operation (or a host-to-device
transfer) that leaves an uncommitted array on the default device. Handing that array
to a placement (``jax.device_put(x, sharding)``, or a call that also receives a mesh
or a sharding) copies it from there to every target device: the first allocation and
dispatch were wasted. Building the value with numpy on the host and placing it once
does the same work in one transfer.

The placed value is recognised from the code: the constructor call itself is the
placed argument, or a name bound by such a call in the same block whose next use is
the placement. A placement is ``jax.device_put`` with a target, or a call given a
sharding (a ``sharding=`` keyword that is not None, or a value the code shows to be a
``jax.sharding`` sharding: a constructor call, a name bound by one or annotated with
one) or given a mesh as its first argument (``put(mesh, x)``); a mesh elsewhere is how
sharded compute is called too. Not reported: ``jax.device_put(x)`` without a target (the
identity for an array already on a device) or with a target the code shows to be one
device (an element of a device list, an array's ``.device``, a ``jax.Device``
parameter: it may be the default device, where placing only commits the array),
constructors under ``with jax.default_device(...)`` (they already build where the code
chose), and code traced under ``jit`` and the other JAX transformations (its
constructors are constants of the compiled program).
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterator

import libcst as cst

from ...prefilter import Prefilter
from ...regions.reach import MatcherReach
from ..base import FileContext, Match
from ..context import subtree
from ..options import Option

# ``jax.numpy`` functions that make a new array from a shape, a fill value or host data.
# The ``*_like`` forms are left out: given a committed array they follow its sharding.
_CONSTRUCTORS = frozenset("zeros ones full empty array asarray arange linspace eye identity".split())
# Constructor keywords that commit the result where it is wanted: no second placement is needed.
_PLACING_KEYWORDS = frozenset({"device", "out_sharding", "sharding"})
_MESHES = frozenset({"jax.sharding.Mesh", "jax.sharding.AbstractMesh", "jax.make_mesh"})
_SHARDINGS = frozenset({
    "jax.sharding.NamedSharding", "jax.sharding.PositionalSharding", "jax.sharding.SingleDeviceSharding",
    "jax.sharding.GSPMDSharding", "jax.sharding.Sharding",
})
_TRACE_DECORATORS = ("jit", "pjit", "shard_map", "vmap", "pmap", "checkpoint", "remat", "custom_vjp", "custom_jvp")


class DeviceArrayPlacedAgain:
    """An array ``jax.numpy`` builds on the default device, then handed to a placement call."""

    reach = MatcherReach(reads="function")
    prefilter: Prefilter = tuple(f"{name}(" for name in sorted(_CONSTRUCTORS))
    OPTIONS: ClassVar[dict[str, Option]] = {}

    def __init__(self, rule_id: str, options: dict[str, Any]) -> None:
        self.rule_id = rule_id

    def find(self, ctx: FileContext) -> Iterator[Match]:
        for call in ctx.nodes(cst.Call):
            placement = _placement_of_argument(call, ctx)
            if placement is not None and _builds_on_default_device(call, ctx) and not _traced(call, ctx):
                yield Match(call, {"X": ctx.code(call.func) + "(...)", "P": ctx.code(placement.func)})
        for block in ctx.nodes(cst.IndentedBlock):
            if ctx.enclosing_function(block) is None or _traced(block, ctx):
                continue
            yield from _bound_then_placed(block, ctx)


def _bound_then_placed(block: cst.IndentedBlock, ctx: FileContext) -> Iterator[Match]:
    """Constructors bound to a name whose next use in the block is as the placed value of a placement."""
    pending: dict[str, cst.Call] = {}
    for statement in block.body:
        used = _names_in(statement) & pending.keys() if pending else set()
        for name in used:
            placement = _placement_in(statement, name, ctx)
            if placement is not None:
                yield Match(pending[name], {"X": name, "P": ctx.code(placement.func)})
            del pending[name]
        bound = _constructor_binding(statement, ctx)
        if bound is not None:
            pending[bound[0]] = bound[1]


def _constructor_binding(statement: cst.CSTNode, ctx: FileContext) -> tuple[str, cst.Call] | None:
    """``name = jnp.zeros(...)`` (one target, one statement on the line)."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    small = statement.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target, value = small.targets[0].target, small.value
    elif isinstance(small, cst.AnnAssign) and small.value is not None:
        target, value = small.target, small.value
    else:
        return None
    if isinstance(target, cst.Name) and isinstance(value, cst.Call) and _builds_on_default_device(value, ctx):
        return target.value, value
    return None


def _builds_on_default_device(call: cst.Call, ctx: FileContext) -> bool:
    module, _, leaf = (ctx.qualified_name(call.func) or "").rpartition(".")
    if module != "jax.numpy" or leaf not in _CONSTRUCTORS or _under_default_device(call, ctx):
        return False
    return not any(a.keyword is not None and a.keyword.value in _PLACING_KEYWORDS for a in call.args)


def _placement_in(statement: cst.CSTNode, name: str, ctx: FileContext) -> cst.Call | None:
    """The placement call of a simple statement that takes ``name`` as its placed value."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return None
    for node in subtree(statement):
        if isinstance(node, cst.Call) and _places(node, ctx):
            if any(_is_name(a, name) for a in _placed_arguments(node, ctx)):
                return node
    return None


def _placement_of_argument(call: cst.Call, ctx: FileContext) -> cst.Call | None:
    """The placement call that takes ``call`` itself as its placed value."""
    parent = ctx.parent(call)
    if isinstance(parent, (cst.Element, cst.StarredElement)):  # ``put((jnp.zeros(n), ...), sharding)``
        parent = ctx.parent(ctx.parent(parent) or parent)
    if not isinstance(parent, cst.Arg):
        return None
    outer = ctx.parent(parent)
    if isinstance(outer, cst.Call) and _places(outer, ctx) and any(_holds(a, call) for a in _placed_arguments(outer, ctx)):
        return outer
    return None


def _places(call: cst.Call, ctx: FileContext) -> bool:
    """``jax.device_put`` given a target, or a call given a sharding (anywhere) or a mesh (as its
    first argument: ``put(mesh, x)``). A mesh elsewhere, or as ``mesh=``, is how sharded
    compute (kernels, ``shard_map`` wrappers) is called too, and is no evidence of placement."""
    name = ctx.qualified_name(call.func) or ""
    if name == "jax.device_put":
        target = _device_put_target(call)
        return target is not None and not _is_none(target) and not _one_device(target, call, ctx)
    if name.startswith(("jax.lax.", "jax.sharding.")):  # sharding constraints are traced annotations
        return False
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if positional and _shows(positional[0].value, _MESHES, call, ctx):
        return True
    return any(_is_sharding(a, call, ctx) for a in call.args)


def _device_put_target(call: cst.Call) -> cst.BaseExpression | None:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "device":
            return arg.value
    return positional[1].value if len(positional) > 1 else None


def _one_device(target: cst.BaseExpression, at: cst.CSTNode, ctx: FileContext) -> bool:
    """An element of a list (``jax.devices()[0]``, ``gpus[i]``), an array's ``.device``, a name
    bound to one of those or a parameter annotated ``jax.Device``: a single device, which
    may be the default one, where placing an uncommitted array only commits it. Shardings
    and targets the code does not show are not single devices."""
    if isinstance(target, cst.Subscript):
        return True
    if isinstance(target, cst.Attribute):
        return target.attr.value == "device"
    if not isinstance(target, cst.Name):
        return False
    function = ctx.enclosing_function(at)
    if function is None:
        return False
    annotation = _annotation(function, target.value)
    if annotation is not None:
        return any(ctx.qualified_name(n) == "jax.Device" for n in subtree(annotation) if isinstance(n, (cst.Name, cst.Attribute)))
    return any(_one_device(value, at, ctx) for value in _bound_values(function, target.value))


def _placed_arguments(call: cst.Call, ctx: FileContext) -> list[cst.BaseExpression]:
    """What a placement call puts on the devices: ``device_put``'s first argument; for other
    placements, every argument that is not a mesh or a sharding."""
    if ctx.qualified_name(call.func) == "jax.device_put":
        first = [a for a in call.args if (a.keyword is None and not a.star) or (a.keyword is not None and a.keyword.value == "x")]
        return [first[0].value] if first else []
    return [a.value for a in call.args
            if not a.star and not _is_sharding(a, call, ctx) and not _shows(a.value, _MESHES, call, ctx)]


def _is_sharding(arg: cst.Arg, call: cst.Call, ctx: FileContext) -> bool:
    """A ``sharding=`` keyword that is not None, or a value the code shows to be a sharding."""
    if arg.keyword is not None and arg.keyword.value == "sharding":
        return not _is_none(arg.value)
    return _shows(arg.value, _SHARDINGS, call, ctx)


def _shows(value: cst.BaseExpression, classes: frozenset[str], at: cst.CSTNode, ctx: FileContext) -> bool:
    """``value`` is a call of one of ``classes``, a parameter annotated with one, or a name the
    enclosing function binds to such a call."""
    if isinstance(value, cst.Call):
        return ctx.qualified_name(value.func) in classes
    if not isinstance(value, cst.Name):
        return False
    function = ctx.enclosing_function(at)
    if function is None:
        return False
    annotation = _annotation(function, value.value)
    if annotation is not None:
        return any(ctx.qualified_name(n) in classes for n in subtree(annotation) if isinstance(n, (cst.Name, cst.Attribute)))
    return any(isinstance(v, cst.Call) and ctx.qualified_name(v.func) in classes for v in _bound_values(function, value.value))


def _annotation(function: cst.FunctionDef, name: str) -> cst.BaseExpression | None:
    params = function.params
    for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
        if param.name.value == name and param.annotation is not None:
            return param.annotation.annotation
    return None


def _bound_values(function: cst.FunctionDef, name: str) -> list[cst.BaseExpression]:
    """Values the function assigns to ``name`` (plain ``name = value`` statements)."""
    return [node.value for node in subtree(function.body)
            if isinstance(node, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets)]


def _under_default_device(node: cst.CSTNode, ctx: FileContext) -> bool:
    """Inside ``with jax.default_device(...)``: the constructor already builds where the code chose."""
    return any(
        isinstance(ancestor, cst.With)
        and any(isinstance(item.item, cst.Call) and ctx.qualified_name(item.item.func) == "jax.default_device" for item in ancestor.items)
        for ancestor in ctx.ancestors(node)
    )


def _traced(node: cst.CSTNode, ctx: FileContext) -> bool:
    """Inside a function decorated with a JAX transformation (``jax.jit``, ``partial(jax.jit, ...)``):
    its body is traced, so constructors there build constants of the compiled program."""
    for ancestor in [node, *ctx.ancestors(node)]:
        if isinstance(ancestor, cst.FunctionDef):
            for decorator in ancestor.decorators:
                for part in subtree(decorator.decorator):
                    if isinstance(part, (cst.Name, cst.Attribute)) and _is_transformation(ctx.qualified_name(part) or ""):
                        return True
    return False


def _is_transformation(name: str) -> bool:
    return name.startswith("jax.") and name.rpartition(".")[2] in _TRACE_DECORATORS


def _holds(expr: cst.BaseExpression, call: cst.Call) -> bool:
    if expr is call:
        return True
    return isinstance(expr, (cst.Tuple, cst.List)) and any(e.value is call for e in expr.elements)


def _is_name(expr: cst.BaseExpression, name: str) -> bool:
    if isinstance(expr, cst.Name):
        return expr.value == name
    return isinstance(expr, (cst.Tuple, cst.List)) and any(_is_name(e.value, name) for e in expr.elements)


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _names_in(node: cst.CSTNode) -> set[str]:
    return {n.value for n in subtree(node) if isinstance(n, cst.Name)}
