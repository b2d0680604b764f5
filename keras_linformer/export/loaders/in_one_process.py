"""Runs loader programs one after another in this process: TensorFlow starts once.

    python -m in_one_process PLAN_JSON RESULTS_JSON

PLAN_JSON holds a list of `[MODULE, [ARGS...]]`; after each program, RESULTS_JSON holds one
`{"status", "stdout", "stderr"}` per program run so far.
"""

import atexit
import contextlib
import gc
import importlib
import io
import json
import sys
import traceback


def main(argv=None):
    plan_file, results_file = (sys.argv[1:] if argv is None else list(argv))[:2]
    with open(plan_file, encoding="utf-8") as file:
        plan = json.load(file)
    # TensorFlow's imports make half a million objects: imported with the garbage collector
    # off, then frozen, no collection walks them (seconds). A failing import is reported
    # with its program, below.
    gc.disable()
    for module, _ in plan:
        with contextlib.suppress(Exception):
            importlib.import_module(module)
    gc.enable()
    gc.freeze()
    results = []
    for module, args in plan:
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                status = importlib.import_module(module).main(args)
            except SystemExit as exit_info:
                status = exit_info.code
            except Exception:  # noqa: BLE001  Reported as the program's failure.
                traceback.print_exc()
                status = 1
            if status is not None and not isinstance(status, int):
                print(status, file=sys.stderr)  # As Python exits on `sys.exit("message")`.
                status = 1
        results.append({"status": status or 0, "stdout": stdout.getvalue(),
                        "stderr": stderr.getvalue()})
        with open(results_file, "w", encoding="utf-8") as file:
            json.dump(results, file)


if __name__ == "__main__":
    atexit.register(gc.freeze)  # Exit skips collecting what the programs made (seconds).
    main()
