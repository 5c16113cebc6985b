"""Load test of ``fact-reasoner serve`` on this machine, beside the command line.

Starts ``fact-reasoner serve`` on a free port of 127.0.0.1 (loopback only), then for each
number of clients: N client threads send one-record requests (atoms and passages supplied) for
T seconds, and the script prints p50/p95/p99 latency, throughput, responses by status, lost
and duplicated responses (each request carries its own id, which its row must echo), and the
server's resident memory at the start and end of the run. Beside it, the same kind of record
through one ``fact-reasoner`` process per request, and through one batch run of many records
in one process: the ratios. Every figure is printed with the load average it was measured at.
It stops by itself: each run lasts T seconds (and at most ``--max-requests``).

Two ways to send requests (``--cache``):

- ``on``: the server's NLI pair cache on, every request the same record: after the first, its
  pairs are answered from the cache. This measures the service around the judge, not the judge.
- ``off``: no cache, and every request a different record (its passages carry the request's
  id), so every pair is judged: this measures the judge under load.

    nice -n 5 python -m scripts.load_serve --clients 1,8 --seconds 60 --cache off
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

PEOPLE = [
    ("Marie Curie", "Warsaw", 1867, "physicist", "radioactivity"),
    ("Albert Einstein", "Ulm", 1879, "physicist", "relativity"),
    ("Ada Lovelace", "London", 1815, "mathematician", "the Analytical Engine"),
    ("Alan Turing", "London", 1912, "mathematician", "computability"),
    ("Lise Meitner", "Vienna", 1878, "physicist", "nuclear fission"),
]


def record(atoms: int, passages: int, tag: str = "") -> dict[str, Any]:
    """A record of ``atoms`` claims and ``passages`` passages about one person (some claims
    true, some false); ``tag`` makes its texts (so its NLI pairs) its own."""
    name, city, year, job, work = PEOPLE[0]
    claims = [
        f"{name} was a {job}.",
        f"{name} was born in {city}.",
        f"{name} was born in {year}.",
        f"{name} worked on {work}.",
        f"{name} was born in Paris.",
        f"{name} won the Nobel Prize in Physics.",
        f"{name} won the Nobel Prize in Chemistry.",
        f"{name} discovered penicillin.",
        f"{name} taught at the University of Paris.",
        f"{name} died in 1950.",
    ]
    texts = [
        f"{name} was a Polish and naturalised-French {job} who conducted pioneering research on {work}.",
        f"{name} was born in {city}, in what was then the Kingdom of Poland, in {year}.",
        f"In 1903 {name} shared the Nobel Prize in Physics; in 1911 she won the Nobel Prize in Chemistry.",
        f"{name} became the first woman to be a professor at the University of Paris.",
        f"{name} died in 1934 at a sanatorium in Passy, France.",
        "Penicillin was discovered in 1928 by Alexander Fleming.",
    ]
    suffix = f" (ref {tag})" if tag else ""
    chosen = [(claims * 10)[i] for i in range(atoms)]
    return {
        "input": f"Tell me a bio of {name}.{suffix}",
        "output": " ".join(chosen),
        "atoms": [{"id": f"a{i}", "text": text} for i, text in enumerate(chosen)],
        "contexts": [{"id": f"c{i}", "text": (texts * 10)[i] + suffix} for i in range(passages)],
    }


def rss_mb(pid: int) -> float:
    """Resident memory of a process (Linux ``/proc``), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


class Server:
    """``fact-reasoner serve`` in a child process on a free loopback port."""

    def __init__(self, cache: bool, cache_dir: Path, extra: list[str]) -> None:
        command = [sys.executable, "-m", "fact_reasoner", "serve", "--port", "0", "--quiet", *extra]
        if not cache:
            command.append("--no-cache")
        env = {**os.environ, "FACT_REASONER_CACHE": str(cache_dir)}
        self.process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True, env=env)
        assert self.process.stderr is not None
        for line in self.process.stderr:
            found = re.search(r"serving on http://127\.0\.0\.1:(\d+)/", line)
            if found:
                self.url = f"http://127.0.0.1:{found.group(1)}"
                break
        else:
            raise RuntimeError(f"the server did not start: {self.process.wait()}")
        threading.Thread(target=lambda: [None for _ in self.process.stderr], daemon=True).start()  # type: ignore[union-attr]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()


def run_clients(
    url: str, clients: int, seconds: float, distinct: bool, size: tuple[int, int], limit: int
) -> dict[str, Any]:
    """N clients for T seconds; what came back."""
    import httpx

    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    answered: Counter[str] = Counter()
    sent: list[str] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds
    counter = iter(range(10**9))

    def client(index: int) -> None:
        with httpx.Client(base_url=url, timeout=120) as http:
            while time.monotonic() < stop_at:
                with lock:
                    number = next(counter)
                    if number >= limit:
                        return
                ident = f"{index}-{number}"
                body = record(*size, tag=ident if distinct else "")
                body["input"] += f" [request {ident}]"  # echoed in the row: which request it answers
                with lock:
                    sent.append(ident)
                started = time.perf_counter()
                try:
                    response = http.post("/v1/assess", json=body)
                except httpx.TransportError as error:
                    with lock:
                        statuses[type(error).__name__] += 1
                    continue
                elapsed = time.perf_counter() - started
                with lock:
                    statuses[str(response.status_code)] += 1
                    if response.status_code == 200:
                        latencies.append(elapsed)
                        echoed = re.search(r"\[request (\S+)\]$", response.json()["input"])
                        answered[echoed.group(1) if echoed else "?"] += 1

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    lost = sum(1 for ident in sent if answered[ident] == 0)
    asked = set(sent)
    # a row answered twice, or a row that answers no request of this run
    duplicated = sum(n - 1 for n in answered.values() if n > 1) + sum(n for i, n in answered.items() if i not in asked)
    return {
        "requests": len(sent),
        "ok": len(latencies),
        "statuses": dict(statuses),
        "lost": lost,
        "duplicated": duplicated,
        "p50": percentile(latencies, 50),
        "p95": percentile(latencies, 95),
        "p99": percentile(latencies, 99),
        "throughput": len(latencies) / wall,
        "seconds": wall,
    }


def cli_per_request(count: int, cache: bool, size: tuple[int, int], work: Path) -> dict[str, Any]:
    """One ``fact-reasoner`` process per request (the same kind of record; with the cache, its
    pairs already in the cache, as the server's are: one run first, not timed)."""
    times = []
    for i in range(-1 if cache else 0, count):
        source = work / f"one{i}.jsonl"
        source.write_text(json.dumps(record(*size, tag="" if cache else f"cli-{i}")) + "\n")
        command = [sys.executable, "-m", "fact_reasoner", "--input-file", str(source), "--output-file",
                   str(work / f"one{i}.out.jsonl"), "--quiet", "--overwrite", *([] if cache else ["--no-cache"])]  # fmt: skip
        started = time.perf_counter()
        subprocess.run(command, cwd=ROOT, check=True, env={**os.environ, "FACT_REASONER_CACHE": str(work / "cache")})
        if i >= 0:
            times.append(time.perf_counter() - started)
    mean = statistics.mean(times)
    return {"mean_seconds": mean, "throughput": 1 / mean, "runs": count}


def cli_batch(count: int, cache: bool, size: tuple[int, int], work: Path) -> dict[str, Any]:
    """``count`` records through one ``fact-reasoner`` process."""
    source = work / "batch.jsonl"
    source.write_text(
        "".join(json.dumps(record(*size, tag="" if cache else f"batch-{i}")) + "\n" for i in range(count))
    )
    command = [sys.executable, "-m", "fact_reasoner", "--input-file", str(source), "--output-file",
               str(work / "batch.out.jsonl"), "--quiet", "--overwrite", *([] if cache else ["--no-cache"])]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, env={**os.environ, "FACT_REASONER_CACHE": str(work / "cache")})
    wall = time.perf_counter() - started
    return {"seconds": wall, "throughput": count / wall, "records": count}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", default="1,8", help="comma-separated numbers of concurrent clients")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each run (default 60)")
    parser.add_argument("--cache", choices=("on", "off"), default="off", help="see the module docstring")
    parser.add_argument("--atoms", type=int, default=10)
    parser.add_argument("--passages", type=int, default=5)
    parser.add_argument("--cli-runs", type=int, default=3, help="processes timed for one process per request")
    parser.add_argument("--batch-records", type=int, default=20, help="records of the one batch run")
    parser.add_argument("--max-requests", type=int, default=100_000, help="a bound on the requests of one run")
    parser.add_argument("--serve-args", default="", help="more flags for `fact-reasoner serve`")
    args = parser.parse_args(argv)
    cache = args.cache == "on"
    size = (args.atoms, args.passages)
    rows = []
    with tempfile.TemporaryDirectory(prefix="load_serve_") as tmp:
        work = Path(tmp)
        server = Server(cache, work / "server-cache", args.serve_args.split())
        try:
            import httpx

            with httpx.Client(base_url=server.url, timeout=300) as http:  # loads what the first request needs
                http.post("/v1/assess", json=record(*size)).raise_for_status()
            for clients in [int(n) for n in args.clients.split(",")]:
                before, load_before = rss_mb(server.process.pid), load()
                result = run_clients(server.url, clients, args.seconds, not cache, size, args.max_requests)
                result.update(clients=clients, rss_start=before, rss_end=rss_mb(server.process.pid))
                result.update(load_start=load_before, load_end=load())
                rows.append(result)
                print(json.dumps(result), file=sys.stderr)
        finally:
            server.stop()
        load_cli = load()
        per_request = cli_per_request(args.cli_runs, cache, size, work)
        per_request["load"] = f"{load_cli} → {load()}"
        load_batch = load()
        batch = cli_batch(args.batch_records, cache, size, work)
        batch["load"] = f"{load_batch} → {load()}"
    print(f"\n{args.atoms} atoms × {args.passages} passages per record; NLI pair cache {args.cache} "
          f"({'identical requests: pairs answered from the cache' if cache else 'every request different: every pair judged'}); "
          f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs\n")  # fmt: skip
    print(
        "| clients | requests | p50 s | p95 s | p99 s | responses/s | statuses | lost | duplicated | RSS start → end MB | load (1/5/15 min) start → end |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['clients']} | {r['requests']} | {r['p50']:.3f} | {r['p95']:.3f} | {r['p99']:.3f} | {r['throughput']:.2f} | "
            f"{', '.join(f'{k}: {v}' for k, v in sorted(r['statuses'].items()))} | {r['lost']} | {r['duplicated']} | "
            f"{r['rss_start']:.0f} → {r['rss_end']:.0f} | {r['load_start']} → {r['load_end']} |"
        )
    print(
        f"\none CLI process per request: {per_request['mean_seconds']:.2f} s each, {per_request['throughput']:.3f} "
        f"records/s ({per_request['runs']} runs; load {per_request['load']})"
    )
    print(
        f"one batch run ({batch['records']} records, one process): {batch['throughput']:.3f} records/s (load {batch['load']})"
    )
    for r in rows:
        print(
            f"{r['clients']} client(s): {r['throughput'] / per_request['throughput']:.1f}× one process per request, "
            f"{r['throughput'] / batch['throughput']:.2f}× the batch run"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
