"""The qrels audit section of a run's reports (HTML and Markdown): one small function per format.

The numbers come from :func:`deltap.evaluation.audit.audit_qrels` on the run's ``retrieval_dataset.yaml``; a dataset
the audit cannot read makes the section say so instead of failing the report.
"""

from __future__ import annotations

from html import escape

from deltap.evaluation.audit import AUDIT_HEADINGS, QrelsAudit, audit_qrels
from deltap.report.run_data import RunData
from deltap.run_layout import RunDir

__all__ = ["audit_html", "audit_markdown"]

_LEGEND = (
    "Gold: the benchmark's own judgements, split by the verdict mining reached. Not tried: gold documents absent "
    "from the corpus. +relevant / +harmful: documents outside the gold found relevant (judgements the benchmark's "
    "qrels miss) / harmful (distractors). Likely helps: undecided gold documents whose graded label (shrunken "
    "utility > 0, local false sign rate <= 0.1) says they likely help — not proven."
)


def _audit(data: RunData) -> tuple[QrelsAudit | None, str]:
    try:
        return audit_qrels(RunDir(data.path).dataset), ""
    except Exception as exc:  # a report never crashes on one section
        return None, str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def audit_html(data: RunData) -> str:
    """The ``<section id="audit">`` of the HTML report."""
    audit, why = _audit(data)
    out = ['<section id="audit"><h2>Qrels audit: the gold against the mined verdicts</h2>']
    if audit is None:
        out.append(f'<p class="na">Qrels audit not available: {escape(why)}</p></section>')
        return "".join(out)
    out.append(f"<p>{escape(audit.summary())}</p>")
    out.append("<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in AUDIT_HEADINGS) + "</tr>")
    for row in audit.rows():
        cells = "".join(f"<td>{escape(str(c))}</td>" for c in row)
        out.append(f'<tr style="font-weight:600">{cells}</tr>' if row[0] == "TOTAL" else f"<tr>{cells}</tr>")
    out.append("</table>")
    found = [(q.query_id, d, s) for q in audit.questions for d, s in q.found_relevant.items()]
    if found:
        items = "".join(f"<li>{escape(q)}: <code>{escape(d)}</code> ({escape(s)})</li>" for q, d, s in found[:50])
        more = f"<li>… {len(found) - 50} more in audit/audit.json</li>" if len(found) > 50 else ""
        out.append(
            f"<details><summary>Relevant documents outside the gold ({len(found)})</summary><ul>{items}{more}</ul></details>"
        )
    out.append(f"<p>{escape(_LEGEND)}</p></section>")
    return "".join(out)


def audit_markdown(data: RunData) -> list[str]:
    """The ``## Qrels audit`` lines of the Markdown report."""
    audit, why = _audit(data)
    lines = ["## Qrels audit"]
    if audit is None:
        return [*lines, f"Qrels audit not available: {why}", ""]
    lines += [audit.summary(), "", "| " + " | ".join(AUDIT_HEADINGS) + " |", "|---" * len(AUDIT_HEADINGS) + "|"]
    for row in audit.rows():
        cells = [str(c).replace("|", "\\|") for c in row]
        if row[0] == "TOTAL":
            cells = [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", _LEGEND, ""]
    return lines
