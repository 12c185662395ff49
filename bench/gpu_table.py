"""The README table of one bench/gpu.sh results file (markdown), from its JSON lines only.

python bench/gpu_table.py bench/results/gpu-20261201T120000Z.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def table(records: list[dict[str, Any]]) -> str:
    """Markdown: one row per trainer/mode, then the ratios and the save limits. Missing values print as n/a."""
    env = next((r for r in records if r["record"] == "env"), {})
    rows = [
        "| trainer | checkpoint | s / step | generation s | update s | blocked by save s | completion tok/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        if r["record"] not in ("ours", "trl"):
            continue
        who = "ours (torch)" if r["record"] == "ours" else "TRL GRPOTrainer"
        mode = r.get("mode", "none")
        if "error" in r or "skipped" in r:
            rows.append(f"| {who} | {mode} | {r.get('error') or r.get('skipped')} | | | | |")
            continue
        rows.append(
            f"| {who} | {mode} | {_f(r.get('step_s'))} | {_f(r.get('generation_s'))} | "
            f"{_f(r.get('update_s'))} | {_f(r.get('checkpoint_block_s'))} | "
            f"{_f(r.get('completion_tokens_per_s'), 0)} |"
        )
    s = next((r for r in records if r["record"] == "summary"), {})
    lim = next((r for r in records if r["record"] == "limits" and "error" not in r), None)
    lines = [
        f"{env.get('gpu') or env.get('device', '?')}, torch {env.get('torch')}, transformers "
        f"{env.get('transformers')}, trl {env.get('trl')}; {env.get('steps')} timed steps after "
        f"{env.get('warmup')} warm-up" + (" (TINY shapes: not a performance number)" if env.get("tiny") else ""),
        "",
        *rows,
        "",
        f"- ours vs TRL: {_x(s.get('speedup_vs_trl'))} faster per step (target 2x); "
        f"completion tokens/s ratio {_x(s.get('tokens_per_s_ratio'))}",
        f"- checkpoint at every step: async {_pct(s.get('async_overhead'))} of step time (target <= 2%), "
        f"sync {_pct(s.get('sync_overhead'))}",
    ]
    if lim:
        lines.append(
            f"- limits: device-to-host {_f(lim['d2h']['gb_per_s'], 1)} GB/s "
            f"({'pinned' if lim['d2h']['pinned'] else 'not pinned'}), disk ({lim['disk'].get('fs')}) with fsync "
            f"{_f(lim['disk']['gb_per_s'], 2)} GB/s for {lim['checkpoint_bytes'] / 1e6:.1f} MB: a save "
            f"must block >= {_f(lim['bounds']['async_block_s'] * 1e3, 1)} ms async, "
            f">= {_f(lim['bounds']['sync_block_s'] * 1e3, 1)} ms sync"
        )
    return "\n".join(lines)


def _f(v: Any, digits: int = 3) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def _x(v: Any) -> str:
    return "n/a" if v is None else f"{v:.2f}x"


def _pct(v: Any) -> str:
    return "n/a" if v is None else f"{100 * v:+.1f}%"


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_file():
        print("usage: python bench/gpu_table.py RESULTS.jsonl", file=sys.stderr)
        return 2
    print(table([json.loads(line) for line in Path(argv[0]).read_text().splitlines() if line.strip()]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
