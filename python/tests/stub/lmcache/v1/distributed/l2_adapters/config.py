"""The stand-in's base of adapter config classes (a plugin may bring one; fdpblock's does not)."""


class L2AdapterConfigBase:
    @classmethod
    def from_dict(cls, d: dict) -> "L2AdapterConfigBase":
        raise NotImplementedError
