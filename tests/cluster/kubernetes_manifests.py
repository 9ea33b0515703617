#!/usr/bin/env python3
"""examples/kubernetes/ as a Kubernetes cluster would run it, without the cluster: the Indexed
Job's shard count agrees with itself, and its container's arguments (with $(VAR) expanded as
Kubernetes expands declared variables, and the volumes' mount paths pointed at folders here) run
`lockstep regress` on every shard; the merge Job's command then prints what the unsharded run
prints.  Usage: kubernetes_manifests.py LOCKSTEP EXAMPLES_DIR"""
import os
import re
import subprocess
import sys
import tempfile

import yaml

lockstep, examples = sys.argv[1], sys.argv[2]


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


job = yaml.safe_load(open(os.path.join(examples, "regress-job.yaml")))
merge = yaml.safe_load(open(os.path.join(examples, "regress-merge.yaml")))
spec = job["spec"]
if spec.get("completionMode") != "Indexed":
    fail("the regress Job is not an Indexed Job")
container = spec["template"]["spec"]["containers"][0]
env = {e["name"]: e for e in container["env"]}
shards = int(env["LOCKSTEP_SHARDS"]["value"])
if spec["completions"] != shards:
    fail(f"completions {spec['completions']} but LOCKSTEP_SHARDS {shards}")
if "batch.kubernetes.io/job-completion-index" not in env["JOB_COMPLETION_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"]:
    fail("JOB_COMPLETION_INDEX is not the completion index")
rules = spec["podFailurePolicy"]["rules"]
if not any(r["action"] == "FailIndex" and 1 in r["onExitCodes"]["values"] for r in rules):
    fail("a shard with a failing case (exit 1) would be retried")

with tempfile.TemporaryDirectory() as work:
    corpus, results = os.path.join(work, "corpus"), os.path.join(work, "results")
    os.makedirs(corpus)
    os.makedirs(results)
    for i in range(12):
        with open(os.path.join(corpus, f"ball-{i}.golden"), "w") as f:
            f.write(f"scene ball\nseed {i}\nticks 30\ninputs bots\n")
    clean = {"PATH": "/usr/bin:/bin"}
    subprocess.run([lockstep, "regress", "--update", corpus], env=clean, check=True, capture_output=True)
    whole = subprocess.run([lockstep, "regress", corpus], env=clean, capture_output=True, text=True)

    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    local = {"corpus": corpus, "results": results}

    def here(arg, variables):
        arg = re.sub(r"\$\((\w+)\)", lambda m: variables.get(m.group(1), m.group(0)), arg)
        for path, name in mounts.items():
            arg = arg.replace(path, local[name])
        return arg

    for index in range(shards):
        variables = {"JOB_COMPLETION_INDEX": str(index), "LOCKSTEP_SHARDS": str(shards)}
        args = [here(a, variables) for a in container["args"]]
        r = subprocess.run([lockstep] + args, env=dict(clean, **variables), capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"shard {index}: {args} exited {r.returncode}: {r.stderr}")
        want = f"regress: shard {index}/{shards}, from JOB_COMPLETION_INDEX={index} of LOCKSTEP_SHARDS={shards}"
        if want not in r.stderr:
            fail(f"shard {index} did not take its shard from the Job: {r.stderr!r}")

    merge_container = merge["spec"]["template"]["spec"]["containers"][0]
    mounts = {m["mountPath"]: m["name"] for m in merge_container["volumeMounts"]}
    command = [here(a, {}) for a in merge_container["command"] + merge_container["args"]]
    command = [c.replace("/usr/local/bin/lockstep", lockstep) for c in command]
    merged = subprocess.run(command, env=clean, capture_output=True, text=True)
    if merged.returncode != 0 or merged.stdout != whole.stdout:
        fail(f"the merge printed {merged.stdout!r} (exit {merged.returncode}, {merged.stderr!r}), not {whole.stdout!r}")
    if not os.path.exists(os.path.join(results, "junit.xml")):
        fail("the merge wrote no JUnit file")
print(f"PASS: {shards} shards of the Indexed Job and its merge, equal to the unsharded run")
