"""The GPU waste report (plugin_utils/_waste.py, _waste_html.py, filter gpu_waste): sacct's text as Slurm 24.11 prints
it (tests/sim/slurm/sacct-24.11.txt: jobs 41 and 42 carry the figures the simulated cluster's accounting recorded,
gres/gpumem=3221225472,gres/gpuutil=30 on GPUs 0,1 and gres/gpuutil=10 with only GPU 0 used), each figure worked out
by hand below."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest
from ansible.errors import AnsibleFilterError
from hostile import huge

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import ReportError
from ansible_collections.accelops.gpu.plugins.plugin_utils._gpu_waste_filters import (
    _gpu_waste_window,
    gpu_waste_html,
    gpu_waste_model,
)
from ansible_collections.accelops.gpu.plugins.plugin_utils._waste import sacct_argv, waste_model, window
from ansible_collections.accelops.gpu.plugins.plugin_utils._waste_html import render_html
from simnode import ROOT

SACCT = (ROOT / "tests" / "sim" / "slurm" / "sacct-24.11.txt").read_text(encoding="utf-8")
START, END, NOW = "2026-12-01", "2026-12-02T00:00:00", "2026-12-06T05:00:00"
JOB = "51|zoe|acct|COMPLETED|2026-12-01T10:00:00|2026-12-01T11:00:00|3600||billing=1,gres/gpu=%s,node=1|"
STEP = "51.0|zoe|acct|COMPLETED|2026-12-01T10:00:00|2026-12-01T11:00:00|%s|%s|gres/gpu=2|%s"


@pytest.fixture(scope="module")
def model():
    return waste_model(SACCT, START, END, NOW)


def jobs(model):
    return {job["job"]: job for job in model["jobs"]}


def test_the_two_accounting_jobs_of_the_simulated_cluster(model):
    found = jobs(model)
    # 41: 2 GPUs, 2 h; step 0 gpuutil 30 (GPU 0 at 10 % + GPU 1 at 20 %) for all 7200 s, one task; extern at 0.
    # Mean per GPU: 30 * 1 * 7200 / (2 * 7200) = 15 %; GPU-hours 2 * 2 = 4; idle 4 * (1 - 0.15) = 3.4.
    assert (found["41"]["gpus"], found["41"]["gpu_hours"], found["41"]["mean_utilization"],
            found["41"]["gpu_hours_idle"]) == (2, 4.0, 15.0, 3.4)
    assert (found["41"]["steps"], found["41"]["steps_measured"]) == (2, 2)
    # 42: 2 GPUs, 1 h, gpuutil 10 (GPU 0 only): 10 / 2 = 5 %; 2 GPU-hours; idle 2 * 0.95 = 1.9.
    assert (found["42"]["gpu_hours"], found["42"]["mean_utilization"], found["42"]["gpu_hours_idle"]) == (2.0, 5.0, 1.9)


def test_a_job_across_the_window_start_is_clipped_and_time_without_a_step_is_unused(model):
    # 43: 4 GPUs, 23:30 to 00:30, 30 min in the window: 2 GPU-hours. Its batch step used 320 (4 x 80 %) for 1800 s of
    # the job's 3600 s: 320 * 1800 / (4 * 3600) = 40 %; idle 2 * 0.6 = 1.2.
    job = jobs(model)["43"]
    assert (job["hours_in_window"], job["gpu_hours"], job["mean_utilization"], job["gpu_hours_idle"]) == (
        0.5, 2.0, 40.0, 1.2)


def test_a_running_job_counts_up_to_the_window_end_and_is_not_measured_yet(model):
    # 44: 1 GPU since 22:00, still running: 2 h to the window's end; its step has no usage yet.
    job = jobs(model)["44"]
    assert (job["running"], job["end"], job["gpu_hours"], job["measured"]) == (True, None, 2.0, False)
    assert job["mean_utilization"] is None and job["gpu_hours_idle"] is None


def test_a_running_job_counts_up_to_now_when_now_is_inside_the_window():
    model = waste_model(SACCT, START, END, "2026-12-01T23:00:00")
    assert jobs(model)["44"]["gpu_hours"] == 1.0


def test_an_accounting_without_gpuutil_is_not_measured_never_idle_nor_busy(model):
    # 45: 8 GPUs for 1 h, its step has no gres/gpuutil (no NVML plugin): 8 GPU-hours, not measured.
    job = jobs(model)["45"]
    assert (job["gpu_hours"], job["measured"], job["mean_utilization"], job["gpu_hours_idle"]) == (8.0, False, None,
                                                                                                   None)
    bio = next(account for account in model["accounts"] if account["account"] == "bio")
    assert (bio["gpu_hours_not_measured"], bio["gpu_hours_idle"], bio["mean_utilization"]) == (8.0, None, None)


def test_jobs_without_gpus_or_without_time_are_left_out(model):
    assert "46" not in jobs(model) and "48" not in jobs(model)
    assert (model["summary"]["jobs_without_gpus"], model["summary"]["jobs_outside_window"]) == (1, 1)


def test_totals_users_and_accounts(model):
    summary = model["summary"]
    # 4 + 2 + 2 + 2 + 8 + 0.5 GPU-hours; measured 4 + 2 + 2 + 0.5 = 8.5, idle 3.4 + 1.9 + 1.2 + 0 = 6.5,
    # mean 100 * (1 - 6.5 / 8.5) = 23.53 %; not measured 2 + 8.
    assert (summary["jobs"], summary["gpu_hours"], summary["gpu_hours_measured"], summary["gpu_hours_idle"],
            summary["mean_utilization"], summary["gpu_hours_not_measured"], summary["jobs_not_measured"],
            summary["jobs_running"]) == (6, 18.5, 8.5, 6.5, 23.53, 10.0, 2, 1)
    accounts = {a["account"]: a for a in model["accounts"]}
    # physics: 41 and 42, 6 GPU-hours, 5.3 idle, 100 * (1 - 5.3 / 6) = 11.67 %.
    assert (accounts["physics"]["jobs"], accounts["physics"]["gpu_hours"], accounts["physics"]["gpu_hours_idle"],
            accounts["physics"]["mean_utilization"]) == (2, 6.0, 5.3, 11.67)
    # chem: 43 measured (2 h, 1.2 idle: 40 %) and 44 not measured (2 h).
    assert (accounts["chem"]["gpu_hours"], accounts["chem"]["gpu_hours_idle"], accounts["chem"]["mean_utilization"],
            accounts["chem"]["gpu_hours_not_measured"]) == (4.0, 1.2, 40.0, 2.0)
    assert [a["account"] for a in model["accounts"]] == ["physics", "chem", "ops&co", "bio"]
    users = {u["user"]: u for u in model["users"]}
    assert (users["alice"]["gpu_hours_idle"], users["bob"]["gpu_hours_idle"]) == (3.4, 1.9)
    assert [job["job"] for job in model["jobs"]] == ["41", "42", "43", "47", "45", "44"]


def test_the_model_is_json_and_names_its_command(model):
    assert json.loads(json.dumps(model)) == model
    assert model["source"]["command"] == (
        "sacct --allusers --parsable2 --noheader --noconvert --starttime 2026-12-01T00:00:00 --endtime "
        "2026-12-02T00:00:00 --format JobID,User,Account,State,Start,End,ElapsedRaw,NTasks,AllocTRES,TRESUsageInAve")
    assert model["window"] == {"start": "2026-12-01T00:00:00", "end": "2026-12-02T00:00:00",
                               "now": "2026-12-06T05:00:00", "hours": 24.0, "timezone": "UTC"}


def test_several_tasks_count_each_tasks_gpus():
    # Two tasks, one GPU each at 50 %: Ave 50 over the tasks, 100 over the step's GPUs: 50 % per GPU.
    text = "\n".join([JOB % 2, STEP % (3600, 2, "gres/gpuutil=50")])
    assert waste_model(text, START, END)["jobs"][0]["mean_utilization"] == 50.0


@pytest.mark.parametrize("line, reason", [
    ("garbage", "1 fields, not the 10"),
    ("", None),
    ("51|zoe", "2 fields"),
    ("x51|zoe|acct|COMPLETED|2026-12-01T10:00:00|2026-12-01T11:00:00|3600||gres/gpu=2|",
     "JobID is not a Slurm job or step id"),
    ("51|zoe|acct|COMPLETED|2026-12-01T10:00:00|2026-12-01T11:00:00|-5||gres/gpu=2|", "ElapsedRaw is not a whole"),
    ("51|zoe|acct|COMPLETED|2026-12-01T10:00:00|2026-12-01T11:00:00|3600||gres/gpu=-2|", "gres/gpu is not a whole"),
    ("51|zoe|acct|COMPLETED|2026-12-01T10:00:00|2026-12-01T11:00:00|3600||gres/gpu=99999999999|",
     "gres/gpu is 99999999999, more than a real record holds"),
    ("51|zoe|acct|COMPLETED|2026-12-01T10:00:00|2026-12-01T11:00:00|%s||gres/gpu=2|" % ("9" * 5000),
     "ElapsedRaw is not a whole"),
    ("51|zoe|acct|COMPLETED|2026-13-01T10:00:00|2026-12-01T11:00:00|3600||gres/gpu=2|", "Start is not a time"),
    ("51|zoe|acct|COMPLETED|2026-12-01T12:00:00|2026-12-01T11:00:00|3600||gres/gpu=2|", "End 2026-12-01T11:00:00 is "
     "before Start"),
    ("51|zoe|acct|COMPLETED|2026-12-01T10:00:00|2026-12-01T11:00:00|3600||gres/gpu|", "AllocTRES is not a TRES"),
    ("51.0|zoe|acct|COMPLETED|2026-12-01T10:00:00|2026-12-01T11:00:00|3600|1|gres/gpu=2|gres/gpuutil=5",
     "step 51.0 comes without its job's line"),
])
def test_a_line_that_cannot_be_read_is_skipped_with_the_reason(line, reason):
    model = waste_model(line + "\n" + SACCT, START, END)
    if reason is None:
        assert model["summary"]["lines_skipped"] == 0
        return
    assert model["summary"]["lines_skipped"] == 1
    assert reason in model["skipped"][0]["reason"] and model["skipped"][0]["line"] == 1
    assert len(model["skipped"][0]["text"]) <= 200
    # The rest is read as without it.
    assert model["summary"]["gpu_hours"] == 18.5


@pytest.mark.parametrize("usage, tasks, reason", [
    ("gres/gpuutil=-10", "1", "gres/gpuutil is not a whole number"),
    ("gres/gpuutil=1e9", "1", "gres/gpuutil is not a whole number"),
    ("gres/gpuutil=5,gres/gpuutil=6", "1", "TRESUsageInAve is not a TRES list"),
    ("gres/gpuutil=10", "x", "NTasks is not a whole number"),
])
def test_a_bad_step_is_skipped_and_counted_in_its_job(usage, tasks, reason):
    model = waste_model("\n".join([JOB % 2, STEP % (3600, tasks, usage)]), START, END)
    assert reason in model["skipped"][0]["reason"]
    job = model["jobs"][0]
    assert (job["steps_skipped"], job["measured"], job["mean_utilization"]) == (1, False, None)


def test_a_reading_above_100_per_gpu_is_capped_and_said():
    model = waste_model("\n".join([JOB % 2, STEP % (3600, 1, "gres/gpuutil=%d" % 10 ** 7)]), START, END)
    job = model["jobs"][0]
    assert (job["mean_utilization"], job["gpu_hours_idle"], job["utilization_capped"]) == (100.0, 0.0, True)
    assert model["summary"]["jobs_capped"] == 1


def test_a_job_listed_twice_is_skipped_the_second_time():
    model = waste_model("\n".join([JOB % 2, JOB % 4]), START, END)
    assert model["jobs"][0]["gpus"] == 2 and "listed twice" in model["skipped"][0]["reason"]


def test_many_skipped_lines_are_counted_and_fifty_kept():
    model = waste_model("junk\n" * 500, START, END)
    assert (model["summary"]["lines_skipped"], len(model["skipped"]), model["jobs"]) == (500, 50, [])


@pytest.mark.parametrize("args, message", [
    ((None, START, END), "the input must be sacct's text (a string), got NoneType"),
    (({"stdout": ""}, START, END), "got dict"),
    ((SACCT, "yesterday", END), "start must be a UTC time"),
    ((SACCT, "2026-02-30", END), "start is not a date"),
    ((SACCT, END, START), "must come after its start"),
    ((SACCT, START, END, "soon"), "now must be a UTC time"),
    ((SACCT, START, huge()), "end must be a UTC time"),
])
def test_input_that_is_no_sacct_text_or_no_window_is_a_clear_error(args, message):
    with pytest.raises(ReportError, match=None) as raised:
        waste_model(*args)
    assert message in str(raised.value)
    with pytest.raises(AnsibleFilterError) as raised:
        gpu_waste_model(*args)
    assert str(raised.value).startswith("gpu_waste_model: ")


def test_the_window_from_the_variables():
    assert window("2026-12-08T06:00:00", "", "", 7) == {
        "start": "2026-12-01T06:00:00", "end": "2026-12-08T06:00:00", "now": "2026-12-08T06:00:00",
        "argv": sacct_argv("2026-12-01T06:00:00", "2026-12-08T06:00:00")}
    given = window("2026-12-08T06:00:00", "2026-11-01", "2026-11-02T12:30", "7")
    assert (given["start"], given["end"]) == ("2026-11-01T00:00:00", "2026-11-02T12:30:00")
    assert given["argv"][5:9] == ["--starttime", "2026-11-01T00:00:00", "--endtime", "2026-11-02T12:30:00"]


@pytest.mark.parametrize("args, message", [
    (("2026-12-08T06:00:00", "", "", 0), "accelops_gpu_waste_days must be a whole number of days from 1 to 3660"),
    (("2026-12-08T06:00:00", "", "", "7\n"), "accelops_gpu_waste_days must be"),
    (("2026-12-08T06:00:00", "", "", True), "accelops_gpu_waste_days must be"),
    (("2026-12-08T06:00:00", "2026-12-09", "", 7), "must come after its start"),
    (("2026-12-08T06:00:00", "2026-12-01;rm", "", 7), "accelops_gpu_waste_start must be a UTC time"),
    (("2026-12-08T06:00:00", "", "now-1day", 7), "accelops_gpu_waste_end must be a UTC time"),
    (("", "", "", 7), "now (the Slurm controller's clock) must be"),
])
def test_a_window_that_cannot_be_taken_names_the_variable(args, message):
    with pytest.raises(AnsibleFilterError) as raised:
        _gpu_waste_window(*args)
    assert str(raised.value).startswith("_gpu_waste_window: ") and message in str(raised.value)


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_the_html_escapes_what_sacct_gives_and_shows_the_figures(model):
    page = gpu_waste_html(model, "GPU waste <prod>", "2026-12-06 05:00 UTC")
    parser = _Text()
    parser.feed(page)
    assert "img" not in parser.tags and "script" not in parser.tags
    assert set(parser.tags) <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "table", "tr",
                                "th", "td", "span", "em", "code"}
    text = "".join(parser.text)
    assert "<img src=x onerror=alert(1)>" in text and "ops&co" in text and "GPU waste <prod>" in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "ops&amp;co" in page
    for figure in ("18.50", "6.50", "23.5 %", "3.40", "15.0 %", "1.90", "5.0 %", "not measured"):
        assert figure in text, figure


def test_the_html_of_an_empty_window():
    page = render_html(waste_model("", START, END), "t", "now")
    assert page.count("No GPU job in the window.") == 3


def test_the_html_refuses_what_is_not_the_model():
    with pytest.raises(AnsibleFilterError, match=r"^gpu_waste_html: the model must be what gpu_waste_model returns"):
        gpu_waste_html({"jobs": []}, "t", "now")
