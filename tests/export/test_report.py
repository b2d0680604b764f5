"""VerificationReport: one line per check, and a last line that gives the outcome."""

from keras_linformer.export.report import Check
from keras_linformer.export.report import VerificationReport


def test_a_check_is_one_indented_line():
    assert str(Check("layout", True, "version 1 holds saved_model.pb")) == (
        "  PASS  layout: version 1 holds saved_model.pb"
    )
    assert str(Check("warmup requests", False, "no record")) == "  FAIL  warmup requests: no record"


def test_a_report_passes_only_with_checks_that_all_pass():
    report = VerificationReport("saved_models/m/1", {}, "Verifying saved_models/m/1")
    assert not report.passed
    report.checks.append(Check("layout", True, "fine"))
    assert report.passed
    assert str(report).splitlines() == [
        "Verifying saved_models/m/1",
        "  PASS  layout: fine",
        "PASSED: all 1 checks for saved_models/m/1",
    ]
    report.checks.append(Check("warmup requests", False, "no record"))
    assert not report.passed
    assert report.summary() == "FAILED: 1 of 2 checks failed for saved_models/m/1"
