"""The study runner: a study's training runs, each in its own process and directory.

A `Study` is data: the program's name, its parser, its plan (the runs, as
dicts with stage, dataset, model, start, directory, module and argv) and
its report. `main` runs the runs of the plan that have not finished
(unless `--report-only`), then writes the report from the run directories.
A study may also take runs as finished from rows its own results recorded
(`Study.recorded`): a fresh clone then resumes from the committed CSV.
Nothing here imports TensorFlow.
"""

import dataclasses
import importlib
import json
import math
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable

from benchmarks import outputs
from keras_linformer.programs import cli

PRETRAIN = "training.pretrain"
FINETUNE = "training.finetune"
MAIN = "training.main"
# What `execute` writes into a run's directory beside the run's own files (the runs leave
# hidden names and logs alone).
COMMAND_FILE = ".command.txt"
COMMIT_FILE = ".commit.txt"
MACHINE_FILE = ".machine.json"
LOG_FILE = "output.log"
# The fields of a run's machine file (`record_machine`).
MACHINE, MATMUL = "machine", "matmul_gflops_per_s"
# A matmul rate is measured again once older than this: before each run of a real study
# (its runs take longer), once for the runs of a toy one.
MATMUL_RATE_MAX_AGE_S = 600
_measured = {}  # "at": time.monotonic() of the last measurement, "rate": its result.
# The lines of a run's output echoed to the study's own output (all go to LOG_FILE).
ECHOED = ("Epoch ", "Pretraining done", "Test accuracy", "Main job:", "python -m")


@dataclasses.dataclass(frozen=True)
class Study:
    """A study program.

    Attributes:
        program: its module, as `python -m` names it (the command its results record).
        parse_args: `argv -> (parser, args)`.
        plan: `args -> runs`, every run of the study in order.
        report: `(runs, args, command) -> paths`: writes the results from the run
            directories and returns the paths written.
        recorded: `args -> {command_key: row}`, the finished runs the study's results
            already hold (None: only run directories count). A planned run found there is
            not run again, and the report is rewritten after every run, so that the
            results hold each run as soon as it ends.
    """

    program: str
    parse_args: Callable
    plan: Callable
    report: Callable
    recorded: Callable | None = None

    def main(self, argv=None):
        """Runs the unfinished runs of the plan (unless `--report-only`), then the report."""
        parser, args = self.parse_args(argv)

        def work(args):
            runs = self.plan(args)
            # A `--report-only` rebuild names the command that ran the study.
            command = outputs.command_line(self.program, argv, drop=["--report-only"])
            recorded, after_each = {}, None
            if self.recorded:
                recorded = self.recorded(args)

                def after_each():
                    self.report(runs, args, command)

            run_study(parser, runs, args, recorded, after_each)
            for path in self.report(runs, args, command):
                cli.log(f"wrote {path}")

        return cli.run(parser, work, args)


def command_line(run):
    return f"python -m {run['module']} {shlex.join(run['argv'])}"


def command_key(command):
    """A run command's words but its `--output-dir`, the run directory itself: what makes
    two runs the same run, so that a study's runs can be moved, or linked into another
    study's directory."""
    words = shlex.split(command)
    return tuple(w for i, w in enumerate(words)
                 if w != "--output-dir" and (i == 0 or words[i - 1] != "--output-dir"))


def same_command(recorded, planned):
    """Whether two run commands are the same but for their `--output-dir`."""
    return command_key(recorded) == command_key(planned)


def is_finished(run):
    """Whether `run` finished with this very command (wherever its directory was then);
    refuses a finished run of another."""
    from keras_linformer.training import run_directory

    if not run_directory.is_finished(run["directory"]):
        return False
    recorded = os.path.join(run["directory"], COMMAND_FILE)
    previous = open(recorded, encoding="utf-8").read().strip() if os.path.isfile(recorded) else None
    if previous is None or not same_command(previous, command_line(run)):
        raise ValueError(
            f"--output-dir: {run['directory']} holds a finished run of another command "
            f"({previous!r}, now {command_line(run)!r}). Use another --output-dir, or "
            "remove that directory to rerun it."
        )
    return True


def source_commit():
    """The commit of the code that runs (its hash, `-dirty` with uncommitted changes), or None
    outside a git checkout."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        return subprocess.run(["git", "-C", root, "describe", "--always", "--dirty",
                               "--exclude", "*"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def recorded_commit(run):
    """The commit `execute` recorded for a run's last process (`COMMIT_FILE`), or None."""

    path = os.path.join(run["directory"], COMMIT_FILE)
    return open(path, encoding="utf-8").read().strip() if os.path.isfile(path) else None


def record_machine(directory):
    """Writes `MACHINE_FILE`: this machine (`outputs.machine_description`) and its float32
    matmul rate (`harness.runner.matmul_rate`) measured at most `MATMUL_RATE_MAX_AGE_S`
    before the run about to start."""
    from benchmarks.harness.runner import matmul_rate

    if time.monotonic() - _measured.get("at", -math.inf) > MATMUL_RATE_MAX_AGE_S:
        _measured.update(rate=matmul_rate(), at=time.monotonic())
    record = {MACHINE: outputs.machine_description(), MATMUL: _measured["rate"]}
    with open(os.path.join(directory, MACHINE_FILE), "w", encoding="utf-8") as file:
        json.dump(record, file, indent=2)
        file.write("\n")


def recorded_machine(run):
    """`{MACHINE: ..., MATMUL: ...}` that `execute` recorded before a run's last process
    (None values for runs from before it did)."""

    path = os.path.join(run["directory"], MACHINE_FILE)
    record = {}
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as file:
            record = json.load(file)
    return {MACHINE: record.get(MACHINE), MATMUL: record.get(MATMUL)}


def execute(run, position, total):
    """Runs one stage in a fresh process, its output to `LOG_FILE`; echoes progress lines.

    `COMMIT_FILE` records the commit of the code it ran, `MACHINE_FILE` the machine and
    its matmul rate just before (`record_machine`)."""

    os.makedirs(run["directory"], exist_ok=True)
    with open(os.path.join(run["directory"], COMMAND_FILE), "w", encoding="utf-8") as file:
        file.write(command_line(run) + "\n")
    with open(os.path.join(run["directory"], COMMIT_FILE), "w", encoding="utf-8") as file:
        file.write(f"{source_commit() or 'unknown'}\n")
    record_machine(run["directory"])
    label = f"[{position}/{total}] {run['stage']} {run['dataset']} {run['model']} ({run['start']})"
    cli.log(f"{label}: {command_line(run)}")
    start = time.perf_counter()
    with open(os.path.join(run["directory"], LOG_FILE), "a", encoding="utf-8") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", run["module"], *run["argv"]],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
        )
        for line in process.stdout:
            log.write(line)
            log.flush()
            if line.startswith(ECHOED) or "error:" in line:
                cli.log(f"    {line.rstrip()}")
        code = process.wait()
    if code != 0:
        raise RuntimeError(
            f"{label} failed with exit code {code} after {time.perf_counter() - start:.0f} s; "
            f"its output is in {os.path.join(run['directory'], LOG_FILE)}. Rerun the same "
            "command to resume it."
        )


def check_commands(runs):
    """Parses every run's flags with its program's own parser, before anything runs.

    A run's module (`training.pretrain`, run from the repository root) is the entry point
    of a program of keras_linformer.programs, whose parser it is."""
    for run in runs:
        program = run["module"].rpartition(".")[2]
        importlib.import_module(f"keras_linformer.programs.{program}").parse_args(run["argv"])


def run_all(runs, output_dir, recorded=(), after_each=None):
    """Checks every run's flags, then runs those not finished yet, one process each, in order.

    A run whose `command_key` is in `recorded` counts as finished; `after_each()` is called
    after each run."""
    check_commands(runs)
    known = [run for run in runs if command_key(command_line(run)) in recorded]
    pending = [run for run in runs if run not in known and not is_finished(run)]
    from_results = f" ({len(known)} of them recorded in the results)" if known else ""
    cli.log(f"{len(runs)} runs, {len(runs) - len(pending)} already finished{from_results}, "
            f"{len(pending)} to run, into {output_dir}")
    for position, run in enumerate(pending, 1):
        execute(run, position, len(pending))
        if after_each:
            after_each()


def run_study(parser, runs, args, recorded=(), after_each=None):
    """Runs `runs` unless `--report-only` (`run_all`); a run that fails ends the program with
    status 1."""
    if args.report_only:
        return
    try:
        run_all(runs, args.output_dir, recorded, after_each)
    except RuntimeError as error:
        parser.exit(1, f"{parser.prog}: error: {error}\n")
