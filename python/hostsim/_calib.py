"""How a scenario's baseline was calibrated, as the report shows it: once per overlay, each
fitted parameter against its bounds (flagged when it sits on one, with what that means), "not
fitted" when the fit's objective did not move, the fit's record rounded to what it resolves."""

from __future__ import annotations

import html
import re
from pathlib import Path

from ._claims import _fmt, _sig, _text

# A fitted value within this share of its range from a bound sits on that bound.
ON_BOUND = 0.01


def _overlay_name(ov: dict, cal: dict) -> str:
    """The overlay as the repository names it (`calibration/NAME.toml`), never the absolute path
    of the machine that built the report."""
    return f"calibration/{Path(str(ov.get('path') or cal['name'])).stem}.toml"


def _objectives(fit: dict) -> tuple[float | None, float | None]:
    """The fit's objective at its start and at its end (`hostsim calibrate` writes objective_start
    and objective; the live fits' scripts objective_before and objective_after)."""
    start = fit.get("objective_start", fit.get("objective_before"))
    end = fit.get("objective", fit.get("objective_after"))
    num = lambda v: float(v) if isinstance(v, (int, float)) else None  # noqa: E731
    return num(start), num(end)


def _bound_bar(v: float, lo: float, hi: float) -> str:
    frac = 0.0 if hi <= lo else min(max((v - lo) / (hi - lo), 0.0), 1.0)
    return (
        f'<span class="bar" title="{frac * 100:.0f}% of the range"><span style="left:{frac * 100:.1f}%"></span></span>'
    )


def _calibration_html(inf: dict, me: str, users: list[str], first: bool) -> str:
    """How a scenario's baseline was calibrated, once per overlay (the scenarios after the first
    that share it point to it): each fitted parameter against its bounds (flagged on a bound),
    "not fitted" where the fit did not move, the fit's record rounded to what it resolves."""
    params = inf.get("calibrate") or []
    cal = inf.get("calibration")
    if not params or not cal:
        return ""
    ov = cal.get("overlay")
    name = _overlay_name(ov, cal) if ov else f"calibration/{cal['name']}.toml"
    anchor = "calib-" + re.sub(r"[^a-z0-9-]", "-", cal["name"].lower())
    if not first:
        return (
            f'<p class="calib-ref">Calibrated with <code>{html.escape(name)}</code>, '
            f'shown <a href="#{anchor}">above</a> (with {", ".join(html.escape(u) for u in users if u != me)}).</p>'
        )
    if not ov:
        return (
            f'<div class="calib" id="{anchor}"><p><b>Calibration: not calibrated</b> (no overlay <code>{html.escape(name)}</code>; '
            "the scenario's own values were used; run <code>hostsim calibrate</code>).</p></div>"
        )
    values = ov.get("values", {})
    fit = ov.get("fit", {})
    start, end = _objectives(fit)
    moved = not (start is not None and end is not None and start == end)
    rows, flags = [], []
    for p in params:
        v = values.get(p["name"])
        off = f" (+{_fmt(p['offset'])})" if p.get("offset") else ""
        lo, hi = float(p["min"]), float(p["max"])
        flag = ""
        if v is not None:
            span = hi - lo
            if abs(float(v) - hi) <= ON_BOUND * span:
                flag = "at the upper bound"
            elif abs(float(v) - lo) <= ON_BOUND * span:
                flag = "at the lower bound"
            if flag:
                flags.append(p["name"])
        cell = "not fitted" if v is None else _sig(float(v), 4)
        rows.append(
            f'<tr class="{"onbound" if flag else ""}"><td><code>{html.escape(p["name"])}</code></td>'
            f"<td><code>{html.escape(p['key'])}</code>{off}</td>"
            f'<td class="num">{_fmt(lo)} … {_fmt(hi)}</td><td class="num">{cell}</td>'
            f"<td>{_bound_bar(float(v), lo, hi) if v is not None else ''}"
            f"{f' <b class=flag>{flag}</b>' if flag else ''}</td>"
            f"<td>{_text(p.get('source') or '')}</td></tr>"
        )
    how = []
    for k in ["optimizer", "method", "evaluations", "seeds", "date"]:
        if k in fit:
            val = fit[k]
            how.append(f"{k}: {html.escape(', '.join(map(str, val)) if isinstance(val, list) else str(val))}")
    if start is not None and end is not None:
        how.insert(0, f"objective {_sig(start)} at the start, {_sig(end)} at the end")
    status = ""
    if not moved:
        status = (
            '<p class="warn"><b>Not fitted:</b> the objective did not move from its start '
            f"({_sig(start)}): no value the fit tried did better than the starting one, which stands "
            f"({', '.join(f'<code>{html.escape(k)}</code> = {_fmt(x)}' for k, x in values.items())}).</p>"
        )
    if flags:
        status += (
            f'<p class="warn"><b>On a bound:</b> {", ".join(f"<code>{html.escape(f)}</code>" for f in flags)}. '
            "The best fit within the range the sources allow sits at its edge: a value beyond it might fit the "
            "calibration claims better, but the sources do not allow it, so the claims it serves are missed "
            "by the model as sourced, not by the fit.</p>"
        )
    used = ", ".join(html.escape(u) for u in users)
    return (
        f'<div class="calib" id="{anchor}"><p><b>Calibration</b> (overlay <code>{html.escape(name)}</code>, used by {used}): '
        "fitted to these scenarios' <i>calibration</i> claims only. "
        f"{'; '.join(how)}.</p>{status}"
        '<table class="calib"><thead><tr><th>parameter</th><th>key</th><th>bounds</th><th>fitted value</th>'
        f"<th>where in its bounds</th><th>source of the bounds</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def fitted(inf: dict) -> bool:
    """Were this scenario's parameters fitted (an overlay holds values for them)?"""
    cal = inf.get("calibration") or {}
    return bool(inf.get("calibrate")) and bool((cal.get("overlay") or {}).get("values"))


def _calibration_note(names: list[str], infos_by_name: dict) -> str:
    fit = [n for n in names if fitted(infos_by_name[n])]
    if fit and len(fit) == len(names):
        return (
            "about the baseline system; parameters were fitted to these (see the calibration table), "
            "so agreement here is by construction, not a reproduction"
        )
    if fit:
        return (
            f"about the baseline system; parameters were fitted to those of {', '.join(fit)} (agreement there is by "
            "construction); nothing was fitted to the others"
        )
    return (
        "about the baseline system; nothing was fitted to them (no calibrated parameters): each is a test of the model"
    )
