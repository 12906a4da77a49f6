"""The run's state file: JSON lines appended as results arrive, so an interrupted run resumes where it stopped.

Three kinds of line:

    {"kind": "run", ...}                        settings and environment of one invocation (informational)
    {"kind": "case", "file": …, "index": …, …}  one finished test case: its eager and compiled records
    {"kind": "file", "file": …, "status": …}    a finished file: written after all its case lines

A file counts as done once its file line is written; case lines of a file that never got one (the run was
stopped inside it) are dropped on load and the file runs again. When a file runs again anyway (see
``done``), its newer lines replace the older ones. A torn last line is ignored.
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
                    cases = pending.pop(record["file"], {})
                    self.files[record["file"]] = FileResult(record, [cases[i] for i in sorted(cases)])

    def done(self, file_name: str, compilers: list[str]) -> bool:
        """True when ``file_name`` finished with every one of ``compilers`` able to run.

        A file finished while a compiler was unavailable (or not asked for) runs again once it is."""
        result = self.files.get(file_name)
        if result is None:
            return False
        ran = set(result.record.get("compilers", ())) - set(result.record.get("unavailable", ()))
        return set(compilers) <= ran

    def append(self, record: dict) -> None:
        self._out.write(json.dumps(record, sort_keys=False) + "\n")
        self._out.flush()

    def add_case(self, record: dict) -> None:
        self.append({"kind": "case", **record})
        self._unfinished.setdefault(record["file"], {})[record["index"]] = record

    def add_file(self, record: dict) -> None:
        record = {"kind": "file", **record}
        self.append(record)
        cases = self._unfinished.pop(record["file"], {})
        self.files[record["file"]] = FileResult(record, [cases[i] for i in sorted(cases)])

    def close(self) -> None:
        self._out.close()


def default_path(key_parts: dict) -> str:
    """``~/.cache/magpy/paritybench/<hash>.jsonl``: one state per checkout and result-changing settings."""
    key = hashlib.sha256(json.dumps(key_parts, sort_keys=True).encode()).hexdigest()[:16]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "magpy", "paritybench", f"{key}.jsonl")
