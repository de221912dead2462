"""Joining a Dask cluster before anything is planned: the scheduler reached within a bound, every
worker asked for its harness and its machine (harness.compute.worker) and refused, with the
reason, where it cannot run this harness's tasks as this client would. Every failure is one
ClusterError line naming execution.dask_address and what to do; distributed's own log lines
(tracebacks of a lost connection) are held back meanwhile."""

from __future__ import annotations

import asyncio
import logging
import socket
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import harness
from harness.compute.worker import WorkerFacts, worker_facts
from harness.machine.cluster import LOCAL_CLUSTER, ClusterInfo, WorkerInfo
from harness.plan.model import PlanError
from harness.store.keys import source_digest

ADDRESS = "execution.dask_address"
CONNECT_TIMEOUT_S = 10.0  # a scheduler that answers at all answers within this
WORKERS_TIMEOUT_S = 30.0  # how long a run waits for a worker to join (or to come back)
ANSWER_TIMEOUT_S = 60.0  # for every worker to say what it runs (a first import of the harness: seconds)


class ClusterError(PlanError):
    """The cluster cannot take the run: one line, exit 2, the cache as it was."""

    def __init__(self, line: str) -> None:
        super().__init__([line])


def where(scheduler: str) -> str:
    """How a line names the scheduler: the spec's key for one the user gave."""
    return "the LocalCluster" if scheduler == LOCAL_CLUSTER else f"{ADDRESS} {scheduler}"


@contextmanager
def quiet() -> Iterator[None]:
    """Hold back distributed's log lines (a lost scheduler is ~30 lines of traceback): the run says
    what happened in one line of its own. Its loggers do not propagate, so their handlers are
    raised, and restored afterwards."""
    loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
               if name.split(".")[0] in ("distributed", "tornado")]
    handlers = {h: h.level for logger in loggers for h in logger.handlers}
    for handler in handlers:
        handler.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for handler, level in handlers.items():
            handler.setLevel(level)


def require_distributed() -> None:
    """ClusterError, not an ImportError's traceback, where Dask's distributed is not installed."""
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        raise ClusterError(f"execution.executor: 'dask' needs dask.distributed ({exc}); install it with "
                           "pip install 'spectral-harness[dask]'") from None


def _listening(address: str) -> None:
    """For a tcp:// address, ClusterError at once where nothing listens (a wrong port, a scheduler
    not started) or the host is unknown: distributed would retry until its timeout."""
    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port

    scheme, location = parse_address(address)
    if scheme != "tcp":
        return
    host, port = parse_host_port(location)
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except (ConnectionRefusedError, socket.gaierror) as exc:
        what = "nothing listens there" if isinstance(exc, ConnectionRefusedError) else f"unknown host {host!r}"
        raise ClusterError(f"{ADDRESS}: no dask scheduler at {address!r} ({what}); start one (`dask scheduler`) "
                           "or correct the address") from None
    except OSError:
        pass  # unreachable or slow: the Client says so within its own timeout


async def _shake_hands(address: str) -> None:
    from distributed.comm import connect as open_comm

    comm = await asyncio.wait_for(open_comm(address, timeout=CONNECT_TIMEOUT_S), CONNECT_TIMEOUT_S)
    await comm.close()


def _answers(address: str) -> None:
    """ClusterError unless what listens at `address` answers Dask's handshake within
    CONNECT_TIMEOUT_S: distributed waits for that answer without a bound (an HTTP server, such as
    a dashboard's port, never gives one), and reads whatever another service sends as a frame size."""
    with ThreadPoolExecutor(1) as thread:  # a loop of its own, whether or not the caller runs one
        try:
            thread.submit(asyncio.run, _shake_hands(address)).result()
        except TimeoutError:
            why = f"no Dask handshake within {CONNECT_TIMEOUT_S:.0f} s"
        except OSError:
            raise
        except Exception as exc:  # noqa: BLE001  (another service's bytes read as a frame: any error)
            why = f"{type(exc).__name__} reading its answer"
        else:
            return
    raise ClusterError(f"{ADDRESS}: what listens at {address!r} is not a dask scheduler ({why}); expected the "
                       "scheduler's address (port 8786 by default; the dashboard's, 8787, is not it)")


def connect(address: str) -> Any:
    """A Client of the scheduler at `address`, or ClusterError within about CONNECT_TIMEOUT_S."""
    require_distributed()
    from distributed import Client

    try:
        _listening(address)
        with quiet():
            _answers(address)
            return Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, ValueError, TimeoutError) as exc:
        raise ClusterError(f"{ADDRESS}: cannot reach a dask scheduler at {address!r} ({exc}); start one "
                           "(`dask scheduler`) or correct the address") from None


def _refusal(answer: WorkerFacts | BaseException | None) -> str | None:
    """Why a worker that answered so cannot run this client's tasks, or None."""
    if answer is None:
        return "it joined while the others were being asked"
    if isinstance(answer, BaseException):
        error = str(answer) if type(answer) is Exception else f"{type(answer).__name__}: {answer}"
        return (f"it cannot import this harness ({error}); install "
                f"spectral-harness {harness.__version__} there, as here")
    if answer.harness != harness.__version__:
        return f"it runs harness {answer.harness}, this client {harness.__version__}"
    if answer.source != source_digest():
        return ("it runs other harness code than this client (its numbers would be cached under this "
                "client's keys); restart it after an update, or install the same checkout there")
    return None


def _worker(address: str, state: dict[str, Any], answer: WorkerFacts | BaseException | None) -> WorkerInfo:
    refused = _refusal(answer)
    return WorkerInfo(
        address=address, name=str(state.get("name", address)), threads=int(state.get("nthreads", 1)),
        memory_limit=int(state.get("memory_limit") or 0), resources=dict(state.get("resources") or {}),
        machine=answer.machine if isinstance(answer, WorkerFacts) and refused is None else None, refused=refused,
    )


def _check_scheduler(client: Any, scheduler: str) -> None:
    """ClusterError unless the scheduler runs this harness too: Dask's scheduler unpickles every
    task it is sent, so one without the harness (or with other code) fails them all."""
    try:
        answer: WorkerFacts | BaseException = client.run_on_scheduler(worker_facts, callback_timeout=ANSWER_TIMEOUT_S)
    except (OSError, TimeoutError):
        raise
    except Exception as exc:  # noqa: BLE001  (whatever the import raised there comes back here)
        answer = exc
    if (why := _refusal(answer)) is not None:
        raise ClusterError(f"{where(scheduler)}: the dask scheduler cannot take this harness's tasks (it "
                           f"unpickles each one): {why.removeprefix('it ')}")


def survey(client: Any, scheduler: str) -> ClusterInfo:
    """Every worker of the cluster, probed, or refused with the reason; ClusterError when the
    scheduler cannot unpickle the harness's tasks, when no worker joins within
    WORKERS_TIMEOUT_S, or when none can run this harness."""
    with quiet():
        try:
            _check_scheduler(client, scheduler)
            client.wait_for_workers(1, timeout=WORKERS_TIMEOUT_S)
            answers = client.run(worker_facts, on_error="return", callback_timeout=ANSWER_TIMEOUT_S)
            state = client.scheduler_info(n_workers=-1)
            bokeh = client.get_versions(packages=["bokeh"])["scheduler"]["packages"].get("bokeh")
        except TimeoutError:
            raise ClusterError(f"{where(scheduler)}: no dask worker joined, or none answered, within "
                               f"{WORKERS_TIMEOUT_S:.0f} s; start workers (`dask worker {scheduler}`) and run "
                               "again") from None
        except OSError as exc:
            raise ClusterError(f"{where(scheduler)}: lost the dask scheduler while asking its workers ({exc}); "
                               "start it again and run again") from None
    workers = [_worker(address, worker, answers.get(address)) for address, worker in sorted(state["workers"].items())]
    # the scheduler serves its status page only with bokeh; without it, the link is a 404
    dashboard = str(client.dashboard_link) if bokeh and "dashboard" in state.get("services", {}) else None
    cluster = ClusterInfo(scheduler=scheduler, dashboard=dashboard, workers=workers)
    if not cluster.usable:
        raise ClusterError(f"{where(scheduler)}: no worker can run this harness's tasks: "
                           + "; ".join(w.describe() for w in workers))
    return cluster


def join(address: str) -> ClusterInfo:
    """The cluster at `address` as the planner needs it; the connection is closed again (the run
    makes its own)."""
    client = connect(address)
    try:
        return survey(client, address)
    finally:
        with quiet():
            client.close(timeout=CONNECT_TIMEOUT_S)
