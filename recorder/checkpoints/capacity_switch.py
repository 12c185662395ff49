"""How a team's model factory switches MoE capacity (its expert capacity limit) on or off: one of

    argument   a keyword of the factory:            factory(config, <name>=on|off)
    config     a key path in the model's config:    config[<a>][<b>] = on|off before the factory is called
    attribute  an attribute of the built modules:   module.<name> = on|off on every module that has it
    method     a method of the built modules:       module.<name>(on|off) on every module that has it

`on`/`off` are the values that mean each (True/False unless declared). Where the switch says so, the built
model is read back afterwards (an attribute's value on every module that has it), so that what is recorded is
what the model holds, not what was asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from trainer.policy.errors import ModelCodeError

SwitchKind = Literal["argument", "config", "attribute", "method"]
KINDS: tuple[SwitchKind, ...] = ("argument", "config", "attribute", "method")
WAYS = (
    "a `capacity` argument of the factory, or [tool.recorder.capacity] in the model code's pyproject.toml: "
    "argument = NAME, config = KEY.PATH, attribute = NAME or method = NAME (docs/zero-shot.md)"
)


NULL = "null"  # TOML has no null: an `on` or `off` written "null" is Python's None (a limit of None: no limit)


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacitySwitch:
    """One way the factory's model turns its MoE capacity on or off, and where that was learnt."""

    kind: SwitchKind
    name: str
    on: Any = True
    off: Any = False
    source: str = "the factory's signature"

    def value(self, capacity: bool) -> Any:
        return self.on if capacity else self.off

    def describe(self) -> str:
        return f"{self.kind} {self.name} (on: {self.on!r}, off: {self.off!r}; from {self.source})"

    def config(self, config: dict[str, Any], capacity: bool) -> dict[str, Any]:
        """The model config the factory is given: with the key path set, for a `config` switch."""
        if self.kind != "config":
            return config
        *parents, leaf = self.name.split(".")
        out = dict(config)
        node = out
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                raise ModelCodeError(
                    f"capacity switch config {self.name}: the model config has no mapping at {part!r}; declare the "
                    "key path inside the model config ([tool.recorder.capacity] config)"
                )
            node[part] = node = dict(child)
        if leaf not in node:
            raise ModelCodeError(
                f"capacity switch config {self.name}: the model config has no {self.name!r} (keys: "
                f"{', '.join(sorted(node)) or 'none'}); declare the key the model reads ([tool.recorder.capacity])"
            )
        node[leaf] = self.value(capacity)
        return out

    def arguments(self, capacity: bool) -> dict[str, Any]:
        return {self.name: self.value(capacity)} if self.kind == "argument" else {}

    def apply(self, model: Any, capacity: bool) -> str | None:
        """Set an attribute switch or call a method switch on every module that has it; then the read-back
        that confirms it (None: the switch cannot be read back on the module)."""
        if self.kind not in ("attribute", "method"):
            return None
        holders = [m for m in model.modules() if hasattr(m, self.name)]
        if not holders:
            raise ModelCodeError(
                f"capacity switch {self.kind} {self.name}: no module of the model has it; declare the "
                f"{self.kind} its MoE layers have ([tool.recorder.capacity])"
            )
        wanted = self.value(capacity)
        for m in holders:
            if self.kind == "attribute":
                setattr(m, self.name, wanted)
            else:
                getattr(m, self.name)(wanted)
        if self.kind == "method":
            return None
        wrong = [type(m).__name__ for m in holders if getattr(m, self.name) != wanted]
        if wrong:
            raise ModelCodeError(
                f"capacity switch attribute {self.name}: set to {wanted!r}, but {wrong[0]} reads "
                f"{getattr(holders[0], self.name)!r}: the model does not keep the setting"
            )
        return f"{len(holders)} module(s) read {self.name} = {wanted!r}"


@dataclass(frozen=True, slots=True, kw_only=True)
class FactoryCall:
    """How the factory takes the model's config: as it is, or through the team's own converter
    (`pkg.module:function`, e.g. a config class's `from_dict`), positionally or as keyword arguments."""

    converter: str | None = None
    keywords: bool = False


def switch_of(spec: Any, source: str) -> CapacitySwitch:
    """A switch from its declaration: {"argument"|"config"|"attribute"|"method": NAME, "on": V, "off": V}."""
    if not isinstance(spec, dict):
        raise ModelCodeError(f"{source}: capacity must be a table ({WAYS})")
    named = [k for k in KINDS if k in spec]
    unknown = sorted(set(spec) - {*KINDS, "on", "off"})
    if len(named) != 1 or unknown or not isinstance(spec[named[0]], str) or not spec[named[0]]:
        raise ModelCodeError(
            f"{source}: capacity needs exactly one of {', '.join(KINDS)} naming the switch, and at most on/off"
            + (f" (unknown: {', '.join(unknown)})" if unknown else "")
        )
    kind, name = named[0], spec[named[0]]
    if kind == "config" and not all(name.split(".")):
        raise ModelCodeError(f"{source}: capacity config {name!r}: a key path (KEY or KEY.KEY...)")
    if kind != "config" and not (name.isidentifier() and not name.startswith("_")):
        # `__init__`, `_apply`, `__class__`: every module has them, and calling or setting one rebuilds or
        # breaks the module instead of switching its capacity
        raise ModelCodeError(f"{source}: capacity {kind} {name!r}: a public name (letters, digits, _; not a leading _)")
    on, off = (None if v == NULL else v for v in (spec.get("on", True), spec.get("off", False)))
    if on == off:
        raise ModelCodeError(f"{source}: capacity on and off are both {on!r}")
    return CapacitySwitch(kind=kind, name=name, on=on, off=off, source=source)
