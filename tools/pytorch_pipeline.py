"""Bubblescope's schedules checked in PyTorch's own pipeline runtime (torch.distributed.pipelining).

Run through tools/pytorch-check.sh, which creates the torch virtual environment first
(tools/torch-env.sh). Everything here runs on CPU with the gloo backend, one process per
pipeline rank and one thread per process.

Subcommands:

  trace OUTDIR     run a schedule (a PyTorch class or a CSV file) for a warm-up step and
                   profiled steps; one gzipped Chrome trace per rank plus run.json, the
                   sidecar that says what ran (class, sizes, model, torch version, the
                   executed per-rank orders)
  dump OUTDIR      PyTorch's own CSV dumps of every schedule class it ships, in both formats,
                   at a few sizes; with --grid also ScheduleInterleavedZeroBubble's compute-only
                   orders over every (P, stages per rank, M) it accepts
  lower IN OUT     PyTorch's lowering of a compute-only file: _load_csv("compute_only") then
                   _dump_csv("compute_comms")
  run FILE         run a CSV in _PipelineScheduleRuntime (or, with --runtime multi, in
                   PipelineScheduleMulti) for one step and compare every parameter gradient
                   with one process's forward and backward (relative error at most 1e-5)
  check            PyTorch's own dumps of every schedule class run in PyTorch, read back by
                   the CLI, converted to both CSV forms and run; then every family `bubblescope
                   list` names, exported by `simulate --export` in both forms at a few sizes,
                   `plan --export`'s winners, and `--a2a-overlap`'s combined 1F1B (OVERLAP_F_B
                   pairs): each file run, gradients compared with one process, each comms file
                   compared with PyTorch's lowering, each file with pairs run again with every
                   pair's B first
  summarize DIR    what a trace directory measured: per rank, time in compute passes,
                   in waits inside them, in communication actions and outside any action

The rules PyTorch applies (lowering, validation, which runtime runs which file) are written
down in tools/PYTORCH-NOTES.md.
"""

import argparse
import csv
import datetime
import gzip
import io
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

EXAMPLES = """examples:
  tools/pytorch-check.sh trace target/traces/izb --schedule InterleavedZeroBubble --microbatches 4
  tools/pytorch-check.sh trace target/traces/zbv --schedule ZBVZeroBubble --microbatches 8
  tools/pytorch-check.sh trace target/traces/plan --csv plan.csv --hidden 2048
  tools/pytorch-check.sh trace target/traces/uneven --schedule Interleaved1F1B --layers-per-stage 1,1,1,2
  tools/pytorch-check.sh summarize tests/fixtures/traces/interleaved-1f1b
  tools/pytorch-check.sh dump tests/fixtures/pytorch-dumps --grid
  tools/pytorch-check.sh lower schedule.csv lowered.csv
  tools/pytorch-check.sh run lowered.csv --format compute_comms
  tools/pytorch-check.sh check --cli target/release/bubblescope
  tools/pytorch-check.sh check --a2a-only
  TORCH_VERSION=2.14.1 tools/pytorch-check.sh check
"""


# ---------------------------------------------------------------------------------------------
# Errors


class UserError(Exception):
    """A problem with the input: printed as `error: ...` and `hint: ...`, exit status 2."""

    def __init__(self, message, hint=None):
        super().__init__(message)
        self.message = message
        self.hint = hint


def short(exc, limit=400):
    """One line naming an exception: its type and the first line of its message."""
    lines = [l.strip() for l in str(exc).splitlines() if l.strip()]
    first = lines[0] if lines else ""
    if first.endswith(":") and len(lines) > 1:  # "Failed to run stage backward:" says little alone
        first += " " + lines[1]
    line = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------
# Schedule files: only what is needed to set up a run (the grammar itself is PyTorch's business)

COMPUTE_CELL = re.compile(r"^(\d+)(F|I|W|B)(\d+)$")
ANY_CELL = re.compile(
    r"^(\d+)(WAIT_REDUCE_GRAD|WAIT_SEND_F|WAIT_SEND_B|REDUCE_GRAD|UNSHARD|RESHARD|SEND_F|RECV_F|SEND_B|RECV_B|F|I|B|W)(\d*)$"
)
OVERLAP_CELL = re.compile(r"^\((.*)\)OVERLAP_F_B$")


def read_rows(path):
    """The rows of a schedule CSV (one per rank), cells stripped, trailing empty cells kept."""
    try:
        with open(path, newline="") as f:
            rows = [[cell.strip() for cell in row] for row in csv.reader(f)]
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror.lower()}", "give the path of a PyTorch schedule CSV")
    if not rows:
        raise UserError(f"{path} is empty", "a PyTorch schedule CSV has one row per pipeline rank")
    return rows


def compute_parts(cell):
    """The compute actions (stage, kind, microbatch) a cell holds; [] for others and empty cells."""
    overlap = OVERLAP_CELL.match(cell)
    parts = overlap.group(1).split(";") if overlap else [cell]
    found = []
    for part in parts:
        m = COMPUTE_CELL.match(part.strip())
        if m:
            found.append((int(m.group(1)), m.group(2), int(m.group(3))))
    return found


@dataclass
class FileShape:
    """The sizes a schedule file implies: ranks, stages, microbatches, and where stages run."""

    devices: int
    stages: int
    microbatches: int
    stage_to_rank: list
    has_comms: bool

    def stages_of(self, rank):
        return [s for s, r in enumerate(self.stage_to_rank) if r == rank]


def file_shape(path):
    """Reads the shape of a schedule CSV from its compute cells."""
    rows = read_rows(path)
    stage_rank = {}
    microbatches = 0
    has_comms = False
    for rank, row in enumerate(rows):
        for column, cell in enumerate(row):
            if not cell:
                continue
            parts = compute_parts(cell)
            if not parts and not OVERLAP_CELL.match(cell):
                if not ANY_CELL.match(cell):
                    raise UserError(
                        f"{path}: row {rank + 1}, column {column + 1}: {cell!r} is not a PyTorch action",
                        "cells look like 0F1, 2I0, 1W3, 3B2, 1SEND_F0, (0F7;7B3)OVERLAP_F_B",
                    )
                has_comms = True
            for stage, _kind, mb in parts:
                if stage_rank.setdefault(stage, rank) != rank:
                    raise UserError(
                        f"{path}: stage {stage} runs on rows {stage_rank[stage] + 1} and {rank + 1}",
                        "every stage runs on one rank (row)",
                    )
                microbatches = max(microbatches, mb + 1)
    if not stage_rank:
        raise UserError(f"{path} has no compute actions", "cells look like 0F1, 2I0, 1W3, 3B2")
    stages = max(stage_rank) + 1
    missing = [s for s in range(stages) if s not in stage_rank]
    if missing:
        raise UserError(
            f"{path}: stages {missing} have no compute actions, but stage {stages - 1} has",
            "stages are numbered 0 to S-1 with no gaps",
        )
    return FileShape(len(rows), stages, microbatches, [stage_rank[s] for s in range(stages)], has_comms)


def write_rows(path, rows):
    """Writes rows as PyTorch's _dump_csv does (csv.writer, \\r\\n line ends)."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        for row in rows:
            writer.writerow(row)


def order_text(actions):
    """A list of actions as strings, None as an empty string (as _dump_csv writes it)."""
    return ["" if a is None else str(a) for a in actions]


# ---------------------------------------------------------------------------------------------
# Torch helpers (imported lazily so --help needs no torch)


def torch_modules():
    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import schedules

    return torch, dist, schedules


def torch_version():
    import torch

    return torch.__version__.split("+")[0]


SCHEDULE_CLASSES = [
    "ScheduleGPipe",
    "Schedule1F1B",
    "ScheduleInterleaved1F1B",
    "ScheduleLoopedBFS",
    "ScheduleInterleavedZeroBubble",
    "ScheduleZBVZeroBubble",
    "ScheduleDualPipeV",
]


def schedule_class(name):
    """A PyTorch schedule class by its name, with or without the `Schedule` prefix."""
    _, _, schedules = torch_modules()
    key = name[len("Schedule") :] if name.startswith("Schedule") else name
    try:
        return schedules.get_schedule_class(key)
    except ValueError:
        raise UserError(
            f"unknown PyTorch schedule {name!r}",
            "use one of " + ", ".join(SCHEDULE_CLASSES) + " (the Schedule prefix is optional)",
        )


def is_single(cls):
    _, _, schedules = torch_modules()
    return issubclass(cls, schedules.PipelineScheduleSingle)


def v_shaped(cls):
    return cls.__name__ in ("ScheduleZBVZeroBubble", "ScheduleDualPipeV")


def stage_placement(cls, devices, per_rank):
    """stage -> rank as the class places stages (loop, or V for ZBV and DualPipeV)."""
    from torch.distributed.pipelining._utils import generate_stage_to_rank_mapping

    mapping = generate_stage_to_rank_mapping(devices, devices * per_rank, style="v" if v_shaped(cls) else "loop")
    return [mapping[s] for s in range(devices * per_rank)]


def mock_stages(devices, stages, count):
    """Stand-ins for PipelineStage that the schedule classes accept for building orders.

    The classes read only group_size, group_rank, num_stages and submod when they build and
    lower their orders, so no process group and no model is needed (PyTorch's own
    _schedule_visualizer builds orders the same way).
    """
    from unittest import mock

    from torch.distributed.pipelining.stage import PipelineStage

    made = []
    for _ in range(count):
        stage = mock.create_autospec(PipelineStage, instance=True)
        stage.group_rank = 0
        stage.group_size = devices
        stage.num_stages = stages
        stage.submod = None
        made.append(stage)
    return made


def build_schedule_orders(cls, devices, per_rank, microbatches):
    """Builds a schedule class on stand-in stages: (schedule, compute rows, comms rows or None)."""
    stages = mock_stages(devices, devices * per_rank, per_rank)
    if is_single(cls):
        schedule = cls(stages[0], microbatches)
        compute = [order_text(schedule.pipeline_order[r]) for r in range(devices)]
        return schedule, compute, None
    schedule = cls(stages, microbatches)
    compute = [order_text(schedule.pipeline_order[r]) for r in range(devices)]
    comms = [order_text(schedule.pipeline_order_with_comms[r]) for r in range(devices)]
    return schedule, compute, comms


def lower_rows(path):
    """PyTorch's lowering of a compute-only file, as rows of cells."""
    shape = file_shape(path)
    _, _, schedules = torch_modules()
    runtime = schedules._PipelineScheduleRuntime(mock_stages(shape.devices, shape.stages, 1), shape.microbatches)
    runtime._load_csv(path, format="compute_only")
    return [order_text(runtime.pipeline_order_with_comms[r]) for r in range(shape.devices)]


# ---------------------------------------------------------------------------------------------
# The model: a stack of MLP blocks, cut into stages; MSE loss on the last stage
#
# A block is Linear(width, hidden), tanh, Linear(hidden, width), tanh: the compute grows with
# the hidden size while what crosses a stage boundary (microbatch size × width) stays small, so
# compute dominates the sends.


@dataclass
class ModelSpec:
    width: int
    hidden: int
    layers_per_stage: list
    microbatch_size: int
    microbatches: int
    dtype: str = "float32"
    seed: int = 0

    @property
    def batch(self):
        return self.microbatch_size * self.microbatches

    def layer_range(self, stage):
        start = sum(self.layers_per_stage[:stage])
        return start, start + self.layers_per_stage[stage]


def build_layers(spec):
    """Every layer of the full model, the same on every process (seeded)."""
    torch = torch_modules()[0]
    nn = torch.nn
    torch.manual_seed(spec.seed)
    dtype = getattr(torch, spec.dtype)
    return [
        nn.Sequential(nn.Linear(spec.width, spec.hidden), nn.Tanh(), nn.Linear(spec.hidden, spec.width), nn.Tanh()).to(dtype)
        for _ in range(sum(spec.layers_per_stage))
    ]


def stage_module(layers, spec, stage):
    torch = torch_modules()[0]
    start, end = spec.layer_range(stage)
    return torch.nn.Sequential(*layers[start:end])


def make_batch(spec):
    torch = torch_modules()[0]
    gen = torch.Generator().manual_seed(spec.seed + 1)
    dtype = getattr(torch, spec.dtype)
    x = torch.randn(spec.batch, spec.width, generator=gen, dtype=dtype)
    target = torch.randn(spec.batch, spec.width, generator=gen, dtype=dtype)
    return x, target


def named_grads(module, spec, stage):
    """A stage's gradients keyed by the full model's layer numbers."""
    start, _ = spec.layer_range(stage)
    grads = {}
    for name, p in module.named_parameters():
        index, rest = name.split(".", 1)
        key = f"layer{start + int(index)}.{rest}"
        grads[key] = None if p.grad is None else p.grad.detach().clone()
    return grads


def reference_grads(spec):
    """One process's forward and backward of the whole model on the whole batch."""
    torch = torch_modules()[0]
    layers = build_layers(spec)
    model = torch.nn.Sequential(*layers)
    x, target = make_batch(spec)
    loss = torch.nn.functional.mse_loss(model(x), target)
    loss.backward()
    grads = {}
    for name, p in model.named_parameters():
        index, rest = name.split(".", 1)
        grads[f"layer{index}.{rest}"] = p.grad.detach().clone()
    return grads


# ---------------------------------------------------------------------------------------------
# Processes: one per rank, gloo on 127.0.0.1


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(job, devices, timeout):
    """Runs _worker on `devices` processes; returns the first error line of any rank, or None."""
    import logging
    import multiprocessing

    import torch.multiprocessing as mp

    # Ranks fork from a server that has torch imported already: a rank starts in a fraction of
    # a second instead of the seconds an import takes, and inherits no state of this process.
    multiprocessing.set_forkserver_preload(["torch", "torch.distributed.pipelining"])
    logging.getLogger("torch.multiprocessing.spawn").setLevel(logging.ERROR)
    job = dict(job, port=free_port(), devices=devices)
    os.makedirs(job["workdir"], exist_ok=True)
    context = mp.start_processes(_worker, args=(job,), nprocs=devices, join=False, start_method="forkserver")
    deadline = time.monotonic() + timeout
    failure = None
    try:
        while not context.join(timeout=0.5):
            if time.monotonic() > deadline:
                failure = f"timed out after {timeout:.0f} s (a deadlock, or a rank waiting for a peer that failed)"
                break
    except Exception as exc:  # a rank failed; join() has terminated the others
        failure = short(exc)
    finally:
        for p in context.processes:
            if p.is_alive():
                p.kill()
                p.join()
    errors = []
    for rank in range(devices):
        path = os.path.join(job["workdir"], f"error-rank{rank}.txt")
        if os.path.exists(path):
            with open(path) as f:
                lines = f.read().strip().splitlines()
            if lines:  # empty when the rank was killed while writing it
                errors.append(f"rank {rank}: " + lines[-1])
    if errors:
        # A rank whose peer failed sees a closed connection or a timeout: report the cause.
        secondary = ("Connection closed by peer", "Timed out waiting", "Connection reset by peer")
        primary = [e for e in errors if not any(s in e for s in secondary)]
        return (primary or errors)[0]
    return failure


def _worker(rank, job):
    """One pipeline rank: builds its stages and schedule, runs the job's steps.

    Its output (PyTorch logs a whole schedule grid on a failure) goes to rank{r}.log in the
    work directory; the parent reports one line.
    """
    log = os.open(os.path.join(job["workdir"], f"rank{rank}.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(log, 1)
    os.dup2(log, 2)
    try:
        _run_rank(rank, job)
    except BaseException as exc:  # written for the parent, which reports it
        with open(os.path.join(job["workdir"], f"error-rank{rank}.txt"), "w") as f:
            f.write(traceback.format_exc())
            f.write(short(exc, limit=2000) + "\n")
        raise


def _run_rank(rank, job):
    t0 = time.monotonic()

    def stamp(what):  # progress in the rank's log
        print(f"[{time.monotonic() - t0:7.2f} s] {what}", flush=True)

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(job["port"])
    torch, dist, schedules = torch_modules()
    from torch.distributed.pipelining import PipelineStage

    torch.set_num_threads(1)
    stamp("torch imported")
    devices = job["devices"]
    dist.init_process_group(
        "gloo", rank=rank, world_size=devices, timeout=datetime.timedelta(seconds=job["gloo_timeout"])
    )
    stamp("process group ready")
    try:
        spec = ModelSpec(**job["model"])
        layers = build_layers(spec)
        placement = job["stage_to_rank"]
        stages_here = [s for s, r in enumerate(placement) if r == rank]
        num_stages = len(placement)
        modules = {s: stage_module(layers, spec, s) for s in stages_here}
        # No example inputs/outputs: the stages infer shapes in the first step. (Static
        # example tensors that do not require grad leave the first stage's W without an output
        # gradient in 2.15, and ones that do hang the I/W split runs.)
        stages = [PipelineStage(modules[s], s, num_stages, torch.device("cpu")) for s in stages_here]
        loss_fn = torch.nn.functional.mse_loss
        schedule = make_rank_schedule(job, stages, spec.microbatches, loss_fn)
        x, target = make_batch(spec)
        stamp("schedule built")
        first, last = 0 in stages_here, num_stages - 1 in stages_here

        def one_step():
            dist.barrier()
            args = (x,) if first else ()
            kwargs = {"target": target, "losses": []} if last else {}
            schedule.step(*args, **kwargs)

        if job["mode"] == "run":
            one_step()
            stamp("step done")
            for s in stages_here:
                torch.save(named_grads(modules[s], spec, s), os.path.join(job["workdir"], f"grads-stage{s}.pt"))
        else:
            trace_rank(job, rank, one_step, modules, schedule)
        dist.barrier()
        stamp("finished")
    finally:
        dist.destroy_process_group()


def make_rank_schedule(job, stages, microbatches, loss_fn):
    """The schedule object this rank runs: a PyTorch class, or the runtime loading a CSV."""
    _, _, schedules = torch_modules()
    if job.get("csv") and job.get("runtime") == "multi":
        lockstep = schedules.PipelineScheduleMulti(stages, microbatches, loss_fn=loss_fn)
        lockstep._load_csv(job["csv"])  # compute_only is the only format it reads
        return lockstep
    if job.get("csv"):
        runtime = schedules._PipelineScheduleRuntime(stages, microbatches, loss_fn=loss_fn)
        runtime._load_csv(job["csv"], format=job["format"])
        return runtime
    cls = schedule_class(job["schedule"])
    if is_single(cls):
        return cls(stages[0], microbatches, loss_fn=loss_fn)
    return cls(stages, microbatches, loss_fn=loss_fn)


def trace_rank(job, rank, one_step, modules, schedule):
    """A warm-up step, then the profiled steps; writes rank{r}.pt.trace.json.gz.

    The profiler's schedule makes the warm-up step its own warm-up (not recorded) and records
    each following step as ProfilerStep#1, #2, ... (without a schedule, prof.step() records
    no ProfilerStep ranges at all).
    """
    from torch.profiler import ProfilerActivity, profile, schedule as profiler_schedule

    plan = profiler_schedule(wait=0, warmup=job["warmup"], active=job["steps"], repeat=1)
    with profile(activities=[ProfilerActivity.CPU], schedule=plan) as prof:
        for _ in range(job["warmup"] + job["steps"]):
            one_step()
            for m in modules.values():
                m.zero_grad(set_to_none=True)
            prof.step()
    raw = os.path.join(job["workdir"], f"rank{rank}.pt.trace.json")
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as src, open(os.path.join(job["outdir"], f"rank{rank}.pt.trace.json.gz"), "wb") as out:
        with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="") as gz:
            shutil.copyfileobj(src, gz)
    os.remove(raw)
    if rank == 0:
        with open(os.path.join(job["workdir"], "orders.json"), "w") as f:
            json.dump(schedule_orders(schedule, job), f)


def schedule_orders(schedule, job):
    """What PyTorch says it runs: its compute order and, for the runtime, the lowered order."""
    order = getattr(schedule, "pipeline_order", None) or {}
    comms = getattr(schedule, "pipeline_order_with_comms", None)
    devices = job["devices"]
    return {
        "pipeline_order": [order_text(order[r]) for r in range(devices)] if order else None,
        "pipeline_order_with_comms": [order_text(comms[r]) for r in range(devices)] if comms else None,
    }


def executed_compute_orders(cls_name, orders, devices, microbatches):
    """The compute actions each rank executes, in order.

    The runtime executes its lowered order. ScheduleGPipe runs every forward, then every
    backward. Schedule1F1B runs min(M, S - stage) warm-up forwards, then backward/forward pairs,
    then the remaining backwards (its _step_microbatches; its _get_pipeline_order numbers the
    last rank's forwards 1..M, which is not what runs).
    """
    if orders.get("pipeline_order_with_comms"):
        return [[c for c in row if compute_parts(c) or c.endswith("OVERLAP_F_B")] for row in orders["pipeline_order_with_comms"]]
    rows = []
    for stage in range(devices):
        if cls_name == "ScheduleGPipe":
            row = [f"{stage}F{i}" for i in range(microbatches)] + [f"{stage}B{i}" for i in range(microbatches)]
        else:
            warmup = min(microbatches, devices - stage)
            row = [f"{stage}F{i}" for i in range(warmup)]
            f = warmup
            for b in range(microbatches):
                row.append(f"{stage}B{b}")
                if f < microbatches:
                    row.append(f"{stage}F{f}")
                    f += 1
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------
# trace


def parse_layers(text, stages):
    try:
        counts = [int(x) for x in text.split(",")]
    except ValueError:
        raise UserError(f"--layers-per-stage must be numbers separated by commas, found {text!r}", "e.g. --layers-per-stage 1,1,1,2")
    if len(counts) != stages or min(counts) < 1:
        raise UserError(
            f"--layers-per-stage gives {len(counts)} stages, but the schedule has {stages}",
            f"give {stages} counts of at least 1, e.g. " + ",".join(["2"] * stages),
        )
    return counts


def cmd_trace(args):
    if bool(args.schedule) == bool(args.csv):
        raise UserError("trace needs exactly one of --schedule and --csv", "e.g. --schedule InterleavedZeroBubble, or --csv plan.csv")
    outdir = os.path.abspath(args.outdir)
    if os.path.exists(outdir) and os.listdir(outdir) and not args.force:
        raise UserError(f"{outdir} exists and is not empty", "choose another directory or pass --force to overwrite")
    if args.csv:
        shape = file_shape(args.csv)
        fmt = args.format or ("compute_comms" if shape.has_comms else "compute_only")
        devices, placement, microbatches = shape.devices, shape.stage_to_rank, shape.microbatches
        cls_name, runtime = None, "_PipelineScheduleRuntime"
        per_rank = max(len(shape.stages_of(r)) for r in range(devices))
    else:
        cls = schedule_class(args.schedule)
        cls_name = cls.__name__
        devices = args.devices
        per_rank = 1 if is_single(cls) else (2 if v_shaped(cls) else args.stages_per_rank)
        placement = stage_placement(cls, devices, per_rank)
        microbatches = args.microbatches
        runtime, fmt = ("PipelineScheduleSingle" if is_single(cls) else "_PipelineScheduleRuntime"), None
    stages = len(placement)
    layers = parse_layers(args.layers_per_stage, stages) if args.layers_per_stage else [args.layers] * stages
    spec = ModelSpec(args.width, args.hidden, layers, args.microbatch_size, microbatches, "float32", args.seed)
    if os.path.exists(outdir) and args.force:
        shutil.rmtree(outdir)
    os.makedirs(outdir)
    csv_copy = None
    if args.csv:
        csv_copy = os.path.join(outdir, "schedule.csv")
        shutil.copyfile(args.csv, csv_copy)
    workdir = tempfile.mkdtemp(prefix="bubblescope-trace-")
    job = {
        "mode": "trace",
        "workdir": workdir,
        "outdir": outdir,
        "model": asdict(spec),
        "stage_to_rank": placement,
        "schedule": cls_name,
        "csv": csv_copy,
        "format": fmt,
        "warmup": 1,
        "steps": args.steps,
        "gloo_timeout": 120,
    }
    print(f"trace: {cls_name or args.csv} on {devices} ranks, {stages} stages, M = {microbatches}", file=sys.stderr)
    load = os.getloadavg()[0]
    if load > 0.5 * (os.cpu_count() or 1):
        print(f"trace: warning: load average {load:.1f} on {os.cpu_count()} CPUs; other processes will stretch the measured times", file=sys.stderr)
    started = time.monotonic()
    failure = launch(job, devices, timeout=args.timeout)
    if failure:
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(outdir, ignore_errors=True)  # nothing half-written is left behind
        hint = (
            f"check the file with `tools/pytorch-check.sh run {args.csv} --format {fmt}`"
            if args.csv
            else "each class's constraints on P, stages per rank and M are in tools/PYTORCH-NOTES.md"
        )
        raise UserError(f"the traced run failed: {failure}", hint)
    with open(os.path.join(workdir, "orders.json")) as f:
        orders = json.load(f)
    shutil.rmtree(workdir, ignore_errors=True)
    labels = "PP:<action>" if runtime == "_PipelineScheduleRuntime" else ("Forward i / Backward i" if cls_name == "ScheduleGPipe" else "none")
    sidecar = {
        "torch": torch_version(),
        "python": sys.version.split()[0],
        "command": "tools/pytorch-check.sh " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "schedule": {
            "class": cls_name,
            "csv": "schedule.csv" if csv_copy else None,
            "csv_source": os.path.basename(args.csv) if args.csv else None,
            "format": fmt,
            "runtime": runtime,
            "labels": labels,
        },
        "devices": devices,
        "stages": stages,
        "stages_per_rank": per_rank,
        "stage_to_rank": placement,
        "microbatches": microbatches,
        "model": {
            "block": "Linear(width, hidden), Tanh, Linear(hidden, width), Tanh",
            "width": spec.width,
            "hidden": spec.hidden,
            "layers_per_stage": spec.layers_per_stage,
            "microbatch_size": spec.microbatch_size,
            "batch": spec.batch,
            "dtype": spec.dtype,
            "loss": "mse_loss (mean)",
            "seed": spec.seed,
        },
        "processes": {"backend": "gloo", "device": "cpu", "threads_per_process": 1, "master_addr": "127.0.0.1"},
        "machine": {"cpus": os.cpu_count(), "load_average_before": round(load, 2)},
        "steps": {"warmup": 1, "profiled": args.steps, "profiler_steps": [f"ProfilerStep#{i}" for i in range(1, args.steps + 1)]},
        # Orders are one string per rank in the CSV grammar: cells joined by commas, idle cells
        # empty (an OVERLAP_F_B cell separates its parts with ';', never ',').
        "executed_compute_orders": rows_text(executed_compute_orders(cls_name, orders, devices, microbatches)),
        "pipeline_order": rows_text(orders["pipeline_order"]),
        "pipeline_order_with_comms": rows_text(orders["pipeline_order_with_comms"]),
        "files": [f"rank{r}.pt.trace.json.gz" for r in range(devices)],
    }
    write_sidecar(os.path.join(outdir, "run.json"), sidecar)
    sizes = ", ".join(f"{os.path.getsize(os.path.join(outdir, n)) // 1024} KiB" for n in sidecar["files"])
    print(f"trace: wrote {outdir} in {time.monotonic() - started:.1f} s (rank files {sizes})", file=sys.stderr)
    print_summary(outdir, sys.stdout)


def rows_text(rows):
    return None if rows is None else [",".join(row) for row in rows]


def write_sidecar(path, sidecar):
    """run.json, indented, with lists of numbers on one line."""
    text = json.dumps(sidecar, indent=1)
    text = re.sub(r"\[\s+([-\d.,\s]+?)\s+\]", lambda m: "[" + re.sub(r"\s+", " ", m.group(1)) + "]", text)
    with open(path, "w") as f:
        f.write(text + "\n")


# ---------------------------------------------------------------------------------------------
# summarize: a quick reading of a trace directory (Bubblescope's `trace` command is the real one)

COMPUTE_NAME = re.compile(r"^PP:(\d+[FIWB]\d+|\(.*\)OVERLAP_F_B)$|^(Forward|Backward) \d+$")


def load_trace(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def rank_summary(trace, step=None):
    """Per rank: the step window and how its time splits, from PP/GPipe spans and their operators."""
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in events if e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
    full = [s for s in steps if any(COMPUTE_NAME.match(e["name"]) and s["ts"] <= e["ts"] < s["ts"] + s["dur"] for e in events)]
    if not full:
        return None
    window = full[-1] if step is None else next(s for s in full if s["name"] == f"ProfilerStep#{step}")
    lo, hi = window["ts"], window["ts"] + window["dur"]
    inside = [e for e in events if lo <= e["ts"] < hi]
    spans = sorted((e for e in inside if e.get("cat") == "user_annotation" and (e["name"].startswith("PP:") or COMPUTE_NAME.match(e["name"]))), key=lambda e: e["ts"])
    ops = sorted((e for e in inside if e.get("cat") == "cpu_op"), key=lambda e: e["ts"])
    compute, wait, comm, passes = 0.0, 0.0, 0.0, []
    for s in spans:
        start, end = s["ts"], s["ts"] + s["dur"]
        if COMPUTE_NAME.match(s["name"]):
            # Waiting for a receive happens before the first operator of the pass.
            # Buffers allocated for a receive (aten::empty*) and the receive itself come before
            # the wait: not work.
            first = next((o["ts"] for o in ops if start <= o["ts"] < end and not o["name"].startswith(("aten::empty", "c10d::"))), end)
            busy = end - first
            compute += busy
            wait += first - start
            passes.append((s["name"], s["dur"], busy))
        else:
            comm += s["dur"]
    first_pass = next((s for s in spans if COMPUTE_NAME.match(s["name"])), None)
    last_pass = next((s for s in reversed(spans) if COMPUTE_NAME.match(s["name"])), None)
    return {
        "step": window["name"],
        "start": first_pass["ts"] if first_pass else lo,
        "end": last_pass["ts"] + last_pass["dur"] if last_pass else hi,
        "compute": compute,
        "wait": wait,
        "comm": comm,
        "passes": passes,
    }


def print_summary(directory, out):
    files = sorted(f for f in os.listdir(directory) if ".pt.trace.json" in f)
    summaries = []
    for name in files:
        trace = load_trace(os.path.join(directory, name))
        rank = (trace.get("distributedInfo") or {}).get("rank", len(summaries))
        summaries.append((rank, name, rank_summary(trace)))
    starts = [s["start"] for _, _, s in summaries if s]
    ends = [s["end"] for _, _, s in summaries if s]
    if not starts:
        print(f"{directory}: no pipeline labels (PP:<action>, Forward i / Backward i) in any profiler step", file=out)
        return
    step_time = max(ends) - min(starts)
    print(f"{directory}: step {step_time / 1000:.1f} ms (first pass start to last pass end, all ranks)", file=out)
    kinds = {}
    for rank, name, s in sorted(summaries, key=lambda t: t[0]):
        if not s:
            print(f"  rank {rank}: no pipeline labels", file=out)
            continue
        busy = s["compute"]
        print(
            f"  rank {rank} ({s['step']}): compute {busy / 1000:.1f} ms ({100 * busy / step_time:.0f}%), "
            f"waits inside passes {s['wait'] / 1000:.1f} ms, communication actions {s['comm'] / 1000:.1f} ms, "
            f"other {(step_time - busy - s['wait'] - s['comm']) / 1000:.1f} ms",
            file=out,
        )
        for label, _dur, b in s["passes"]:
            m = re.match(r"^PP:\d+([FIWB])\d+$", label)
            kind = m.group(1) if m else ("OVERLAP_F_B" if "OVERLAP" in label else label.split()[0])
            kinds.setdefault(kind, []).append(b)
    for kind, times in sorted(kinds.items()):
        times.sort()
        print(f"  {kind}: {len(times)} passes, median {times[len(times) // 2] / 1000:.2f} ms, min {times[0] / 1000:.2f}, max {times[-1] / 1000:.2f}", file=out)


def summary_json(directory):
    """The same numbers as print_summary, for tests: an independent reading of the traces."""
    files = sorted(f for f in os.listdir(directory) if ".pt.trace.json" in f)
    ranks = []
    for name in files:
        trace = load_trace(os.path.join(directory, name))
        rank = (trace.get("distributedInfo") or {}).get("rank", len(ranks))
        s = rank_summary(trace)
        if s:
            ranks.append({"rank": rank, "file": name, "step": s["step"], "start": s["start"], "end": s["end"],
                          "compute": s["compute"], "wait": s["wait"], "comm": s["comm"],
                          "passes": [{"label": l, "dur": d, "busy": b} for l, d, b in s["passes"]]})
    ranks.sort(key=lambda r: r["rank"])
    step = max(r["end"] for r in ranks) - min(r["start"] for r in ranks) if ranks else None
    return {"made_by": "tools/pytorch-check.sh summarize --json (Python, independent of Bubblescope)",
            "step_time": step, "ranks": ranks}


def cmd_summarize(args):
    if not os.path.isdir(args.dir):
        raise UserError(f"{args.dir} is not a directory", "give a directory written by `trace`")
    if args.json:
        json.dump(summary_json(args.dir), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_summary(args.dir, sys.stdout)


# ---------------------------------------------------------------------------------------------
# dump

DUMP_SIZES = {
    # class: [(P, stages per rank, M)]
    "ScheduleGPipe": [(2, 1, 4), (4, 1, 8)],
    "Schedule1F1B": [(2, 1, 4), (4, 1, 8)],
    "ScheduleInterleaved1F1B": [(2, 2, 4), (4, 2, 8), (4, 2, 6), (4, 3, 12)],
    "ScheduleLoopedBFS": [(2, 2, 4), (4, 2, 8), (4, 3, 6)],
    "ScheduleInterleavedZeroBubble": [(2, 2, 4), (4, 2, 8), (4, 2, 6), (4, 3, 12)],
    "ScheduleZBVZeroBubble": [(2, 2, 4), (4, 2, 8), (4, 2, 5)],
    "ScheduleDualPipeV": [(2, 2, 4), (4, 2, 8), (4, 2, 10)],
}

GRID = {"class": "ScheduleInterleavedZeroBubble", "devices": range(2, 9), "per_rank": range(2, 5)}


def dump_one(outdir, cls_name, devices, per_rank, microbatches):
    """PyTorch's dumps of one class at one size; returns the index entries."""
    cls = schedule_class(cls_name)
    stem = f"{cls_name}-p{devices}-v{per_rank}-m{microbatches}"
    entry = {"class": cls_name, "devices": devices, "stages_per_rank": per_rank, "microbatches": microbatches}
    try:
        schedule, compute, comms = build_schedule_orders(cls, devices, per_rank, microbatches)
    except Exception as exc:
        return [dict(entry, error=short(exc))]
    entries = []
    path = os.path.join(outdir, f"{stem}.compute_only.csv")
    if is_single(cls):
        write_rows(path, compute)  # PipelineScheduleSingle has no _dump_csv: the same csv.writer rows
        source = "pipeline_order (PipelineScheduleSingle has no _dump_csv; written with csv.writer as _dump_csv does)"
    else:
        schedule._dump_csv(path, format="compute_only")
        source = "_dump_csv(format='compute_only')"
    entries.append(dict(entry, format="compute_only", file=os.path.basename(path), source=source))
    path = os.path.join(outdir, f"{stem}.compute_comms.csv")
    if comms is not None:
        schedule._dump_csv(path, format="compute_comms")
        entries.append(dict(entry, format="compute_comms", file=os.path.basename(path), source="_dump_csv(format='compute_comms')"))
    else:
        entries.append(dict(entry, format="compute_comms", **lower_single(cls_name, compute, path)))
    return entries


def lower_single(cls_name, compute, path):
    """A single-stage class has no lowered order: lower its order in the runtime, as for a CSV.

    Its pipeline_order already ends with REDUCE_GRAD and WAIT_REDUCE_GRAD, which a compute-only
    order may not hold, so they are dropped first (the lowering adds them back).
    """
    rows = [[c for c in row if c and "REDUCE_GRAD" not in c] for row in compute]
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "order.csv")
        write_rows(src, rows)
        try:
            lowered = lower_rows(src)
        except Exception as exc:
            return {"error": short(exc), "source": "pipeline_order without REDUCE_GRAD/WAIT_REDUCE_GRAD, lowered by _PipelineScheduleRuntime._load_csv"}
    write_rows(path, lowered)
    return {"file": os.path.basename(path), "source": "pipeline_order without REDUCE_GRAD/WAIT_REDUCE_GRAD, lowered by _PipelineScheduleRuntime._load_csv, then _dump_csv(format='compute_comms')"}


def grid_lines(max_factor):
    """ScheduleInterleavedZeroBubble's compute-only dump for every size of the grid."""
    cls = schedule_class(GRID["class"])
    for devices in GRID["devices"]:
        for per_rank in GRID["per_rank"]:
            for microbatches in range(1, max_factor * devices * per_rank + 1):
                line = {"p": devices, "v": per_rank, "m": microbatches}
                try:
                    _, compute, _ = build_schedule_orders(cls, devices, per_rank, microbatches)
                    buf = io.StringIO()
                    csv.writer(buf).writerows(compute)
                    line["csv"] = buf.getvalue()
                except Exception as exc:
                    line["error"] = short(exc)
                yield line


def cmd_dump(args):
    outdir = os.path.abspath(args.outdir)
    os.makedirs(outdir, exist_ok=True)
    index = []
    for cls_name in SCHEDULE_CLASSES:
        for devices, per_rank, microbatches in DUMP_SIZES[cls_name]:
            index.extend(dump_one(outdir, cls_name, devices, per_rank, microbatches))
    manifest = {
        "torch": torch_version(),
        "command": "tools/pytorch-check.sh " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "dumps": index,
    }
    if args.grid:
        name = "interleaved-zero-bubble-grid.jsonl.gz"
        accepted = refused = 0
        with open(os.path.join(outdir, name), "wb") as out:
            with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="") as gz:
                for line in grid_lines(args.grid_factor):
                    accepted += "csv" in line
                    refused += "error" in line
                    gz.write((json.dumps(line, separators=(",", ":")) + "\n").encode())
        manifest["grid"] = {
            "file": name,
            "class": GRID["class"],
            "format": "compute_only",
            "devices": [GRID["devices"].start, GRID["devices"].stop - 1],
            "stages_per_rank": [GRID["per_rank"].start, GRID["per_rank"].stop - 1],
            "microbatches": f"1 to {args.grid_factor}·P·V",
            "accepted": accepted,
            "refused": refused,
        }
    with open(os.path.join(outdir, "index.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    files = [e for e in index if "file" in e]
    errors = [e for e in index if "error" in e]
    print(f"dump: wrote {len(files)} files to {outdir}")
    for e in errors:
        print(f"  not written: {e['class']} P={e['devices']} V={e['stages_per_rank']} M={e['microbatches']} {e.get('format', '')}: {e['error']}")
    if args.grid:
        print(f"  grid: {manifest['grid']['accepted']} sizes accepted, {manifest['grid']['refused']} refused")


# ---------------------------------------------------------------------------------------------
# lower


def cmd_lower(args):
    shape = file_shape(args.input)
    if shape.has_comms:
        raise UserError(f"{args.input} already holds communication actions", "lower reads a compute-only file (F, I, W, B and OVERLAP_F_B cells)")
    try:
        rows = lower_rows(args.input)
    except Exception as exc:
        raise UserError(f"PyTorch refused to lower {args.input}: {short(exc)}", "run `bubblescope simulate --from` on the file to see which order is wrong")
    write_rows(args.output, rows)
    print(f"lower: wrote {args.output} ({shape.devices} ranks, {shape.stages} stages, M = {shape.microbatches})", file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# run


def run_file(path, fmt, microbatches=None, timeout=180, runtime="runtime"):
    """Runs a schedule file in the runtime and compares gradients: (passed, detail)."""
    if runtime == "multi" and fmt != "compute_only":
        raise UserError("PipelineScheduleMulti reads only compute_only files", "use --format compute_only with --runtime multi")
    shape = file_shape(path)
    m = microbatches or shape.microbatches
    spec = ModelSpec(width=16, hidden=32, layers_per_stage=[1] * shape.stages, microbatch_size=2, microbatches=m, dtype="float64")
    workdir = tempfile.mkdtemp(prefix="bubblescope-run-")
    try:
        job = {
            "mode": "run",
            "workdir": workdir,
            "model": asdict(spec),
            "stage_to_rank": shape.stage_to_rank,
            "csv": os.path.abspath(path),
            "format": fmt,
            "runtime": runtime,
            "gloo_timeout": 60,
        }
        failure = launch(job, shape.devices, timeout)
        size = f"P={shape.devices} S={shape.stages} M={m}"
        if failure:
            return False, f"{size}: {failure}"
        return compare_grads(workdir, spec, size)
    finally:
        if os.environ.get("PYTORCH_CHECK_KEEP"):
            print(f"kept {workdir} (the ranks' logs and gradients)", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def compare_grads(workdir, spec, size, tolerance=1e-5):
    torch = torch_modules()[0]
    reference = reference_grads(spec)
    got = {}
    for stage in range(len(spec.layers_per_stage)):
        path = os.path.join(workdir, f"grads-stage{stage}.pt")
        if not os.path.exists(path):
            return False, f"{size}: stage {stage} wrote no gradients"
        got.update(torch.load(path))
    worst, worst_name, worst_abs = 0.0, None, 0.0
    for name, ref in reference.items():
        g = got.get(name)
        if g is None:
            return False, f"{size}: {name} has no gradient"
        err = (torch.linalg.vector_norm(g - ref) / torch.linalg.vector_norm(ref)).item()
        worst_abs = max(worst_abs, (g - ref).abs().max().item())
        if err > worst:
            worst, worst_name = err, name
    if worst > tolerance:
        ratio = (torch.linalg.vector_norm(got[worst_name]) / torch.linalg.vector_norm(reference[worst_name])).item()
        return False, f"{size}: gradient of {worst_name} off by relative error {worst:.2e} (norm ratio {ratio:.4g} to one process's)"
    return True, f"{size}: max relative gradient error {worst:.1e}, max abs difference {worst_abs:.1e}"


def cmd_run(args):
    if not os.path.exists(args.file):
        raise UserError(f"{args.file} does not exist", "give a PyTorch schedule CSV")
    ok, detail = run_file(args.file, args.format, args.microbatches, args.timeout, args.runtime)
    print(f"{'PASS' if ok else 'FAIL'} {args.file} {args.format} {detail}")
    return 0 if ok else 1


# ---------------------------------------------------------------------------------------------
# check


def find_cli(path):
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    candidates = [path] if path else [os.path.join(target, "release", "bubblescope"), shutil.which("bubblescope")]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    raise UserError(
        "no bubblescope binary found" + (f" at {path}" if path else f" in {os.path.join(target, 'release')} or on PATH"),
        "build it with `cargo build -p bubblescope-cli --release`, or pass --cli PATH",
    )


def cli_run(cli, *args):
    proc = subprocess.run([cli, *args], capture_output=True, text=True)
    return proc.returncode, (proc.stderr.strip() or proc.stdout.strip())


def first_line(text):
    """The CLI's first error, without the file name it repeats."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    errors = [l for l in lines if l.startswith("error:")] or lines
    if not errors:
        return ""
    # "error: FILE cannot be used:" is followed by one error per problem: report the first.
    line = errors[1] if errors[0].endswith(":") and len(errors) > 1 else errors[0]
    return re.sub(r"^error: \S+?(…)?, ", "error: ", line)


def action_type(cell):
    if cell.endswith("OVERLAP_F_B"):
        return "OVERLAP_F_B"
    m = ANY_CELL.match(cell)
    return m.group(2) if m else cell


def type_counts(rows):
    counts = {}
    for row in rows:
        for cell in row:
            if cell:
                counts[action_type(cell)] = counts.get(action_type(cell), 0) + 1
    return counts


def diff_rows(got, expected):
    """How a file differs from PyTorch's lowering: action types in other numbers, then the
    first differing position; None when they are the same action for action."""
    if len(got) != len(expected):
        return f"{len(got)} rows, PyTorch's lowering has {len(expected)}"
    first = first_difference(got, expected)
    if first is None:
        return None
    mine, theirs = type_counts(got), type_counts(expected)
    counts = [
        f"{t} {mine.get(t, 0)} vs {theirs.get(t, 0)}"
        for t in sorted(set(mine) | set(theirs))
        if mine.get(t, 0) != theirs.get(t, 0)
    ]
    return (f"action counts (file vs PyTorch): {', '.join(counts)}; " if counts else "") + first


def first_difference(got, expected):
    """The first position where two files' rows differ (empty cells ignored), or None."""
    for rank, (a, b) in enumerate(zip(got, expected)):
        a = [c for c in a if c]
        b = [c for c in b if c]
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return f"rank {rank}, action {i}: {x}, PyTorch's lowering has {y} (around: …{','.join(b[max(0, i - 2):i + 3])}…)"
        if len(a) != len(b):
            extra = a[len(b):] if len(a) > len(b) else b[len(a):]
            who = "the file" if len(a) > len(b) else "PyTorch's lowering"
            return f"rank {rank}: {who} has {abs(len(a) - len(b))} more actions: {','.join(extra[:6])}"
    return None


class MissingExport(Exception):
    """The CLI cannot write a family as a file (`simulate --export`, issue 30)."""


class Tally:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def report(self, status, name, fmt, detail):
        print(f"{status} {name} {fmt} {detail}", flush=True)
        if status == "PASS":
            self.passed += 1
        elif status == "FAIL":
            self.failed += 1
        else:
            self.skipped += 1


def without_torch(command):
    """The CLI's arguments without `--torch X.Y`."""
    return [a for i, a in enumerate(command) if a != "--torch" and (i == 0 or command[i - 1] != "--torch")]


def b_first(rows):
    """The rows with every OVERLAP_F_B container's sub-actions in reverse order.

    PyTorch's runtime runs a container's sub-actions one after the other, in the order written
    (unless a function is registered for OVERLAP_F_B); an overlap that deserves the name runs
    them at once. So a pair must not depend on itself: the same file with each pair's B first
    must run, with the same gradients."""
    swapped = []
    for row in rows:
        out = []
        for cell in row:
            pair = OVERLAP_CELL.match(cell)
            if pair:
                parts = [p.strip() for p in pair.group(1).split(";") if p.strip()]
                cell = "(" + ";".join(reversed(parts)) + ")OVERLAP_F_B"
            out.append(cell)
        swapped.append(out)
    return swapped


def export_case(cli, name, command, tmp, tally, expect=None, want_pairs=False):
    """One schedule exported by the CLI in both dialects (`command` is the CLI's arguments up to
    --export): each file run in PyTorch, the comms file compared with PyTorch's lowering of the
    compute-only one, and a compute-only file with OVERLAP_F_B pairs run again with each pair's
    B first (`b_first`). `expect` is (P, M) when the command names the sizes; `want_pairs` makes
    a compute-only file without OVERLAP_F_B a failure. Returns False when the command refuses the
    schedule in a way that is not a failure (a family that does not take --chunks), so that no
    case is counted."""
    files = {}
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    for fmt, to in (("compute_only", "pytorch-csv"), ("compute_comms", "pytorch-csv-comms")):
        path = os.path.join(tmp, f"{stem}.{fmt}.csv")
        # --torch names the version a comms file is for; the CLI refuses it on a compute-only
        # file (torch 2.14 and 2.15 load those alike).
        args = command if fmt == "compute_comms" else without_torch(command)
        proc = subprocess.run([cli, *args, "--export", path, "--to-format", to], capture_output=True, text=True)
        code, text = proc.returncode, (proc.stderr.strip() or proc.stdout.strip())
        if code == 0 and command[0] == "plan" and fmt == "compute_only":
            # Which plan was written: the best one, or the best the format can hold.
            found = re.search(r"--export wrote plan \d+ \(([^)]+)\)", proc.stderr) or re.search(r"^1\. (\S+) ·", proc.stdout, re.M)
            if found:
                name = f"{name}:{found.group(1)}"
        if code != 0:
            if "unexpected argument" in text:
                raise MissingExport(first_line(text))
            if "does not take --chunks" in text:
                return False
            if "PyTorch CSV" in text:  # a schedule PyTorch's grammar cannot hold (two pipelines, slices)
                tally.report("SKIP", name, fmt, first_line(text))
                return True
            # A size the family does not take (DualPipe on an odd number of devices) is no
            # export failure: the same command without --export must fail too.
            alone = subprocess.run([cli, *without_torch(command)], capture_output=True, text=True)
            if alone.returncode != 0:
                tally.report("SKIP", name, fmt, f"not a size this takes: {first_line(alone.stderr or alone.stdout)}")
                return True
            tally.report("FAIL", name, fmt, f"export failed: {first_line(text)}")
            continue
        shape = file_shape(path)
        if expect and (shape.devices, shape.microbatches) != expect:
            tally.report("FAIL", name, fmt, f"asked for P={expect[0]} M={expect[1]}, the file has P={shape.devices} M={shape.microbatches}")
            continue
        files[fmt] = path
    if len(files) == 2:
        # Both files must hold the same compute order (a command run twice must write the same
        # schedule, or the lowering compared below is not the comms file's).
        compute = [[c for c in row if c] for row in read_rows(files["compute_only"])]
        in_comms = [[c for c in row if compute_parts(c) or OVERLAP_CELL.match(c)] for row in read_rows(files["compute_comms"])]
        if compute != in_comms:
            tally.report("FAIL", name, "orders", "the comms export holds another compute order than the compute-only export")
    for fmt, path in files.items():
        ok, detail = run_file(path, fmt)
        tally.report("PASS" if ok else "FAIL", name, fmt, detail)
    if "compute_only" in files:
        rows = read_rows(files["compute_only"])
        pairs = sum(1 for row in rows for cell in row if OVERLAP_CELL.match(cell))
        if pairs:
            swapped = os.path.join(tmp, f"{stem}.b-first.csv")
            write_rows(swapped, b_first(rows))
            ok, detail = run_file(swapped, "compute_only")
            tally.report("PASS" if ok else "FAIL", name, "compute_only:B-first", f"{pairs} OVERLAP_F_B, each run B first: {detail}")
        elif want_pairs:
            tally.report("FAIL", name, "compute_only:pairs", "the export holds no OVERLAP_F_B: nothing of the overlap was checked")
    if len(files) == 2:
        try:
            expected = lower_rows(files["compute_only"])
        except Exception as exc:
            tally.report("FAIL", name, "lowering", f"PyTorch cannot lower the compute-only export: {short(exc)}")
            return True
        difference = diff_rows(read_rows(files["compute_comms"]), expected)
        tally.report("FAIL" if difference else "PASS", name, "lowering", difference or "the comms export is PyTorch's lowering, action for action")
    return True


def check_family(cli, family, size, torch_minor, tmp, tally):
    """A family exported by `simulate --export` at one size (P, M, chunks or None)."""
    devices, microbatches, chunks = size
    command = ["simulate", "-s", family, "--devices", str(devices), "--microbatches", str(microbatches), "--torch", torch_minor]
    label = f"{family}@p{devices}-m{microbatches}"
    if chunks:
        command += ["--chunks", str(chunks)]
        label += f"-v{chunks}"
    return export_case(cli, label, command, tmp, tally, expect=(devices, microbatches))


DEFAULT_SIZES = "2:8,3:6,4:8,4:12:3,2:8:4"

# `bubblescope plan --export`: the winner the format can hold, at default costs and with a model.
PLAN_CASES = [
    ("plan@p2", ["plan", "--devices", "2", "--mem-limit", "6"]),
    ("plan@p4", ["plan", "--devices", "4", "--mem-limit", "12"]),
    ("plan@p4-llama-3-8b", ["plan", "--devices", "4", "--model", "llama-3-8b", "--mem-limit", "80GiB"]),
]


# Megatron's combined 1F1B (`simulate --a2a-overlap`, issue 41): steady-state F and B of
# different microbatches paired as (xFy;uBv)OVERLAP_F_B. It takes an MoE model with EP > 1 (for
# the all-to-all it hides); the model sets costs, not the order. Each case is (family, P, M,
# chunks, extra arguments): M = P, M not a multiple of P (interleaved-1f1b takes that only with a
# --group whose remainder is 0 or at least P), chunks 2 and one of 3.
A2A_MODEL = ["--model", "mixtral-8x7b", "--dp", "2", "--ep", "2"]
A2A_CASES = [
    ("1f1b", 2, 2, None, []),
    ("1f1b", 2, 5, None, []),
    ("1f1b", 2, 8, None, []),
    ("1f1b", 4, 4, None, []),
    ("1f1b", 4, 6, None, []),
    ("1f1b", 4, 8, None, []),
    ("interleaved-1f1b", 2, 2, 2, []),
    ("interleaved-1f1b", 2, 4, 2, []),
    ("interleaved-1f1b", 2, 6, 2, []),
    ("interleaved-1f1b", 2, 5, 2, ["--group", "3"]),
    ("interleaved-1f1b", 2, 4, 3, []),
    ("interleaved-1f1b", 4, 4, 2, []),
    ("interleaved-1f1b", 4, 8, 2, []),
    ("interleaved-1f1b", 4, 10, 2, ["--group", "5"]),
]


def check_a2a(cli, families, torch_minor, tmp, tally):
    """The --a2a-overlap exports of A2A_CASES (only the families in `families`)."""
    for family, devices, microbatches, chunks, extra in A2A_CASES:
        if family not in families:
            continue
        command = ["simulate", "-s", family, "--devices", str(devices), "--microbatches", str(microbatches)]
        command += [*A2A_MODEL, "--a2a-overlap", *extra, "--torch", torch_minor]
        label = f"{family}+a2a@p{devices}-m{microbatches}"
        if chunks:
            command += ["--chunks", str(chunks)]
            label += f"-v{chunks}"
        if extra:
            label += "-" + "".join(a.lstrip("-")[:1] + b for a, b in zip(extra[::2], extra[1::2]))
        export_case(cli, label, command, tmp, tally, expect=(devices, microbatches), want_pairs=True)


def parse_sizes(text):
    """--sizes P:M[:V],...: the sizes the families are exported at."""
    sizes = []
    for part in text.split(","):
        fields = part.strip().split(":")
        try:
            numbers = [int(f) for f in fields]
        except ValueError:
            numbers = []
        if len(numbers) not in (2, 3) or min(numbers) < 1:
            raise UserError(f"--sizes: {part!r} is not P:M or P:M:V", "e.g. --sizes 2:8,4:8,4:12:3 (V: chunks per device, for the families that take --chunks)")
        sizes.append((numbers[0], numbers[1], numbers[2] if len(numbers) == 3 else None))
    return sizes


def check_dump(cli, entry, dumps_dir, torch_minor, tmp, tally):
    """One of PyTorch's dumps: read by the CLI, converted to both dialects and run."""
    name = entry["file"]
    path = os.path.join(dumps_dir, name)
    fmt = entry["format"]
    label = name.rsplit(".", 2)[0]
    code, text = cli_run(cli, "simulate", "--from", path)
    tally.report("PASS" if code == 0 else "FAIL", label, f"{fmt}:read", "bubblescope simulate --from reads it" if code == 0 else first_line(text))
    if fmt != "compute_only" or code != 0:
        return
    # PyTorch cannot load some of its own compute-only dumps (GPipe's and 1F1B's end with
    # REDUCE_GRAD; 1F1B's numbers its last rank's forwards 1..M): the CLI reads them (with a
    # warning), and its conversions must still run; only the comparison with PyTorch's lowering
    # of the dump itself is not possible then.
    try:
        expected = lower_rows(path)
    except Exception as exc:
        expected = None
        tally.report("KNOWN", label, "lowering", f"PyTorch itself cannot load this dump: {short(exc)}")
    for out_fmt, to in (("compute_only", "pytorch-csv"), ("compute_comms", "pytorch-csv-comms")):
        out = os.path.join(tmp, f"{label}.converted.{out_fmt}.csv")
        version = ["--torch", torch_minor] if out_fmt == "compute_comms" else []
        code, text = cli_run(cli, "convert", path, out, "--to-format", to, *version)
        if code != 0:
            tally.report("FAIL", label, f"{out_fmt}:convert", first_line(text))
            continue
        ok, detail = run_file(out, out_fmt)
        tally.report("PASS" if ok else "FAIL", label, f"{out_fmt}:convert+run", detail)
        if out_fmt == "compute_comms" and expected is not None:
            difference = diff_rows(read_rows(out), expected)
            tally.report("FAIL" if difference else "PASS", label, "compute_comms:lowering", difference or "the converted comms file is PyTorch's lowering")


def check_fixtures(index, dumps_dir, tmp, tally):
    """The committed dumps are what the running torch writes: each class dumped again at the
    index's sizes, compared byte for byte (the CLI's tests read the committed files)."""
    fresh = os.path.join(tmp, "fresh-dumps")
    os.makedirs(fresh)
    sizes = sorted({(e["class"], e["devices"], e["stages_per_rank"], e["microbatches"]) for e in index["dumps"]}, key=str)
    written = {}
    for cls_name, devices, per_rank, microbatches in sizes:
        for e in dump_one(fresh, cls_name, devices, per_rank, microbatches):
            written[(cls_name, devices, per_rank, microbatches, e.get("format"))] = e
    for entry in index["dumps"]:
        key = (entry["class"], entry["devices"], entry["stages_per_rank"], entry["microbatches"], entry.get("format"))
        label = entry.get("file", "").rsplit(".", 2)[0] or f"{entry['class']}-p{entry['devices']}-v{entry['stages_per_rank']}-m{entry['microbatches']}"
        fmt = f"{entry.get('format', 'all')}:fixture"
        now = written.get(key) or written.get(key[:4] + (None,))
        if "file" not in entry:  # PyTorch could not write this one when the fixtures were written
            same = now is not None and "file" not in now
            detail = f"PyTorch still cannot write it: {now['error']}" if same else "the running torch writes it now, the fixtures have none"
            tally.report("KNOWN" if same else "FAIL", label, fmt, detail)
            continue
        if now is None or "file" not in now:
            tally.report("FAIL", label, fmt, f"the running torch wrote no such dump: {(now or {}).get('error', 'not asked for')}")
            continue
        with open(os.path.join(dumps_dir, entry["file"]), "rb") as a, open(os.path.join(fresh, now["file"]), "rb") as b:
            same = a.read() == b.read()
        tally.report("PASS" if same else "FAIL", label, fmt, "the running torch writes the committed file byte for byte" if same else "the running torch writes another file than the committed one")
    grid = index.get("grid")
    if grid:
        factor = int(grid["microbatches"].split("·")[0].split()[-1])  # "1 to 3·P·V"
        with gzip.open(os.path.join(dumps_dir, grid["file"]), "rt") as f:
            committed = [json.loads(line) for line in f]
        fresh_lines = list(grid_lines(factor))
        differ = [f"P={a['p']} V={a['v']} M={a['m']}" for a, b in zip(fresh_lines, committed) if a != b]
        if len(fresh_lines) != len(committed):
            differ.append(f"{len(fresh_lines)} sizes, the fixture has {len(committed)}")
        accepted = sum("csv" in line for line in fresh_lines)
        detail = (
            f"the running torch writes all {len(fresh_lines)} sizes as committed ({accepted} accepted, {len(fresh_lines) - accepted} refused)"
            if not differ
            else f"{len(differ)} sizes differ from the committed grid, first {differ[0]}"
        )
        tally.report("FAIL" if differ else "PASS", grid["file"].split(".")[0], "compute_only:fixture", detail)


def default_dumps_dir(version):
    """The committed dumps written by this torch version (the newest at the top, older ones in
    torch-X.Y.Z/): a comms dump of one version need not load in another."""
    base = os.path.join(ROOT, "tests", "fixtures", "pytorch-dumps")
    older = os.path.join(base, f"torch-{version}")
    if os.path.isdir(older):
        return older
    try:
        with open(os.path.join(base, "index.json")) as f:
            written_by = json.load(f)["torch"]
    except (OSError, ValueError, KeyError):
        return base
    if written_by != version:
        raise UserError(
            f"the committed dumps are torch {written_by}'s, and there are none of torch {version}",
            f"write them with `TORCH_VERSION={version} tools/pytorch-check.sh dump DIR` and pass --dumps DIR, or pass --no-dumps",
        )
    return base


def cmd_check(args):
    if args.a2a_only and (args.no_a2a or args.dumps_only):
        other = "--no-a2a" if args.no_a2a else "--dumps-only"
        raise UserError(f"--a2a-only and {other} leave nothing to check", "give one of them")
    cli = None if args.dumps_only and not args.cli else find_cli(args.cli)
    version = torch_version()
    torch_minor = ".".join(version.split(".")[:2])
    print(f"check: torch {version}, bubblescope {cli or '(none)'}", flush=True)
    tally = Tally()
    tmp = tempfile.mkdtemp(prefix="bubblescope-check-")
    try:
        dumps_dir = args.dumps or default_dumps_dir(version)
        index = {"dumps": []}
        if not args.no_dumps and not args.a2a_only:
            try:
                with open(os.path.join(dumps_dir, "index.json")) as f:
                    index = json.load(f)
            except OSError:
                raise UserError(f"{dumps_dir} has no index.json", "write PyTorch's dumps with `tools/pytorch-check.sh dump DIR`, or pass --no-dumps")
            if index.get("torch") == version:
                check_fixtures(index, dumps_dir, tmp, tally)
        for entry in index["dumps"]:
            if "file" not in entry:
                continue
            ok, detail = run_file(os.path.join(dumps_dir, entry["file"]), entry["format"])
            # PyTorch's own dumps that PyTorch cannot load are facts to know, not failures here.
            status = "PASS" if ok else "KNOWN"
            tally.report(status, entry["file"].rsplit(".", 2)[0], f"{entry['format']}:torch", detail)
            if cli and not args.dumps_only:
                check_dump(cli, entry, dumps_dir, torch_minor, tmp, tally)
        if cli and not args.dumps_only:
            listed = subprocess.run([cli, "list", "--json"], capture_output=True, text=True)
            if listed.returncode != 0:
                raise UserError(f"`bubblescope list --json` failed: {first_line(listed.stderr)}", "check the --cli binary")
            families = [f["name"] for f in json.loads(listed.stdout)]
            if args.families:
                unknown = [f for f in args.families.split(",") if f not in families]
                if unknown:
                    raise UserError(f"--families: {', '.join(unknown)} not among `bubblescope list`", "pick from: " + ", ".join(families))
                families = [f for f in families if f in args.families.split(",")]
            if args.devices or args.microbatches:
                devices = args.devices or 2
                sizes = [(devices, args.microbatches or 4 * devices, None)]
            else:
                sizes = parse_sizes(args.sizes)
            try:
                if not args.a2a_only:
                    for size in sizes:
                        for family in families:
                            check_family(cli, family, size, torch_minor, tmp, tally)
                    if not args.families and not args.no_plan:
                        for name, command in PLAN_CASES:
                            export_case(cli, name, command + ["--torch", torch_minor], tmp, tally)
                if not args.no_a2a:
                    try:
                        check_a2a(cli, families, torch_minor, tmp, tally)
                    except MissingExport as exc:
                        tally.report(
                            "FAIL", "a2a-overlap", "export",
                            f"the CLI cannot export combined 1F1B ({exc}); the check needs "
                            "`bubblescope simulate -s 1f1b --model mixtral-8x7b --dp 2 --ep 2 --a2a-overlap --export FILE`",
                        )
            except MissingExport as exc:
                tally.report(
                    "FAIL", "families", "export",
                    f"the CLI cannot write a family as a file ({exc}); the check needs "
                    "`bubblescope simulate -s FAMILY --devices P --microbatches M --export FILE --to-format pytorch-csv|pytorch-csv-comms --torch X.Y`",
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    skipped = f", {tally.skipped} skipped or known" if tally.skipped else ""
    print(f"{tally.passed} passed, {tally.failed} failed{skipped} (torch {version})")
    return 1 if tally.failed else 0


# ---------------------------------------------------------------------------------------------
# command line


def parser():
    ap = argparse.ArgumentParser(
        prog="tools/pytorch-check.sh",
        description=__doc__.split("\n\n")[0],
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    t = sub.add_parser("trace", help="profile a schedule on CPU/gloo and write one Chrome trace per rank", epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("outdir", metavar="OUTDIR")
    t.add_argument("--schedule", metavar="NAME", help="a PyTorch schedule class, e.g. ScheduleInterleaved1F1B or InterleavedZeroBubble")
    t.add_argument("--csv", metavar="FILE", help="a schedule CSV, loaded with _PipelineScheduleRuntime._load_csv")
    t.add_argument("--format", choices=["compute_only", "compute_comms"], help="format of --csv [default: compute_comms if it has SEND/RECV cells]")
    t.add_argument("--devices", type=int, default=2, metavar="P", help="ranks for --schedule [default: 2; more ranks than cores make timings meaningless]")
    t.add_argument("--stages-per-rank", type=int, default=2, metavar="V", help="stages per rank for multi-stage classes [default: 2; ZBV and DualPipeV always 2]")
    t.add_argument("--microbatches", type=int, default=4, metavar="M", help="microbatches for --schedule [default: 4]")
    t.add_argument("--width", type=int, default=256, help="width between blocks, what crosses a stage boundary [default: 256]")
    t.add_argument("--hidden", type=int, default=4096, help="hidden width inside a block, where the compute is [default: 4096]")
    t.add_argument("--layers", type=int, default=1, help="blocks per stage [default: 1]")
    t.add_argument("--layers-per-stage", metavar="L0,L1,...", help="blocks of each stage, for uneven stages")
    t.add_argument("--microbatch-size", type=int, default=32, metavar="B", help="rows per microbatch [default: 32]")
    t.add_argument("--steps", type=int, default=2, help="profiled steps after the warm-up step [default: 2]")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--timeout", type=float, default=600, help="seconds before the run counts as hung [default: 600]")
    t.add_argument("--force", action="store_true", help="overwrite a non-empty OUTDIR")

    s = sub.add_parser("summarize", help="what a trace directory measured, per rank")
    s.add_argument("dir", metavar="DIR")
    s.add_argument("--json", action="store_true", help="print the numbers as JSON (the tests read them as an independent reading)")

    d = sub.add_parser("dump", help="PyTorch's CSV dumps of all its schedule classes (and the ZB1P grid)")
    d.add_argument("outdir", metavar="OUTDIR")
    d.add_argument("--grid", action="store_true", help="also dump ScheduleInterleavedZeroBubble over P 2..8, V 2..4, M 1..F·P·V")
    d.add_argument("--grid-factor", type=int, default=3, metavar="F", help="the grid's largest M is F·P·V [default: 3]")

    lo = sub.add_parser("lower", help="PyTorch's lowering of a compute-only CSV to its compute_comms form")
    lo.add_argument("input", metavar="IN.csv")
    lo.add_argument("output", metavar="OUT.csv")

    r = sub.add_parser("run", help="run a CSV in _PipelineScheduleRuntime and compare gradients with one process")
    r.add_argument("file", metavar="FILE.csv")
    r.add_argument("--format", required=True, choices=["compute_only", "compute_comms"])
    r.add_argument("--microbatches", type=int, metavar="M", help="[default: the largest microbatch in the file + 1]")
    r.add_argument("--timeout", type=float, default=180)
    r.add_argument(
        "--runtime",
        choices=["runtime", "multi"],
        default="runtime",
        help="runtime: _PipelineScheduleRuntime (the default, what PyTorch's multi-stage classes use); "
        "multi: PipelineScheduleMulti, which runs a compute_only file in lock-step",
    )

    c = sub.add_parser("check", help="every exported family and every PyTorch dump, run in PyTorch")
    c.add_argument("--cli", metavar="PATH", help="the bubblescope binary [default: $CARGO_TARGET_DIR/release/bubblescope (target/ when unset), then PATH]")
    c.add_argument(
        "--sizes",
        default=DEFAULT_SIZES,
        metavar="P:M[:V],...",
        help=f"the sizes every family is exported at; V (chunks per device) only for the families that take --chunks [default: {DEFAULT_SIZES}]",
    )
    c.add_argument("--devices", type=int, metavar="P", help="one size instead of --sizes: P ranks")
    c.add_argument("--microbatches", type=int, metavar="M", help="with --devices: M microbatches [default: 4P]")
    c.add_argument("--no-plan", action="store_true", help="leave out the `plan --export` cases")
    c.add_argument("--families", metavar="A,B", help="only these families (and no plan cases)")
    c.add_argument("--dumps", metavar="DIR", help="PyTorch's dumps [default: tests/fixtures/pytorch-dumps]")
    c.add_argument("--dumps-only", action="store_true", help="only run PyTorch's dumps, and read them with the CLI if --cli is given")
    c.add_argument("--no-dumps", action="store_true", help="only the exported families")
    c.add_argument("--no-a2a", action="store_true", help="leave out the --a2a-overlap (combined 1F1B) exports")
    c.add_argument("--a2a-only", action="store_true", help="only the --a2a-overlap exports (1f1b and interleaved-1f1b paired as OVERLAP_F_B)")
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    handlers = {"trace": cmd_trace, "summarize": cmd_summarize, "dump": cmd_dump, "lower": cmd_lower, "run": cmd_run, "check": cmd_check}
    try:
        return handlers[args.command](args) or 0
    except UserError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
