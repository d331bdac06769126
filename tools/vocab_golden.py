"""Golden orders of the Vocabulary Parallelism authors' schedules (issue 40).

Writes tests/golden/vocab/<family>.json for the families vocab-1, vocab-2, interlaced-vocab and
v-half-vocab. Run once and commit the output (the README next to the goldens has the exact command):

    python3 tools/vocab_golden.py \
        --vocab-repo /work/.mirror/sail-sg+VocabularyParallelism/repo \
        --zb-repo /work/.mirror/sail-sg+zero-bubble-pipeline-parallelism/repo \
        --out tests/golden/vocab

`--check` regenerates into a temporary directory and compares with `--out` instead of writing.

It runs the authors' own code and nothing of ours decides an order. Their files are read with
`git show` from a clone outside this repository (bare or not) at run time and executed from
memory; nothing of theirs is copied here.

1F1B families (sail-sg/VocabularyParallelism, `megatron/core/pipeline_parallel/`):
- `vocab_parallel_schedule.forward_backward_pipelining_with_vocab_parallel`: vocab-1 is its
  `--disable-backward-fusion` mode (two barriers, `reduce_lm_head_res_alg1`), vocab-2 its default
  (one barrier, `reduce_lm_head_res_alg2`); the artifact's names (artifact/quick_exp.sh,
  artifact/show_result_full_exp.py: synctwice = vocab-1, vocab = vocab-2).
- `interlaced_schedule.forward_backward_pipelining_with_interlaced_schedule`.
These are runtime loops, not planners, so the loop itself is run once per pipeline rank with torch,
Megatron's parallel_state, the p2p wrappers, the model and ScheduleTimers replaced by recorders.
The recorders decide nothing: each call is logged in order (compute passes, p2p, collectives with
their stream, stream waits), and the costs the FSM reads are handed to it through the stub of
`ScheduleTimers.joint_conclusion()`, in the tuple order of their `SyncTimers.conclusion()`
(avg_f, avg_b, avg_s, avg_input_f, avg_input_b, comm, f_mem, b_mem). `get_args().profile` is on:
it only adds their NVTX labels (F3, B3, S3, IF3, IB3), which are kept with each pass.
The FSM's locals (is_bsf, offsets, num_warmup_s_pass, f, b, c, ...) are read from the function's
frame when it returns. Passes are named from the model chunk their code passes to forward_step or
that produced the tensor given to backward_step: chunk 0 = transformer layers (F, B), 1 = output
layer (S forward, T backward), 2 = input layer (IF, IB), 3 = loss (LOSS).

V-Half (sail-sg/zero-bubble-pipeline-parallelism, branch v-half-vocab,
`megatron/core/pipeline_parallel/zerobubble/scheduler/`): the steps of the runtime's V-Half path
(runtime.py, `zero_bubble_v_schedule_mem_setup == 'half'`): `zbv_greedy.PipelineGraph(...,
'half', 1000, 1000, 1000, 1).create_schedule`, then `passes.run_schedule_passes` step by step:
`pre_validate`, `add_send_recv_peer_stage`, `add_time`, `add_embedding_passes`,
`communication.run_communication_passes` (`megatron.training.get_args` is stubbed:
enable_vocab_parallel on, disable_backward_fusion as the case says, post validation off). The
GraphConfig memory lists are left empty: the runtime fills them with estimates no pass here reads.

Checks recorded with each 1F1B case: sends and receives between neighbours pair up in order, each
F or B consumes the microbatch its neighbour sent, every collective group sees the same sequence
of collectives on every rank, and each pass runs once per microbatch. They guard the recorders,
and they also catch the authors' loops at too few microbatches (a real run would hang or read
past the data); such cases are kept with `runnable: false`.
"""

import argparse
import contextlib
import filecmp
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types

VP_DIR = "megatron/core/pipeline_parallel"
VP_FILES = {
    "vocab": f"{VP_DIR}/vocab_parallel_schedule.py",
    "interlaced": f"{VP_DIR}/interlaced_schedule.py",
}
VP_ENTRY = {
    "vocab": "forward_backward_pipelining_with_vocab_parallel",
    "interlaced": "forward_backward_pipelining_with_interlaced_schedule",
}
ZB_SCHEDULER = "megatron/core/pipeline_parallel/zerobubble/scheduler"
ZB_MODULES = ["graph", "communication", "passes", "zbv_greedy"]

PS = [2, 4, 8]

# Cost mixes for the 1F1B vocabulary schedules. f, b: transformer forward / backward of a stage;
# s: the S step (output layer) and input_f: the input layer forward, both as their timers report
# them. The FSM (vocab_parallel_schedule.py:113-141) reads f = conclusion[0][0][0],
# b = conclusion[0][0][1] and c = conclusion[0][0][3], which is avg_input_f, not avg_s.
VOCAB_MIXES = [
    # name, f, b, s, input_f, profiled
    ("b2f-c-half-f", 1.0, 2.0, 0.5, 0.5, True),
    ("b2f-c-quarter-f", 1.0, 2.0, 0.25, 0.25, True),
    ("b2f-c-zero", 1.0, 2.0, 0.0, 0.0, True),
    ("b2f-c-equals-f", 1.0, 2.0, 1.0, 1.0, True),
    ("b-equals-f", 1.0, 1.0, 0.5, 0.5, True),
    ("b1.5f", 1.0, 1.5, 0.5, 0.5, True),
    ("b2.5f", 1.0, 2.5, 0.5, 0.5, True),
    ("b3f", 1.0, 3.0, 0.5, 0.5, True),
    ("b4f", 1.0, 4.0, 0.5, 0.5, True),
    ("s-above-f-input-below", 1.0, 2.0, 1.5, 0.5, True),
    ("c-above-f", 1.0, 2.0, 1.5, 1.5, True),
    ("b-below-f", 2.0, 1.0, 0.5, 0.5, True),
    ("unprofiled", None, None, None, None, False),
]

# V-Half: the runtime always passes these (runtime.py, the 'half' branch): f, b, w, comm.
VHALF_RUNTIME = ("runtime", 1000.0, 1000.0, 1000.0, 1.0)
# Other costs given to the same calls, to pin down how add_embedding_passes uses cost_f and cost_b.
VHALF_MIXES = [VHALF_RUNTIME, ("b2f", 1000.0, 2000.0, 1000.0, 1.0), ("b1.5f-w0.5f", 1000.0, 1500.0, 500.0, 100.0)]


def git(repo, *args):
    try:
        return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        detail = getattr(err, "stderr", "") or str(err)
        sys.exit(f"error: git {' '.join(args)} failed in {repo}: {detail.strip()}\n"
                 f"hint: pass clones of sail-sg/VocabularyParallelism and sail-sg/zero-bubble-pipeline-parallelism (with branch v-half-vocab), e.g. from the fetch tool's /work/.mirror")


def read_source(repo, ref, path):
    return git(repo, "show", f"{ref}:{path}")


# ---------------------------------------------------------------------------------------------
# Recorders standing in for torch, parallel_state and Megatron's helpers (1F1B families).
# ---------------------------------------------------------------------------------------------


class Recorder:
    """Per-rank log of what the authors' loop calls, in call order."""

    def __init__(self, rank, world, source_file):
        self.rank = rank
        self.world = world
        self.source_file = source_file
        self.events = []
        self.nvtx = []
        self.vchunk = None
        self.recv_seq = {"forward": 0, "backward": 0}
        self.handles = 0

    def site(self):
        """The authors' function and line that made the current call."""
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename != self.source_file:
            frame = frame.f_back
        if frame is None:
            return None, None, None
        return frame.f_code.co_name, frame.f_lineno, frame

    def add(self, event):
        fn, line, frame = self.site()
        event["at"] = f"{fn}:{line}"
        self.events.append(event)
        return frame


class Tensor:
    """A stand-in tensor carrying a tag: which pass made it, for which microbatch."""

    shape = (1, 1, 1)

    def __init__(self, tag=None):
        self.tag = tag

    def _same(self, *args, **kwargs):
        return Tensor(self.tag)

    def _inplace(self, *args, **kwargs):
        return self

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name.endswith("_") or name == "record_stream":
            return self._inplace
        if name == "item":
            return lambda: 0
        return self._same

    def __getitem__(self, key):
        return Tensor(self.tag)

    def __setitem__(self, key, value):
        pass

    def _op(self, other):
        return Tensor(self.tag)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _op

    def _iop(self, other):
        return self

    __iadd__ = __isub__ = __imul__ = __itruediv__ = _iop


class Stream:
    def __init__(self, name):
        self.name = name


class Handle:
    def __init__(self, rec, ident):
        self.rec = rec
        self.ident = ident

    def wait(self):
        self.rec.add({"kind": "wait", "handle": self.ident, "stream": STATE["stream"][-1].name})


class ModelChunk:
    def __init__(self, index):
        self.index = index


STATE = {}
PASS_OF_CHUNK = {(0, "fwd"): "F", (0, "bwd"): "B", (1, "fwd"): "S", (1, "bwd"): "T",
                 (2, "fwd"): "IF", (2, "bwd"): "IB", (3, "fwd"): "LOSS", (3, "bwd"): "LOSS_B"}


def rec():
    return STATE["rec"]


def make_torch():
    torch = types.ModuleType("torch")
    torch.float32 = "float32"
    torch.float = "float32"
    torch.int = "int"
    torch.Tensor = lambda *a, **k: Tensor(("const",))
    torch.tensor = lambda *a, **k: Tensor(("const",))
    torch.empty = lambda *a, **k: Tensor(None)
    torch.cat = lambda tensors, dim=0: Tensor(("cat", tuple(t.tag for t in tensors)))
    torch.log = lambda t: Tensor(t.tag)
    nn = types.ModuleType("torch.nn")
    nn.Module = type("Module", (), {})
    torch.nn = nn

    cuda = types.ModuleType("torch.cuda")
    nvtx = types.ModuleType("torch.cuda.nvtx")
    nvtx.range_push = lambda name: rec().nvtx.append(name)
    nvtx.range_pop = lambda: rec().nvtx.pop()
    cuda.nvtx = nvtx

    class CudaStream(Stream):
        def __init__(self):
            super().__init__("side")

        def wait_stream(self, other):
            rec().add({"kind": "wait_stream", "stream": self.name, "waits_for": other.name})

    def make_default():
        s = Stream("default")
        s.wait_stream = lambda other: rec().add({"kind": "wait_stream", "stream": "default", "waits_for": other.name})
        return s

    STATE["default_stream"] = make_default()
    cuda.Stream = CudaStream
    cuda.current_stream = lambda: STATE["stream"][-1]
    cuda.current_device = lambda: 0

    @contextlib.contextmanager
    def stream(s):
        STATE["stream"].append(s)
        try:
            yield
        finally:
            STATE["stream"].pop()

    cuda.stream = stream
    torch.cuda = cuda

    dist = types.ModuleType("torch.distributed")
    dist.ReduceOp = types.SimpleNamespace(MAX="MAX", SUM="SUM", AVG="AVG")
    dist.get_rank = lambda: rec().rank

    def collective(kind, tensor, op, group, async_op, src=None):
        r = rec()
        r.handles += 1
        event = {"kind": kind, "group": group, "stream": STATE["stream"][-1].name, "async": bool(async_op),
                 "id": r.handles}
        if op is not None:
            event["op"] = op
        if src is not None:
            event["src"] = src
        event["tensor"] = describe(tensor.tag)
        frame = r.add(event)
        if frame is not None:
            for key in ("microbatch_id", "backward_microbatch_id"):
                if key in frame.f_locals:
                    event[key] = frame.f_locals[key]
        return Handle(r, r.handles) if async_op else None

    dist.all_reduce = lambda tensor, op=None, group=None, async_op=False: collective(
        "all_reduce", tensor, op, group, async_op)
    dist.broadcast = lambda tensor, src, group=None, async_op=False: collective(
        "broadcast", tensor, None, group, async_op, src)

    def no_gather(*a, **k):
        raise RuntimeError("all_gather_into_tensor is only used with sequence parallelism, which is off")

    dist.all_gather_into_tensor = no_gather
    torch.distributed = dist
    return {"torch": torch, "torch.nn": nn, "torch.cuda": cuda, "torch.cuda.nvtx": nvtx, "torch.distributed": dist}


def describe(tag):
    """A tensor tag as JSON: [what, microbatch] when known."""
    if tag is None:
        return None
    if tag[0] == "out":
        return [PASS_OF_CHUNK[(tag[1], "fwd")], tag[2]]
    if tag[0] == "grad":
        return [PASS_OF_CHUNK[(tag[1], "bwd")] + ".grad", tag[2]]
    if tag[0] == "stat":
        return [tag[1], tag[2]]
    if tag[0] == "cat":
        return ["cat", [describe(t) for t in tag[1]]]
    return [tag[0]]


def make_parallel_state():
    ps = types.ModuleType("megatron.core.parallel_state")
    ps.get_pipeline_model_parallel_world_size = lambda: rec().world
    ps.get_pipeline_model_parallel_rank = lambda: rec().rank
    ps.is_pipeline_first_stage = lambda ignore_virtual=False: rec().rank == 0
    ps.is_pipeline_last_stage = lambda ignore_virtual=False: rec().rank == rec().world - 1
    ps.get_pipeline_model_parallel_last_rank = lambda: rec().world - 1
    ps.get_pipeline_model_parallel_first_rank = lambda: 0
    ps.get_lm_head_model_parallel_group = lambda: "lm_head"
    ps.get_pipeline_model_parallel_group = lambda: "pipeline"
    ps.get_tensor_model_parallel_group = lambda: "tensor"
    ps.get_tensor_model_parallel_world_size = lambda: 1
    ps.get_tensor_model_parallel_rank = lambda: 0
    ps.get_context_parallel_world_size = lambda: 1

    def set_chunk(k):
        rec().vchunk = k

    ps.set_virtual_vocab_parallel_chunk = set_chunk
    return ps


def make_schedules():
    """Megatron's schedules helpers the loops import: compute and p2p, recorded.

    p2p follows Megatron's rule (p2p_communication.py recv_forward/send_forward/...): nothing is
    sent or received past either end of the pipeline."""
    sch = types.ModuleType("megatron.core.pipeline_parallel.schedules")

    def label():
        r = rec()
        return r.nvtx[-1] if r.nvtx else None

    def forward_step(forward_step_func, data_iterator, model, num_microbatches, input_tensor, forward_data_store,
                     config, collect_non_loss_data=False, checkpoint_activations_microbatch=None,
                     is_first_microbatch=False, current_microbatch=None, encoder_decoder_xattn=False,
                     skip_loss_compute=False, force_loss_compute=False, run_timer=False):
        r = rec()
        chunk = model.index
        if r.vchunk != chunk:
            raise RuntimeError(f"virtual vocab chunk {r.vchunk} set, model chunk {chunk} run")
        event = {"kind": "compute", "pass": PASS_OF_CHUNK[(chunk, "fwd")], "mb": current_microbatch,
                 "nvtx": label()}
        inp = input_tensor[0] if isinstance(input_tensor, list) and input_tensor else None
        if isinstance(inp, Tensor) and inp.tag is not None and inp.tag[0] == "recv":
            event["input"] = list(inp.tag[1:])
        r.add(event)
        return [Tensor(("out", chunk, current_microbatch))], Tensor(("const",))

    def backward_step(input_tensor, output_tensor, output_tensor_grad, model_type, config, run_timer=False):
        r = rec()
        out = output_tensor[0] if isinstance(output_tensor, list) else output_tensor
        if not (isinstance(out, Tensor) and out.tag and out.tag[0] == "out"):
            raise RuntimeError(f"backward of a tensor no forward made: {out.tag if out else None}")
        chunk, mb = out.tag[1], out.tag[2]
        event = {"kind": "compute", "pass": PASS_OF_CHUNK[(chunk, "bwd")], "mb": mb, "nvtx": label()}
        if r.vchunk != chunk:
            # The IB callback runs after other passes have set another chunk (their helper sets
            # chunk 2 when it is created, not when its callback runs).
            event["virtual_chunk_set"] = r.vchunk
        g = output_tensor_grad[0] if isinstance(output_tensor_grad, list) and output_tensor_grad else None
        if isinstance(g, Tensor) and g.tag is not None and g.tag[0] == "recv":
            event["input"] = list(g.tag[1:])
        r.add(event)
        return [Tensor(("grad", chunk, mb))]

    def p2p(kind, send=None, recv=None):
        r = rec()
        event = {"kind": kind}
        if send is not None:
            t = send[0] if isinstance(send, list) else send
            event["sends"] = describe(t.tag) if isinstance(t, Tensor) else None
        got = None
        if recv is not None:
            r.recv_seq[recv] += 1
            event["recv_seq"] = r.recv_seq[recv]
            got = [Tensor(("recv", recv, r.recv_seq[recv]))]
        r.add(event)
        return got

    first = lambda: rec().rank == 0  # noqa: E731
    last = lambda: rec().rank == rec().world - 1  # noqa: E731

    def recv_forward(shapes, config):
        return [None] if first() else p2p("recv_forward", recv="forward")

    def recv_backward(shapes, config):
        return [None] if last() else p2p("recv_backward", recv="backward")

    def send_forward(out, shapes, config, wait_on_reqs=True):
        if not last():
            p2p("send_forward", send=out)
        return []

    def send_backward(grad, shapes, config):
        if not first():
            p2p("send_backward", send=grad)

    def send_forward_recv_backward(out, shapes, config):
        return [None] if last() else p2p("send_forward_recv_backward", send=out, recv="backward")

    def send_backward_recv_forward(grad, shapes, config):
        return [None] if first() else p2p("send_backward_recv_forward", send=grad, recv="forward")

    sch.forward_step = forward_step
    sch.backward_step = backward_step
    sch.recv_forward = recv_forward
    sch.recv_backward = recv_backward
    sch.send_forward = send_forward
    sch.send_backward = send_backward
    sch.send_forward_recv_backward = send_forward_recv_backward
    sch.send_backward_recv_forward = send_backward_recv_forward
    sch.get_tensor_shapes = lambda **k: [(k["seq_length"], k["micro_batch_size"], k["config"].hidden_size)]
    sch.check_first_val_step = lambda first_val_step, forward_only, cond: cond
    sch.deallocate_output_tensor = lambda out, flag=False: None
    sch.clear_embedding_activation_buffer = lambda config, model: None
    sch.bootstrap_and_profile_p2p_communication = lambda config, send, recv: None
    sch.finish_embedding_wgrad_compute = lambda config, module: None
    return sch


class ScheduleTimers:
    """Stand-in for schedule_timers.ScheduleTimers: hands the case's costs to the loop."""

    iter_counter = 0
    sync_timer = True
    conclusion = None

    @classmethod
    def joint_conclusion(cls, sync_timer=True, global_reduce=True):
        return [[cls.conclusion]]

    @classmethod
    def for_chunk(cls, chunk):
        raise RuntimeError("timers are off (run_timer is false)")


class VocabStore:
    """Stand-in for VocabOutputStore / VocabInputStore: tags what the S pass leaves behind."""

    microbatch_id = None
    queue = []

    @classmethod
    def forward_get(cls):
        names = ["sum_exp_logits", "logits_max", "predicted_logits", "target_mask", "softmax_grad_input",
                 "ground_truth_grad_input"]
        return tuple(Tensor(("stat", n, cls.microbatch_id)) for n in names)

    @classmethod
    def backward_store(cls, *args):
        cls.queue.append(args[0] if args else None)

    @classmethod
    def backward_get(cls):
        return cls.queue.pop(0) if cls.queue else Tensor(None)

    @classmethod
    def forward_store(cls, *args):
        pass


def load_vp(repo):
    """The authors' two 1F1B loops, executed from their source with the recorders installed."""
    commit = git(repo, "rev-parse", "HEAD").strip()
    mods = make_torch()
    megatron = types.ModuleType("megatron")
    core = types.ModuleType("megatron.core")
    pp = types.ModuleType("megatron.core.pipeline_parallel")
    tp = types.ModuleType("megatron.core.tensor_parallel")
    ps = make_parallel_state()
    core.parallel_state = ps
    timers = types.ModuleType("megatron.core.pipeline_parallel.schedule_timers")
    timers.ScheduleTimers = ScheduleTimers
    out_store = types.ModuleType("megatron.core.tensor_parallel.vocab_output_store")
    out_store.VocabOutputStore = VocabStore
    in_store = types.ModuleType("megatron.core.tensor_parallel.vocab_input_store")
    in_store.VocabInputStore = VocabStore
    utils = types.ModuleType("megatron.core.utils")
    utils.get_model_config = lambda model: STATE["config"]
    utils.get_model_type = lambda model: "encoder_or_decoder"
    utils.get_model_xattn = lambda model: False
    training = types.ModuleType("megatron.training")
    training.get_args = lambda: STATE["args"]
    mods.update({
        "megatron": megatron, "megatron.core": core, "megatron.core.parallel_state": ps,
        "megatron.core.pipeline_parallel": pp, "megatron.core.pipeline_parallel.schedules": make_schedules(),
        "megatron.core.pipeline_parallel.schedule_timers": timers, "megatron.core.tensor_parallel": tp,
        "megatron.core.tensor_parallel.vocab_output_store": out_store,
        "megatron.core.tensor_parallel.vocab_input_store": in_store, "megatron.core.utils": utils,
        "megatron.training": training,
    })
    saved = {k: sys.modules.get(k) for k in mods}
    sys.modules.update(mods)
    entries = {}
    try:
        for key, path in VP_FILES.items():
            name = f"{VP_DIR.replace('/', '.')}.{os.path.basename(path)[:-3]}"
            filename = f"sail-sg/VocabularyParallelism@{commit[:12]}:{path}"
            module = types.ModuleType(name)
            module.__file__ = filename
            exec(compile(read_source(repo, "HEAD", path), filename, "exec"), module.__dict__)
            entries[key] = (getattr(module, VP_ENTRY[key]), filename)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return entries, commit


FSM_LOCALS = ["f", "b", "c", "is_bsf", "offsets", "num_warmup_s_pass", "num_warmup_microbatches",
              "num_microbatches_remaining", "warmup_offset", "num_warmup_s_pass_rank"]
INTERLACED_LOCALS = ["num_warmup_microbatches", "num_cooldown_microbatches", "num_waiting_microbatches",
                     "num_microbatches_remaining", "is_fbs", "first_stage_is_fbs"]


def run_rank(entry, filename, rank, p, m, fusion_off, mix):
    """One rank of the authors' loop; returns (events, locals) or raises what their code raises."""
    r = Recorder(rank, p, filename)
    STATE["rec"] = r
    STATE["stream"] = [STATE["default_stream"]]
    STATE["config"] = types.SimpleNamespace(
        overlap_p2p_comm=False, finalize_model_grads_func=None, timers=None, no_sync_func=None,
        num_microbatches_with_partial_activation_checkpoints=None, variable_seq_lengths=False,
        sequence_parallel=False, pipeline_dtype="bf16", deallocate_pipeline_outputs=True, grad_sync_func=None,
        calculate_per_token_loss=False, barrier_with_L1_time=False, hidden_size=8)
    profiled = mix is None or mix[5]
    # Profiled: iter_counter passes schedule_timer_end, so the FSM reads joint_conclusion();
    # unprofiled: it takes its own defaults. run_timer stays false (schedule_timer_start far off).
    STATE["args"] = types.SimpleNamespace(disable_backward_fusion=fusion_off, profile=True,
                                          schedule_timer_start=10 ** 9,
                                          schedule_timer_end=0 if profiled else 10 ** 6)
    ScheduleTimers.iter_counter = 100 if profiled else 0
    if mix is not None and profiled:
        _, f, b, s, input_f, _ = mix
        ScheduleTimers.conclusion = (f, b, s, input_f, 0.0, 0.0, 0.0, 0.0)
    VocabStore.queue = []
    VocabStore.microbatch_id = None
    captured = {}
    code = entry.__code__

    def profiler(frame, event, arg):
        if event == "return" and frame.f_code is code:
            captured.update({k: frame.f_locals[k] for k in FSM_LOCALS + INTERLACED_LOCALS if k in frame.f_locals})

    sys.setprofile(profiler)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            entry(forward_step_func=None, data_iterator=None, model=[ModelChunk(i) for i in range(4)],
                  num_microbatches=m, seq_length=16, micro_batch_size=1)
    finally:
        sys.setprofile(None)
    return r.events, captured


def check_ranks(ranks, m, with_loss):
    """Sends pair with receives in order, each F/B consumes what its neighbour sent for that
    microbatch, each pass runs once per microbatch, and each collective group sees the same
    sequence on every rank. Returns the problems found."""
    problems = []
    p = len(ranks)
    sent = {}  # (from, to, direction) -> microbatches in send order
    for rank, events in enumerate(ranks):
        for e in events:
            if "sends" in e:
                forward = "forward" in e["kind"].split("_recv")[0]
                to = rank + 1 if forward else rank - 1
                mb = e["sends"][1] if e["sends"] else None
                sent.setdefault((rank, to, "forward" if forward else "backward"), []).append(mb)
    for rank, events in enumerate(ranks):
        for e in events:
            if e.get("kind") == "compute" and "input" in e:
                direction, seq = e["input"]
                frm = rank - 1 if direction == "forward" else rank + 1
                queue = sent.get((frm, rank, direction), [])
                if seq > len(queue):
                    problems.append(f"rank {rank} {e['pass']}{e['mb']} uses receive {seq} of {direction}, "
                                    f"rank {frm} sent {len(queue)}")
                elif queue[seq - 1] != e["mb"]:
                    problems.append(f"rank {rank} {e['pass']}{e['mb']} got microbatch {queue[seq - 1]}")
        recvs = {"forward": 0, "backward": 0}
        for e in events:
            if "recv_seq" in e:
                recvs["forward" if e["kind"].endswith("recv_forward") else "backward"] += 1
        for direction, frm in (("forward", rank - 1), ("backward", rank + 1)):
            n_sent = len(sent.get((frm, rank, direction), []))
            if n_sent != recvs[direction]:
                problems.append(f"rank {rank} receives {recvs[direction]} {direction}, rank {frm} sends {n_sent}")
    for rank, events in enumerate(ranks):
        kinds = ["F", "B", "S", "T", "IF", "IB"] + (["LOSS", "LOSS_B"] if with_loss and rank == p - 1 else [])
        for kind in kinds:
            mbs = sorted(e["mb"] for e in events if e["kind"] == "compute" and e["pass"] == kind)
            if mbs != list(range(m)):
                problems.append(f"rank {rank} runs {kind} for microbatches {mbs}, expected 0..{m - 1} once each")
    groups = {}
    for rank, events in enumerate(ranks):
        for e in events:
            if e["kind"] in ("all_reduce", "broadcast"):
                groups.setdefault(e["group"], [[] for _ in range(p)])[rank].append((e["kind"], e.get("op")))
    for group, seqs in groups.items():
        members = [s for s in seqs if s] if group == "pipeline" else seqs
        if any(s != members[0] for s in members):
            lens = [len(s) for s in seqs]
            first_diff = next((i for i in range(min(lens)) if len({tuple(s[i]) for s in seqs}) > 1), min(lens))
            problems.append(f"group {group}: collective sequences differ across ranks (lengths {lens}, "
                            f"first difference at {first_diff})")
    return problems


def resolve_receives(ranks):
    """Give each receive the microbatch its neighbour sent in that place (FIFO per direction)."""
    sent = {}
    for rank, events in enumerate(ranks):
        for e in events:
            if "sends" in e:
                forward = "forward" in e["kind"].split("_recv")[0]
                key = (rank, rank + 1 if forward else rank - 1, "forward" if forward else "backward")
                sent.setdefault(key, []).append(e["sends"][1] if e["sends"] else None)
    for rank, events in enumerate(ranks):
        for e in events:
            if "recv_seq" in e:
                direction = "forward" if e["kind"].endswith("recv_forward") else "backward"
                frm = rank - 1 if direction == "forward" else rank + 1
                queue = sent.get((frm, rank, direction), [])
                e["recv_mb"] = queue[e["recv_seq"] - 1] if e["recv_seq"] <= len(queue) else None


GROUPS = {"lm_head": "lm", "pipeline": "pp", "tensor": "tp"}


def what(e):
    """What a collective moves, as '<name><microbatch>'."""
    at = e["at"].split(":")[0]
    mb = e.get("microbatch_id")
    if at in ("receive_lm_head_input", "broadcast_lm_head_input"):
        return f"lm_head_input{mb}"
    if at in ("input_embedding_backward_step_helper", "fused_input_embedding_step_helper") and e["kind"] == "broadcast":
        return f"IB_grad{mb if mb is not None else e.get('backward_microbatch_id', '?')}"
    t = e.get("tensor")
    if t is None:
        return "?"
    if t[0] == "const":
        return "comm_wait"
    if len(t) == 2 and not isinstance(t[1], list):
        return f"{t[0]}{t[1]}"
    return "?"


def tokens(events):
    """A rank's events as tokens (grammar in tests/golden/vocab/README.md)."""
    out, names = [], {}
    for i, e in enumerate(events):
        k = e["kind"]
        if k == "compute":
            tok = f"{e['pass']}{e['mb']}"
            if e.get("nvtx") and e["nvtx"] != tok:
                tok += f"@{e['nvtx']}"
        elif k in ("all_reduce", "broadcast"):
            head = "ar." + e["op"] if k == "all_reduce" else "bc"
            tok = f"{head}.{GROUPS[e['group']]}.{e['stream']}{'.async' if e['async'] else ''}:{what(e)}"
            names[e["id"]] = (len(out), what(e))
        elif k == "wait":
            index, name = names[e["handle"]]
            if index == len(out) - 1 and not out[-1].endswith("+wait"):
                out[-1] += "+wait"
                continue
            tok = f"wait:{name}"
        elif k == "wait_stream":
            tok = f"{e['stream']}<{e['waits_for']}"
        else:
            parts = []
            if "sends" in e:
                d = "F" if "forward" in k.split("_recv")[0] else "B"
                parts.append(f"send{d}{e['sends'][1] if e['sends'] else '?'}")
            if "recv_seq" in e:
                d = "F" if k.endswith("recv_forward") else "B"
                mb = e.get("recv_mb")
                parts.append(f"recv{d}{'?' if mb is None else mb}")
            tok = "+".join(parts)
        out.append(tok)
    return " ".join(out)


def compact(events):
    """Compute passes in order as their tokens, e.g. 'IF0 F0 S0 T0 ...'."""
    return " ".join(f"{e['pass']}{e['mb']}" for e in events if e["kind"] == "compute")


def event_json(e):
    """One event as a JSON object, only the fields that say something."""
    return {k: v for k, v in e.items() if v is not None and k not in ("recv_seq",)}


def live_peaks(events):
    """Peak of passes begun and not yet undone, counted over the rank's order: F - B
    (transformer activations), S - T (output layer), IF - IB (input layer)."""
    pairs = {"F": ("F", "B"), "S": ("S", "T"), "IF": ("IF", "IB")}
    peaks = {}
    for key, (up, down) in pairs.items():
        cur = peak = 0
        for e in events:
            if e["kind"] != "compute":
                continue
            if e["pass"] == up:
                cur += 1
            elif e["pass"] == down:
                cur -= 1
            peak = max(peak, cur)
        peaks[key] = peak
    return peaks


def vp_case(entries, family, p, m, mix, detailed=False):
    kind = "interlaced" if family == "interlaced-vocab" else "vocab"
    entry, filename = entries[kind]
    fusion_off = family == "vocab-1"
    case = {"name": f"p{p}-m{m}" + (f"-{mix[0]}" if kind == "vocab" else ""), "devices": p, "microbatches": m}
    if kind == "vocab":
        name, f, b, s, input_f, profiled = mix
        case["mix"] = name
        case["costs"] = ({"f": f, "b": b, "s": s, "input_f": input_f, "source": "ScheduleTimers.joint_conclusion"}
                         if profiled else {"source": "unprofiled: the loop's own defaults"})
        case["backward_fusion"] = not fusion_off
        case["barriers"] = 2 if fusion_off else 1
    ranks, fsm, per_rank = [], None, []
    try:
        for rank in range(p):
            events, captured = run_rank(entry, filename, rank, p, m, fusion_off, mix if kind == "vocab" else None)
            ranks.append(events)
            if rank == 0:
                keys = FSM_LOCALS if kind == "vocab" else INTERLACED_LOCALS
                fsm = {k: captured[k] for k in keys if k in captured and k != "num_warmup_s_pass_rank"}
            per_rank.append({k: captured[k] for k in ("num_warmup_microbatches", "num_microbatches_remaining",
                                                      "num_warmup_s_pass_rank", "num_cooldown_microbatches",
                                                      "num_waiting_microbatches", "is_fbs") if k in captured})
    except Exception as err:  # their code refusing or failing on a config is a finding, not a crash of ours
        case["refused"] = {"error": type(err).__name__, "message": str(err), "rank": len(ranks)}
        return case
    resolve_receives(ranks)
    case["fsm" if kind == "vocab" else "counts"] = fsm
    case["per_rank"] = per_rank
    case["checks"] = check_ranks(ranks, m, with_loss=kind == "vocab")
    case["runnable"] = not case["checks"]
    case["live_peak"] = [live_peaks(events) for events in ranks]
    case["passes"] = [compact(events) for events in ranks]
    case["order"] = [tokens(events) for events in ranks]
    if detailed:
        case["events"] = [[event_json(e) for e in events] for events in ranks]
    return case


def dedupe(cases):
    """A case whose order equals an earlier case's says so instead of repeating it."""
    seen = {}
    for case in cases:
        if "order" not in case:
            continue
        key = json.dumps(case["order"])
        if key in seen and "events" not in case:
            case["order_of"] = seen[key]
            del case["order"], case["passes"]
        else:
            seen.setdefault(key, case["name"])
    return cases


def support(run, p, m_max):
    """'.' runs with consistent traces, '!' runs but sends/receives or collectives do not pair up,
    'X' raises; index i is m = i + 1."""
    out = []
    for m in range(1, m_max + 1):
        c = run(p, m)
        out.append("X" if "refused" in c else ("." if c.get("runnable", True) else "!"))
    text = "".join(out)
    return {"devices": p, "microbatches_1_to_n": text,
            "min_runnable": next((i + 1 for i, ch in enumerate(text) if ch == "." and "X" not in text[i:]
                                  and "!" not in text[i:]), None)}


# ---------------------------------------------------------------------------------------------
# V-Half with vocabulary parallelism (graph scheduler, v-half-vocab branch).
# ---------------------------------------------------------------------------------------------


def load_zb(repo, ref):
    """The v-half-vocab scheduler package, read from the branch into a temporary directory."""
    commit = git(repo, "rev-parse", ref).strip()
    root = tempfile.mkdtemp(prefix="vhalf-vocab-")
    package = os.path.join(root, ZB_SCHEDULER)
    os.makedirs(package)
    parts = ZB_SCHEDULER.split("/")
    for i in range(1, len(parts) + 1):
        open(os.path.join(root, *parts[:i], "__init__.py"), "w").close()
    for name in ZB_MODULES:
        with open(os.path.join(package, f"{name}.py"), "w") as f:
            f.write(read_source(repo, commit, f"{ZB_SCHEDULER}/{name}.py"))
    training = types.ModuleType("megatron.training")
    training.get_args = lambda: STATE["zb_args"]
    saved = {k: v for k, v in sys.modules.items() if k == "megatron" or k.startswith("megatron.")}
    for k in saved:
        del sys.modules[k]
    sys.path.insert(0, root)
    try:
        import megatron  # noqa: F401  (the empty package just written)

        sys.modules["megatron.training"] = training
        base = ZB_SCHEDULER.replace("/", ".")
        mods = {name: __import__(f"{base}.{name}", fromlist=[name]) for name in ZB_MODULES}
    finally:
        sys.path.remove(root)
    return mods, commit, root


# The authors' short names for node types (passes.py viz_node), used in the order tokens.
SHORT = {"SEND_FORWARD": "SF", "RECV_FORWARD": "RF", "SEND_BACKWARD": "SB", "RECV_BACKWARD": "RB",
         "REDUCE_INPUT_EMBD_FORWARD": "SIF", "BROADCAST_INPUT_EMBD_BACKWARD": "RIB",
         "BROADCAST_OUTPUT_EMBD_S": "RS", "BROADCAST_OUTPUT_EMBD_T": "RT", "REDUCE_OUTPUT_EMBD_S": "SS",
         "REDUCE_OUTPUT_EMBD_T": "ST"}
VHALF_COMPUTE = {"F", "B", "W", "BW", "S", "T", "IF", "IB"}
CHUNKED = {"F", "B", "W", "BW", "SF", "RF", "SB", "RB"}


def num(x):
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)


def node_token(n, times=True):
    """'F3.1@5000-6000': type, microbatch, .chunk (transformer passes and their p2p), @start-end,
    >peer stage (p2p). Zero-length nodes (the vocabulary passes and collectives) show @start."""
    t = SHORT.get(n.type.value, n.type.value)
    tok = f"{t}{n.microbatch}"
    if t in CHUNKED:
        tok += f".{n.chunk}"
    if times:
        tok += f"@{num(n.start_time)}"
        if n.completion_time != n.start_time:
            tok += f"-{num(n.completion_time)}"
    if n.comm_peer_stage is not None:
        tok += f">{n.comm_peer_stage}"
    return tok


def vhalf_live(order):
    """Peaks over a rank's order: F - W summed over both chunks (transformer activations, in
    chunk units), S - T (output layer)."""
    cur = peak = s_cur = s_peak = 0
    for n in order:
        t = n.type.value
        cur += (t == "F") - (t in ("W", "BW"))
        s_cur += (t == "S") - (t == "T")
        peak, s_peak = max(peak, cur), max(s_peak, s_cur)
    return {"F_chunks": peak, "S": s_peak}


def vhalf_case(mods, p, m, fusion_off, mix):
    graph, passes, comm, greedy = mods["graph"], mods["passes"], mods["communication"], mods["zbv_greedy"]
    name, f, b, w, c = mix
    STATE["zb_args"] = types.SimpleNamespace(enable_vocab_parallel=True, disable_backward_fusion=fusion_off,
                                             enable_optimizer_post_validation=False)
    case = {"name": f"{'fusion-off' if fusion_off else 'fusion-on'}-p{p}-m{m}-{name}", "devices": p,
            "microbatches": m, "mix": name,
            "costs": {"f": f, "b": b, "w": w, "comm": c,
                      "source": "runtime.py's fixed V-Half costs" if mix == VHALF_RUNTIME
                      else "given to PipelineGraph and GraphConfig in place of the runtime's 1000s"},
            "backward_fusion": not fusion_off, "barriers": 2 if fusion_off else 1}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            config = graph.GraphConfig(cost_f=[f] * p, cost_b=[b] * p, cost_w=[w] * p, cost_comm=c, mem_f=[],
                                       mem_b=[], mem_w=[], max_mem=None, print_scaling=1000, max_chunks=2,
                                       n_stages=p, n_micro=m)
            order = greedy.PipelineGraph(p, m, "half", f, b, w, c).create_schedule(config)
            passes.pre_validate(order)
            order = passes.add_send_recv_peer_stage(config, order)
            order = passes.add_time(config, order)
            makespan = max(rank[-1].completion_time for rank in order)
            order, s_t, t_t, if_t, ib_t = passes.add_embedding_passes(config, order)
            order = comm.run_communication_passes(config, order, s_t, t_t, if_t, ib_t)
    except Exception as err:
        case["refused"] = {"error": type(err).__name__, "message": str(err)}
        return case
    case["timings"] = {k: [float(x) for x in v] for k, v in (("S", s_t), ("T", t_t), ("IF", if_t), ("IB", ib_t))}
    case["makespan_fbw"] = float(makespan)
    case["live_peak"] = [vhalf_live(rank) for rank in order]
    case["passes"] = [" ".join(node_token(n, times=False) for n in rank if n.type.value in VHALF_COMPUTE)
                      for rank in order]
    case["order"] = [" ".join(node_token(n) for n in rank) for rank in order]
    return case


# ---------------------------------------------------------------------------------------------


def write_json(path, data):
    text = json.dumps(data, sort_keys=True, indent=2)
    # An object with no nested object or list, and a list of scalars, go on one line.
    text = re.sub(r"\{\s+([^{}\[\]]*?)\s+\}", lambda mm: "{" + " ".join(mm.group(1).split()) + "}", text)
    text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda mm: "[" + " ".join(mm.group(1).split()) + "]", text)
    with open(path, "w") as f:
        f.write(text + "\n")


SUPPORT_PS = range(2, 9)
STANDARD_MIX = VOCAB_MIXES[0]


def generate(args, out):
    entries, vp_commit = load_vp(args.vocab_repo)
    vp_source = {"repository": "https://github.com/sail-sg/VocabularyParallelism", "commit": vp_commit,
                 "generator": "tools/vocab_golden.py"}
    files = {}
    for family in ("vocab-1", "vocab-2", "interlaced-vocab"):
        mixes = VOCAB_MIXES if family != "interlaced-vocab" else [None]
        scan = [support(lambda p, m: vp_case(entries, family, p, m, STANDARD_MIX), p, 3 * p) for p in SUPPORT_PS]
        cases = []
        for p in PS:
            row = next(s for s in scan if s["devices"] == p)
            first_run = row["microbatches_1_to_n"].find("!") + 1 or None  # runs, but checks fail
            for m in sorted({p, 2 * p, 4 * p, row["min_runnable"], first_run} - {None}):
                for mix in mixes:
                    detailed = p == 4 and m == 2 * p and mix in (STANDARD_MIX, None)
                    cases.append(vp_case(entries, family, p, m, mix, detailed))
        if family == "interlaced-vocab":
            cases.append(vp_case(entries, family, 3, 6, None))  # odd p
        files[family] = {"family": family, "source": vp_source, "support": scan, "cases": dedupe(cases)}

    mods, zb_commit, root = load_zb(args.zb_repo, args.zb_ref)
    try:
        scan, cases = [], []
        for fusion_off in (True, False):
            for p in SUPPORT_PS:
                row = support(lambda p, m: vhalf_case(mods, p, m, fusion_off, VHALF_RUNTIME), p, 3 * p)
                row["backward_fusion"] = not fusion_off
                scan.append(row)
            for p in PS:
                for m in (p, 2 * p, 4 * p):
                    for mix in VHALF_MIXES:
                        cases.append(vhalf_case(mods, p, m, fusion_off, mix))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    zb_source = {"repository": "https://github.com/sail-sg/zero-bubble-pipeline-parallelism",
                 "branch": args.zb_ref, "commit": zb_commit, "generator": "tools/vocab_golden.py"}
    files["v-half-vocab"] = {"family": "v-half-vocab", "source": zb_source, "support": scan, "cases": cases}

    os.makedirs(out, exist_ok=True)
    for family, data in files.items():
        write_json(os.path.join(out, f"{family}.json"), data)
        cases = data["cases"]
        refused = sum(1 for c in cases if "refused" in c)
        broken = sum(1 for c in cases if c.get("runnable") is False)
        print(f"{family}: {len(cases)} cases, {refused} refused, {broken} not runnable, "
              f"{len(cases) - refused - broken} with orders")
    return list(files)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab-repo", required=True, help="clone of sail-sg/VocabularyParallelism")
    parser.add_argument("--zb-repo", required=True, help="clone of sail-sg/zero-bubble-pipeline-parallelism")
    parser.add_argument("--zb-ref", default="v-half-vocab", help="branch or commit with add_embedding_passes")
    parser.add_argument("--out", required=True, help="directory for the golden JSON files")
    parser.add_argument("--check", action="store_true", help="compare with --out instead of writing")
    args = parser.parse_args()
    args.vocab_repo = os.path.abspath(args.vocab_repo)
    args.zb_repo = os.path.abspath(args.zb_repo)
    if not args.check:
        generate(args, args.out)
        return
    with tempfile.TemporaryDirectory() as tmp:
        families = generate(args, tmp)
        differ = [f for f in families if not filecmp.cmp(os.path.join(tmp, f"{f}.json"),
                                                         os.path.join(args.out, f"{f}.json"), shallow=False)]
    if differ:
        sys.exit(f"error: goldens differ from a fresh run: {', '.join(differ)}\n"
                 f"hint: rerun without --check and review the diff")
    print("goldens match a fresh run")


if __name__ == "__main__":
    main()
