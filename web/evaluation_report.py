"""Evaluation and audit reports as HTML: one partial (templates/_evaluation.html) for the admin page and for
the self-contained file `unerase eval --report` and `unerase audit --report` write.

Both work from the reports' JSON form (`to_dict()`), which is also what the database keeps, so a past
evaluation renders exactly as it did when it ran.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from engine.audit import AuditReport
from engine.evaluation import EvaluationReport
from engine.paths import PROJECT_ROOT
from engine.pipeline import PipelineConfig
from web import i18n
from web.charts import bar_chart
from web.i18n import text
from web.render import install_filters

OUTCOMES = ("flagged", "not_flagged", "needs_review", "error")


def _percent(value: float | None) -> int:
    return round(100 * value) if value is not None else 0


def eval_charts(run: Mapping[str, Any]) -> dict[str, Markup]:
    """Charts for one configuration's evaluation (its JSON form)."""
    table = run["overall"]["table"]
    outcomes = [(f"{gold}: {o}", table[gold][o]) for gold in ("positive", "negative") for o in OUTCOMES]
    name = run.get("name", "")
    charts = {
        "outcomes": bar_chart(
            [item for item in outcomes if item[1]], title=text("evals.chart.outcomes_of", name=name), max_bars=8
        ),
        "languages": bar_chart(
            [(lang, _percent(m["f1"])) for lang, m in run["by_language"].items()],
            title=text("evals.chart.languages_of", name=name),
        ),
    }
    if run["by_group"]:
        charts["groups"] = bar_chart(
            [(group, _percent(m["f1"])) for group, m in run["by_group"].items()],
            title=text("evals.chart.groups_of", name=name),
            max_bars=30,
        )
    return charts


def audit_charts(report: Mapping[str, Any]) -> dict[str, Markup]:
    return {
        lang["language"]: bar_chart(
            [(g["group"], g["deviations"]) for g in lang["groups"]],
            title=text("evals.chart.deviations_of", language=lang["language"]),
            max_bars=40,
        )
        for lang in report["languages"]
    }


def eval_runs(reports: Sequence[EvaluationReport], configs: Sequence[PipelineConfig]) -> list[dict[str, Any]]:
    return [{"name": c.name, "settings": c.describe(), **r.to_dict()} for c, r in zip(configs, reports, strict=True)]


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(PROJECT_ROOT / "templates"), autoescape=select_autoescape(["html"]))
    env.globals["eval_charts"] = eval_charts
    env.globals["audit_charts"] = audit_charts
    # the partial speaks through the catalogue; outside a request that is English, as the file says (lang="en")
    i18n.install(env)
    install_filters(env)
    return env


def install(env: Environment) -> None:
    """Makes the chart helpers available to the app's templates (the partial calls them)."""
    env.globals["eval_charts"] = eval_charts
    env.globals["audit_charts"] = audit_charts


def _stylesheet() -> Markup:
    # the file is opened from disk, not served under the app's Content-Security-Policy: inline CSS is fine here
    return Markup((PROJECT_ROOT / "static" / "style.css").read_text(encoding="utf-8"))


def render_eval_file(reports: Sequence[EvaluationReport], configs: Sequence[PipelineConfig]) -> str:
    """A self-contained HTML file (no external resources) for `unerase eval --report`."""
    template = _environment().get_template("evaluation_file.html")
    return template.render(kind="eval", runs=eval_runs(reports, configs), audit=None, stylesheet=_stylesheet())


def render_audit_file(report: AuditReport, config: PipelineConfig) -> str:
    template = _environment().get_template("evaluation_file.html")
    audit = {"settings": config.describe(), **report.to_dict()}
    return template.render(kind="audit", runs=None, audit=audit, stylesheet=_stylesheet())
