"""Capture: observe one call in the VM and turn it into a graph, guards and a replay plan.

The VM reports events (reads, writes, calls, operations, branches, exceptions: ``interp.observer``) to one
``CaptureObserver``, whose event methods live in rooms by family; what they produce is a ``Capture``
(fx graph, guards, side effects, the result's template) for ``emit``.

The house (each room one concept; a room imports only rooms above it in this list):

    values        provenance markers (UNKNOWN, Traced), shared predicates and builders, ``_event``
    user_files, places
                  which files are the user's; places in the source, shown as the user wrote them
    resume        resume functions and break steps: bytecode rewrites of the user's code around a graph
                  break (over ``interp.decode`` alone), made while capturing so that a break that cannot be
                  split is found while the call still runs in the VM; ``emit.continuation`` runs them
    state         the Capture produced; contents of containers; the graph's tensors
    iteration     what an iterable yields, by provenance; unpacking
    operations    one rule per generic instruction (``OPERATIONS``): operators, builds, formatting
    lookasides    calls capture runs its own way (checkpoint, TorchScript, library internals)
    mutations     changes to containers from outside: the table of builtin methods, shadows, replay
    lengths       outside lists and deques changed unread: the table of changes by their effect on the
                  length, the length as it comes, values handed back as expressions of the entry
    compiler_contract
                  memoized functions; functions marked for torch's compiler (allow_in_graph,
                  assume_constant_result, its marks on tensors)
    graph_builder tensors in, fx nodes out; Python numbers the graph computes
    containers    containers made here; ``effective``; sets; packed and unpacked arguments
    reads / writes / exceptions / builtin_methods / calls / replays / context_vars / locks / conditions /
    templates / breaks / lifetimes
                  the VM's events by family (mixins of ``CaptureObserver``; ``builtin_methods``: built-in
                  classes' own methods reached through subclasses, ``super()``, copies, reductions;
                  ``replays``: warnings and log records made again; ``locks``: native locks taken and
                  given back within the call; ``breaks``: where the root frame stops at a graph break;
                  ``lifetimes``: objects whose death is their effect, a ``__del__``, a weak callback)
    observer      the observer's shared core (failure, guards, frames) and ``capture``
    origins       whose guard it is, the user's program's or torch's machinery's (``magpy.explain``)
    names         callables and homes rendered as the user writes them (guards, reports, ``magpy.trace``)

``magpy.trace``'s events, RefGraph and reporting observer (derived from ``CaptureObserver``) are a room
of their own above this one: ``magpy.tracing``.

A new rule for a native call goes in ``rules`` (data) or, when it needs code, beside its kind in
``calls``; a new instruction rule in ``operations``; a new builtin method's effect in ``mutations.EFFECTS``.
"""
from .observer import capture, Capture  # noqa: F401
