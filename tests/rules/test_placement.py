"""``device-array-placed-again`` on the shapes its rule examples do not spell out."""

from __future__ import annotations

from rltrefactor.matching.matchers.residency.placement import DeviceArrayPlacedAgain

from .helpers import lines


def _lines(code: str) -> list[int]:
    return lines(DeviceArrayPlacedAgain("device-array-placed-again", {}), code)


def test_constructors_are_recognised_through_every_import_spelling() -> None:
    code = """
    import jax
    import jax.numpy
    from jax.numpy import full
    from jax.sharding import NamedSharding, PartitionSpec as P

    def refresh(mesh, n):
        spec = NamedSharding(mesh, P())
        a = jax.device_put(jax.numpy.zeros(n), spec)
        b = jax.device_put(full((n,), -1), spec)
        return a, b
    """
    assert _lines(code) == [9, 10]


def test_numpy_under_a_jax_looking_alias_is_the_host() -> None:
    code = """
    import jax
    import numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec as P

    def refresh(mesh, n):
        x = jnp.zeros(n)
        return jax.device_put(x, NamedSharding(mesh, P()))
    """
    assert _lines(code) == []


def test_only_a_first_use_as_the_placed_value_reports() -> None:
    code = """
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P

    def refresh(mesh, n, flag):
        spec = NamedSharding(mesh, P())
        updated = jnp.zeros(n)
        updated = updated.at[0].set(1)
        updated = jax.device_put(updated, spec)
        replaced = jnp.zeros(n)
        replaced = np.zeros(n)
        replaced = jax.device_put(replaced, spec)
        branched = jnp.ones(n)
        if flag:
            branched = jax.device_put(branched, spec)
        target = jnp.arange(n)
        target = jax.device_put(spec, target)
        return updated, replaced, branched, target
    """
    # ``target`` is device_put's target here, not its placed value.
    assert _lines(code) == []


def test_a_helper_is_a_placement_given_a_sharding_or_a_mesh_first() -> None:
    code = """
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding

    from engine.utils import attend, put, put_on_mesh, scale

    def refresh(mesh: Mesh, other, q, n, spec: NamedSharding):
        a = jnp.zeros(n)
        a = put_on_mesh(mesh, a)
        b = jnp.zeros(n)
        b = scale(other, b)
        c = jnp.zeros(n)
        c = put_on_mesh(other, c, sharding=None)
        d = jnp.zeros(n)
        d = attend(q, d, mesh)
        e = jnp.zeros(n)
        e = attend(q, e, mesh=mesh)
        f = jnp.zeros(n)
        f = put(f, spec)
        return a, b, c, d, e, f
    """
    # ``other`` is no mesh by evidence and ``sharding=None`` no target; a mesh after the
    # array or as a keyword is how sharded compute is called.
    assert _lines(code) == [8, 18]


def test_jax_transformations_seen_through_partial_and_nesting() -> None:
    code = """
    import functools

    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec as P

    @functools.partial(jax.jit, donate_argnums=(0,))
    def step(state, mesh):
        def inner():
            z = jnp.zeros(4)
            return jax.device_put(z, NamedSharding(mesh, P()))
        return state + inner()

    @jax.vmap
    def per_row(row):
        return jax.device_put(jnp.zeros(4), NamedSharding(row.mesh, P()))
    """
    assert _lines(code) == []
