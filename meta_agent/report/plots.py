"""Report plots as PNG bytes (matplotlib, no display needed)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from meta_agent.report.rollout_report import RolloutReport


def _png(fig: plt.Figure) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


def curves_png(report: RolloutReport) -> bytes:
    """Reward (mean ± std), completion length and truncation/zero-variance rates per step."""
    steps = [m.step for m in report.curves]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
    mean = [m.reward_mean or 0.0 for m in report.curves]
    std = [m.reward_std or 0.0 for m in report.curves]
    axes[0].plot(steps, mean, marker="o")
    axes[0].fill_between(steps, [a - b for a, b in zip(mean, std, strict=True)],
                         [a + b for a, b in zip(mean, std, strict=True)], alpha=0.2)
    axes[0].set_title("reward (mean ± std)")
    axes[1].plot(steps, [m.completion_length_mean or 0.0 for m in report.curves], marker="o", color="tab:green")
    axes[1].set_title("completion length (tokens)")
    axes[2].plot(steps, [m.truncation_rate or 0.0 for m in report.curves], marker="o", label="truncated")
    axes[2].plot(steps, [m.zero_variance_frac or 0.0 for m in report.curves], marker="s", label="zero-var groups")
    axes[2].set_ylim(-0.05, 1.05)
    axes[2].legend(fontsize=8)
    axes[2].set_title("rates")
    for ax in axes:
        ax.set_xlabel("step")
    return _png(fig)


def labels_png(report: RolloutReport) -> bytes:
    """Histogram of diagnostic labels (share of rollouts)."""
    fig, ax = plt.subplots(figsize=(7, 0.45 * max(3, len(report.labels)) + 0.8))
    names = [s.label for s in report.labels][::-1]
    shares = [s.share for s in report.labels][::-1]
    ax.barh(names, shares, color="tab:red")
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of rollouts")
    ax.set_title("diagnostic labels")
    return _png(fig)
