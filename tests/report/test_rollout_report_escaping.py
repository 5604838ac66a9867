"""A policy's completions and prompts are untrusted text: the rollout report shows them, never runs them."""

from __future__ import annotations

from meta_agent.report.render import template
from meta_agent.report.rollout_report import Exemplar, LabelStat, RolloutReport

HOSTILE = '</pre><script>alert("pwned")</script><img src=x onerror=alert(1)>'


def test_a_completion_with_markup_is_shown_as_text_in_report_html() -> None:
    exemplar = Exemplar(rollout_id="r1", task_id="t1", reward=0.0, verified=False, labels=["truncated"],
                        prompt="2+2?", completion=HOSTILE)
    report = RolloutReport(
        domain="math", harness_commit="abc", policy="tiny", steps=1, rollouts=1, groups=1, reward_mean=0.0,
        reward_components={}, verified_rate=None, reward_verifier_agreement=None, truncation_rate=1.0,
        zero_variance_groups=1, zero_variance_frac=1.0, mean_completion_tokens=1.0, total_tokens=1,
        train_wall_time=1.0, entropy_change=None, curves=[], dominant=["truncated"], by_difficulty=[],
        labels=[LabelStat(label="truncated", count=1, share=1.0, exemplars=[exemplar])])
    html = template("rollout_report.html.j2").render(r=report, curves_png="", labels_png="")
    assert "<script>" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;" in html
