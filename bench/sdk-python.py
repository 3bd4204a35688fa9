"""Measures paddock-sdk (shared/sdk-python) against bare httpx; run by bench/sdk-python.ts.

Prints one JSON object: per-call p50 of the SDK and of bare httpx making the same request
(interleaved, one process, one connection pool each), and a 100 MiB file written and read back
through the SDK with the process's extra memory (peak RSS over RSS before the transfer).
"""

import hashlib
import json
import os
import resource
import sys
import time

import httpx

from paddock import Sandbox
from paddock._http import no_delay_transport

FILE_MIB = int(os.environ.get("BENCH_SDK_FILE_MIB", "100"))
CALLS = int(os.environ.get("BENCH_SDK_CALLS", "200"))
WARMUP = 20


def rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def p50(samples):
    s = sorted(samples)
    return s[max(0, (len(s) + 1) // 2 - 1)]


def big_file(sbx: Sandbox) -> dict:
    """Writes FILE_MIB MiB from an iterator and reads it back streamed: speed, and the process's extra RSS."""
    chunk = os.urandom(1024 * 1024)
    before = rss_kb()
    digest = hashlib.sha256()
    started = time.perf_counter()
    sbx.files.write("big.bin", (chunk for _ in range(FILE_MIB)))
    written = time.perf_counter() - started
    started = time.perf_counter()
    size = 0
    for piece in sbx.files.read_stream("big.bin"):
        digest.update(piece)
        size += len(piece)
    read = time.perf_counter() - started
    expected = hashlib.sha256()
    for _ in range(FILE_MIB):
        expected.update(chunk)
    if size != FILE_MIB * 1024 * 1024 or digest.digest() != expected.digest():
        raise SystemExit(f"the file read back differs ({size} bytes)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = {
        "mib": FILE_MIB,
        "write_mb_s": round(FILE_MIB * 1.048576 / written, 1),
        "read_mb_s": round(FILE_MIB * 1.048576 / read, 1),
        "extra_rss_mb": round((peak - before) / 1024, 1),
    }
    sbx.files.remove("big.bin")
    return result


def main() -> None:
    sandbox_id = sys.argv[1]
    sbx = Sandbox.connect(sandbox_id)
    out = {}

    # The big file first, while the process's peak RSS is still its baseline.
    served = httpx.get(os.environ["PADDOCK_BASE_URL"].rstrip("/") + "/v1/openapi.json").json()["paths"]
    if "/v1/sandboxes/{id}/files/raw" in served:
        out["file"] = big_file(sbx)
    else:
        out["file"] = None  # an API without the raw file routes

    # Per-call overhead: the same GET and the same exec, SDK and bare httpx in turns.
    base = os.environ["PADDOCK_BASE_URL"].rstrip("/")
    headers = {"Authorization": f"Bearer {os.environ['PADDOCK_API_KEY']}", "Accept": "application/json"}
    # The floor: bare httpx on the SDK's transport (TCP_NODELAY); httpx's default one beside it.
    bare = httpx.Client(timeout=60, transport=no_delay_transport())
    default = httpx.Client(timeout=60)
    get_url, exec_url = f"{base}/v1/sandboxes/{sandbox_id}", f"{base}/v1/sandboxes/{sandbox_id}/exec"
    cases = {
        "GET /v1/sandboxes/{id}": (
            lambda: sbx.info(),
            lambda: bare.get(get_url, headers=headers).json(),
            lambda: default.get(get_url, headers=headers).json(),
        ),
        "POST …/exec (true)": (
            lambda: sbx.commands.run(["true"]),
            lambda: bare.post(exec_url, headers=headers, json={"command": ["true"]}).json(),
            lambda: default.post(exec_url, headers=headers, json={"command": ["true"]}).json(),
        ),
    }
    out["calls"] = {}
    for name, calls in cases.items():
        samples = [[], [], []]
        cpu = [0.0, 0.0, 0.0]
        for i in range(WARMUP + CALLS):
            for k in (range(3) if i % 2 == 0 else reversed(range(3))):
                t0, c0 = time.perf_counter(), time.process_time()
                calls[k]()
                if i >= WARMUP:
                    samples[k].append((time.perf_counter() - t0) * 1000)
                    cpu[k] += time.process_time() - c0
        sdk, raw, plain = (p50(x) for x in samples)
        out["calls"][name] = {
            "n": CALLS,
            "sdk_p50_ms": round(sdk, 2),
            "httpx_p50_ms": round(raw, 2),
            "ratio": round(sdk / raw, 3),
            "httpx_default_p50_ms": round(plain, 2),
            # The client's own CPU per call: what the SDK adds, steadier than latency on a busy host.
            "sdk_cpu_us": round(cpu[0] / CALLS * 1e6),
            "httpx_cpu_us": round(cpu[1] / CALLS * 1e6),
        }
    default.close()
    bare.close()
    sbx.close()
    print(json.dumps(out))


main()
