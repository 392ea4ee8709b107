"""Model backends behind one interface (`base.Provider`); the loop imports none of them."""

from gateway.providers.base import ModelCall, Provider, Turn

__all__ = ["ModelCall", "Provider", "Turn"]
