"""Every finding the agent (and the server) can write reads in Chinese for a zh-Hans reader, with
the agent's English kept as the detail (issue 24 item 5)."""

import ast
import re
from pathlib import Path

import pytest
from django.utils import translation

from labgpu.health.finding_texts import finding_texts, localized_findings

REPO = Path(__file__).resolve().parents[4]
SOURCES = [
    *sorted((REPO / "agent" / "src" / "labgpu_agent").rglob("*.py")),
    REPO / "backend" / "labgpu" / "health" / "services.py",
]
CJK = re.compile(r"[\u4e00-\u9fff]")


def _ids(node: ast.expr) -> list[str]:
    """The ids `node` can make: literals, f-strings and concatenations with each hole as "x"."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _ids(node.body) + _ids(node.orelse)
    if isinstance(node, ast.JoinedStr):
        return ["".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [
            left + right for left in _ids(node.left) or ["x"] for right in _ids(node.right) or ["x"]
        ]
    return []


def _slugs(tree: ast.Module) -> list[str]:
    """Ids named through a variable (`id=slug`): what the variable is assigned."""
    return [
        made
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(getattr(t, "id", None) == "slug" for t in node.targets)
        for made in _ids(node.value)
    ]


def emitted_ids() -> set[str]:
    found = set()
    for path in SOURCES:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Finding":
                for keyword in node.keywords:
                    if keyword.arg == "id":
                        if isinstance(keyword.value, ast.Name):
                            found.update(_slugs(tree))
                        found.update(_ids(keyword.value))
            if isinstance(node, ast.Dict):  # the server's own finding: {"id": "smoke.…", …}
                for key, value in zip(node.keys, node.values, strict=True):
                    if (
                        isinstance(key, ast.Constant)
                        and key.value == "id"
                        and "." in str(getattr(value, "value", ""))
                    ):
                        found.update(_ids(value))
    return found


IDS = sorted(emitted_ids())


def test_the_walk_finds_the_agents_findings():
    assert {"gpu.vendor_mismatch", "xid.x", "deep.x", "smoke.x.missing", "x.links_down"} <= set(IDS)
    assert "smoke.required_not_passed" in IDS
    assert len(IDS) > 40


@pytest.mark.parametrize("finding_id", IDS)
def test_every_finding_reads_in_chinese(finding_id):
    texts = finding_texts(finding_id)
    assert texts is not None, f"no catalogue entry for {finding_id}"
    with translation.override("zh-hans"):
        summary, remedy = map(str, texts)
    with translation.override("en"):
        english = tuple(map(str, texts))
    assert (summary, remedy) != english
    assert CJK.search(summary) and CJK.search(remedy), (summary, remedy)


def test_a_chinese_reader_sees_the_summary_then_the_agents_detail():
    finding = {
        "id": "gpu.vendor_mismatch",
        "severity": "fail",
        "message": "1× NVIDIA H200; this pool expects AMD MI300X.",
        "remediation": "The node is not the type the pool books.",
    }
    with translation.override("zh-hans"):
        (shown,) = localized_findings([finding])
    assert shown["message"] == (
        "节点的 GPU 厂商与此节点池预约的不一致。详情：1× NVIDIA H200; this pool expects AMD MI300X."
    )
    assert shown["remediation"].startswith("请修正节点池的实例类型")
    assert shown["severity"] == "fail"
    with translation.override("en"):
        assert localized_findings([finding]) == [finding]


def test_an_unknown_finding_is_shown_as_the_agent_wrote_it():
    finding = {"id": "future.check", "severity": "warn", "message": "Something new."}
    with translation.override("zh-hans"):
        assert localized_findings([finding]) == [finding]
