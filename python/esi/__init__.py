"""EarthSciIntegrator from Python: load ESM documents, run them, get xarray datasets.

    import esi
    model = esi.load("examples/ozone_box.esm")
    ds = model.simulate((0, 21600), saveat=600)
    ds["OzoneNOx_O3"].plot()

Runs go through the same C++ code as the ``esi`` command (``esi simulate``), so the numbers are
the command line's bit for bit, and a dataset names and shapes its variables as the NetCDF
output of ``esi simulate --output X.nc`` does: one variable per scalar (dimension ``time``)
and per array (its index sets, last axis first), the flat name in ``esm_name``, units and
long names as attributes, the run's method and statistics as dataset attributes.

Errors in a document raise :class:`EsmError` with ``code``, ``file``, ``pointer`` and
``message``; a run that stops early raises :class:`SolveError` holding what it reached.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from . import _core

__all__ = ["EsmError", "SolveError", "Finding", "Variable", "Model", "load", "validate", "run"]

EsmError = _core.EsmError


def _installed_schema() -> None:
    """An installed module finds the format's schema where ``cmake --install`` put it
    (<prefix>/share/esi), unless ESI_SCHEMA names one."""
    if os.environ.get("ESI_SCHEMA"):
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for up in (3, 4):  # <prefix>/lib/pythonX.Y/dist-packages/esi or <prefix>/lib/python3/...
        prefix = os.path.normpath(os.path.join(here, *([os.pardir] * up)))
        schema = os.path.join(prefix, "share", "esi", "esm-schema.json")
        if os.path.isfile(schema):
            os.environ["ESI_SCHEMA"] = schema
            return


_installed_schema()


class SolveError(RuntimeError):
    """The run stopped before the end of its span (DtBelowMin, MaxSteps, NonFinite, ...).

    ``return_code`` names why, ``dataset`` holds every output row reached."""

    def __init__(self, message: str, return_code: str, dataset):
        super().__init__(message)
        self.return_code = return_code
        self.dataset = dataset


@dataclass(frozen=True)
class Finding:
    """One finding of :func:`validate`: ``severity`` is "error" or "note"."""
    code: str
    file: str
    pointer: str
    message: str
    severity: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.pointer}" if self.pointer else self.file
        return f"{where}: {self.severity}[{self.code}]: {self.message}"


@dataclass(frozen=True)
class Variable:
    """A state, parameter or observed quantity of a flattened model."""
    name: str
    kind: str
    units: str
    default: Optional[float]
    description: str
    array: str


def validate(path: str | os.PathLike) -> list[Finding]:
    """Every finding for one file (what ``esi validate`` prints); empty for a valid document."""
    return [Finding(**f) for f in _core.validate(os.fspath(path))]


def load(path: str | os.PathLike) -> "Model":
    """Loads, checks and flattens a document; raises :class:`EsmError` when it is refused."""
    return Model(_core.load(os.fspath(path)))


class Model:
    """A loaded ESM document: its variables, reactions and equations, and runs of it."""

    def __init__(self, document):
        self._document = document
        self._variables = [Variable(**v) for v in document.variables()]
        self._summary = None

    @property
    def path(self) -> str:
        return self._document.file

    def _of_kind(self, kind: str) -> dict[str, Variable]:
        return {v.name: v for v in self._variables if v.kind == kind}

    @property
    def states(self) -> dict[str, Variable]:
        return self._of_kind("state")

    @property
    def parameters(self) -> dict[str, Variable]:
        return self._of_kind("parameter")

    @property
    def observed(self) -> dict[str, Variable]:
        return self._of_kind("observed")

    def describe(self) -> dict:
        """What ``esi inspect --json`` prints: species, parameters, reactions, equations."""
        if self._summary is None:
            self._summary = self._document.describe()
        return self._summary

    @property
    def reactions(self) -> list:
        return self.describe().get("reactions", [])

    @property
    def equations(self) -> list:
        return self.describe().get("equations", [])

    def __repr__(self) -> str:
        return (f"<esi.Model {self.path!r}: {len(self.states)} states, {len(self.parameters)} "
                f"parameters, {len(self.observed)} observed>")

    def simulate(self, tspan: Sequence[float], saveat: Optional[float] = None, method: str = "auto",
                 rtol: float = 1e-6, atol: Optional[float] = None,
                 set: Optional[Mapping[str, float]] = None, inputs: Optional[Mapping[str, Any]] = None,
                 threads: int = 1, component: Optional[str] = None, native: bool = False):
        """Runs the model over ``tspan = (t0, t1)`` and returns an ``xarray.Dataset``.

        Arguments mean what ``esi simulate``'s options do: ``saveat`` the output interval
        (default a hundredth of the span), ``method`` an OrdinaryDiffEq-style name ("Rodas5P",
        "Tsit5", ...; "auto" chooses and switches), ``atol`` one absolute tolerance for every
        state (default: 1e-8 capped at 1e-6 of each state's scale), ``set`` parameter values or
        initial values by flat or unique local name, ``inputs`` values of array variables,
        ``threads`` for gridded models (the same bits for any count)."""
        t0, t1 = (float(x) for x in tspan)
        r = _request(t0, t1, saveat, method, rtol, atol, set, inputs, threads, component, native)
        result = _core.simulate(self._document, r)
        ds = _dataset(result, self.path)
        if result["return_code"] != "Success":
            raise SolveError(f"{self.path}: the run stopped ({result['return_code']}): {result['message']}",
                             result["return_code"], ds)
        return ds

    def sweep(self, table, tspan: Sequence[float], saveat: Optional[float] = None, method: str = "auto",
              rtol: float = 1e-6, atol: Optional[float] = None, set: Optional[Mapping[str, float]] = None,
              inputs: Optional[Mapping[str, Any]] = None, threads: int = 1, component: Optional[str] = None,
              native: bool = False, engine: str = "scalar", lanes: int = 16):
        """N runs that differ only in parameter or initial values: ``table`` maps names (as in
        ``set``) to N values each (a dict of arrays, or a pandas DataFrame). Returns one dataset
        with a leading ``member`` dimension; the swept values are coordinates along it (a
        state's initial value as ``initial_<name>``). Members run on ``threads`` threads, each
        bit for bit the run ``simulate(tspan, ..., set={**set, **row})`` gives. A member whose
        run stops early keeps the rows it reached (NaN after) and says why in ``return_code``.

        ``engine="lanes"`` runs the members as cells of the lane pools instead (Rosenbrock
        methods; "auto" runs Rodas3; ``lanes`` cells per block): faster for many members, the
        same bits for any thread count and table order, but another stepper than ``simulate``'s,
        so equal to it within the tolerances rather than bit for bit."""
        import numpy as np
        names = [str(c) for c in (table.columns if hasattr(table, "columns") else table.keys())]
        columns = [np.asarray(table[c], dtype=float).reshape(-1) for c in names]
        if not names or any(len(c) != len(columns[0]) for c in columns):
            raise EsmError("esi.sweep: every column of the table needs the same number of values")
        values = np.stack(columns, axis=1) if names else np.zeros((0, 0))
        t0, t1 = (float(x) for x in tspan)
        r = _request(t0, t1, saveat, method, rtol, atol, set, inputs, threads, component, native)
        result = _core.sweep(self._document, r, names, values, engine, int(lanes))
        return _dataset(result, self.path, swept=values)

    def gradient(self, loss: str, tspan: Sequence[float], wrt: Optional[Sequence[str]] = None,
                 method: str = "auto", rtol: float = 1e-6, atol: Optional[float] = None,
                 set: Optional[Mapping[str, float]] = None, inputs: Optional[Mapping[str, Any]] = None,
                 component: Optional[str] = None, native: bool = False) -> dict:
        """The exact discrete adjoint gradient of ``loss`` (a state's or observed's flat name, or
        a state array's: the mean of its cells) at the end of ``tspan`` with respect to every
        numeric parameter and every state's initial value, or the names in ``wrt`` (flat or unique
        local names, as ``set`` takes them); what
        ``esi simulate --loss LOSS --gradient OUT.json`` writes, bit for bit. Returns
        ``{"loss": L, "gradient": {name: dL/dname}, "units": {name: units}, "initial": [states
        whose initial value an entry is], "method": ..., "steps": ...}``."""
        t0, t1 = (float(x) for x in tspan)
        r = _request(t0, t1, None, method, rtol, atol, set, inputs, 1, component, native)
        return _core.gradient(self._document, r, str(loss), [str(w) for w in (wrt or [])])

    def check(self) -> dict:
        """Runs the document's inline tests (``esi check --json``'s report for this file)."""
        return _core.check(self.path)


def run(model, config, output=None, threads: int = 0, native: bool = False, restart=None,
        restart_every: float = 0, restart_dir=None, progress=None):
    """Runs a model by a run configuration, as ``esi run`` does (the same file, bit for bit).

    ``model``: a :class:`Model`, a path, or None for the configuration's ``model``. ``config``: a
    path or a dict (relative paths in a dict resolve against the current folder). ``output``: a
    path (.nc or .csv) to write, returned as a str; None runs into a temporary NetCDF file and
    returns its contents as an ``xarray.Dataset`` (for runs that fit in memory). ``restart``
    resumes from a restart file; ``restart_every`` seconds of model time write restart files
    into ``restart_dir``. ``progress(t, fraction)`` is called as the run goes (at most ten times
    a second); an exception it raises stops the run and is raised here. Ctrl-C stops the run
    after the macro step in progress, keeps the records reached in the output and raises
    KeyboardInterrupt. A run that stops early raises :class:`SolveError`."""
    import tempfile

    if isinstance(model, (str, os.PathLike)):
        model = load(model)
    document = None if model is None else model._document
    if isinstance(config, Mapping):
        config_path, config_dict, folder = "<config dict>", _plain(dict(config)), os.getcwd()
    else:
        config_path, config_dict, folder = os.fspath(config), None, "."
    with tempfile.TemporaryDirectory() as tmp:
        target = os.fspath(output) if output is not None else os.path.join(tmp, "run.nc")
        result = _core.run(document, config_path, config_dict, folder, target, int(threads), bool(native),
                           os.fspath(restart) if restart else "", float(restart_every),
                           os.fspath(restart_dir) if restart_dir else "", progress)
        value = target
        if output is None:
            import xarray as xr
            with xr.open_dataset(target, decode_times=False) as f:
                value = f.load()
    if result["return_code"] != "Success":
        raise SolveError(f"{result['model']}: the run stopped ({result['return_code']}): {result['message']}",
                         result["return_code"], value)
    return value


def _request(t0, t1, saveat, method, rtol, atol, set, inputs, threads, component, native):
    r = _core.SimulateRequest()
    r.t0, r.t1 = t0, t1
    r.saveat = None if saveat is None else float(saveat)
    r.method = method
    r.rtol = float(rtol)
    r.atol = None if atol is None else float(atol)
    r.set = [(str(k), float(v)) for k, v in (set or {}).items()]
    r.inputs = _plain(inputs) if inputs is not None else None
    r.threads = int(threads)
    r.component = component or ""
    r.native = bool(native)
    return r


def _plain(x):
    """numpy arrays and scalars in ``inputs`` as plain lists and floats (JSON)."""
    if hasattr(x, "tolist"):
        return x.tolist()
    if isinstance(x, Mapping):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def _dataset(result: dict, path: str, swept=None):
    """The xarray.Dataset of one run (values rows x columns), laid out as the NetCDF writer lays
    out its file, or of a sweep (values members x rows x columns) with a leading `member`."""
    import numpy as np
    import xarray as xr

    layout = result["layout"]
    times = result["times"]
    values = result["values"]
    dim_names = [d[0] for d in layout["dimensions"]]
    extents = [int(d[2]) for d in layout["dimensions"]]
    time = layout["time"]
    coords = {time: (time, times, {"standard_name": "time", "long_name": "model time t",
                                   "units": "seconds since 1970-01-01 00:00:00",
                                   "calendar": "proleptic_gregorian", "axis": "T"})}
    for c in layout["coordinates"]:
        shape = [extents[k] for k in c["dims"]]
        data = np.asarray(c["values"]).reshape(shape)
        coords[c["name"]] = (tuple(dim_names[k] for k in c["dims"]), data, dict(c["attributes"]))
    data_vars = {}
    encodings = {}
    lead = values.shape[:-1]  # (rows,) or (members, rows)
    lead_dims = (time,) if swept is None else ("member", time)
    for v in layout["variables"]:
        gather = v["gather"]
        missing = gather < 0
        data = values[..., np.where(missing, 0, gather)]
        if missing.any():
            data[..., missing] = np.nan
            encodings[v["name"]] = {"_FillValue": np.nan}
        shape = [extents[k] for k in v["dims"]]
        data = data.reshape(list(lead) + shape)
        data_vars[v["name"]] = (lead_dims + tuple(dim_names[k] for k in v["dims"]), data, dict(v["attributes"]))
    if swept is not None:
        members = values.shape[0]
        coords["member"] = ("member", np.arange(members), {"long_name": "sweep member (table row, 0-based)"})
        for k, flat in enumerate(result["swept"]):
            name = ("initial_" if result["swept_state"][k] else "") + flat.replace(".", "_")
            coords[name] = ("member", swept[:, k], {"esm_name": flat, "long_name":
                            ("initial value of " if result["swept_state"][k] else "") + flat})
        data_vars["return_code"] = ("member", np.array(result["return_codes"], dtype=object),
                                    {"long_name": "why each member's run ended"})
    ds = xr.Dataset(data_vars=data_vars, coords=coords)
    for name, enc in encodings.items():
        ds[name].encoding.update(enc)
    stats = result["stats"]
    ds.attrs.update({
        "Conventions": "CF-1.8",
        "source": "EarthSciIntegrator (esi) Python module",
        "esm_file": path,
        "esi_method": result["method"] if swept is None else ",".join(sorted(set(result["methods"]))),
        "esi_return_code": result["return_code"] if swept is None else
        ("Success" if result["failed"] == 0 else f"{result['failed']} members failed"),
        "esi_rtol": result["rtol"],
        "esi_atol": result["atol"],
    })
    if swept is None and result["message"]:
        ds.attrs["esi_failure"] = result["message"]
    for k, val in stats.items():
        ds.attrs[f"esi_{k}"] = val
    return ds
