"""magpy.tracing — the feature behind ``magpy.trace(fn)``: one call run in the VM under capture,
reported as it happens.

    trace     ``Trace`` (events, fx graph, guards, RefGraph) and ``TracingObserver``, capture's observer
              that also reports what it handles; ``run_traced`` runs one call under it
    events    one object per thing that happened, each printing as one line at the user's file and line
    refgraph  the RefGraph of one traced call, as indented text and as Graphviz dot

It sits above capture (it observes what capture does, and renders capture's sources) and below the API.
(Not ``magpy/trace/``: ``magpy.trace`` is the public function.)
"""
