"""magpy.measure.harness — what the corpus runners (``python -m magpy paritybench``, ``python -m magpy transformers``)
share: the compilers they compare (compilers), forked workers with a deadline per stage (scheduler), the
resumable JSONL state (state), comparing outputs with eager's (compare), naming failures (reasons), scoring
files and cases (scoring) and the report's tables (report).

A corpus runner brings its own corpus, its worker (what one file's cases do in a child process) and its
report layout; a file is its unit of work (a ParityBench test file, a transformers architecture) holding
numbered cases, each run in eager and then by each compiler.
"""
