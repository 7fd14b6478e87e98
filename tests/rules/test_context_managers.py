"""exception-swallowed-by-context-manager: which handlers around a ``yield`` suppress the caller's error."""

from __future__ import annotations

from .helpers import engine_lines as lines

RULE = "exception-swallowed-by-context-manager"


def test_a_handler_that_ends_without_raising_is_reported_through_any_import_of_the_decorator():
    code = """
        import contextlib
        from contextlib import asynccontextmanager as acm

        @contextlib.contextmanager
        def profile_step(prof):
            try:
                yield prof
            except RuntimeError:                 # 9
                prof.dump()

        @acm
        async def session(client):
            try:
                async with client.lock:
                    yield client
            except (OSError, ValueError):        # 17
                await client.reset()
    """
    assert lines(RULE, code) == [9, 17]


def test_raising_yielding_deliberate_stops_and_the_generators_own_calls_are_left_alone():
    code = """
        import contextlib
        import queue

        @contextlib.contextmanager
        def reraised(prof):
            try:
                yield prof
            except RuntimeError:
                prof.dump()
                raise

        @contextlib.contextmanager
        def own_call(pool):
            try:
                item = pool.get_nowait()
                yield item
            except queue.Empty:
                pass

        @contextlib.contextmanager
        def interrupted(ctx):
            try:
                yield ctx
            except KeyboardInterrupt:
                print("stopped")

        @contextlib.contextmanager
        def suppress_cuda_errors():
            try:
                yield
            except RuntimeError:
                pass

        def plain_generator(items):
            try:
                yield from items
            except ValueError:
                pass
    """
    assert lines(RULE, code) == []
