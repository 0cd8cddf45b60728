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
                 threads: int = 1, component: Optional[str] = None, native: bool = False,
                 seed: int = 0, dt: Optional[float] = None):
        """Runs the model over ``tspan = (t0, t1)`` and returns an ``xarray.Dataset``.

        Arguments mean what ``esi simulate``'s options do: ``saveat`` the output interval
        (default a hundredth of the span), ``method`` an OrdinaryDiffEq-style name ("Rodas5P",
        "Tsit5", ...; "auto" chooses and switches), ``atol`` one absolute tolerance for every
        state (default: 1e-8 capped at 1e-6 of each state's scale), ``set`` parameter values or
        initial values by flat or unique local name, ``inputs`` values of array variables,
        ``threads`` for gridded models (the same bits for any count).

        A stochastic model (a Wiener parameter, or parameters drawn from distributions) runs one
        path, as ``esi simulate --seed SEED`` does: ``seed`` keys every random number, ``dt`` is
        the SDE step (default a thousandth of the span), ``method`` may name an SDE method
        ("EulerMaruyama", "Milstein", "SRA1"). :meth:`ensemble` runs many."""
        t0, t1 = (float(x) for x in tspan)
        r = _request(t0, t1, saveat, method, rtol, atol, set, inputs, threads, component, native, seed, dt)
        result = _core.simulate(self._document, r)
        ds = _dataset(result, self.path)
        if result["return_code"] != "Success":
            raise SolveError(f"{self.path}: the run stopped ({result['return_code']}): {result['message']}",
                             result["return_code"], ds)
        return ds

    def ensemble(self, members: int, tspan: Sequence[float], saveat: Optional[float] = None,
                 seed: int = 0, method: str = "auto", dt: Optional[float] = None, rtol: float = 1e-6,
                 atol: Optional[float] = None, set: Optional[Mapping[str, float]] = None,
                 inputs: Optional[Mapping[str, Any]] = None, threads: int = 1,
                 component: Optional[str] = None, native: bool = False, keep_members: bool = False):
        """``members`` runs of a stochastic model, as ``esi simulate --seed SEED --ensemble N``:
        member m's random numbers are keyed by (seed, m), so a member is the same whatever the
        member count or ``threads``. Returns a dataset whose variables have a leading
        ``statistic`` dimension ("mean", "variance": unbiased, NaN for one member; the CLI's
        ``X.mean`` / ``X.var`` columns bit for bit), or with ``keep_members=True`` a leading
        ``member`` dimension holding every member (``--members``). A member that fails or
        goes non-finite is named in ``esi_failure`` and raises :class:`SolveError`."""
        import numpy as np
        t0, t1 = (float(x) for x in tspan)
        r = _request(t0, t1, saveat, method, rtol, atol, set, inputs, threads, component, native, seed, dt)
        result = _core.ensemble(self._document, r, int(members))
        if keep_members:
            ds = _dataset(result, self.path, lead=("member", np.arange(result["values"].shape[0]),
                                                     {"long_name": "ensemble member"}))
        else:
            ds = _dataset(dict(result, values=result["statistics"]), self.path,
                          lead=("statistic", np.array(["mean", "variance"], dtype=object),
                                {"long_name": "over the ensemble's members (variance unbiased)"}))
        if result["return_code"] != "Success":
            raise SolveError(f"{self.path}: {result['message']}", result["return_code"], ds)
        return ds

    def analyze(self, out: Optional[str | os.PathLike] = None, analysis: Optional[str | Sequence[str]] = None,
                component: Optional[str] = None, jobs: Optional[int] = None, netcdf: bool = False) -> dict:
        """Runs the document's inline analyses (spec §6.7) and returns ``{id: xarray.Dataset}``:
        each analysis' runs with a leading ``run`` dimension when it sweeps parameters (the
        swept values as coordinates along it, the last sweep dimension varying fastest), its
        rows at the analysis' output times (NaN where a run stopped early; ``return_code`` says
        why). ``analysis`` picks ids, ``component`` a component's analyses.

        With ``out``, the folder ``esi analyze FILE --out OUT`` writes is written too (the same
        files: CSV per run, runs.csv, plots.json, PNG and SVG plots drawn with PLplot,
        index.html), and each dataset's attributes name its folder and images. An analysis
        that cannot run raises :class:`EsmError` (with ``out``, after the others are written)."""
        import numpy as np
        ids = [analysis] if isinstance(analysis, str) else list(analysis or [])
        jobs = int(jobs) if jobs else (os.cpu_count() or 1)
        found = _core.analyze(self._document, os.fspath(out) if out is not None else "", component or "",
                              [str(i) for i in ids], jobs, bool(netcdf))
        datasets = {}
        for a in found:
            runs = a["values"].shape[0]
            swept = bool(a["sweep"])
            if swept:
                points = np.asarray(a["points"], dtype=float).reshape(runs, len(a["sweep"]))
                ds = _dataset(a, self.path, lead=("run", np.arange(runs), {"long_name": "analysis run (0-based)"}),
                              lead_coords={p.replace(".", "_"): (points[:, k], {"esm_name": p, "long_name": "swept " + p})
                                           for k, p in enumerate(a["sweep"])})
                ds["return_code"] = ("run", np.array(a["return_codes"], dtype=object),
                                     {"long_name": "why each run ended"})
                failed = sum(code != "Success" for code in a["return_codes"])
                ds.attrs["esi_return_code"] = "Success" if failed == 0 else f"{failed} runs failed"
            else:
                ds = _dataset(dict(a, values=a["values"][0], return_code=a["return_codes"][0],
                                   message=a["messages"][0]), self.path)
            ds.attrs["esi_analysis"] = a["id"]
            ds.attrs["esi_component"] = a["component"]
            if a["description"]:
                ds.attrs["description"] = a["description"]
            if "folder" in a:
                ds.attrs["esi_folder"] = a["folder"]
                ds.attrs["esi_images"] = list(a["images"])
                if a["notes"]:
                    ds.attrs["esi_notes"] = list(a["notes"])
            datasets[a["id"]] = ds
        return datasets

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
        swept = {}
        for k, flat in enumerate(result["swept"]):
            state = result["swept_state"][k]
            swept[("initial_" if state else "") + flat.replace(".", "_")] = (
                values[:, k], {"esm_name": flat, "long_name": ("initial value of " if state else "") + flat})
        ds = _dataset(result, self.path, lead=("member", np.arange(values.shape[0]),
                                               {"long_name": "sweep member (table row, 0-based)"}),
                      lead_coords=swept)
        ds["return_code"] = ("member", np.array(result["return_codes"], dtype=object),
                             {"long_name": "why each member's run ended"})
        ds.attrs["esi_method"] = ",".join(sorted({*result["methods"]}))  # `set` is an argument here
        ds.attrs["esi_return_code"] = "Success" if result["failed"] == 0 else f"{result['failed']} members failed"
        return ds

    def gradient(self, loss, tspan: Sequence[float], wrt: Optional[Sequence[str]] = None,
                 method: str = "auto", rtol: float = 1e-6, atol: Optional[float] = None,
                 set: Optional[Mapping[str, float]] = None, inputs: Optional[Mapping[str, Any]] = None,
                 component: Optional[str] = None, native: bool = False) -> dict:
        """The exact discrete adjoint gradient of ``loss`` (a state's or observed's flat name, or
        a state array's: the mean of its cells) at the end of ``tspan`` with respect to every
        numeric parameter and every state's initial value, or the names in ``wrt`` (flat or unique
        local names, as ``set`` takes them); what
        ``esi simulate --loss LOSS --gradient OUT.json`` writes, bit for bit. Returns
        ``{"loss": L, "gradient": {name: dL/dname}, "units": {name: units}, "initial": [states
        whose initial value an entry is], "method": ..., "steps": ...}``.

        ``loss`` may also be a sum of terms: a path to a loss file (``esi simulate --loss-file``'s
        JSON, observation files relative to it) or the same as a dict (observation files
        relative to the current folder), e.g. ``{"terms": [{"variable": "C.x", "integral": [0,
        3600]}, {"observations": "obs.csv", "weight": 2}]}``."""
        t0, t1 = (float(x) for x in tspan)
        r = _request(t0, t1, None, method, rtol, atol, set, inputs, 1, component, native)
        name, terms, path = "", None, ""
        if isinstance(loss, Mapping):
            terms = _plain(dict(loss))
        elif isinstance(loss, os.PathLike) or (isinstance(loss, str) and loss.endswith(".json")):
            path = os.fspath(loss)
        else:
            name = str(loss)
        return _core.gradient(self._document, r, name, terms, path, [str(w) for w in (wrt or [])])

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


def _request(t0, t1, saveat, method, rtol, atol, set, inputs, threads, component, native, seed=0, dt=None):
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
    r.seed = int(seed)
    r.dt = None if dt is None else float(dt)
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


def _dataset(result: dict, path: str, lead=None, lead_coords=None):
    """The xarray.Dataset of one run (values rows x columns) laid out as the NetCDF writer lays
    out its file or, with ``lead = (name, values, attributes)``, of many (values n x rows x
    columns) with that leading dimension and ``lead_coords`` ({name: (values, attributes)})
    along it."""
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
    leading = values.shape[:-1]  # (rows,) or (n, rows)
    lead_dims = (time,) if lead is None else (lead[0], time)
    for v in layout["variables"]:
        gather = v["gather"]
        missing = gather < 0
        data = values[..., np.where(missing, 0, gather)]
        if missing.any():
            data[..., missing] = np.nan
            encodings[v["name"]] = {"_FillValue": np.nan}
        shape = [extents[k] for k in v["dims"]]
        data = data.reshape(list(leading) + shape)
        data_vars[v["name"]] = (lead_dims + tuple(dim_names[k] for k in v["dims"]), data, dict(v["attributes"]))
    if lead is not None:
        coords[lead[0]] = (lead[0], lead[1], lead[2])
        for name, (data, attributes) in (lead_coords or {}).items():
            coords[name] = (lead[0], data, attributes)
    ds = xr.Dataset(data_vars=data_vars, coords=coords)
    for name, enc in encodings.items():
        ds[name].encoding.update(enc)
    ds.attrs.update({
        "Conventions": "CF-1.8",
        "source": "EarthSciIntegrator (esi) Python module",
        "esm_file": path,
        "esi_method": result.get("method", ""),
        "esi_return_code": result.get("return_code", ""),
        "esi_rtol": result["rtol"],
        "esi_atol": result["atol"],
    })
    if result.get("message"):
        ds.attrs["esi_failure"] = result["message"]
    for k, val in result.get("stats", {}).items():
        ds.attrs[f"esi_{k}"] = val
    return ds
