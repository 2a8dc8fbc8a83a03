"""A statement as HTML (a Django template) and as PDF (fpdf2), in one language.

The PDF embeds fonts: DejaVu Sans for Latin text and digits and, for Chinese, Noto Sans CJK SC as
fpdf2's fallback font (both from the system: fonts-dejavu-core, fonts-noto-cjk; paths in
settings). Without a CJK font a Chinese PDF is refused with a clear error (the HTML statement
still works; an English one drops Chinese names' glyphs); without DejaVu every PDF is refused.
"""

from __future__ import annotations

import os
from decimal import Decimal

from django.conf import settings
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.formats import date_format
from django.utils.translation import gettext as _

from labgpu.core.errors import ApplicationError
from labgpu.statements.selectors import Statement


class PdfFontMissing(ApplicationError):
    status_code = 503
    default_code = "pdf_font_missing"


def money(amount: Decimal | None) -> str:
    return "" if amount is None else f"{amount:,.2f}"


def _month_label(statement: Statement) -> str:
    return date_format(statement.month, "YEAR_MONTH_FORMAT")


def _context(statement: Statement) -> dict:
    conv = statement.conversion
    return {
        "s": statement,
        "month_label": _month_label(statement),
        "gpu_lines": [_row(line) for line in statement.lines if line.kind == "gpu"],
        "storage_lines": [_row(line) for line in statement.lines if line.kind == "storage"],
        "gpu_total": money(statement.gpu_total),
        "storage_total": money(statement.storage_total),
        "total": money(statement.total),
        "conversion": conv,
        "converted_total": money(statement.converted(statement.total)),
        "conversion_note": _conversion_note(statement),
    }


def _row(line: object) -> dict:
    return {**vars(line), "amount": money(line.amount)}  # type: ignore[attr-defined]


def _conversion_note(statement: Statement) -> str:
    conv = statement.conversion
    if conv is None:
        return ""
    return _(
        "Converted for display at %(rate)s %(code)s per USD (rate of %(date)s); the amounts "
        "charged are in USD."
    ) % {"rate": conv.rate.normalize(), "code": conv.code, "date": conv.rate_date}


def statement_html(statement: Statement, *, language: str) -> str:
    with translation.override(language):
        return render_to_string("statements/statement.html", _context(statement))


def _font_path(name: str) -> str | None:
    path = getattr(settings, name, "")
    return path if path and os.path.exists(path) else None


def statement_pdf(statement: Statement, *, language: str) -> bytes:
    with translation.override(language):
        return _pdf(statement, chinese=language.lower().startswith("zh"))


def _pdf(statement: Statement, *, chinese: bool) -> bytes:
    # Imported here: a checkout whose environment predates fpdf2 still serves everything else.
    from fpdf import FPDF, FontFace

    pdf = FPDF(format="A4")
    pdf.set_title(_("LabGPU statement"))
    latin = _font_path("LABGPU_PDF_FONT")
    cjk = _font_path("LABGPU_PDF_FONT_CJK")
    if chinese and cjk is None:
        raise PdfFontMissing(
            _(
                "The PDF in Chinese needs a CJK font (LABGPU_PDF_FONT_CJK, e.g. Noto Sans CJK "
                "from fonts-noto-cjk); none was found. The HTML statement is available."
            )
        )
    if latin is None:
        # Helvetica (the PDF core font) cannot write "—" or "≈": refuse clearly, not a 500.
        raise PdfFontMissing(
            _(
                "The PDF needs a Unicode font (LABGPU_PDF_FONT, e.g. DejaVu Sans from "
                "fonts-dejavu-core); none was found. The HTML statement is available."
            )
        )
    family = "DejaVu"
    pdf.add_font(family, fname=latin)
    if cjk:
        # In every language: an English statement may still name a lab or user in Chinese.
        pdf.add_font(
            "NotoCJK", fname=cjk, collection_font_number=settings.LABGPU_PDF_FONT_CJK_INDEX
        )
        pdf.set_fallback_fonts(["NotoCJK"])
    pdf.add_page()
    # One weight only (the CJK font is a single regular face): headings are not bold.
    heading = FontFace(emphasis="")
    pdf.set_font(family, size=16)
    pdf.cell(text=_("LabGPU statement"), new_x="LMARGIN", new_y="NEXT")
    pdf.set_font(family, size=11)
    pdf.cell(
        text=_("%(lab)s, %(month)s")
        % {"lab": statement.lab.name, "month": _month_label(statement)},
        new_x="LMARGIN",
        new_y="NEXT",
    )
    pdf.cell(text=_("All amounts in USD."), new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    pdf.set_font(family, size=9)
    gpu = [line for line in statement.lines if line.kind == "gpu"]
    storage = [line for line in statement.lines if line.kind == "storage"]
    with pdf.table(
        col_widths=(30, 30, 50, 30, 30),
        text_align=("LEFT",) * 3 + ("RIGHT",) * 2,
        headings_style=heading,
    ) as t:
        head = t.row()
        for title in (_("User"), _("Cost centre"), _("Pool"), _("GPU-hours"), _("GPU cost")):
            head.cell(title)
        for line in gpu:
            row = t.row()
            for value in (
                line.user,
                line.cost_centre or "—",
                line.pool,
                str(line.quantity),
                money(line.amount),
            ):
                row.cell(value)
    pdf.ln(3)
    with pdf.table(
        col_widths=(60, 60, 50), text_align=("LEFT", "RIGHT", "RIGHT"), headings_style=heading
    ) as t:
        head = t.row()
        for title in (_("User"), _("GB-months"), _("Storage cost")):
            head.cell(title)
        for line in storage:
            row = t.row()
            for value in (line.user or "—", str(line.quantity), money(line.amount)):
                row.cell(value)
    pdf.ln(4)
    pdf.set_font(family, size=11)
    for label, amount in (
        (_("GPU total"), statement.gpu_total),
        (_("Storage total"), statement.storage_total),
        (_("Total"), statement.total),
    ):
        pdf.cell(text=f"{label}: USD {money(amount)}", new_x="LMARGIN", new_y="NEXT")
    if statement.conversion:
        pdf.cell(
            text=f"≈ {statement.conversion.code} {money(statement.converted(statement.total))}",
            new_x="LMARGIN",
            new_y="NEXT",
        )
        pdf.set_font(family, size=8)
        pdf.multi_cell(0, text=_conversion_note(statement), new_x="LMARGIN", new_y="NEXT")
    pdf.set_font(family, size=8)
    pdf.ln(2)
    pdf.cell(
        text=_("Generated %(at)s UTC from the usage ledger.")
        % {"at": statement.generated_at.strftime("%Y-%m-%d %H:%M")},
    )
    return bytes(pdf.output())
