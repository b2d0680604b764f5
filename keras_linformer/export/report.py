"""What `keras_linformer.export.verify` found: one line per check, and the outcome."""

import collections


class Check(collections.namedtuple("Check", ["name", "passed", "detail"])):
    """One line of a verification report."""

    def __str__(self):
        return f"  {'PASS' if self.passed else 'FAIL'}  {self.name}: {self.detail}"


class VerificationReport:
    """What `verify` found; `str(report)` is the printed report.

    Attributes:
        export_dir: str, the version directory verified.
        info: dict, its `export_info.json`.
        checks: list of checks, each with `name`, `passed` and `detail`.
        passed: bool, whether there were checks and all passed.
        inputs: `{signature: {input: array}}`, what was fed.
        signatures: `{signature: {"inputs"|"outputs": {key: (dtype, shape)}}}`
            from `saved_model_cli show --all`.
        cli_outputs: `{signature: {output: array}}` from `saved_model_cli run`.
        load_outputs: `{signature: {output: array}}` from `tf.saved_model.load`.
    """

    def __init__(self, export_dir, info, header):
        self.export_dir, self.info, self.header = export_dir, info, header
        self.checks = []
        self.inputs, self.signatures, self.cli_outputs, self.load_outputs = {}, {}, {}, {}

    @property
    def passed(self):
        return bool(self.checks) and all(check.passed for check in self.checks)

    def summary(self):
        failed = sum(not check.passed for check in self.checks)
        if failed:
            return f"FAILED: {failed} of {len(self.checks)} checks failed for {self.export_dir}"
        return f"PASSED: all {len(self.checks)} checks for {self.export_dir}"

    def __str__(self):
        return "\n".join([self.header, *map(str, self.checks), self.summary()])
