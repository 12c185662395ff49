"""Trust as a property of the run: which keys must have signed which segments, judged inside `verify_run`.

A run is signed when any of its segments opened with a key or it holds a signed-segments manifest; its key
is the one its first trainer segment opened with (else the first signed segment's). Given trusted keys
(`--trust` or RECORDER_TRUST, a list of KEY.pub paths separated by `:`), every run is judged by them, signed
or not. Under either, each segment must be signed by an accepted key, and the manifest (recorder.store.signed_segments)
must be signed by one, list only segments that are there as it lists them, and list every signed segment.
A segment the manifest lists as adopted (recorder.store.adoption: left open by a killed writer, vouched for by
the signed writer that resumed the run) must hold exactly the events and bytes it held when adopted.
Every command that calls `verify_run` (replay, score, eval, report, the history's re-checks) therefore
refuses what these rules refuse, with no flag; the opt-out is theirs (`--untrusted-ok`, replay.checkers.preflight).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from recorder.signing import SIGNING_KEY_ENV, fingerprint, load_trusted
from recorder.store.run import RunDir
from recorder.store.segment import parse_segment_name
from recorder.store.signed_segments import MANIFEST_FILE, Entry, Manifest, ManifestError, read_manifest
from recorder.verify.problem import Problem

if TYPE_CHECKING:
    from recorder.verify.summary import SegmentSummary

TRUST_ENV = "RECORDER_TRUST"
SIGNED_RUN_RULE = "signed-run"
SIGNED_SET_RULE = "signed-set"
ADOPTED_SEGMENT_RULE = "adopted-segment"
TRUST_RULES = frozenset({SIGNED_RUN_RULE, SIGNED_SET_RULE, ADOPTED_SEGMENT_RULE})
UNTRUSTED_OK_ENV = "RECORDER_UNTRUSTED_OK"  # set by a command's --untrusted-ok, for its workers too


def untrusted_ok_from_environment() -> bool:
    """Whether this process was told to judge runs past their trust problems (then its output says so)."""
    return os.environ.get(UNTRUSTED_OK_ENV, "") not in ("", "0")


def trusted_from_environment() -> dict[str, str] | None:
    """The keys RECORDER_TRUST names (paths separated by `:`), or None when it is unset or empty."""
    value = os.environ.get(TRUST_ENV, "")
    paths = [Path(p) for p in value.split(os.pathsep) if p]
    return load_trusted(paths) if paths else None


def run_key(segments: list[SegmentSummary]) -> str | None:
    """The key the run's first trainer segment opened with; else the first signed segment's; None if none."""
    numbered = sorted(
        (parsed[1], s.name, s.opened_with)
        for s in segments
        if s.opened_with is not None and (parsed := parse_segment_name(s.name)) is not None and parsed[0] == "trainer"
    )
    if numbered:
        return numbered[0][2]
    return next((s.opened_with for s in sorted(segments, key=lambda s: s.name) if s.opened_with is not None), None)


def trust_problems(
    run: RunDir, segments: list[SegmentSummary], found: list[Problem], trusted: Mapping[str, str] | None
) -> list[Problem] | None:
    """Every segment and the manifest judged under the run's trust; None for an unsigned run judged by no
    trusted keys (nothing to judge by). `found`: the problems verify already has (a segment with a bad
    signature is not named twice)."""
    try:
        manifest = read_manifest(run)
        damaged = None
    except ManifestError as e:
        manifest, damaged = None, Problem(MANIFEST_FILE, None, str(e), SIGNED_SET_RULE)
    key = run_key(segments)
    if trusted is None and key is None and manifest is None and damaged is None:
        return None
    if trusted is not None:
        accepted = dict(trusted)
        whose = "a trusted key (--trust, " + TRUST_ENV + ")"
    else:
        run_signer = key or (manifest.public_key if manifest is not None else "")
        accepted = {run_signer: fingerprint(run_signer)}
        whose = f"the run's key {fingerprint(run_signer)}"
    problems = [damaged] if damaged is not None else []
    listed = manifest.segments if manifest is not None else {}
    flagged = {p.segment for p in found}
    for s in segments:
        if s.name not in flagged:
            problems.extend(_segment_problem(s, accepted, whose, listed))
    if any(s.signed_by is not None for s in segments) or listed or trusted is not None:
        problems.extend(_manifest_problems(run, manifest, damaged, segments, accepted, whose, flagged))
    return problems


def _segment_problem(
    s: SegmentSummary, accepted: Mapping[str, str], whose: str, listed: Mapping[str, Entry]
) -> list[Problem]:
    if s.signed_by in accepted:
        return []
    entry = listed.get(s.name)
    if s.signed_by is None and entry is not None and entry.adopted_bytes is not None:
        return []  # judged with the manifest (adopted-segment)
    untrusted = True
    if s.signed_by is not None:
        why = f"signed by {fingerprint(s.signed_by)}, not by {whose}"
    elif s.opened_with is not None:
        if s.name in listed:  # a later signed writer vouched for the events it found (checked with the manifest)
            return []
        why, untrusted = "its writer did not close, so its events are not signed", False
    else:
        why = f"unsigned, in a run that must be signed by {whose}"
    message = f"{why}; sign every writer with the run's key ({SIGNING_KEY_ENV})"
    return [Problem(s.name, None, message, SIGNED_RUN_RULE, untrusted=untrusted)]


def _manifest_problems(
    run: RunDir,
    manifest: Manifest | None,
    damaged: Problem | None,
    segments: list[SegmentSummary],
    accepted: Mapping[str, str],
    whose: str,
    flagged: set[str],
) -> list[Problem]:
    def problem(message: str, segment: str = MANIFEST_FILE) -> Problem:
        return Problem(segment, None, message, SIGNED_SET_RULE)

    if manifest is None:
        if damaged is not None:
            return []
        if not any(s.signed_by is not None or s.opened_with is not None for s in segments):
            # a run no writer ever signed: nothing was deleted, and no accepted key vouches for it
            why = f"missing: no writer of this run signed it, so no list of signed segments was made ({whose})"
            return [Problem(MANIFEST_FILE, None, why, SIGNED_SET_RULE, untrusted=True)]
        return [problem("missing: a signed run lists its signed segments here, signed (was it deleted?)")]
    if not manifest.signature_valid:
        return [problem("bad signature: the list of signed segments was edited after it was signed")]
    if manifest.public_key not in accepted:
        why = f"signed by {fingerprint(manifest.public_key)}, not by {whose}"
        return [Problem(MANIFEST_FILE, None, why, SIGNED_SET_RULE, untrusted=True)]
    from recorder.store.reader import recorded_run_id

    if manifest.run_id != recorded_run_id(run):
        return [problem(f"lists the segments of run {manifest.run_id!r}, not of this run")]
    by_name = {s.name: s for s in segments}
    out = []
    for name, entry in sorted(manifest.segments.items()):
        s = by_name.get(name)
        if name in flagged:
            continue
        if s is None:
            out.append(problem(f"{name} is listed as signed but is not in events/: a signed segment was deleted"))
        elif entry.adopted_bytes is not None:
            out.extend(_adoption_problems(s, entry, manifest.public_key))
        elif s.events != entry.events or s.digest != entry.digest:
            out.append(
                problem(
                    f"{s.events} events, but the signed list says {entry.events} with another last digest: "
                    "the segment was cut or replaced after it was signed",
                    name,
                )
            )
    for s in segments:
        if s.signed_by is not None and s.name not in manifest.segments and s.name not in flagged:
            out.append(problem("signed, but not in the run's signed list (the list was rolled back)", s.name))
    return out


def _adoption_problems(s: SegmentSummary, entry: Entry, key: str) -> list[Problem]:
    """An adopted segment holds exactly what the resuming writer adopted: its events (the last one's digest),
    its bytes, no closing record, and the adopting key's segment_opened (none only when it holds no event);
    and those events end at the dead writer's own last chain_signed record (recorder.store.adoption), so nothing
    its writer did not sign was adopted."""
    found = f"{s.events} events, {s.size} bytes{', closed' if s.closed else ''}"
    adopted = f"{entry.events} events, {entry.adopted_bytes} bytes"
    signed = s.signed_point.events if s.signed_point is not None else 0
    if s.opened_with != key and (s.opened_with is not None or entry.events):
        why = "it was not opened with the key that adopted it"
    elif s.closed or s.events != entry.events or (s.digest or "") != entry.digest or s.size != entry.adopted_bytes:
        why = "it changed after it was adopted (appended to, cut, altered or closed)"
    elif entry.events and signed != entry.events:
        why = (
            f"its writer signed only its first {signed} events (its last chain_signed): what follows was "
            "adopted though no one signed it"
        )
        return [
            Problem(
                s.name, signed, f"adopted by the writer that resumed the run at {adopted}: {why}", ADOPTED_SEGMENT_RULE
            )
        ]
    else:
        return []
    seq = min(s.events, entry.events)  # the first event past what both hold in common, or the end
    message = f"adopted by the writer that resumed the run at {adopted}, now {found}: {why}"
    return [Problem(s.name, seq, message, ADOPTED_SEGMENT_RULE)]
