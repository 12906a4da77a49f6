"""The template table of compiled blocks: which instructions a block may hold, and the function that
writes each one's code (registered by ``block_ops`` and ``block_tracking``, read by ``blocks``)."""


#: canonical name -> template (see block_ops); plain blocks are runs of these
TEMPLATES = {}
#: canonical name -> template of tracked blocks (see block_tracking); any other instruction a tracked
#: block holds runs through its tracked handler
TRACKED_TEMPLATES = {}
#: instructions a tracked block never holds: those that suspend the frame or resume it elsewhere
SUSPENDING = frozenset({"YIELD_VALUE", "SEND", "SEND_311", "RETURN_GENERATOR", "GET_AWAITABLE",
                        "GET_YIELD_FROM_ITER", "END_SEND", "CLEANUP_THROW", "GET_ANEXT", "GET_AITER",
                        "END_ASYNC_FOR", "ASYNC_GEN_WRAP", "INTRINSIC_ASYNC_GEN_WRAP",
                        "BEFORE_ASYNC_WITH"})


def template(*names, tracked=False):
    """Register a template for the canonical instructions ``names`` (in tracked blocks too)."""
    def register(fn):
        for name in names:
            TEMPLATES[name] = fn
            if tracked:
                TRACKED_TEMPLATES[name] = fn
        return fn
    return register
