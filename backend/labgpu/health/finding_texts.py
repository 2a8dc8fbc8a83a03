"""What each health finding means, in the reader's language.

The agent writes its findings in English with the node's numbers in them (agent/src/labgpu_agent/
checks.py). Shown to someone reading another language, a finding leads with this catalogue's
summary and what to do, keyed by the finding's id, and keeps the agent's English after it as the
detail (the numbers, device names and commands to run). An id the catalogue does not know is shown
as the agent wrote it.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

# (id pattern, summary, what to do): the first pattern that matches the id answers.
FINDING_TEXTS: tuple[tuple[str, Any, Any], ...] = (
    (
        "profile.unknown",
        gettext_lazy("The agent does not know this pool's GPU profile."),
        gettext_lazy("Update the agent or fix the pool's agent profile."),
    ),
    (
        "deep.unavailable",
        gettext_lazy("The deep check's tools are not on this node."),
        gettext_lazy("Install the vendor's diagnostics on the image."),
    ),
    (
        "gpu.vendor_mismatch",
        gettext_lazy("The node's GPUs are not the vendor this pool books."),
        gettext_lazy("Fix the pool's instance type or re-create the node with the right size."),
    ),
    (
        "driver.not_loaded",
        gettext_lazy("No GPU driver is loaded, so no GPU could be listed."),
        gettext_lazy("Load or install the GPU driver that matches the kernel."),
    ),
    (
        "kernel.too_old",
        gettext_lazy("The kernel is older than the GPU driver needs."),
        gettext_lazy("Use an image with a newer kernel."),
    ),
    (
        "gpu.count",
        gettext_lazy("The node has a different number of GPUs than the pool expects."),
        gettext_lazy("Check which GPUs are hidden or missing, or re-create the node."),
    ),
    (
        "gpu.in_use",
        gettext_lazy("A GPU is already in use before its user has logged in."),
        gettext_lazy("Stop the processes that hold it, or re-create the node."),
    ),
    (
        "gpu.model",
        gettext_lazy("The GPU model is not the one this pool books."),
        gettext_lazy("Fix the pool's instance type or re-create the node with the right size."),
    ),
    (
        "gpu.gfx_target",
        gettext_lazy("The GPU's architecture target is not the one this pool expects."),
        gettext_lazy("Check the pool's instance type and the GPU partition mode."),
    ),
    (
        "gpu.compute_capability",
        gettext_lazy("The GPU's compute capability is not the one this pool expects."),
        gettext_lazy("Check the pool's instance type."),
    ),
    (
        "gpu.compute_units",
        gettext_lazy("A GPU shows fewer compute units than its model has."),
        gettext_lazy("Check the GPU partition mode, or report the node to the provider."),
    ),
    (
        "gpu.vram",
        gettext_lazy("A GPU shows less memory than its model has."),
        gettext_lazy("Check the memory partition mode, or report the node to the provider."),
    ),
    (
        "rocm.version_unknown",
        gettext_lazy("The ROCm version could not be read."),
        gettext_lazy("Check that ROCm is installed on the image."),
    ),
    (
        "rocm.too_old",
        gettext_lazy("The ROCm release is older than this pool needs."),
        gettext_lazy("Use an image with a newer ROCm release."),
    ),
    (
        "env.*",
        gettext_lazy("An environment variable changes which GPUs or code paths are used."),
        gettext_lazy("Unset the variable unless it is meant to be there."),
    ),
    (
        "devices.unknown",
        gettext_lazy("The GPU device files could not be checked."),
        gettext_lazy("Check the device files and the user's groups."),
    ),
    (
        "devices.missing",
        gettext_lazy("GPU device files are missing."),
        gettext_lazy("Check that the driver is loaded and the device files exist."),
    ),
    (
        "devices.inaccessible",
        gettext_lazy("The user cannot open the GPU device files."),
        gettext_lazy("Add the user to the groups that own the device files."),
    ),
    (
        "pcie.*",
        gettext_lazy("A GPU's PCIe link is narrower, slower or less reliable than it should be."),
        gettext_lazy("Report the node to the provider, or re-create it."),
    ),
    (
        "power.capped",
        gettext_lazy("A GPU's power limit is set below its default."),
        gettext_lazy("Reset the power limit, or ask the provider why it is capped."),
    ),
    (
        "thermal.*",
        gettext_lazy("A GPU is hot or slowing down to protect itself."),
        gettext_lazy("Watch the temperature; report the node to the provider if it persists."),
    ),
    (
        "clocks.hw_slowdown",
        gettext_lazy("A GPU's clocks are held down by the hardware."),
        gettext_lazy("Report the node to the provider, or re-create it."),
    ),
    (
        "ecc.correctable",
        gettext_lazy("A GPU's memory corrected errors."),
        gettext_lazy("Watch whether the count keeps growing."),
    ),
    (
        "ecc.*",
        gettext_lazy("A GPU's memory has errors or retired pages."),
        gettext_lazy("Re-create the node, and report it to the provider."),
    ),
    (
        "xid.*",
        gettext_lazy("The GPU driver logged an error (Xid)."),
        gettext_lazy("Read the Xid's meaning below; re-create the node if it repeats."),
    ),
    (
        "kernel_log.gpu_errors",
        gettext_lazy("The kernel log shows GPU errors."),
        gettext_lazy("Read the log lines below; re-create the node if they repeat."),
    ),
    (
        "*.unknown",
        gettext_lazy("The GPU interconnect's state could not be read."),
        gettext_lazy("Nothing to do unless multi-GPU jobs are slow."),
    ),
    (
        "*.links_down",
        gettext_lazy("Links between the GPUs are down."),
        gettext_lazy("Re-create the node, and report it to the provider."),
    ),
    (
        "*.link_narrow",
        gettext_lazy("Links between the GPUs run below their full width."),
        gettext_lazy("Re-create the node, and report it to the provider."),
    ),
    (
        "*.errors",
        gettext_lazy("Links between the GPUs report errors."),
        gettext_lazy("Re-create the node if the errors grow."),
    ),
    (
        "diagnostics.failed",
        gettext_lazy("The vendor's GPU diagnostics failed."),
        gettext_lazy("Re-create the node, and report it to the provider."),
    ),
    (
        "parse.*",
        gettext_lazy("A tool's output could not be read."),
        gettext_lazy("Nothing to do on the node; the agent may need an update."),
    ),
    (
        "deep.*",
        gettext_lazy("A deep check measured less than this GPU should reach."),
        gettext_lazy("Re-run the deep check; re-create the node if it stays low."),
    ),
    (
        "smoke.required_not_passed",
        gettext_lazy("Smoke tests the pool requires did not pass on this node."),
        gettext_lazy("Read the smoke results; re-create the node if they fail again."),
    ),
    (
        "smoke.*.missing",
        gettext_lazy("A smoke test the pool requires did not run."),
        gettext_lazy("Check the smoke packages on the image."),
    ),
    (
        "smoke.*.skipped",
        gettext_lazy("A smoke test was skipped."),
        gettext_lazy("Check the smoke packages on the image."),
    ),
    (
        "smoke.*.failed",
        gettext_lazy("A smoke test failed."),
        gettext_lazy("Read the error below; re-create the node if it repeats."),
    ),
    (
        "smoke.*.below_baseline",
        gettext_lazy("A smoke test ran slower than this GPU's baseline."),
        gettext_lazy("Re-run the check; re-create the node if it stays slow."),
    ),
)


def finding_texts(finding_id: str) -> tuple[Any, Any] | None:
    """(summary, what to do) for `finding_id`, or None for an id the catalogue does not know."""
    for pattern, summary, remedy in FINDING_TEXTS:
        if fnmatchcase(finding_id, pattern):
            return summary, remedy
    return None


def localized_findings(findings: Any) -> Any:
    """The findings as the reader's language shows them (English: as the agent wrote them)."""
    if not isinstance(findings, list) or (translation.get_language() or "en").startswith("en"):
        return findings
    shown = []
    for finding in findings:
        texts = finding_texts(str(finding.get("id", ""))) if isinstance(finding, dict) else None
        if texts is None:
            shown.append(finding)
            continue
        summary, remedy = texts
        finding = dict(finding)
        finding["message"] = _("%(summary)s Details: %(detail)s") % {
            "summary": summary,
            "detail": finding.get("message", ""),
        }
        if finding.get("remediation"):
            finding["remediation"] = _("%(summary)s Details: %(detail)s") % {
                "summary": remedy,
                "detail": finding["remediation"],
            }
        shown.append(finding)
    return shown


def localize_failed_checks(params: dict[str, str]) -> dict[str, str]:
    """A failed gate's reason (core.reasons.FAILED_CHECKS) in the reader's language: each failing
    finding's summary from this catalogue in place of the agent's English messages, when the
    catalogue knows every id (else the reason stays as the agent wrote it)."""
    if (translation.get_language() or "en").startswith("en"):
        return params
    texts = [finding_texts(finding_id.strip()) for finding_id in params["ids"].split(",")]
    if not texts or any(t is None for t in texts):
        return params
    summaries = [str(t[0]).rstrip("。.") for t in texts if t is not None]
    return {**params, "summary": _("; ").join(summaries)}
