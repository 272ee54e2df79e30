"""A stand-in for mokutil on simulated nodes, which have no UEFI firmware: it keeps the firmware's MOK list and the
pending enrolment requests in /etc/accelops-sim/mok/ and answers like mokutil does.

  mokutil --test-key CERT   "CERT is not enrolled" (exit 0), "CERT is already enrolled" or
                            "CERT is already in the enrollment request" (exit 1)
  mokutil --import CERT     reads the one-time password twice from stdin and queues the request
  mokutil --list-new        the SHA1 fingerprints of the queued certificates
  mokutil --list-enrolled   the SHA1 fingerprints of the enrolled certificates

and one thing only a person at the console can do, MokManager's "Enroll MOK" at the next boot:

  mokutil --simulate-boot-confirm PASSWORD   enrols the queued certificates when the password matches
"""

import hashlib
import json
import os
import sys

STATE = os.environ.get("ACCELOPS_SIM_MOK", "/etc/accelops-sim/mok/state.json")


def load():
    try:
        with open(STATE) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return {"enrolled": [], "pending": [], "password_sha256": None, "imports": 0}


def save(state):
    os.makedirs(os.path.dirname(STATE), exist_ok=True)
    with open(STATE + ".tmp", "w") as handle:
        json.dump(state, handle, indent=1)
    os.replace(STATE + ".tmp", STATE)


def fingerprint(path):
    with open(path, "rb") as handle:
        return hashlib.sha1(handle.read()).hexdigest()


def main(args):
    state = load()
    if len(args) == 2 and args[0] in ("--test-key", "-t"):
        if not os.path.exists(args[1]):
            print("Failed to open %s" % args[1], file=sys.stderr)
            return 255
        fpr = fingerprint(args[1])
        if fpr in state["enrolled"]:
            print("%s is already enrolled" % args[1])
            return 1
        if fpr in state["pending"]:
            print("%s is already in the enrollment request" % args[1])
            return 1
        print("%s is not enrolled" % args[1])
        return 0
    if len(args) == 2 and args[0] in ("--import", "-i"):
        first, second = (sys.stdin.readline().rstrip("\n"), sys.stdin.readline().rstrip("\n"))
        if first != second:
            print("Password doesn't match", file=sys.stderr)
            return 255
        if not first:
            print("Abort", file=sys.stderr)
            return 255
        fpr = fingerprint(args[1])
        if fpr in state["enrolled"] or fpr in state["pending"]:
            print("SKIP: %s is already %s" % (args[1], "enrolled" if fpr in state["enrolled"] else "in the request"))
            return 0
        state["pending"].append(fpr)
        state["password_sha256"] = hashlib.sha256(first.encode()).hexdigest()
        state["imports"] += 1
        save(state)
        return 0
    if args in (["--list-new"], ["-N"]):
        print("\n".join("SHA1 Fingerprint: %s" % fpr for fpr in state["pending"]))
        return 0
    if args in (["--list-enrolled"], ["-l"]):
        print("\n".join("SHA1 Fingerprint: %s" % fpr for fpr in state["enrolled"]))
        return 0
    if len(args) == 2 and args[0] == "--simulate-boot-confirm":
        if hashlib.sha256(args[1].encode()).hexdigest() != state["password_sha256"]:
            print("MokManager: wrong password", file=sys.stderr)
            return 1
        state["enrolled"] += state["pending"]
        state["pending"] = []
        save(state)
        return 0
    print("fake mokutil: unsupported arguments %s" % " ".join(args), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
