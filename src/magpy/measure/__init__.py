"""magpy.measure — MagPy measured against corpora, beside eager and torch.compile (``python -m magpy ...``).

    bench          ``python -m magpy bench``: speed on the model zoo (``magpy.zoo``): every model under
                   eager, magpy and Inductor, checked against eager, timed in interleaved rounds
    paritybench    ``python -m magpy paritybench PATH``: the full-graph rate on a ParityBench checkout
    transformers   ``python -m magpy transformers``: every transformers base model from a tiny config
    harness        what the two corpus runners share: the compilers compared, forked workers with a
                   deadline per stage, the resumable state, comparing outputs, naming failures, scoring

Imports point one way: ``paritybench`` and ``transformers`` use ``harness``; ``bench`` stands alone
(over the zoo). Nothing else in magpy imports this package: ``cli`` reaches it inside each command.
"""
