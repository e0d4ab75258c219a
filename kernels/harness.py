"""One harness for every kernel: a kernel is a declaration, the harness runs it.

A :class:`KernelDeclaration` says what a kernel is: its name and what it measures,
its :class:`Parameter` s (kind, default, unit, allowed range), the :class:`Metric` s
it reports (with units and per point, per trial or per profile dimension), the
fewest ranks it needs, a working-set estimate where it has one, and its *work*: a
function of the communicator and the parsed parameters that returns a
:class:`Measurement`. The declaration imports no MPI, so the framework reads it when
it checks a spec (``plan`` refuses a parameter outside its range).

:func:`run` does everything else, once for every kernel:

1. builds the command line from the declaration (plus the communicator's flags),
   parses it and checks every parameter against its range: a bad value exits with
   status 2 and one line naming the parameter, the value and the allowed range;
2. starts MPI, looks at where the ranks run (:func:`observe_placement`) and wraps
   ``MPI.COMM_WORLD`` in the :class:`~scaleprobe.kernels.comm.InstrumentedComm`
   with the launch's link;
3. refuses what the kernel cannot measure (too few ranks, a declared check) with
   :meth:`Record.invalid <scaleprobe.kernels.schema.Record.invalid>`;
4. runs the work, merges the communicator's summary with the kernel's own metrics
   (units from :data:`~scaleprobe.kernels.schema.SUMMARY_UNITS` and the
   declaration), checks that every variable the kernel emits is declared, and
   prints ONE :class:`~scaleprobe.kernels.schema.Record` on rank 0 with the link
   applied, the placement seen and the parameters as run.

A new kernel is one small module: :mod:`scaleprobe.kernels.example` is a whole one
(a declaration, its work and the two lines that make it runnable), and one line in
the ``scaleprobe.kernels`` entry points registers it.

Importing this module loads only the standard library: building a kernel's parser
loads the communicator's package (numpy), running it mpi4py.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import types
from collections.abc import Callable
from typing import Any

from scaleprobe.kernels.schema import (
    SUMMARY_UNITS,
    THREADS_ENV,
    Placement,
    Record,
    RecordError,
)
from scaleprobe.kernels.units import UnitError, parse_duration, parse_size

__all__ = [
    "KINDS",
    "Arguments",
    "KernelDeclaration",
    "Measurement",
    "Metric",
    "Parameter",
    "declaration_from_parser",
    "observe_placement",
    "run",
    "thread_count",
]

#: Kinds of parameter: what the command line takes and what the work receives.
#: ``size`` is bytes (``"64 KiB"`` allowed), ``duration`` seconds (``"5 us"``).
KINDS = ("int", "float", "size", "duration", "bool", "choice", "text")

_NUMERIC = ("int", "float", "size", "duration")
_KIND_WORDS = {
    "int": "an integer",
    "float": "a number",
    "size": "a size in bytes",
    "duration": "a duration in seconds",
}


def _shown(value) -> str:
    """A bound or a value as a person writes it (large powers of two as 2**k)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int) and value >= 2**20 and value & (value - 1) == 0:
        return f"2**{value.bit_length() - 1}"
    return str(value) if isinstance(value, int) else repr(value)


def _size(text) -> int:
    try:
        return parse_size(text)
    except UnitError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _duration(text) -> float:
    try:
        return parse_duration(text)
    except UnitError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


_CONVERT = {
    "int": int,
    "float": float,
    "size": _size,
    "duration": _duration,
    "choice": str,
    "text": str,
}


def _ordered(name, parameter):
    """``sizes`` checked and frozen: one entry per choice, the same names in each."""
    table = dict(parameter.sizes)
    names = {tuple(sorted(dict(v))) for v in table.values()}
    if parameter.kind != "choice" or set(table) != set(parameter.choices):
        raise ValueError(
            f"parameter {name!r}: sizes go with a choice and name every choice "
            f"({list(parameter.choices)}), got {sorted(table)}"
        )
    if len(names) != 1 or not next(iter(names)):
        raise ValueError(
            f"parameter {name!r}: every choice's sizes need the same names"
        )
    return tuple(
        (choice, tuple((k, float(v)) for k, v in sorted(dict(table[choice]).items())))
        for choice in parameter.choices
    )


@dataclasses.dataclass(frozen=True)
class Parameter:
    """One parameter of a kernel: its flag, kind, default, unit and allowed range.

    Parameters
    ----------
    name : str
        The spec's key and, with dashes, the flag (``msg_bytes``: ``--msg-bytes``).
    kind : {"int", "float", "size", "duration", "bool", "choice", "text"}
        What the value is (:data:`KINDS`).
    default : object, optional
        The value when the flag is not given; None: not set (the work decides).
    unit : str, default="1"
        Unit of the value (``"bytes"``, ``"s"``; ``"1"`` for a pure number).
    minimum, maximum : float, optional
        Allowed range of a number (inclusive unless ``exclusive_minimum`` or
        ``exclusive_maximum``).
    choices : tuple of str, default=()
        The allowed values of a ``choice``.
    help : str, default=""
        One line for ``--help`` and the documentation.
    exclusive_minimum, exclusive_maximum : bool, default=False
        Whether the bound itself is outside the range.
    required : bool, default=False
        Whether the flag must be given.
    sizes : mapping of str to mapping of str to float, default=None
        Makes a ``choice`` an ordered size: for every choice the problem sizes it
        stands for, by name (NPB's classes: ``{"S": {"keys": 2**16}, ...}``). The
        models regress on those sizes instead of the text (:func:`~scaleprobe.
        models.core.ordered.ordered_sizes`); stored as sorted pairs.

    Examples
    --------
    >>> iterations = Parameter("iterations", "int", 20, minimum=1)
    >>> iterations.flag, iterations.problem(20)
    ('--iterations', '')
    >>> iterations.problem(-5)
    '--iterations must be at least 1, got -5 (an integer >= 1)'
    >>> Parameter("damping", "float", 0.85, minimum=0, maximum=1,
    ...           exclusive_minimum=True, exclusive_maximum=True).problem(1.0)
    '--damping must be in (0, 1), got 1.0 (a number > 0 and < 1)'
    """

    name: str
    kind: str
    default: Any = None
    unit: str = "1"
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple = ()
    help: str = ""
    exclusive_minimum: bool = False
    exclusive_maximum: bool = False
    required: bool = False
    sizes: Any = None

    def __post_init__(self):
        if not self.name.isidentifier():
            raise ValueError(
                f"parameter name must be a word of letters, digits and underscores, "
                f"got {self.name!r}"
            )
        if self.kind not in KINDS:
            raise ValueError(
                f"parameter {self.name!r}: kind must be one of {list(KINDS)}, "
                f"got {self.kind!r}"
            )
        bounded = self.minimum is not None or self.maximum is not None
        if bounded and self.kind not in _NUMERIC:
            raise ValueError(
                f"parameter {self.name!r}: only numbers have a range, not a "
                f"{self.kind!r}"
            )
        if (self.kind == "choice") != bool(self.choices):
            raise ValueError(
                f"parameter {self.name!r}: choices go with kind 'choice' and only "
                f"with it, got kind {self.kind!r} and choices {list(self.choices)}"
            )
        object.__setattr__(self, "choices", tuple(self.choices))
        if self.sizes:
            object.__setattr__(self, "sizes", _ordered(self.name, self))

    def size_of(self, choice) -> dict:
        """The problem sizes an ordered choice stands for (``sizes``).

        Parameters
        ----------
        choice : str

        Returns
        -------
        dict of str to float
            Empty for a parameter without ``sizes`` or a choice outside them.

        Examples
        --------
        >>> Parameter("class", "choice", "S", choices=("S", "W"),
        ...           sizes={"S": {"keys": 16}, "W": {"keys": 64}}).size_of("W")
        {'keys': 64.0}
        """
        return dict(dict(self.sizes or ()).get(choice, ()))

    @property
    def flag(self) -> str:
        """The command-line flag, ``--`` and the name with dashes."""
        return "--" + self.name.replace("_", "-")

    # ----------------------------------------------------------------- ranges

    def _bounds(self) -> list[str]:
        words = []
        if self.minimum is not None:
            sign = ">" if self.exclusive_minimum else ">="
            words.append(f"{sign} {_shown(self.minimum)}")
        if self.maximum is not None:
            sign = "<" if self.exclusive_maximum else "<="
            words.append(f"{sign} {_shown(self.maximum)}")
        return words

    def allowed(self) -> str:
        """What the parameter accepts, in words (``"an integer >= 1"``).

        Returns
        -------
        str
        """
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "bool":
            return "true or false"
        if self.kind == "text":
            return "text"
        bounds = self._bounds()
        if not bounds:
            return "a finite number" if self.kind == "float" else _KIND_WORDS[self.kind]
        return _KIND_WORDS[self.kind] + " " + " and ".join(bounds)

    def _range_words(self) -> str:
        low, high = self.minimum, self.maximum
        if low is not None and high is not None:
            left = "(" if self.exclusive_minimum else "["
            right = ")" if self.exclusive_maximum else "]"
            return f"in {left}{_shown(low)}, {_shown(high)}{right}"
        if low is not None:
            return f"{'above' if self.exclusive_minimum else 'at least'} {_shown(low)}"
        if high is not None:
            return f"{'below' if self.exclusive_maximum else 'at most'} {_shown(high)}"
        return "a finite number"

    def problem(self, value) -> str:
        """Why ``value`` is outside the allowed range, or ``""``.

        Parameters
        ----------
        value : object
            The parsed value (None, the default of an unset optional parameter, is
            always allowed).

        Returns
        -------
        str
            One line naming the flag, the value and the allowed range.
        """
        if value is None:
            return ""
        if self.kind == "choice" and value not in self.choices:
            return (
                f"{self.flag} must be one of {', '.join(self.choices)}, got {value!r}"
            )
        if self.kind not in _NUMERIC:
            return ""
        number = float(value)
        inside = math.isfinite(number)
        if self.minimum is not None:
            low = float(self.minimum)
            inside &= number > low if self.exclusive_minimum else number >= low
        if self.maximum is not None:
            high = float(self.maximum)
            inside &= number < high if self.exclusive_maximum else number <= high
        if inside:
            return ""
        words, allowed = self._range_words(), self.allowed()
        tail = "" if words == allowed else f" ({allowed})"
        return f"{self.flag} must be {words}, got {_shown(value)}{tail}"

    # ------------------------------------------------------------- argparse

    def add_to(self, parser) -> None:
        """Add the flag to an :class:`argparse.ArgumentParser`.

        Parameters
        ----------
        parser : argparse.ArgumentParser
        """
        notes = [] if self.kind in ("bool", "text", "choice") else [self.allowed()]
        if self.default is not None:
            shown = str(self.default).lower() if self.kind == "bool" else self.default
            unit = "" if self.unit == "1" else f" {self.unit}"
            notes.append(f"default {shown}{unit}")
        text = self.help + (f" [{'; '.join(notes)}]" if notes else "")
        options = {"default": self.default, "help": text, "dest": self.name}
        if self.kind == "bool":
            options["action"] = argparse.BooleanOptionalAction
        else:
            options["type"] = _CONVERT[self.kind]
            options["required"] = self.required
            if self.kind == "choice":
                options["choices"] = self.choices
        parser.add_argument(self.flag, **options)


@dataclasses.dataclass(frozen=True)
class Metric:
    """One variable a kernel reports, with its unit.

    Parameters
    ----------
    name : str
        Its key in the record.
    unit : str
        Its unit (``"s"``, ``"bytes"``, ``"1"``...).
    long_name : str, default=""
        What it is, in a few words.
    per : str, default="point"
        Where it is: ``"point"`` (one value per launch), ``"trial"`` (one per
        repeated measurement inside the launch) or the name of a profile dimension
        (``"level"``, ``"iteration"``...: an array over it).

    Examples
    --------
    >>> Metric("teps", "edges/s", "traversed edges per second", per="trial").per
    'trial'
    """

    name: str
    unit: str
    long_name: str = ""
    per: str = "point"


@dataclasses.dataclass(frozen=True)
class Measurement:
    """What a kernel's work returns (on rank 0; other ranks may return the same).

    Parameters
    ----------
    metrics : dict
        The kernel's own scalars of the point.
    trials : list of dict, default=()
        One mapping per repeated measurement; a trial may carry ``profiles``.
    profiles : dict, default={}
        ``{dimension: {variable: list}}``.
    summary : dict, optional
        :meth:`InstrumentedComm.summary
        <scaleprobe.kernels.comm.InstrumentedComm.summary>`, taken where the kernel
        wants it; its ``time`` becomes ``total_time`` when the kernel reports a
        ``time`` of its own. The kernel's metrics win over the summary's.
    reason : str, default=""
        Why the measurement is wrong (a failed verification); the record is then
        ``invalid``, with its metrics.
    parameters : dict, default={}
        Parameters as they ran beyond the command line's (a problem class the
        values given amount to, a count derived from others).
    long_names : dict, default={}
        Long names that depend on the run (they replace the declared ones).
    """

    metrics: dict
    trials: tuple | list = ()
    profiles: dict = dataclasses.field(default_factory=dict)
    summary: dict | None = None
    reason: str = ""
    parameters: dict = dataclasses.field(default_factory=dict)
    long_names: dict = dataclasses.field(default_factory=dict)


class Arguments(types.SimpleNamespace):
    """The parsed parameters: ``args.iterations``, or ``args["class"]`` for names
    that are Python keywords.

    Examples
    --------
    >>> args = Arguments(**{"class": "S", "iterations": 3})
    >>> args["class"], args.iterations, args.as_dict()
    ('S', 3, {'class': 'S', 'iterations': 3})
    """

    def __getitem__(self, name: str):
        return getattr(self, name)

    def as_dict(self) -> dict:
        """The parameters as a plain dict.

        Returns
        -------
        dict
        """
        return dict(vars(self))


class _KernelParser(argparse.ArgumentParser):
    """A parser whose errors are one line (on the first rank only) and status 2."""

    def error(self, message):
        _refuse(self.prog, message)


def _launcher_rank() -> int:
    """This process's rank as the launcher says, before MPI starts (0 if unknown)."""
    for variable in ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"):
        text = os.environ.get(variable, "")
        if text.isdigit():
            return int(text)
    return 0


def _refuse(prog: str, message: str):
    if _launcher_rank() == 0:
        print(f"{prog}: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def _no_work(comm, args):
    raise NotImplementedError("this kernel is declared from its parser and has no work")


@dataclasses.dataclass(frozen=True)
class KernelDeclaration:
    """What a kernel is; :func:`run` (or :meth:`main`) runs it.

    Parameters
    ----------
    name : str
        The registered name (``commbench.pingpong``).
    summary : str
        One line: what it measures.
    description : str, default=""
        More: how, and the paper it follows (the module's docstring).
    parameters : tuple of Parameter, default=()
        Its parameters; the harness builds the command line from them.
    metrics : tuple of Metric, default=()
        What it reports. Where it talks through the instrumented communicator, the
        communicator's summary (:data:`~scaleprobe.kernels.schema.SUMMARY_UNITS`)
        is added to the point's metrics it does not declare itself (its ``time``
        as ``total_time`` where the kernel declares a ``time`` of its own; a name
        the kernel uses elsewhere in its own unit).
    min_ranks : int, default=1
        The fewest MPI ranks it can run on; fewer make the point ``invalid`` (and
        sweep plans leave such points out).
    working_set : callable, optional
        ``working_set(args, ranks) -> bytes`` one rank's iterations read and write:
        an estimate from the parameters, where the kernel has one.
    work : callable
        ``work(comm, args) -> Measurement`` (collective: every rank calls it); None
        from the work prints no record.
    validate : callable, optional
        ``validate(args) -> str``: why parameters that are each in range do not go
        together (``""`` if they do); checked before MPI starts, exit status 2.
    checks : tuple of callable, default=()
        ``check(args, ranks, ppn) -> str``: why the launch cannot measure what its
        point asks (``""`` if it can), beyond too few ranks; the record is then
        ``invalid`` with that reason.
    instrumented : bool, default=True
        Whether the work gets the instrumented communicator (with its flags, link
        and summary); False gives it ``MPI.COMM_WORLD`` itself.
    module : str, optional
        The module run with ``python -m``; default ``scaleprobe.kernels.<name>``.

    Examples
    --------
    >>> from scaleprobe.kernels.example import KERNEL
    >>> KERNEL.name, KERNEL.min_ranks, [p.name for p in KERNEL.parameters]
    ('example', 2, ['values', 'repeats'])
    >>> KERNEL.check_arguments(KERNEL.parse(["--repeats", "0"]))
    '--repeats must be at least 1, got 0 (an integer >= 1)'
    """

    name: str
    summary: str
    description: str = ""
    parameters: tuple = ()
    metrics: tuple = ()
    min_ranks: int = 1
    working_set: Callable | None = None
    work: Callable = _no_work
    validate: Callable | None = None
    checks: tuple = ()
    instrumented: bool = True
    module: str | None = None

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "parameters", tuple(self.parameters))
        set_(self, "checks", tuple(self.checks))
        if self.module is None:
            set_(self, "module", f"scaleprobe.kernels.{self.name}")
        if isinstance(self.min_ranks, bool) or not (
            isinstance(self.min_ranks, int) and self.min_ranks >= 1
        ):
            raise ValueError(
                f"kernel {self.name!r}: min_ranks must be an integer >= 1, got "
                f"{self.min_ranks!r}"
            )
        names = [p.name for p in self.parameters]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"kernel {self.name!r} declares {twice} twice")
        metrics = tuple(self.metrics)
        if self.instrumented:
            metrics += self._summary_metrics(metrics)
        set_(self, "metrics", metrics)
        self._check_units(metrics)

    @staticmethod
    def _summary_metrics(declared) -> tuple:
        from scaleprobe.kernels.comm import SUMMARY_LONG_NAMES

        at_point = {m.name for m in declared if m.per == "point"}
        units = {m.name: m.unit for m in declared}
        added = []
        for key, unit in SUMMARY_UNITS.items():
            name = "total_time" if key == "time" and "time" in at_point else key
            if name not in at_point:
                # a name the kernel uses elsewhere keeps the kernel's unit
                unit = units.get(name, unit)
                added.append(Metric(name, unit, SUMMARY_LONG_NAMES[key]))
        return tuple(added)

    def _check_units(self, metrics) -> None:
        units = {}
        for metric in metrics:
            if units.setdefault(metric.name, metric.unit) != metric.unit:
                raise ValueError(
                    f"kernel {self.name!r} declares {metric.name!r} in "
                    f"{units[metric.name]!r} and in {metric.unit!r}; a variable has "
                    "one unit"
                )

    @property
    def units(self) -> dict:
        """Unit of every declared variable, by name."""
        return {metric.name: metric.unit for metric in self.metrics}

    # ------------------------------------------------------------ command line

    def build_parser(self) -> argparse.ArgumentParser:
        """The kernel's command line, built from its parameters (no MPI imported).

        Returns
        -------
        argparse.ArgumentParser
            With the communicator's flags when the kernel is instrumented.
        """
        parser = _KernelParser(
            prog=f"python -m {self.module}", description=self.summary
        )
        for parameter in self.parameters:
            parameter.add_to(parser)
        if "threads" not in {p.name for p in self.parameters}:
            parser.add_argument(
                "--threads",
                default=os.environ.get(THREADS_ENV, "1"),
                help=f"threads of each rank (default: ${THREADS_ENV}, else 1)",
            )
        if self.instrumented:
            from scaleprobe.kernels.comm import add_comm_arguments

            add_comm_arguments(parser)
        return parser

    def arguments(self, namespace) -> Arguments:
        """The kernel's parameters out of a parsed command line.

        Parameters
        ----------
        namespace : argparse.Namespace
            From :meth:`build_parser`.

        Returns
        -------
        Arguments
        """
        return Arguments(
            **{p.name: getattr(namespace, p.name) for p in self.parameters}
        )

    def parse(self, argv=None) -> Arguments:
        """Parse a command line into the kernel's parameters (ranges unchecked).

        Parameters
        ----------
        argv : list of str, optional
            ``sys.argv[1:]`` by default.

        Returns
        -------
        Arguments
        """
        return self.arguments(self.build_parser().parse_args(argv))

    def check_arguments(self, args: Arguments) -> str:
        """Why the parameters cannot run, or ``""``: each against its range, then
        :attr:`validate`.

        Parameters
        ----------
        args : Arguments

        Returns
        -------
        str
            One line naming the parameter, the value and what is allowed.
        """
        for parameter in self.parameters:
            problem = parameter.problem(getattr(args, parameter.name))
            if problem:
                return problem
        return self.validate(args) if self.validate is not None else ""

    def refusal(self, args: Arguments, ranks: int, ppn: int = 1) -> str:
        """Why a launch of ``ranks`` ranks cannot measure what it asks, or ``""``.

        Parameters
        ----------
        args : Arguments
        ranks : int
            Size of the world.
        ppn : int, default=1
            Ranks per node of the link applied.

        Returns
        -------
        str
        """
        if ranks < self.min_ranks:
            return f"{self.name} needs at least {self.min_ranks} ranks, got {ranks}"
        for check in self.checks:
            reason = check(args, ranks, ppn)
            if reason:
                return reason
        return ""

    def main(self, argv=None) -> int:
        """Run the kernel under MPI: :func:`run` with this declaration.

        Parameters
        ----------
        argv : list of str, optional
            The command line; ``sys.argv[1:]`` by default.

        Returns
        -------
        int
            Exit status.
        """
        return run(self, argv)

    # ----------------------------------------------------------------- record

    def record(self, measured: Measurement, **fields) -> Record:
        """The record of a measurement, its variables checked and described.

        Parameters
        ----------
        measured : Measurement
            What the work returned.
        **fields
            ``link``, ``placement`` and ``parameters`` of the record.

        Returns
        -------
        Record

        Raises
        ------
        RecordError
            The measurement holds a variable the declaration does not name.
        """
        metrics = dict(measured.summary or {})
        if "time" in measured.metrics and "time" in metrics:
            metrics["total_time"] = metrics.pop("time")
        metrics.update(measured.metrics)
        trials = [dict(trial) for trial in measured.trials]
        places = _places(metrics, trials, measured.profiles)
        declared = {(m.name, m.per) for m in self.metrics}
        missing = sorted(f"{name} (per {per})" for name, per in places - declared)
        if missing:
            raise RecordError(
                f"kernel {self.name!r} emitted {', '.join(missing)}, which its "
                "declaration does not name"
            )
        units, long_names = _describe(self.metrics, places, metrics, trials)
        long_names.update(measured.long_names)
        parameters = {**fields.pop("parameters", {}), **measured.parameters}
        return Record(
            metrics=metrics,
            kernel=self.name,
            status="invalid" if measured.reason else "ok",
            reason=measured.reason,
            units=units,
            long_names=long_names,
            trials=tuple(trials),
            profiles=dict(measured.profiles),
            parameters=parameters,
            **fields,
        )


def _places(metrics, trials, profiles) -> set:
    """``(name, per)`` of every variable of a measurement."""
    places = {(name, "point") for name in metrics}
    for trial in trials:
        for name, value in trial.items():
            if name == "profiles":
                for dim, arrays in value.items():
                    places.update((var, dim) for var in arrays)
            else:
                places.add((name, "trial"))
    for dim, arrays in profiles.items():
        places.update((var, dim) for var in arrays)
    return places


def _describe(declared, places, metrics, trials) -> tuple[dict, dict]:
    """Units and long names of the variables emitted.

    A profile variable named like a point metric or a trial variable is stored
    beside it as ``<name>_<dim>`` (``<name>_trial_<dim>`` inside trials): it gets
    the same unit and long name under that name too.
    """
    units, long_names = {}, {}
    for metric in declared:
        if (metric.name, metric.per) in places:
            units[metric.name] = metric.unit
            if metric.long_name:
                long_names.setdefault(metric.name, metric.long_name)
    scalars = set(metrics) | {k for trial in trials for k in trial if k != "profiles"}
    in_trials = {dim for trial in trials for dim in trial.get("profiles", {})}
    for name, per in places:
        if per in ("point", "trial") or name not in scalars:
            continue
        alias = f"{name}_trial_{per}" if per in in_trials else f"{name}_{per}"
        units[alias] = units[name]
        if name in long_names:
            long_names[alias] = long_names[name]
    return units, long_names


def observe_placement(mpi_comm) -> Placement:
    """Where the program's ranks run, as the program itself sees it (collective).

    The world's size, and per host how many ranks it holds. A rank's host is the
    SLURM node it was started on where it has one (``SLURMD_NODENAME``: several
    ``slurmd`` may share one machine), else ``MPI_Get_processor_name``; hosts are
    listed in the order of their lowest rank.

    Parameters
    ----------
    mpi_comm : mpi4py.MPI.Comm
        The world communicator (not the instrumented one: this costs no virtual
        time).

    Returns
    -------
    Placement
        The same on every rank.
    """
    from mpi4py import MPI

    name = os.environ.get("SLURMD_NODENAME") or MPI.Get_processor_name()
    counts: dict[str, int] = {}
    for host in mpi_comm.allgather(name):  # in rank order
        counts[host] = counts.get(host, 0) + 1
    return Placement(
        ranks=mpi_comm.Get_size(),
        hosts=tuple(counts),
        ranks_per_host=tuple(counts.values()),
    )


def thread_count(value) -> int | str:
    """The threads per rank of ``--threads`` (or ``$SCALEPROBE_THREADS``), checked.

    Parameters
    ----------
    value : int or str
        As given.

    Returns
    -------
    int or str
        The count, or one line saying what was wrong and what is allowed.

    Examples
    --------
    >>> thread_count("2"), thread_count(" 3 ")
    (2, 3)
    >>> thread_count("0")
    '--threads (or $SCALEPROBE_THREADS) must be an integer >= 1, got 0'
    """
    text = str(value).strip()
    if not text.isdigit() or int(text) < 1:
        return f"--threads (or ${THREADS_ENV}) must be an integer >= 1, got {text}"
    return int(text)


def run(declaration: KernelDeclaration, argv=None) -> int:
    """Run a kernel under MPI and print its record on rank 0.

    Parameters
    ----------
    declaration : KernelDeclaration
        The kernel.
    argv : list of str, optional
        The command line; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        Exit status (0; a bad parameter exits with status 2 before MPI starts).
    """
    parser = declaration.build_parser()
    namespace = parser.parse_args(argv)
    args = declaration.arguments(namespace)
    problem = declaration.check_arguments(args)
    if problem:
        _refuse(parser.prog, problem)
    parameters = args.as_dict()
    threads = thread_count(getattr(namespace, "threads", 1))
    if isinstance(threads, str):
        _refuse(parser.prog, threads)
    args.threads = threads
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    placement = observe_placement(world)
    link = None
    comm = world
    if declaration.instrumented:
        from scaleprobe.kernels.comm import InstrumentedComm

        comm = InstrumentedComm.from_arguments(world, namespace)
        link = comm.link_record()
    try:
        fields = {
            "link": link,
            "placement": placement,
            "parameters": parameters,
            "threads": threads,
        }
        ppn = link.ppn if link is not None else 1
        reason = declaration.refusal(args, world.Get_size(), ppn)
        if reason:
            record = Record.invalid(declaration.name, reason, **fields)
        else:
            measured = declaration.work(comm, args)
            record = None
            if measured is not None and world.Get_rank() == 0:
                record = declaration.record(measured, **fields)
        if record is not None and world.Get_rank() == 0:
            record.emit()
    finally:
        if declaration.instrumented:
            comm.close()
    return 0


def declaration_from_parser(
    name: str, parser, *, min_ranks: int = 1, module: str | None = None
) -> KernelDeclaration:
    """The declaration of a kernel that provides only an argument parser.

    Its parameters are the parser's options (kind from the option's type: no
    ranges, no units) but the communicator's flags, its metrics unknown until it
    runs.

    Parameters
    ----------
    name : str
        The registered name.
    parser : argparse.ArgumentParser
    min_ranks : int, default=1
    module : str, optional
        The module run with ``python -m``.

    Returns
    -------
    KernelDeclaration

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(description="Sum sizes.")
    >>> _ = parser.add_argument("--size", type=int, required=True, help="a size")
    >>> declared = declaration_from_parser("mylab.sum", parser)
    >>> [(p.name, p.kind, p.required) for p in declared.parameters]
    [('size', 'int', True)]
    """
    from scaleprobe.kernels.comm import add_comm_arguments

    # the communicator's flags are the launch's, not the kernel's parameters
    comm_flags = argparse.ArgumentParser(add_help=False)
    add_comm_arguments(comm_flags)
    taken = {o for action in comm_flags._actions for o in action.option_strings}
    parameters = []
    for action in parser._actions:
        flags = [o for o in action.option_strings if o.startswith("--")]
        if not flags or isinstance(action, argparse._HelpAction) or flags[0] in taken:
            continue
        parameters.append(_parameter_of(action, flags[0]))
    summary = (parser.description or name).strip().splitlines()[0]
    return KernelDeclaration(
        name=name,
        summary=summary,
        description=parser.description or "",
        parameters=tuple(parameters),
        min_ranks=min_ranks,
        instrumented=False,
        module=module,
    )


def _parameter_of(action, flag: str) -> Parameter:
    if isinstance(action, argparse.BooleanOptionalAction) or isinstance(
        action.default, bool
    ):
        kind = "bool"
    elif action.choices:
        kind = "choice"
    elif action.type is int:
        kind = "int"
    elif action.type is float:
        kind = "float"
    else:
        kind = "text"
    return Parameter(
        name=flag[2:].replace("-", "_"),
        kind=kind,
        default=action.default,
        choices=tuple(map(str, action.choices or ())),
        help=action.help or "",
        required=bool(action.required),
    )
