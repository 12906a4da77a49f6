"""The run's state file: JSON lines appended as results arrive, so an interrupted run resumes where it stopped.

Three kinds of line:

    {"kind": "run", ...}                        settings and environment of one invocation (informational)
    {"kind": "case", "file": …, "index": …, …}  one finished test case: its eager and compiled records
    {"kind": "file", "file": …, "status": …}    a finished file: written after all its case lines

A file counts as done once its file line is written; case lines of a file that never got one (the run was
stopped inside it) are dropped on load and the file runs again. A file can also run again for some compilers
only (one that was unavailable before, or one asked to be redone, see ``todo``): its file line then says
``"merge": true`` and its new compiled records replace those compilers' old ones, case by case, keeping the
other compilers' records. A torn last line is ignored.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field


@dataclass
class FileResult:
    record: dict                                    # the file line
    cases: list[dict] = field(default_factory=list)  # its case lines, by index


class State:
    def __init__(self, path: str, fresh: bool = False):
        self.path = path
        self.files: dict[str, FileResult] = {}
        self._unfinished: dict[str, dict[int, dict]] = {}   # case lines of files still running
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        if fresh and os.path.exists(path):
            os.remove(path)
        if os.path.exists(path):
            self._load()
        self._out = open(path, "a", encoding="utf-8")

    def _load(self) -> None:
        pending: dict[str, dict[int, dict]] = {}
        with open(self.path, encoding="utf-8") as lines:
            for line in lines:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                kind = record.get("kind")
                if kind == "case":
                    pending.setdefault(record["file"], {})[record["index"]] = record
                elif kind == "file":
                    self._finished(record, pending.pop(record["file"], {}))

    def todo(self, file_name: str, compilers: list[str], redo: tuple[str, ...] = (),
             retry_imports: bool = False) -> list[str]:
        """Which of ``compilers`` (those able to run now) still have to run on ``file_name``: all of them for a
        new file; for a finished one, those that were unavailable or not asked for then, and those in ``redo``.
        A file that did not import, or has no test cases, is finished for every compiler (unless
        ``retry_imports``: then a file that did not import starts over, as after installing a package)."""
        result = self.files.get(file_name)
        if result is None:
            return list(compilers)
        if result.record.get("status") == "import_error":
            return list(compilers) if retry_imports else []
        if result.record.get("status") == "empty":
            return []
        ran = set(result.record.get("compilers", ())) - set(result.record.get("unavailable", ()))
        return [name for name in compilers if name not in ran or name in redo]

    def append(self, record: dict) -> None:
        self._out.write(json.dumps(record, sort_keys=False) + "\n")
        self._out.flush()

    def add_case(self, record: dict) -> None:
        self.append({"kind": "case", **record})
        self._unfinished.setdefault(record["file"], {})[record["index"]] = record

    def add_file(self, record: dict) -> None:
        record = {"kind": "file", **record}
        self.append(record)
        self._finished(record, self._unfinished.pop(record["file"], {}))

    def _finished(self, record: dict, cases: dict[int, dict]) -> None:
        old = self.files.get(record["file"])
        if record.get("merge") and old is not None and record.get("status") == "done":
            record, cases = _merge(old, record, cases)
        self.files[record["file"]] = FileResult(record, [cases[i] for i in sorted(cases)])

    def close(self) -> None:
        self._out.close()


def _merge(old: FileResult, record: dict, cases: dict[int, dict]) -> tuple[dict, dict[int, dict]]:
    """A file line and cases for a run of some compilers only, on top of an earlier run of the file: the new
    eager and compiled records win, except that "unavailable" never hides a real earlier record."""
    earlier = {case["index"]: case for case in old.cases}
    merged = {}
    for index, case in cases.items():
        compiled = dict((earlier.get(index) or {}).get("compiled") or {})
        for name, result in case.get("compiled", {}).items():
            if result.get("status") != "unavailable" or name not in compiled:
                compiled[name] = result
        merged[index] = {**case, "compiled": compiled}
    compilers = list(dict.fromkeys(list(old.record.get("compilers", ())) + list(record.get("compilers", ()))))
    ran = {name for line in (old.record, record)
           for name in set(line.get("compilers", ())) - set(line.get("unavailable", ()))}
    unavailable = sorted((set(old.record.get("unavailable", ())) | set(record.get("unavailable", ()))) - ran)
    return {**record, "compilers": compilers, "unavailable": unavailable}, merged


def default_path(key_parts: dict, corpus: str = "paritybench") -> str:
    """``~/.cache/magpy/<corpus>/<hash>.jsonl``: one state per corpus, checkout and result-changing settings."""
    key = hashlib.sha256(json.dumps(key_parts, sort_keys=True).encode()).hexdigest()[:16]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "magpy", corpus, f"{key}.jsonl")
