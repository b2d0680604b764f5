"""Start N local workers of a training program under MultiWorkerMirroredStrategy.

Each worker is the same command with its own TF_CONFIG (free localhost
ports, task index 0..N-1; worker 0 is the chief) and its own log file. The
launcher waits for all of them, forwards SIGTERM/SIGINT to every worker
(they save a checkpoint and stop; run the launcher again to resume), and
exits with the first failing worker's status.

    keras-linformer-launch --workers 2 -- keras-linformer-pretrain --max-steps 100

On a real cluster, start the program on each host yourself with
    TF_CONFIG='{"cluster": {"worker": ["host1:12345", "host2:12345"]},
                "task": {"type": "worker", "index": I}}'
(I = 0 on host1, 1 on host2; the same command everywhere, and an
--output-dir on storage every host reaches).
"""

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from keras_linformer.programs import cli
from keras_linformer.utils import signals

# Seconds a worker has to save and exit after SIGTERM before it is killed.
GRACE_SECONDS = 60


def parse_args(argv=None):
    parser = cli.program_parser("launch", __doc__,
                                epilog=__doc__[__doc__.index("On a real cluster"):])
    parser.add_argument("--workers", type=cli.positive_int, default=2,
                        help="Number of local worker processes.")
    parser.add_argument("--log-dir", default="artifacts/launch",
                        help="Where worker-I.log files go (appended to, so that a launch "
                             "that resumes keeps the earlier logs).")
    parser.add_argument("--ports", type=cli.tcp_port, nargs="+", default=None,
                        help="The workers' ports (one each); default: free ports picked now.")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="The command every worker runs, after `--`.")
    args = parser.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        parser.error(cli.name_commands(
            "give the command to run after `--`, e.g. -- keras-linformer-pretrain"))
    if args.ports is not None and len(args.ports) != args.workers:
        parser.error(f"--ports: give one port per worker ({args.workers}), got {len(args.ports)}: "
                     f"{args.ports}")
    if args.ports is not None and len(set(args.ports)) != len(args.ports):
        repeated = sorted({port for port in args.ports if args.ports.count(port) > 1})
        parser.error(f"argument --ports: each worker needs its own port; {repeated} given twice")
    return parser, args


def launch(args):
    """Starts the workers, waits for them; returns the exit status."""
    ports, busy = [], []
    with contextlib.ExitStack() as stack:  # Port 0: a free one, held until all are picked.
        for port in args.ports or [0] * args.workers:
            sock = stack.enter_context(socket.socket())
            try:
                sock.bind(("localhost", port))
                ports.append(sock.getsockname()[1])
            except OSError:
                busy.append(port)
    if busy:
        raise ValueError(f"--ports: {busy} already in use on localhost; pick others or omit "
                         "--ports.")
    addresses = [f"localhost:{port}" for port in ports]
    # Checked before any worker starts, so none is left running alone.
    if shutil.which(args.command[0]) is None:
        raise ValueError(f"command: {args.command[0]!r} is not a program on PATH (nor an "
                         "executable path); the workers run COMMAND after `--`.")
    if os.path.exists(args.log_dir) and not os.path.isdir(args.log_dir):
        raise ValueError(f"--log-dir: {args.log_dir!r} is a file, not a directory.")
    os.makedirs(args.log_dir, exist_ok=True)
    workers = {}  # Index: (process, log file) of those still running.
    for index in range(args.workers):
        log_path = os.path.join(args.log_dir, f"worker-{index}.log")
        log_file = open(log_path, "a", encoding="utf-8")
        print(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} worker {index} of {args.workers}: "
              f"{' '.join(args.command)}", file=log_file, flush=True)
        config = {"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}}
        process = subprocess.Popen(args.command, stdout=log_file, stderr=subprocess.STDOUT,
                                   env={**os.environ, "TF_CONFIG": json.dumps(config)})
        workers[index] = (process, log_file)
        cli.log(f"worker {index} ({addresses[index]}): pid {process.pid}, log {log_path}")
    deadline = None

    def forward(signum, frame):
        # Workers save and stop; one stuck waiting for a dead peer is killed after a grace.
        nonlocal deadline
        deadline = deadline or time.monotonic() + GRACE_SECONDS
        for process, _ in workers.values():
            process.send_signal(signal.SIGTERM)

    with signals.handlers(forward, signal.SIGTERM, signal.SIGINT):
        status = 0
        while workers:
            for index, (process, log_file) in list(workers.items()):
                code = process.poll()
                if code is None:
                    continue
                del workers[index]
                log_file.close()
                cli.log(f"worker {index} exited with status {code} ({log_file.name})")
                if code and not status:
                    status = code
                    deadline = time.monotonic()  # The others would wait for it in a collective.
                    if workers:
                        cli.log(f"worker {index} failed: stopped the others, which cannot go "
                                "on without it. Run the same command again to resume from the "
                                "last checkpoint.")
            if deadline is not None and time.monotonic() > deadline:
                for process, _ in workers.values():
                    process.kill()
            time.sleep(0.2)
        return status


# Exits with the first failed worker's status (128 + a signal), or 0.
main = cli.console_script(parse_args, launch,
                          lambda status: status if status >= 0 else 128 - status)


if __name__ == "__main__":
    sys.exit(main())
