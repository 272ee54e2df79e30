"""dcgm_diag_problems over DCGM 4's diagnostic document, and over runs that gave none."""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.plugin_utils._dcgm_diag_problems_filters import (
    FilterModule,
    dcgm_diag_problems,
)


def document(*results, category="Deployment", test="software"):
    return json.dumps({"DCGM Diagnostic": {"test_categories": [
        {"category": category, "tests": [{"name": test, "results": list(results)}]}]},
        "metadata": {"version": "4.2.3"}})


def gpu(entity, status, *warnings):
    result = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": entity, "status": status}
    if warnings:
        result["warnings"] = [{"error_id": 29, "warning": text} for text in warnings]
    return result


def test_a_passed_diagnostic_has_no_problem():
    assert dcgm_diag_problems({"rc": 0, "stdout": document(gpu(0, "Pass"), gpu(1, "Pass")), "stderr": ""}) == []


@pytest.mark.parametrize("status", ["Warn", "Skip", "Not Run"])
def test_warnings_and_skipped_tests_are_no_failure(status):
    assert dcgm_diag_problems(document(gpu(0, status, "Plugin is not allowed on this SKU"))) == []


def test_each_failed_result_names_its_gpu_test_and_warnings():
    diag = {"rc": 226, "stderr": "", "stdout": document(
        gpu(0, "Pass"), gpu(3, "Fail", "Persistence Mode: Persistence mode for GPU 3\n is disabled.", "second"),
        gpu(5, "Fail"))}
    assert dcgm_diag_problems(diag) == [
        "GPU 3: Deployment/software failed: Persistence Mode: Persistence mode for GPU 3 is disabled; second",
        "GPU 5: Deployment/software failed: no reason given",
    ]


def test_a_failure_without_an_entity_or_in_another_category():
    text = document({"status": "Fail", "info": ["PCIe replay"]}, category="Integration", test="pcie")
    assert dcgm_diag_problems(text) == ["GPU: Integration/pcie failed: PCIe replay"]


@pytest.mark.parametrize(("stdout", "stderr"), [
    ("", "Error: Unable to complete diagnostic for group 2147483647. Return: (-3) NVML"),
    ("Error: unable to establish a connection to the host engine", ""),
    ("[1, 2]", ""),
    ('{"DCGM Diagnostic": {"test_categories": "none"}}', "x"),
])
def test_no_document_is_a_problem_never_a_pass(stdout, stderr):
    [problem] = dcgm_diag_problems({"rc": 1, "stdout": stdout, "stderr": stderr})
    assert problem.startswith("dcgmi diag gave no diagnostic document (exit status 1): ")
    assert problem.endswith((stderr or stdout)[-20:]) or stdout == "[1, 2]"


def test_a_failing_exit_status_without_a_failed_test_is_a_problem():
    [problem] = dcgm_diag_problems({"rc": 205, "stdout": document(gpu(0, "Pass")), "stderr": "timed out"})
    assert problem == "dcgmi diag exited with status 205 without naming a failed test: timed out"


def test_long_output_is_cut():
    [problem] = dcgm_diag_problems({"rc": 1, "stdout": "", "stderr": "x" * 5000})
    assert len(problem) < 600


@pytest.mark.parametrize("bad", [None, 3, ["a"]])
def test_other_input_is_refused(bad):
    with pytest.raises(AnsibleFilterError, match="_dcgm_diag_problems: the input must be"):
        dcgm_diag_problems(bad)


@pytest.mark.parametrize("result", [
    {"entity_id": 0},
    {"entity_id": 0, "status": None},
    {"entity_id": 0, "status": ["Fail"]},
    {"entity_id": 0, "status": "Fail "},
    {"entity_id": 0, "status": "Unknown"},
    "Fail",
])
def test_a_result_without_a_known_good_status_is_a_problem(result):
    [problem] = dcgm_diag_problems({"rc": 0, "stdout": document(result), "stderr": ""})
    assert problem.startswith(("GPU 0: Deployment/software ", "GPU: Deployment/software "))


def test_no_test_result_at_all_is_a_problem():
    [problem] = dcgm_diag_problems({"rc": 0, "stdout": document(), "stderr": ""})
    assert problem.startswith("dcgmi diag ran no test (exit status 0)")
    empty = json.dumps({"DCGM Diagnostic": {"test_categories": []}})
    assert dcgm_diag_problems(empty)[0].startswith("dcgmi diag ran no test")


def test_a_failed_summary_without_a_failed_result_is_a_problem():
    text = json.dumps({"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
        {"name": "memory", "results": [gpu(0, "Pass")], "test_summary": {"status": "Fail"}}]}]}})
    assert dcgm_diag_problems(text) == ["Hardware/memory: the test's summary is Fail"]


@pytest.mark.parametrize("stdout", [
    "[" * 100000 + "]" * 100000,
    json.dumps({"DCGM Diagnostic": {"test_categories": [{"category": "x", "tests": 3}, 5, {"tests": [7, {
        "name": "t", "results": 9}]}]}}),
    json.dumps({"DCGM Diagnostic": {"test_categories": [{"category": "x", "tests": [{"name": "t", "results": [
        {"status": "Fail", "warnings": 4, "info": 5, "entity_id": True}]}]}]}}),
])
def test_hostile_documents_give_problems_not_tracebacks(stdout):
    problems = dcgm_diag_problems({"rc": 0, "stdout": stdout, "stderr": ""})
    assert problems
    assert all(isinstance(problem, str) and len(problem) < 1200 for problem in problems)


def test_a_command_that_did_not_run_says_why():
    [problem] = dcgm_diag_problems({"rc": 2, "msg": "[Errno 2] No such file or directory: b'dcgmi'", "stdout": "",
                                    "stderr": ""})
    assert problem == ("dcgmi diag gave no diagnostic document (exit status 2): [Errno 2] No such file or directory: "
                       "b'dcgmi'")


def test_the_filter_is_registered():
    assert FilterModule().filters()["_dcgm_diag_problems"] is dcgm_diag_problems
