"""``python -m magpy …``: the command line. A thin argument parser; the work lives in the modules it calls.

Commands:
    bench    run the model zoo under eager, magpy and torch.compile and print a comparison table
    paritybench  run a ParityBench checkout through magpy and TorchDynamo (fullgraph=True) and score both
    transformers  run every transformers base model (tiny configs) through magpy and TorchDynamo and score both
    explain  capture one call of FILE.py:FUNC and print its graphs, breaks and guards
    trace    run one call of FILE.py:FUNC in the VM and print what happened, event by event
    minify   shrink a call of FILE.py:FUNC that a backend gets wrong to the fewest graph ops, and write repro.py

``explain``, ``trace`` and ``minify`` take a script that defines FUNC and ``example_inputs()`` (see magpy.script).
"""
from __future__ import annotations

import argparse
import sys

from .backends.settings import MODES

SIZES = ("small", "medium", "large")


def _names(values: list[str] | None) -> list[str] | None:
    """Accept ``--models a,b c`` as well as ``--models a --models b``."""
    if not values:
        return None
    return [name for value in values for name in value.replace(",", " ").split()]


def _bench_parser(commands) -> None:
    bench = commands.add_parser(
        "bench", help="compare eager, magpy and torch.compile on the model zoo",
        description="Run each model of the zoo under each backend, check the outputs against eager, and print "
                    "graphs, breaks, capture/compile time, median call times and speedups.")
    bench.add_argument("--models", nargs="+", metavar="NAME", help="models to run (default: all; see --list)")
    bench.add_argument("--backends", nargs="+", metavar="NAME",
                       help="comma- or space-separated subset of eager,magpy,inductor (default: all three; "
                            "eager is always run as the baseline)")
    bench.add_argument("--size", choices=SIZES, default="small", help="model size (default: small)")
    bench.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    bench.add_argument("--quick", action="store_true",
                       help="every model under eager and magpy, torch.compile on the three cheapest to compile "
                            "unless --backends names it; 1 thread, few rounds")
    bench.add_argument("--train", action="store_true",
                       help="time training steps (forward, loss, backward, AdamW step; the optimizer runs eagerly "
                            "for every compiler) and check the loss and weights against eager's")
    bench.add_argument("--compile-opt", action="store_true",
                       help="with --train: each compiler compiles the optimizer's step too (magpy.compile(opt.step), "
                            "torch.compile(opt.step))")
    bench.add_argument("--mode", choices=tuple(MODES),
                       help="both compilers' mode (magpy.compile and torch.compile take the same names; "
                            "reduce-overhead replays graphs as CUDA graphs, training graphs too)")
    bench.add_argument("--amp", action="store_true",
                       help="with --train: forward and loss under torch.autocast(device, dtype=torch.bfloat16)")
    bench.add_argument("--repeat", type=int, metavar="N", help="timed calls per measurement (max)")
    bench.add_argument("--warmup", type=int, metavar="N", help="untimed calls before timing")
    bench.add_argument("--timeout", type=float, metavar="S", help="limit per model and backend (0: none)")
    bench.add_argument("--budget", type=float, metavar="S", help="limit for the whole run (0: none)")
    bench.add_argument("--threads", type=int, metavar="N", help="torch.set_num_threads(N)")
    bench.add_argument("--fresh-cache", action="store_true",
                       help="empty on-disk compiler caches, so compile times are those of a first run")
    bench.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    bench.add_argument("--log", metavar="FILE",
                       help="where to write tracebacks, compiler warnings and every round's times "
                            "(default: bench.log beside MagPy's kernel cache, ~/.cache/magpy)")
    bench.add_argument("--plot", metavar="FILE.png", help="also draw the speedups (needs matplotlib)")
    bench.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    bench.add_argument("--verbose", action="store_true",
                       help="also print tracebacks and compilers' logs as they come (the log has them too)")
    bench.add_argument("--list", action="store_true", help="list the models and exit")
    bench.set_defaults(handler=_bench)


def _bench(args: argparse.Namespace) -> int:
    """Exit status 0, or 1 when a compiler's outputs differed from eager's, 2 for bad options."""
    from . import zoo
    from .measure.bench import BenchError, BenchOptions, run
    from .measure.bench.log import default_log_path

    if args.list:
        for name in zoo.names():
            spec = zoo.get(name)
            print(f"{name:13s} {spec.summary}\n{'':13s} exercises: {'; '.join(spec.exercises)}")
        return 0
    try:
        options = BenchOptions.build(
            models=_names(args.models), backends=_names(args.backends), quick=args.quick, train=args.train,
            amp=args.amp, compile_opt=args.compile_opt, repeat=args.repeat,
            warmup=args.warmup, timeout=args.timeout, budget=args.budget, size=args.size, device=args.device,
            json_path=args.json, log_path=args.log or default_log_path(), plot_path=args.plot,
            threads=args.threads, fresh_cache=args.fresh_cache, progress=not args.no_progress,
            verbose=args.verbose, mode=args.mode)
        report = run(options)
    except BenchError as error:
        print(f"magpy bench: error: {error}", file=sys.stderr)
        return 2
    return 1 if report.wrong() else 0


def _corpus_options(parser, unit, timeout, timeout_help, memory) -> None:
    """The options the corpus runners (ParityBench, transformers) share: selection, compilers, workers,
    tolerances, and the resumable state file."""
    parser.add_argument("--limit", type=int, metavar="N", help=f"at most N {unit}, in name order")
    parser.add_argument("--offset", type=int, default=0, metavar="N", help=f"skip the first N selected {unit}")
    parser.add_argument("--compilers", nargs="+", metavar="NAME", help="subset of magpy,dynamo (default: both)")
    parser.add_argument("--backend", default="eager", help="backend passed to both compilers (default: eager)")
    parser.add_argument("--jobs", type=int, default=2, metavar="N", help="worker processes at once (default: 2)")
    parser.add_argument("--timeout", type=float, default=timeout, metavar="S",
                        help=f"{timeout_help} (default: {timeout:g})")
    parser.add_argument("--threads", type=int, default=1, metavar="N",
                        help="torch threads per worker (default: 1)")
    parser.add_argument("--memory", type=float, default=memory, metavar="GB",
                        help=f"address-space limit per worker, 0 for none (default: {memory:g})")
    parser.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance against eager (default: 1e-4)")
    parser.add_argument("--atol", type=float, default=1e-4, help="absolute tolerance against eager (default: 1e-4)")
    parser.add_argument("--fresh", action="store_true", help="discard earlier results in the state file")
    parser.add_argument("--redo", nargs="+", metavar="NAME", default=[],
                        help=f"run these compilers again on {unit} already done, keeping the others' results "
                             "(e.g. --redo magpy after MagPy changed)")
    parser.add_argument("--json", metavar="FILE", help="also write the score and every record as JSON")
    parser.add_argument("--top", type=int, default=12, metavar="N", help="rows per failure-reason table")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def _corpus_settings(args: argparse.Namespace) -> dict:
    """The shared options (``_corpus_options``) as the runners' ``Options`` keywords."""
    return dict(split=args.split, limit=args.limit, offset=args.offset, only=_names(args.only) or [],
                compilers=_names(args.compilers) or ["dynamo", "magpy"], backend=args.backend, jobs=args.jobs,
                timeout=args.timeout, threads=args.threads, memory_gb=args.memory, rtol=args.rtol,
                atol=args.atol, state=args.state, fresh=args.fresh, redo=_names(args.redo) or [],
                json_path=args.json, top=args.top, progress=not args.quiet, verbose=args.verbose)


def _run_corpus(name, run, options, error_type) -> int:
    try:
        run(options)
    except error_type as error:
        print(f"magpy {name}: error: {error}", file=sys.stderr)
        return 2
    return 0


def _paritybench_parser(commands) -> None:
    pb = commands.add_parser(
        "paritybench", help="score magpy and TorchDynamo full-graph capture on a ParityBench checkout",
        description="Run every test case of a ParityBench checkout that runs in eager through magpy.compile and "
                    "torch.compile (fullgraph=True), check two calls against eager, and report per-case and "
                    "per-file rates side by side, dynamic files apart, with the most common failure reasons. "
                    "Each file runs in a worker process of its own; results go to a JSONL state file, so a "
                    "rerun resumes where the last one stopped.")
    pb.add_argument("path", metavar="PATH", help="the ParityBench checkout (or its generated/ folder)")
    pb.add_argument("--split", choices=("public", "heldout", "all"), default="public",
                    help="which files: the public development split (default), the held-out one, or all")
    pb.add_argument("--only", nargs="+", metavar="PATTERN", help="files matching these globs or substrings")
    _corpus_options(pb, "files", 120.0, "seconds for each stage of a case: import, eager, each compiler; a "
                    "compiler also gets twice the case's eager time", 6.0)
    pb.add_argument("--compat", action="store_true",
                    help="restore names removed from old Python/numpy/scipy/torch (torch._six, "
                         "collections.Iterable, scipy.signal.kaiser, ...) before importing the files")
    pb.add_argument("--site", action="append", default=[], metavar="DIR",
                    help="extra import folder for the workers, e.g. one holding torchvision (repeatable)")
    pb.add_argument("--state", metavar="FILE", help="JSONL state file (default: one per checkout and settings "
                                                    "under ~/.cache/magpy/paritybench)")
    pb.add_argument("--retry-imports", action="store_true",
                    help="run files that failed to import again (e.g. after installing a package)")
    pb.add_argument("--verbose", action="store_true", help="let the test files' own output through")
    pb.set_defaults(handler=_paritybench)


def _paritybench(args: argparse.Namespace) -> int:
    from .measure.paritybench import Options, RunError, run

    options = Options(args.path, compat=args.compat, sites=args.site, retry_imports=args.retry_imports,
                      **_corpus_settings(args))
    return _run_corpus("paritybench", run, options, RunError)


def _transformers_parser(commands) -> None:
    hf = commands.add_parser(
        "transformers", help="score magpy and TorchDynamo full-graph capture on every transformers base model",
        description="Build every base-model architecture of the installed transformers from its default config "
                    "shrunk to tiny sizes (random weights, eval mode), run it in eager twice, then through "
                    "magpy.compile and torch.compile (fullgraph=True), each in a fresh worker process, on the "
                    "same inputs and on new ones of the same shapes; report the share of the architectures "
                    "that run deterministically in eager that each keeps in one graph matching eager, median "
                    "first-call times and the most common failure reasons. Results go to a JSONL state file, "
                    "so a rerun resumes where the last one stopped.")
    hf.add_argument("--split", choices=("public", "heldout"), default="public",
                    help="the public development split (default) or the held-out one")
    hf.add_argument("--only", nargs="+", metavar="TYPE", help="these model types (or globs), e.g. bert gpt2")
    hf.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="where the models and inputs live (default: cpu); references stay on the CPU")
    _corpus_options(hf, "architectures", 60.0,
                    "seconds for each stage: eager, each compiler (plus twice eager's time)", 8.0)
    hf.add_argument("--state", metavar="FILE", help="JSONL state file (default: one per settings under "
                                                    "~/.cache/magpy/transformers)")
    hf.add_argument("--verbose", action="store_true", help="let the models' own output through")
    hf.set_defaults(handler=_transformers)


def _transformers(args: argparse.Namespace) -> int:
    from .measure.transformers import Options, RunError, run

    return _run_corpus("transformers", run, Options(device=args.device, **_corpus_settings(args)), RunError)


_SCRIPT_HELP = ("FILE.py defines FUNC (a function, an nn.Module instance, or an nn.Module class taking no "
                "arguments) and example_inputs(), which returns FUNC's arguments: a tuple, or a pair (args, "
                "kwargs). The script is imported as a module: its __main__ block does not run.")


def _script_arguments(parser) -> None:
    parser.add_argument("target", metavar="FILE.py:FUNC", help="the script and the callable in it")
    parser.add_argument("--inputs", default="example_inputs", metavar="NAME",
                        help="the function of FILE.py that returns the arguments (default: example_inputs)")


def _explain_parser(commands) -> None:
    explain = commands.add_parser(
        "explain", help="capture one call of FILE.py:FUNC and print its graphs, breaks and guards",
        description="Run FUNC on its example inputs in MagPy's VM, as compiled calls run it, and print what "
                    "MagPy made of the call, segment by segment: each graph (with its code), its guards (those "
                    "of your program; --verbose: all), its replay, and the graph break that ends it with its "
                    "reason and line. A program that raises is reported with the line of yours it raised "
                    "at. " + _SCRIPT_HELP)
    _script_arguments(explain)
    explain.add_argument("--verbose", action="store_true",
                         help="show every guard: also those torch's own code makes as it runs (hidden by default)")
    explain.set_defaults(handler=_explain)


def _trace_parser(commands) -> None:
    trace = commands.add_parser(
        "trace", help="run one call of FILE.py:FUNC in the VM and print what happened, event by event",
        description="Run FUNC on its example inputs in MagPy's VM and print each event as it happens: calls "
                    "and returns, tensor ops (at the line of yours that led to them), reads and writes of "
                    "outside state by their paths, guards, and where capture gave up and why. "
                    "breakpoint() in FUNC opens pdb at your line. " + _SCRIPT_HELP)
    _script_arguments(trace)
    trace.add_argument("--only", choices=("user", "ops", "all"), default="user",
                       help="user: events in your files (default); ops: tensor ops and graph inputs; all")
    trace.add_argument("--lines", action="store_true", help="also report each line as it starts to run")
    trace.add_argument("--refgraph", action="store_true",
                       help="also print the RefGraph: outside objects read and written, and the paths between")
    trace.add_argument("--dot", metavar="OUT.dot", help="write the RefGraph as Graphviz dot to OUT.dot")
    trace.set_defaults(handler=_trace)


def _minify_parser(commands) -> None:
    minify = commands.add_parser(
        "minify", help="shrink a call of FILE.py:FUNC that a backend gets wrong, and write a repro script",
        description="Run FUNC on its example inputs eagerly and compiled by the backend, and when they "
                    "differ (--check accuracy) or the compiled call raises where eager does not (--check "
                    "error), shrink the faulty graph by delta debugging to the fewest ops that still show "
                    "it; print it and write a standalone repro script (exit status 1 while the fault "
                    "shows, 0 once fixed). Exit status: 0 with a repro written, 1 when there is nothing "
                    "to minify or the fault is outside the graph. " + _SCRIPT_HELP +
                    " A backend FILE.py registers when imported (magpy.register_backend) can be named.")
    _script_arguments(minify)
    minify.add_argument("--backend", default="magpy", help="backend name (default: magpy)")
    minify.add_argument("--check", choices=("accuracy", "error"), default="accuracy",
                        help="accuracy: values differ from eager (default); error: the compiled call, or the "
                             "backend compiling it, raises")
    minify.add_argument("--out", default="repro.py", metavar="FILE",
                        help="where to write the repro script (default: repro.py in the current folder)")
    minify.set_defaults(handler=_minify)


def _minify(args: argparse.Namespace) -> int:
    import magpy
    target = _load_script("minify", args)
    if target is None:
        return 2
    try:
        found = magpy.minify(target.fn, *target.args, backend=args.backend, check=args.check, out=args.out,
                             **target.kwargs)
    except (ValueError, KeyError) as error:  # (nothing to minify; an unknown backend)
        print(f"magpy minify: {error.args[0] if error.args else error}", file=sys.stderr)
        return 1
    print(found)
    return 0 if found.path is not None else 1


def _load_script(command: str, args: argparse.Namespace):
    from .script import ScriptError, load
    try:
        return load(args.target, args.inputs)
    except ScriptError as error:
        print(f"magpy {command}: error: {error}", file=sys.stderr)
        return None


def _program_raised(command: str, name: str, exc: BaseException) -> int:
    from .capture.user_files import raised_at
    from .capture.places import short_path
    at = raised_at(exc)
    where = f" ({short_path(at[0])}:{at[1]})" if at is not None else ""
    print(f"magpy {command}: {name} raised {type(exc).__name__}: {exc}{where}", file=sys.stderr)
    return 1


def _explain(args: argparse.Namespace) -> int:
    import magpy
    target = _load_script("explain", args)
    if target is None:
        return 2
    try:
        report = magpy.explain(target.fn, *target.args, verbose=args.verbose, **target.kwargs)
    except Exception as exc:  # noqa: BLE001 - the program's own error, told as one line
        return _program_raised("explain", target.name, exc)
    print(report)
    return 0


def _trace(args: argparse.Namespace) -> int:
    import magpy
    target = _load_script("trace", args)
    if target is None:
        return 2
    traced = magpy.trace(target.fn, only=args.only, lines=args.lines, on_event=print)
    try:
        traced(*target.args, **target.kwargs)
    except Exception as exc:  # noqa: BLE001 - the program's own error, told as one line
        return _program_raised("trace", target.name, exc)
    trace = traced.trace
    u = trace.unsupported
    ops = trace.capture.op_count
    print(f"{len(trace.events)} event(s), {ops} op(s) in the graph; " +
          (f"capture gave up: {u.reason} ({u.where()})" if u is not None else "captured whole"))
    if args.refgraph:
        print(trace.refgraph_text())
    if args.dot:
        try:
            with open(args.dot, "w") as out:
                out.write(trace.to_dot())
        except OSError as error:
            print(f"magpy trace: error: cannot write {args.dot}: {error.strerror}", file=sys.stderr)
            return 2
        print(f"RefGraph written to {args.dot}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m magpy", description="MagPy, a JIT compiler for PyTorch.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _bench_parser(commands)
    _paritybench_parser(commands)
    _transformers_parser(commands)
    _explain_parser(commands)
    _trace_parser(commands)
    _minify_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: sys.argv[1:]), run the command, return its exit status."""
    args = build_parser().parse_args(argv)
    return args.handler(args)
