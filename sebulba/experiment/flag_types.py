"""Integer flags that take the ways people write counts: 100000, 100_000, 1e5, 2.5e6."""

from __future__ import annotations

from absl import flags

flags.disclaim_key_flags()  # the flags defined here belong to the module that asks for them


class CountParser(flags.IntegerParser):
    """absl's IntegerParser, also taking a float literal that is a whole number (1e5, not 1.5)."""

    def convert(self, argument: str | int) -> int:
        if isinstance(argument, str):
            text = argument.strip()
            try:
                return int(text, 0)
            except ValueError:
                pass
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"{argument!r} is not a whole number") from None
            if not value.is_integer():
                raise ValueError(f"{argument!r} is not a whole number")
            return int(value)
        return super().convert(argument)


def define_integer(name: str, default: int | None, help: str, lower_bound: int | None = None,
                   flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """flags.DEFINE_integer with CountParser, listed in --help under the caller's module as
    DEFINE_integer's flags are."""
    flags.DEFINE(CountParser(lower_bound=lower_bound), name, default, help, flag_values=flag_values,
                 serializer=flags.ArgumentSerializer())
