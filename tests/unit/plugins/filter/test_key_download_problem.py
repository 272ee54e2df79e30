"""_key_download_problem: what ansible.builtin.get_url returned (as it returns it, run with failed_when: false) read as
the reason a repository key was not stored."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.accelops.gpu.plugins.plugin_utils._key_download_problem_filters import key_download_problem

SHA = "55ca6286e3e4f4fba5d0448333fa99fc5a404a73"


@pytest.mark.parametrize("result", [
    {"changed": True, "msg": "OK (582 bytes)", "status_code": 200, "checksum_src": SHA},  # http
    {"changed": True, "msg": "OK (3 bytes)", "status_code": None, "checksum_src": SHA},  # file://
    {"changed": True, "msg": "OK (unknown bytes)", "checksum_src": SHA, "checksum_dest": None},  # check mode, HEAD
    {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"},
])
def test_stored_or_skipped(result):
    assert key_download_problem(dict(result, failed=False, failed_when_result=False)) == ""


@pytest.mark.parametrize("result, reason", [
    ({"msg": "Request failed: <urlopen error [Errno 111] Connection refused>", "url": "http://127.0.0.1:9/k.pub"},
     "Request failed: <urlopen error [Errno 111] Connection refused>"),
    ({"msg": "Request failed", "status_code": 404, "response": "HTTP Error 404: File not found"},
     "Request failed (HTTP 404: HTTP Error 404: File not found)"),
    # A 304 cannot answer a forced download: nothing new was stored.
    ({"msg": "Not Modified", "status_code": 304, "changed": False}, "Not Modified (HTTP 304: )"),
    # Read, but not stored: the staged file stays what it was and must not be checked in place of the download.
    ({"msg": "Destination /var/cache/accelops-gpu is not writable", "checksum_src": SHA},
     "Destination /var/cache/accelops-gpu is not writable"),
    ({"checksum_src": SHA}, "get_url stored nothing and gave no reason"),
])
def test_not_stored(result, reason):
    assert key_download_problem(dict(result, failed=False, failed_when_result=False)) == reason


@pytest.mark.parametrize("result", [None, "OK (3 bytes)", ["OK"]])
def test_wants_the_registered_result(result):
    with pytest.raises(AnsibleFilterError, match=r"^_key_download_problem: expected the registered result"):
        key_download_problem(result)
